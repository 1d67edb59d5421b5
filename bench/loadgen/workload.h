// The prompts a run sends: lines of a JSONL workload file, or generated English text of
// about the requested length. Request i uses entry i mod size (generated prompts are
// unique per request, so that no prefix cache serves one request from another).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sy::bench {

// Characters of generated prompt text per token (the tokenizers of the fixture models).
inline constexpr double kCharsPerToken = 4.75;

enum class Endpoint { kCompletions, kChat };
const char* endpoint_path(Endpoint e);  // "/v1/completions" | "/v1/chat/completions"

struct WorkItem {
  Endpoint endpoint = Endpoint::kCompletions;
  nlohmann::json input;               // the prompt (completions) or the messages (chat)
  std::optional<int64_t> max_tokens;  // from the workload line; else --max-tokens
};

// What every request of a run shares.
struct RequestTemplate {
  std::string model;
  int64_t max_tokens = 128;
  double temperature = 0;
  std::optional<nlohmann::json> priority;           // an integer or a class name, as given
  nlohmann::json extra = nlohmann::json::object();  // --extra-body; the fields above win
};

class Workload {
 public:
  // A JSONL file: one object per line, {"prompt": ...} or {"messages": [...]}, each with
  // an optional positive "max_tokens". Blank lines are skipped. Throws
  // std::runtime_error naming the line on anything else.
  static Workload from_file(const std::string& path);
  // Prompts of about `prompt_tokens` tokens of English prose (4.75 characters a token),
  // each starting with its request number.
  static Workload generated(int64_t prompt_tokens, Endpoint endpoint);

  WorkItem item(int64_t index) const;
  size_t size() const { return items_.size(); }
  bool is_generated() const { return generated_tokens_ > 0; }

 private:
  std::vector<WorkItem> items_;
  int64_t generated_tokens_ = 0;
  Endpoint generated_endpoint_ = Endpoint::kCompletions;
};

// English text of at least `chars` characters (whole words), for generated prompts.
std::string english_text(size_t chars);

// The JSON body of one streaming request.
std::string request_body(const WorkItem& item, const RequestTemplate& t);
// The max_tokens that request_body() asks for.
int64_t requested_max_tokens(const WorkItem& item, const RequestTemplate& t);

}  // namespace sy::bench
