// switchyard-worker chat: the prompt a chat request renders to, printed as the server would
// build it: the messages (and tools) go through the OpenAI request parser (tool-call
// arguments parsed, null content, tool_choice) and the model's own chat template.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/chat_template.h"
#include "common/cli/args.h"
#include "common/model_source.h"
#include "common/protocol/openai.h"
#include "common/protocol/prompt.h"
#include "common/tokenizer/tokenizer.h"
#include "worker/cli/commands.h"

namespace sy::cli {
namespace {

// A JSON file: the value itself, or its `key` member when it is an object holding one.
Json read_json_file(const std::string& path, const char* key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  Json j = Json::parse(text.str(), nullptr, false);
  if (j.is_discarded()) throw std::runtime_error(path + ": invalid JSON");
  if (j.is_object() && j.contains(key)) return j[key];
  return j;
}

}  // namespace

int run_chat_prompt(const std::vector<std::string>& argv) {
  Args a(argv, {"model", "messages", "tools", "tool-choice", "template-kwargs"}, {"no-thinking", "no-generation-prompt"});
  Json body = Json::object();
  body["messages"] = read_json_file(a.get("messages"), "messages");
  if (a.has("tools")) body["tools"] = read_json_file(a.get("tools"), "tools");
  if (a.has("tool-choice")) {
    const std::string choice = a.get("tool-choice");
    Json parsed = Json::parse(choice, nullptr, false);
    body["tool_choice"] = parsed.is_discarded() ? Json(choice) : parsed;
  }
  Json kwargs = Json::object();
  if (a.has("template-kwargs")) {
    kwargs = Json::parse(a.get("template-kwargs"), nullptr, false);
    if (!kwargs.is_object()) throw UsageError("--template-kwargs must be a JSON object, e.g. '{\"enable_thinking\": false}'");
  }
  if (a.has("no-thinking")) kwargs["enable_thinking"] = false;
  body["chat_template_kwargs"] = kwargs;
  if (a.has("no-generation-prompt")) body["add_generation_prompt"] = false;

  OpenAiRequest req;
  if (auto e = parse_chat_request(body.dump(), req)) throw std::runtime_error(e->message);
  auto src = ModelSource::open(a.get("model"));
  auto tok = Tokenizer::from_model(*src);
  const ChatTemplate tmpl = ChatTemplate::from_model(*src, tok->bos_token(), tok->eos_token());
  std::string text;
  if (auto e = render_chat_prompt(req, &tmpl, text)) throw std::runtime_error(e->message);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

}  // namespace sy::cli
