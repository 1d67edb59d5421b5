// A tool's `parameters` JSON schema compiled into the graph the JSON automaton walks
// (json_automaton.h). What tool schemas use is supported: type object (properties,
// required; additionalProperties false, also when absent), string (minLength,
// maxLength), number, integer, boolean, null, a list of those types, enum and const of
// scalars, array (items, minItems, maxItems) and nesting. Anything else that constrains
// a value ($ref, anyOf, pattern, format, minimum, ...) is refused with a message naming
// it, never ignored: the mask would let through what the schema forbids. Annotations
// (description, title, default, examples, $schema) are ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sy::constrain {

enum class NodeKind : uint8_t { kObject, kArray, kString, kNumber, kInteger, kLiterals, kUnion };  // boolean, null: kLiterals

struct SchemaProperty {
  std::string name;  // raw bytes of the key (no characters that JSON would escape)
  int32_t node = 0;
  bool required = false;
};

struct SchemaNode {
  NodeKind kind = NodeKind::kObject;
  std::vector<SchemaProperty> properties;  // kObject: sorted by name
  std::vector<std::string> key_names;      // kObject: properties' names, in that order
  uint64_t required_mask = 0;              // kObject: bit i = properties[i] is required
  int32_t items = -1;                      // kArray
  int64_t min_count = 0;                   // kArray: minItems; kString: minLength (code points)
  int64_t max_count = -1;                  // -1: none
  std::vector<std::string> literals;       // kLiterals: serialized JSON scalars, sorted
  std::vector<int32_t> alternatives;       // kUnion: one node per type, distinct first bytes
};

inline constexpr int kMaxSchemaDepth = 24;      // nesting of objects and arrays
inline constexpr int kMaxObjectProperties = 64;  // the automaton keeps a 64-bit seen mask

struct SchemaGraph {
  std::vector<SchemaNode> nodes;
  int32_t root = 0;
};

// Appends `schema`'s nodes to `graph` and returns its root, or nullopt with `error`
// ("tools[0].parameters.properties.city: 'pattern' is not supported ...").
std::optional<int32_t> compile_schema(const nlohmann::json& schema, const std::string& where, SchemaGraph& graph,
                                      std::string& error);

}  // namespace sy::constrain
