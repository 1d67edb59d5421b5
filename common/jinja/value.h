// Values of the Jinja interpreter, with Python's semantics: none, bool, int (64-bit, overflow
// is an error), float, str (UTF-8), list, tuple, dict (insertion-ordered), namespace,
// callable, and Jinja's Undefined (carries the message raised when it is used).
//
// Lists, tuples and dicts are immutable once built and shared by pointer, as transformers
// renders in Jinja's ImmutableSandboxedEnvironment; only a namespace can change. Containers
// record their nesting depth so that printing, comparing and freeing them never recurses
// deeper than a fixed bound.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

namespace sy::jinja {

class Value;
class Interpreter;
struct List;
class Dict;
struct Namespace;
struct Function;

// Arguments of a call: f(1, 2, key=3).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

class Value {
 public:
  // The order matches the storage variant's alternatives.
  enum class Kind : uint8_t {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,  // list or tuple
    kDict,
    kNamespace,
    kFunction,
  };

  Value() = default;  // undefined
  static Value undefined(std::string hint);
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double d);
  static Value string(std::string s);
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value dict(Dict d);
  static Value namespace_object(std::shared_ptr<Namespace> ns);
  static Value function(std::shared_ptr<const Function> fn);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // int, float or bool (Python's bool is a number).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  // int or bool: usable as an integer.
  bool is_integral() const { return is_int() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }  // list or tuple
  bool is_tuple() const;
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }
  bool is_function() const { return kind() == Kind::kFunction; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const;    // int or bool
  double as_double() const;  // any number
  const std::string& str() const { return *std::get<StringPtr>(v_); }
  const List& as_list() const { return *std::get<ListPtr>(v_); }
  const Dict& as_dict() const { return *std::get<DictPtr>(v_); }
  Namespace& as_namespace() const { return *std::get<NamespacePtr>(v_); }
  const Function& as_function() const { return *std::get<FunctionPtr>(v_); }
  // The message an undefined value raises when it is used.
  std::string undefined_hint() const;

  // Python truthiness.
  bool truthy() const;
  // Container nesting depth: 0 for scalars, 1 for a flat list.
  int depth() const;
  // True when a namespace is reachable from this value.
  bool has_namespace() const;
  // Pointer identity of containers and callables (Python's `is`); nullptr for scalars.
  const void* identity() const;

  // Python's type name, for error messages: 'int', 'str', 'NoneType', ...
  std::string type_name() const;

  // Converts JSON (objects keep their key order with ordered_json). Throws TemplateError
  // past the nesting limit.
  static Value from_json(const nlohmann::ordered_json& j);
  static Value from_json(const nlohmann::json& j);
  // Undefined and callables have no JSON form: TemplateError.
  nlohmann::ordered_json to_json() const;

 private:
  using StringPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const List>;
  using DictPtr = std::shared_ptr<const Dict>;
  using NamespacePtr = std::shared_ptr<Namespace>;
  using FunctionPtr = std::shared_ptr<const Function>;
  struct Undef {
    StringPtr hint;
  };
  struct Null {};

  static Value sequence(std::vector<Value> items, bool tuple);

  std::variant<Undef, Null, bool, int64_t, double, StringPtr, ListPtr, DictPtr, NamespacePtr,
               FunctionPtr>
      v_;
};

// Deepest container nesting a value may have; building a deeper one is a render error.
inline constexpr int kMaxValueDepth = 256;

// Caps what one render allocates: every string and container built while one is installed
// on the thread is charged to it, and a string longer than `max_string_bytes` or a running
// total past `max_total_bytes` raises TemplateError. The interpreter installs one per render;
// values built outside a render are not counted.
class AllocationBudget {
 public:
  AllocationBudget(size_t max_total_bytes, size_t max_string_bytes);
  ~AllocationBudget();
  AllocationBudget(const AllocationBudget&) = delete;
  AllocationBudget& operator=(const AllocationBudget&) = delete;

  static void charge_string(size_t bytes);
  static void charge(size_t bytes);
  // The longest string the current render may build (no limit outside a render), for code
  // that grows text piece by piece (repr, json) and must stop early.
  static size_t string_limit();
  // Throws TemplateError when `bytes` exceeds string_limit().
  static void check_length(size_t bytes);

 private:
  AllocationBudget* previous_;
  size_t used_ = 0;
  size_t max_total_;
  size_t max_string_;
};

struct List {
  std::vector<Value> items;
  bool is_tuple = false;
  int depth = 1;
  bool has_namespace = false;
};

// An insertion-ordered dict. Keys are hashable values (str, int, float, bool, none); as in
// Python, 1, 1.0 and True are the same key.
class Dict {
 public:
  // Inserts or replaces (keeping the first position). Throws TemplateError for a key that
  // Python could not hash.
  void set(Value key, Value value);
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  const std::vector<std::pair<Value, Value>>& entries() const { return entries_; }
  int depth() const { return depth_; }
  bool has_namespace() const { return has_namespace_; }

 private:
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  // Small dicts (messages, loop objects) are searched linearly; past kIndexFrom entries
  // string keys are also hashed.
  static constexpr size_t kIndexFrom = 16;
  void index_entry(size_t i);

  std::vector<std::pair<Value, Value>> entries_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> string_index_;
  int depth_ = 1;
  bool has_namespace_ = false;
};

// Jinja's namespace(): the one mutable object, so that `{% set ns.x = ... %}` carries state
// out of a loop. It may not hold another namespace (that keeps values acyclic).
struct Namespace {
  Dict attrs;
};

// A builtin (filter-like global, bound method) or a template macro.
struct Function {
  std::string name;
  bool is_macro = false;
  std::function<Value(Interpreter&, const CallArgs&)> call;
};

// Python's ==: numbers by value (1 == 1.0 == True), sequences and dicts element-wise,
// list != tuple; undefined equals only undefined.
bool py_equal(const Value& a, const Value& b);

}  // namespace sy::jinja
