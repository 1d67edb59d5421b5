#include "bench/loadgen/workload.h"

#include <fstream>
#include <stdexcept>

namespace sy::bench {

namespace {

using nlohmann::json;

// Plain English prose, so that generated prompts tokenize the way real text does.
// Llama 3's and Qwen3's tokenizers both make 281 tokens of this text's 1,337 characters.
constexpr const char* kProse =
    "Every harbor keeps two clocks. One is the clock on the wall of the harbor office, which "
    "tells the pilots when the morning ferry is due and when the fish market opens. The other "
    "is the tide, which keeps its own time and answers to the moon. A captain who forgets the "
    "second clock will find his boat resting on the mud, however carefully he watched the first. "
    "The old harbor masters wrote the tides in a book with a green cover, one page for each "
    "month, and they argued about the numbers as if they were family matters. A storm in the "
    "north could raise the water by a hand's width; a steady wind from the land could hold it "
    "back for an hour. The book was never quite right, and everyone knew it, but it was right "
    "often enough that nobody wanted to sail without it. When the new instruments arrived, "
    "measuring the water every minute and sending the readings down a wire, the harbor masters "
    "were suspicious at first. Then they noticed that the instruments agreed with the book on "
    "quiet days and disagreed with it on exactly the days when the book had been wrong before. "
    "After that the green book stayed on the shelf, and the younger pilots learned to read the "
    "graphs instead. Still, on winter evenings, some of the older men would take it down and "
    "turn the pages, not to check the tides but to remember the storms that had made them "
    "wrong. ";

Endpoint endpoint_of(const json& line, size_t lineno) {
  const bool prompt = line.contains("prompt");
  const bool messages = line.contains("messages");
  if (prompt == messages)
    throw std::runtime_error("workload line " + std::to_string(lineno) +
                             ": needs exactly one of \"prompt\" or \"messages\"");
  if (messages && (!line["messages"].is_array() || line["messages"].empty()))
    throw std::runtime_error("workload line " + std::to_string(lineno) +
                             ": \"messages\" must be a non-empty array");
  return prompt ? Endpoint::kCompletions : Endpoint::kChat;
}

}  // namespace

const char* endpoint_path(Endpoint e) {
  return e == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions";
}

std::string english_text(size_t chars) {
  std::string out;
  while (out.size() < chars) out += kProse;
  // Cut after a word, not inside one.
  const size_t cut = out.find(' ', chars);
  if (cut != std::string::npos) out.resize(cut);
  return out;
}

Workload Workload::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open workload file " + path);
  Workload w;
  std::string text;
  for (size_t lineno = 1; std::getline(in, text); ++lineno) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const json line = json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.is_object())
      throw std::runtime_error("workload line " + std::to_string(lineno) + ": not a JSON object");
    for (const auto& [key, value] : line.items())
      if (key != "prompt" && key != "messages" && key != "max_tokens")
        throw std::runtime_error("workload line " + std::to_string(lineno) + ": unknown key \"" +
                                 key + "\"");
    WorkItem item;
    item.endpoint = endpoint_of(line, lineno);
    item.input = item.endpoint == Endpoint::kChat ? line["messages"] : line["prompt"];
    if (line.contains("max_tokens")) {
      const json& m = line["max_tokens"];
      if (!m.is_number_integer() || m.get<int64_t>() < 1)
        throw std::runtime_error("workload line " + std::to_string(lineno) +
                                 ": max_tokens must be a positive integer");
      item.max_tokens = m.get<int64_t>();
    }
    w.items_.push_back(std::move(item));
  }
  if (w.items_.empty()) throw std::runtime_error("workload file " + path + " has no requests");
  return w;
}

Workload Workload::generated(int64_t prompt_tokens, Endpoint endpoint) {
  if (prompt_tokens < 1) throw std::runtime_error("--prompt-tokens must be >= 1");
  Workload w;
  w.generated_tokens_ = prompt_tokens;
  w.generated_endpoint_ = endpoint;
  return w;
}

WorkItem Workload::item(int64_t index) const {
  if (generated_tokens_ == 0) return items_[static_cast<size_t>(index) % items_.size()];
  // The request number comes first: a distinct first token makes every block hash of
  // the prompt distinct, so each request pays for its whole prefill.
  std::string text = "Request " + std::to_string(index) + ". ";
  const size_t want = static_cast<size_t>(static_cast<double>(generated_tokens_) * kCharsPerToken);
  text += english_text(want > text.size() ? want - text.size() : 1);
  WorkItem item;
  item.endpoint = generated_endpoint_;
  if (generated_endpoint_ == Endpoint::kChat)
    item.input = json::array({{{"role", "user"}, {"content", std::move(text)}}});
  else
    item.input = std::move(text);
  return item;
}

int64_t requested_max_tokens(const WorkItem& item, const RequestTemplate& t) {
  return item.max_tokens.value_or(t.max_tokens);
}

std::string request_body(const WorkItem& item, const RequestTemplate& t) {
  json body = t.extra.is_object() ? t.extra : json::object();
  body["model"] = t.model;
  body[item.endpoint == Endpoint::kChat ? "messages" : "prompt"] = item.input;
  body["max_tokens"] = requested_max_tokens(item, t);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  body["ignore_eos"] = true;  // so that every response has exactly max_tokens tokens
  body["temperature"] = t.temperature;
  if (t.priority) body["priority"] = *t.priority;
  return body.dump();
}

}  // namespace sy::bench
