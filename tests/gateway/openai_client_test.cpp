// The official `openai` npm client (openai_client_check.mjs) against a real gateway and
// worker on loopback: tool calls with tool_choice "required" streamed and not, and
// reasoning_content. The model is the Qwen3 fixture with a template that opens <think>
// (as Qwen3's thinking-only releases do) unless enable_thinking is false, which the
// gateway's config sets by default (chat_template_kwargs); a request's own value wins.
//
// The client is installed with npm into the build tree (SY_NODE_DIR) on first run; when
// node or the npm registry is missing the test fails saying so, it does not skip.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "fixture_util.h"
#include "gateway/gateway_process.h"
#include "worker/fixture_edit.h"
#include "worker/worker_process.h"

namespace sy {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::http_request;
using testing::HttpResult;

// 7.x needs Node 22, 6.x Node 20: this machine's NodeSource nodejs (Debian 12's own is 18).
constexpr const char* kOpenAiPackage = "openai@6.30.1";

// Runs a shell command; its exit status and output (stderr included).
std::pair<int, std::string> run(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// The Qwen3 fixture whose generation prompt opens <think> unless enable_thinking is false.
std::string thinking_fixture() {
  const fs::path dir = testing::temp_path("qwen3-thinking");
  fs::create_directories(dir);
  for (const auto& e : fs::directory_iterator(testing::fixture_path("qwen3-tiny")))
    if (!fs::exists(dir / e.path().filename())) fs::create_symlink(e.path(), dir / e.path().filename());
  std::ifstream in(testing::fixture_path("qwen3-tiny") + "/chat_template.jinja");
  std::string t((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string closed = "{{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- endif %}";
  const size_t at = t.find(closed);
  if (at == std::string::npos) return "";
  t.replace(at, closed.size(), "{{- '<think>\\n\\n</think>\\n\\n' }}\n    {%- else %}\n        {{- '<think>\\n' }}\n    {%- endif %}");
  fs::remove(dir / "chat_template.jinja");
  std::ofstream(dir / "chat_template.jinja") << t;
  return dir.string();
}

class OpenAiClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = thinking_fixture();
    ASSERT_FALSE(model_.empty()) << "the Qwen3 fixture's template changed: its generation prompt was not found";
    config_ = testing::temp_path("openai_client.yaml");
    std::ofstream(config_) << "model: " << model_ << "\nserved_model_name: tiny\n"
                           << "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\ndevices: [cpu]\n"
                           << "modes:\n  throughput: {replicas: 1}\n"
                           << "worker: {binary: " << SY_BIN_DIR << "/switchyard-worker, kv_memory_gb: 0.2, max_num_seqs: 4}\n"
                           << "startup: {stagger_s: 0, ready_timeout_s: 60}\n"
                           << "chat_template_kwargs: {enable_thinking: false}\n";
    gw_ = new testing::GatewayProcess(std::string(SY_BIN_DIR) + "/switchyard-gateway", {"--config", config_},
                                      testing::temp_path("openai_client.log"));
    ASSERT_GT(gw_->port(), 0) << gw_->log();
    const json probe = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 1}};
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (std::chrono::steady_clock::now() < deadline && chat(probe).status != 200)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  static void TearDownTestSuite() {
    delete gw_;
    fs::remove(config_);
    fs::remove_all(model_);
  }
  static HttpResult chat(const json& body) { return http_request(gw_->port(), "POST", "/v1/chat/completions", body.dump()); }

  static std::string model_, config_;
  static testing::GatewayProcess* gw_;
};
std::string OpenAiClientTest::model_, OpenAiClientTest::config_;
testing::GatewayProcess* OpenAiClientTest::gw_ = nullptr;

// The config's chat_template_kwargs apply under each request's own.
TEST_F(OpenAiClientTest, ConfigTemplateKwargsAreTheDefault) {
  auto prompt_tokens = [](const json& kwargs) {
    json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 1}};
    if (!kwargs.is_null()) body["chat_template_kwargs"] = kwargs;
    const HttpResult h = chat(body);
    EXPECT_EQ(h.status, 200) << h.body;
    return h.status == 200 ? h.json()["usage"]["prompt_tokens"].get<int>() : -1;
  };
  const int by_default = prompt_tokens(nullptr);
  EXPECT_EQ(by_default, prompt_tokens({{"enable_thinking", false}}));
  // "<think>\n\n</think>\n\n" against "<think>\n": two tokens more.
  EXPECT_EQ(by_default, prompt_tokens({{"enable_thinking", true}}) + 2);
}

TEST_F(OpenAiClientTest, OfficialClientReadsToolCallsAndReasoning) {
  const fs::path node_dir = SY_NODE_DIR;
  const auto [node_rc, node_version] = run("node --version");
  ASSERT_EQ(node_rc, 0) << "node is not installed (scripts/setup.sh installs nodejs and npm)";
  ASSERT_GE(std::atoi(node_version.c_str() + (node_version.starts_with("v") ? 1 : 0)), 20)
      << kOpenAiPackage << " needs Node 20 or later; this is " << node_version;
  if (!fs::exists(node_dir / "node_modules" / "openai" / "package.json")) {
    fs::create_directories(node_dir);
    const auto [rc, out] = run("cd " + node_dir.string() + " && timeout 300 npm install --no-audit --no-fund --prefix . " + kOpenAiPackage);
    ASSERT_EQ(rc, 0) << "npm could not install " << kOpenAiPackage << " into " << node_dir
                     << " (is the npm registry reachable?):\n" << out;
  }
  // ESM resolves `openai` from the script's own folder: run a copy that sits beside node_modules.
  fs::copy_file(std::string(SY_SOURCE_DIR) + "/tests/gateway/openai_client_check.mjs", node_dir / "openai_client_check.mjs",
                fs::copy_options::overwrite_existing);
  const std::string base = "http://127.0.0.1:" + std::to_string(gw_->port()) + "/v1";
  const auto [rc, out] = run("cd " + node_dir.string() + " && timeout 300 node openai_client_check.mjs " + base + " tiny");
  EXPECT_EQ(rc, 0) << out << "\ngateway log:\n" << gw_->log();
  EXPECT_NE(out.find("\"call_3\":{"), std::string::npos) << out;
  EXPECT_NE(out.find("\"name\":\"get_"), std::string::npos) << out;
  EXPECT_NE(out.find("\"reasoning\":\""), std::string::npos) << out;
  std::printf("%s", out.c_str());
}

}  // namespace
}  // namespace sy
