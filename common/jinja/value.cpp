#include "common/jinja/value.h"

#include <cmath>

#include "common/jinja/error.h"

namespace sy::jinja {
namespace {

void check_depth(int depth) {
  if (depth > kMaxValueDepth) {
    throw TemplateError("value nesting is deeper than " + std::to_string(kMaxValueDepth));
  }
}

template <typename Json>
Value value_from_json(const Json& j, int depth) {
  check_depth(depth);
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      uint64_t u = j.template get<uint64_t>();
      // Past int64 Python would still hold an int; a float is the closest we keep.
      if (u > static_cast<uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(value_from_json(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      Dict d;
      for (auto it = j.begin(); it != j.end(); ++it) {
        d.set(Value::string(it.key()), value_from_json(it.value(), depth + 1));
      }
      return Value::dict(std::move(d));
    }
    default:
      throw TemplateError("JSON value of an unsupported type (binary)");
  }
}

bool is_hashable(const Value& v) {
  return v.is_string() || v.is_number() || v.is_none();
}

// Key equality for non-string keys (numbers compare by value, as Python's hash does).
bool key_equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return py_equal(a, b);
  if (a.is_none() && b.is_none()) return true;
  return false;
}

}  // namespace

Value Value::undefined(std::string hint) {
  Value v;
  v.v_ = Undef{std::make_shared<const std::string>(std::move(hint))};
  return v;
}

Value Value::none() {
  Value v;
  v.v_ = Null{};
  return v;
}

Value Value::boolean(bool b) {
  Value v;
  v.v_ = b;
  return v;
}

Value Value::integer(int64_t i) {
  Value v;
  v.v_ = i;
  return v;
}

Value Value::number(double d) {
  Value v;
  v.v_ = d;
  return v;
}

Value Value::string(std::string s) {
  AllocationBudget::charge_string(s.size());
  Value v;
  v.v_ = std::make_shared<const std::string>(std::move(s));
  return v;
}

Value Value::list(std::vector<Value> items) {
  return sequence(std::move(items), false);
}
Value Value::tuple(std::vector<Value> items) {
  return sequence(std::move(items), true);
}

Value Value::sequence(std::vector<Value> items, bool tuple) {
  AllocationBudget::charge(sizeof(Value) * items.size() + sizeof(List));
  auto list = std::make_shared<List>();
  list->is_tuple = tuple;
  int depth = 0;
  bool has_ns = false;
  for (const Value& item : items) {
    depth = std::max(depth, item.depth());
    has_ns = has_ns || item.has_namespace();
  }
  list->depth = depth + 1;
  check_depth(list->depth);
  list->has_namespace = has_ns;
  list->items = std::move(items);
  Value v;
  v.v_ = ListPtr(std::move(list));
  return v;
}

Value Value::dict(Dict d) {
  check_depth(d.depth());
  Value v;
  v.v_ = std::make_shared<const Dict>(std::move(d));
  return v;
}

Value Value::namespace_object(std::shared_ptr<Namespace> ns) {
  Value v;
  v.v_ = std::move(ns);
  return v;
}

Value Value::function(std::shared_ptr<const Function> fn) {
  Value v;
  v.v_ = std::move(fn);
  return v;
}

bool Value::is_tuple() const {
  return is_list() && as_list().is_tuple;
}

int64_t Value::as_int() const {
  if (is_bool()) return as_bool() ? 1 : 0;
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

std::string Value::undefined_hint() const {
  const auto& u = std::get<Undef>(v_);
  return u.hint ? *u.hint : std::string("value is undefined");
}

bool Value::truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int() != 0;
    case Kind::kFloat:
      return as_double() != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return !as_list().items.empty();
    case Kind::kDict:
      return !as_dict().empty();
    case Kind::kNamespace:
    case Kind::kFunction:
      return true;
  }
  return false;
}

int Value::depth() const {
  switch (kind()) {
    case Kind::kList:
      return as_list().depth;
    case Kind::kDict:
      return as_dict().depth();
    case Kind::kNamespace:
      return 1 + as_namespace().attrs.depth();
    default:
      return 0;
  }
}

bool Value::has_namespace() const {
  switch (kind()) {
    case Kind::kList:
      return as_list().has_namespace;
    case Kind::kDict:
      return as_dict().has_namespace();
    case Kind::kNamespace:
      return true;
    default:
      return false;
  }
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::kString:
      return std::get<StringPtr>(v_).get();
    case Kind::kList:
      return std::get<ListPtr>(v_).get();
    case Kind::kDict:
      return std::get<DictPtr>(v_).get();
    case Kind::kNamespace:
      return std::get<NamespacePtr>(v_).get();
    case Kind::kFunction:
      return std::get<FunctionPtr>(v_).get();
    default:
      return nullptr;
  }
}

std::string Value::type_name() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return as_list().is_tuple ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kNamespace:
      return "Namespace";
    case Kind::kFunction:
      return as_function().is_macro ? "Macro" : "function";
  }
  return "object";
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  return value_from_json(j, 0);
}
Value Value::from_json(const nlohmann::json& j) {
  return value_from_json(j, 0);
}

nlohmann::ordered_json Value::to_json() const {
  switch (kind()) {
    case Kind::kNone:
      return nullptr;
    case Kind::kBool:
      return as_bool();
    case Kind::kInt:
      return as_int();
    case Kind::kFloat:
      return as_double();
    case Kind::kString:
      return str();
    case Kind::kList: {
      auto out = nlohmann::ordered_json::array();
      for (const Value& item : as_list().items) out.push_back(item.to_json());
      return out;
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      const Dict& d = is_dict() ? as_dict() : as_namespace().attrs;
      auto out = nlohmann::ordered_json::object();
      for (const auto& [k, v] : d.entries()) {
        if (!k.is_string()) throw TemplateError("JSON object keys must be strings");
        out[k.str()] = v.to_json();
      }
      return out;
    }
    default:
      throw TemplateError("Object of type " + type_name() + " is not JSON serializable");
  }
}

void Dict::index_entry(size_t i) {
  if (entries_[i].first.is_string()) string_index_.emplace(entries_[i].first.str(), i);
}

void Dict::set(Value key, Value value) {
  if (!is_hashable(key)) throw TemplateError("unhashable type: '" + key.type_name() + "'");
  depth_ = std::max(depth_, 1 + value.depth());
  has_namespace_ = has_namespace_ || value.has_namespace();
  Value* existing = const_cast<Value*>(find(key));
  if (existing != nullptr) {
    *existing = std::move(value);
    return;
  }
  AllocationBudget::charge(sizeof(entries_[0]));
  entries_.emplace_back(std::move(key), std::move(value));
  if (entries_.size() == kIndexFrom) {
    for (size_t i = 0; i < entries_.size(); ++i) index_entry(i);
  } else if (entries_.size() > kIndexFrom) {
    index_entry(entries_.size() - 1);
  }
}

const Value* Dict::find(std::string_view key) const {
  if (entries_.size() >= kIndexFrom) {
    auto it = string_index_.find(key);
    return it == string_index_.end() ? nullptr : &entries_[it->second].second;
  }
  for (const auto& entry : entries_) {
    if (entry.first.is_string() && entry.first.str() == key) return &entry.second;
  }
  return nullptr;
}

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.str()));
  if (key.is_undefined()) return nullptr;  // Jinja's Undefined hashes but is never a key
  if (!is_hashable(key)) throw TemplateError("unhashable type: '" + key.type_name() + "'");
  for (const auto& entry : entries_) {
    if (!entry.first.is_string() && key_equal(entry.first, key)) return &entry.second;
  }
  return nullptr;
}

namespace {
thread_local AllocationBudget* current_budget = nullptr;
constexpr size_t kStringOverhead = 48;
}  // namespace

AllocationBudget::AllocationBudget(size_t max_total_bytes, size_t max_string_bytes)
    : previous_(current_budget), max_total_(max_total_bytes), max_string_(max_string_bytes) {
  current_budget = this;
}

AllocationBudget::~AllocationBudget() {
  current_budget = previous_;
}

void AllocationBudget::charge_string(size_t bytes) {
  AllocationBudget* b = current_budget;
  if (b == nullptr) return;
  if (bytes > b->max_string_) {
    throw TemplateError("string of " + std::to_string(bytes) +
                        " bytes is longer than the limit of " + std::to_string(b->max_string_));
  }
  // Each string also costs its shared_ptr control block and std::string header.
  charge(bytes + kStringOverhead);
}

size_t AllocationBudget::string_limit() {
  return current_budget == nullptr ? SIZE_MAX : current_budget->max_string_;
}

void AllocationBudget::check_length(size_t bytes) {
  if (bytes > string_limit()) {
    throw TemplateError("string of " + std::to_string(bytes) +
                        " bytes is longer than the limit of " + std::to_string(string_limit()));
  }
}

void AllocationBudget::charge(size_t bytes) {
  AllocationBudget* b = current_budget;
  if (b == nullptr) return;
  b->used_ += bytes;
  if (b->used_ > b->max_total_) {
    throw TemplateError("template allocated more than " + std::to_string(b->max_total_) + " bytes");
  }
}

bool py_equal(const Value& a, const Value& b) {
  using Kind = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.str() == b.str();
    case Kind::kList: {
      const List& x = a.as_list();
      const List& y = b.as_list();
      if (&x == &y) return true;  // Python compares identical items as equal too
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      // Shared sublists can make a small value a huge tree: the walk is charged as work.
      AllocationBudget::charge(x.items.size() * sizeof(Value));
      for (size_t i = 0; i < x.items.size(); ++i) {
        if (!py_equal(x.items[i], y.items[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      const Dict& x = a.as_dict();
      const Dict& y = b.as_dict();
      if (&x == &y) return true;
      if (x.size() != y.size()) return false;
      AllocationBudget::charge(x.size() * sizeof(Value));
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.find(k);
        if (other == nullptr || !py_equal(v, *other)) return false;
      }
      return true;
    }
    default:
      return a.identity() == b.identity();
  }
}

}  // namespace sy::jinja
