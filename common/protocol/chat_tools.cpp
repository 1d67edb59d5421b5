#include "common/protocol/chat_tools.h"

#include "common/tool_calls/json_scanner.h"

#include <set>
#include <string>

namespace sy {
namespace {

std::string at(const std::string& base, size_t i) { return base + "[" + std::to_string(i) + "]"; }

// A non-empty string at obj[key], else an error about `where.key`.
std::optional<ApiError> need_name(const Json& obj, const char* key, const std::string& where,
                                  const std::string& param, std::string& out) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    return ApiError::bad_request(quote_field(where + "." + key) + " must be a non-empty string",
                                 param);
  out = it->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> read_tool(const Json& t, const std::string& where, std::string& name) {
  if (!t.is_object())
    return ApiError::bad_request(
        quote_field(where) + " must be an object, not " + json_type_phrase(t), "tools");
  auto type = t.find("type");
  if (type == t.end() || *type != "function")
    return ApiError::bad_request(
        quote_field(where + ".type") + " must be \"function\": only function tools exist here",
        "tools");
  auto f = t.find("function");
  if (f == t.end() || !f->is_object())
    return ApiError::bad_request(quote_field(where + ".function") + " must be an object", "tools");
  if (auto e = need_name(*f, "name", where + ".function", "tools", name)) return e;
  if (auto d = f->find("description"); d != f->end() && !d->is_null() && !d->is_string())
    return ApiError::bad_request(
        quote_field(where + ".function.description") + " must be a string", "tools");
  if (auto p = f->find("parameters"); p != f->end() && !p->is_null()) {
    if (!p->is_object())
      return ApiError::bad_request(quote_field(where + ".function.parameters") +
                                       " must be a JSON schema object, not " +
                                       json_type_phrase(*p),
                                   "tools");
    if (auto pt = p->find("type"); pt != p->end() && *pt != "object")
      return ApiError::bad_request(
          quote_field(where + ".function.parameters") +
              " must describe an object (\"type\": \"object\"): arguments are named",
          "tools");
  }
  if (auto s = f->find("strict"); s != f->end() && !s->is_null() && !s->is_boolean())
    return ApiError::bad_request(quote_field(where + ".function.strict") + " must be a boolean",
                                 "tools");
  return std::nullopt;
}

std::optional<ApiError> read_tool_choice(const Json& c, const std::set<std::string>& names,
                                         ToolChoice& out) {
  const std::string given = c.is_string() ? c.get<std::string>() : "";
  if (given == "auto" || given == "none" || given == "required") {
    out.mode = given == "auto"   ? ToolChoice::Mode::kAuto
               : given == "none" ? ToolChoice::Mode::kNone
                                 : ToolChoice::Mode::kRequired;
  } else if (c.is_object()) {
    auto type = c.find("type");
    auto f = c.find("function");
    if (type == c.end() || *type != "function" || f == c.end() || !f->is_object())
      return ApiError::bad_request(
          "'tool_choice' must be {\"type\": \"function\", \"function\": {\"name\": ...}}",
          "tool_choice");
    if (auto e = need_name(*f, "name", "tool_choice.function", "tool_choice", out.name)) return e;
    if (!names.count(out.name))
      return ApiError::bad_request("'tool_choice' names the function \"" + echo_input(out.name) +
                                       "\", which is not one of 'tools'",
                                   "tool_choice");
    out.mode = ToolChoice::Mode::kNamed;
  } else {
    return ApiError::bad_request(
        "'tool_choice' must be \"auto\", \"none\", \"required\" or a named function",
        "tool_choice");
  }
  if (names.empty() && out.mode == ToolChoice::Mode::kRequired)
    return ApiError::bad_request("'tool_choice' \"required\" needs 'tools'", "tool_choice");
  return std::nullopt;
}

// One replayed call: id, type, function.name and arguments (a JSON string, parsed here).
std::optional<ApiError> prepare_call(Json& call, const std::string& where,
                                     std::set<std::string>& ids) {
  if (!call.is_object())
    return ApiError::bad_request(quote_field(where) + " must be an object", "messages");
  std::string id;
  if (auto e = need_name(call, "id", where, "messages", id)) return e;
  ids.insert(id);
  if (auto type = call.find("type"); type != call.end() && *type != "function")
    return ApiError::bad_request(quote_field(where + ".type") + " must be \"function\"",
                                 "messages");
  auto f = call.find("function");
  if (f == call.end() || !f->is_object())
    return ApiError::bad_request(quote_field(where + ".function") + " must be an object",
                                 "messages");
  std::string name;
  if (auto e = need_name(*f, "name", where + ".function", "messages", name)) return e;
  auto args = f->find("arguments");
  if (args == f->end() || args->is_null()) {
    (*f)["arguments"] = Json::object();
  } else if (args->is_string()) {
    if (json_text_depth(args->get_ref<const std::string&>()) > kMaxJsonDepth)
      return ApiError::bad_request(quote_field(where + ".function.arguments") + " nests deeper than " +
                                       std::to_string(kMaxJsonDepth) + " levels",
                                   "messages");
    Json parsed = Json::parse(args->get_ref<const std::string&>(), nullptr, false);
    if (parsed.is_discarded())
      return ApiError::bad_request(
          quote_field(where + ".function.arguments") + " must hold JSON text (it does not parse)",
          "messages");
    *args = std::move(parsed);
  } else if (!args->is_object()) {
    return ApiError::bad_request(
        quote_field(where + ".function.arguments") + " must be a string of JSON", "messages");
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> read_tool_fields(const Json& body, OpenAiRequest& out) {
  std::set<std::string> names;
  if (auto tools = body.find("tools"); tools != body.end() && !tools->is_null()) {
    if (!tools->is_array())
      return ApiError::bad_request(
          "'tools' must be an array, not " + std::string(json_type_phrase(*tools)), "tools");
    for (size_t i = 0; i < tools->size(); ++i) {
      std::string name;
      if (auto e = read_tool((*tools)[i], at("tools", i), name)) return e;
      if (!names.insert(name).second)
        return ApiError::bad_request("'tools' offers the function \"" + echo_input(name) +
                                         "\" twice",
                                     "tools");
    }
    out.tools = *tools;
  }
  if (auto c = body.find("tool_choice"); c != body.end() && !c->is_null())
    if (auto e = read_tool_choice(*c, names, out.tool_choice)) return e;
  if (auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null()) {
    if (!p->is_boolean())
      return ApiError::bad_request("'parallel_tool_calls' must be a boolean",
                                   "parallel_tool_calls");
    out.parallel_tool_calls = p->get<bool>();
  }
  if (!out.tools.empty() && out.tool_choice.mode != ToolChoice::Mode::kNone)
    out.template_kwargs["tools"] = out.tools;
  return std::nullopt;
}

std::optional<ApiError> prepare_tool_messages(Json& messages) {
  std::set<std::string> call_ids;  // calls made so far in the conversation
  for (size_t i = 0; i < messages.size(); ++i) {
    Json& m = messages[i];
    const std::string where = at("messages", i);
    const std::string& role = m["role"].get_ref<const std::string&>();
    if (role == "assistant") {
      if (m["content"].is_null()) m["content"] = "";
      auto calls = m.find("tool_calls");
      if (calls == m.end() || !calls->is_array()) continue;
      for (size_t j = 0; j < calls->size(); ++j)
        if (auto e = prepare_call((*calls)[j], at(where + ".tool_calls", j), call_ids)) return e;
    } else if (role == "tool") {
      auto id = m.find("tool_call_id");
      if (id == m.end() || !id->is_string() || id->get_ref<const std::string&>().empty())
        return ApiError::bad_request(quote_field(where + ".tool_call_id") +
                                         " is required: a tool message answers one call by its id",
                                     "messages");
      if (!call_ids.count(id->get<std::string>()))
        return ApiError::bad_request(quote_field(where + ".tool_call_id") + " \"" +
                                         echo_input(id->get<std::string>()) +
                                         "\" answers no tool call of an earlier assistant message",
                                     "messages");
    }
  }
  return std::nullopt;
}

}  // namespace sy
