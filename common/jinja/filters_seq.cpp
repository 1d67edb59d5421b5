// Filters over sequences and mappings: sorting, selecting, mapping, joining, aggregating.
// Where Jinja returns a generator (map, select, unique, ...) these return a list, which
// iterates, joins and tests the same.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "common/jinja/builtins.h"
#include "common/jinja/error.h"
#include "common/jinja/filters_internal.h"
#include "common/jinja/format.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/operators.h"
#include "common/jinja/py_string.h"

namespace sy::jinja {
namespace {

using namespace filter_util;

Value f_batch(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args("batch", args, {{"linecount", Value()}, {"fill_with", none()}});
  int64_t size = int_arg(a[0], "linecount");
  if (size <= 0) throw TemplateError("batch size must be positive");
  std::vector<Value> items = iterate(v);
  in.step(items.size());
  std::vector<Value> out, row;
  for (Value& item : items) {
    row.push_back(std::move(item));
    if (static_cast<int64_t>(row.size()) == size)
      out.push_back(Value::list(std::exchange(row, {})));
  }
  if (!row.empty()) {
    if (!a[1].is_none()) {
      while (static_cast<int64_t>(row.size()) < size) row.push_back(a[1]);
    }
    out.push_back(Value::list(std::move(row)));
  }
  return Value::list(std::move(out));
}

Value f_dictsort(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args(
      "dictsort", args,
      {{"case_sensitive", boolean(false)}, {"by", str("key")}, {"reverse", boolean(false)}});
  if (!v.is_dict()) throw TemplateError("dictsort expects a mapping, got " + v.type_name());
  std::string by = text_of(a[1]);
  if (by != "key" && by != "value")
    throw TemplateError("You can only sort by either 'key' or 'value'");
  size_t pos = by == "key" ? 0 : 1;
  bool ignore_case = !a[0].truthy();
  std::vector<Value> pairs;
  for (const auto& [k, item] : v.as_dict().entries()) pairs.push_back(Value::tuple({k, item}));
  in.step(pairs.size());
  auto key = [&](const Value& pair) {
    const Value& x = pair.as_list().items[pos];
    return ignore_case && x.is_string() ? Value::string(py::lower(x.str())) : x;
  };
  bool reverse = a[2].truthy();
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    return reverse ? py_order(key(y), key(x)) == -1 : py_order(key(x), key(y)) == -1;
  });
  return Value::list(std::move(pairs));
}

Value f_first(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("first", args, {});
  if (v.is_list()) {
    if (v.as_list().items.empty()) return Value::undefined("No first item, sequence was empty.");
    return v.as_list().items.front();
  }
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("last", args, {});
  std::vector<Value> items = v.is_list() ? v.as_list().items : iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_items(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("items", args, {});
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) throw TemplateError("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [k, item] : v.as_dict().entries()) pairs.push_back(Value::tuple({k, item}));
  return Value::list(std::move(pairs));
}

Value f_join(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args("join", args, {{"d", str("")}, {"attribute", none()}});
  std::string sep = text_of(a[0]);
  std::vector<Value> items = iterate(v);
  in.step(items.size());
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    const Value item = a[1].is_none() ? items[i] : sort_key(in, items[i], a[1], false);
    std::string text = text_of(item);
    check_length(out.size() + text.size() + sep.size(), in);
    if (i > 0) out += sep;
    out += text;
  }
  return Value::string(std::move(out));
}

Value f_length(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("length", args, {});
  switch (v.kind()) {
    case Value::Kind::kUndefined:
      return integer(0);
    case Value::Kind::kString:
      return integer(static_cast<int64_t>(py::length(v.str())));
    case Value::Kind::kList:
      return integer(static_cast<int64_t>(v.as_list().items.size()));
    case Value::Kind::kDict:
      return integer(static_cast<int64_t>(v.as_dict().size()));
    default:
      throw TemplateError("object of type '" + v.type_name() + "' has no len()");
  }
}

Value f_list(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("list", args, {});
  return Value::list(iterate(v));
}

Value min_or_max(Interpreter& in, const Value& v, const CallArgs& args, bool want_max) {
  auto a = bind_args(want_max ? "max" : "min", args,
                     {{"case_sensitive", boolean(false)}, {"attribute", none()}});
  std::vector<Value> items = iterate(v);
  in.step(items.size());
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  bool ignore_case = !a[0].truthy();
  size_t best = 0;
  Value best_key = sort_key(in, items[0], a[1], ignore_case);
  for (size_t i = 1; i < items.size(); ++i) {
    Value key = sort_key(in, items[i], a[1], ignore_case);
    if (py_order(key, best_key) == (want_max ? 1 : -1)) best = i, best_key = key;
  }
  return items[best];
}

Value f_max(Interpreter& in, const Value& v, const CallArgs& a) {
  return min_or_max(in, v, a, true);
}

Value f_min(Interpreter& in, const Value& v, const CallArgs& a) {
  return min_or_max(in, v, a, false);
}

Value f_map(Interpreter& in, const Value& v, const CallArgs& args) {
  std::vector<Value> items = v.truthy() ? iterate(v) : std::vector<Value>{};
  in.step(items.size());
  std::vector<Value> out;
  if (args.positional.empty()) {
    Value attribute, fallback = none();
    for (const auto& [k, item] : args.keyword) {
      if (k == "attribute")
        attribute = item;
      else if (k == "default")
        fallback = item;
      else
        throw TemplateError("Unexpected keyword argument '" + k + "'");
    }
    if (attribute.is_undefined()) throw TemplateError("map requires a filter argument");
    for (const Value& item : items) {
      Value x = sort_key(in, item, attribute, false);
      out.push_back(x.is_undefined() && !fallback.is_none() ? fallback : x);
    }
    return Value::list(std::move(out));
  }
  if (!args.positional[0].is_string()) throw TemplateError("map requires a filter name");
  std::string name = args.positional[0].str();
  FilterFn fn = find_filter(name);
  if (fn == nullptr) throw TemplateError("No filter named '" + name + "'.");
  CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.keyword};
  for (const Value& item : items) out.push_back(fn(in, item, rest));
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr.
Value select_items(Interpreter& in, const Value& v, const CallArgs& args, bool by_attribute,
                   bool keep) {
  std::vector<Value> items = v.truthy() ? iterate(v) : std::vector<Value>{};
  in.step(items.size());
  size_t off = 0;
  Value attribute;
  if (by_attribute) {
    if (args.positional.empty()) throw TemplateError("Missing parameter for attribute name");
    attribute = args.positional[0];
    off = 1;
  }
  TestFn test = nullptr;
  CallArgs rest;
  if (args.positional.size() > off) {
    std::string name = text_of(args.positional[off]);
    test = find_test(name);
    if (test == nullptr) throw TemplateError("No test named '" + name + "'.");
    rest.positional.assign(args.positional.begin() + static_cast<long>(off) + 1,
                           args.positional.end());
    rest.keyword = args.keyword;
  }
  std::vector<Value> out;
  for (const Value& item : items) {
    Value x = by_attribute ? sort_key(in, item, attribute, false) : item;
    bool pass = test ? test(in, x, rest) : x.truthy();
    if (pass == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_items(in, v, a, false, true);
}

Value f_reject(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_items(in, v, a, false, false);
}

Value f_selectattr(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_items(in, v, a, true, true);
}

Value f_rejectattr(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_items(in, v, a, true, false);
}

Value f_reverse(Interpreter&, const Value& v, const CallArgs& args) {
  bind_args("reverse", args, {});
  if (v.is_string()) {
    std::u32string u = py::decode(v.str());
    std::reverse(u.begin(), u.end());
    return Value::string(py::encode(u));
  }
  std::vector<Value> items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_sort(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args(
      "sort", args,
      {{"reverse", boolean(false)}, {"case_sensitive", boolean(false)}, {"attribute", none()}});
  std::vector<Value> items = iterate(v);
  in.step(items.size());
  bool ignore_case = !a[1].truthy();
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items)
    keyed.emplace_back(sort_key(in, item, a[2], ignore_case), std::move(item));
  bool reverse = a[0].truthy();
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    return reverse ? py_order(y.first, x.first) == -1 : py_order(x.first, y.first) == -1;
  });
  std::vector<Value> out;
  for (auto& [key, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value f_sum(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args("sum", args, {{"attribute", none()}, {"start", integer(0)}});
  Value total = a[1];
  std::vector<Value> items = iterate(v);
  in.step(items.size());
  for (const Value& item : items) {
    Value x = a[0].is_none() ? item : sort_key(in, item, a[0], false);
    total = binary_op(ast::BinaryOp::kAdd, total, x, in.limits().max_string_bytes);
  }
  return total;
}

Value f_unique(Interpreter& in, const Value& v, const CallArgs& args) {
  auto a = bind_args("unique", args, {{"case_sensitive", boolean(false)}, {"attribute", none()}});
  std::vector<Value> items = iterate(v);
  in.step(items.size() * items.size() / 64 + items.size());
  std::vector<Value> seen, out;
  for (const Value& item : items) {
    Value key = sort_key(in, item, a[1], !a[0].truthy());
    bool found = false;
    for (const Value& s : seen) {
      if (py_equal(s, key)) {
        found = true;
        break;
      }
    }
    if (!found) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::list(std::move(out));
}

}  // namespace

FilterFn find_sequence_filter(std::string_view name) {
  static const std::unordered_map<std::string_view, FilterFn> kFilters = {
      {"batch", f_batch},
      {"count", f_length},
      {"dictsort", f_dictsort},
      {"first", f_first},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"reverse", f_reverse},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"sort", f_sort},
      {"sum", f_sum},
      {"unique", f_unique},
  };
  auto it = kFilters.find(name);
  return it == kFilters.end() ? nullptr : it->second;
}

}  // namespace sy::jinja
