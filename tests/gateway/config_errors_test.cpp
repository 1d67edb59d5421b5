// switchyard-gateway started with a fleet description that cannot run here: a missing or
// non-executable worker.binary, a model path that does not exist, GPU ids this machine
// does not have, a mode wanting more devices than listed. Each must end the gateway at
// once, non-zero, with one line on stderr naming the field, and spawn no worker. And the
// file's relative paths are taken from its folder, whatever folder the gateway runs in.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fixture_util.h"
#include "gateway/gateway_process.h"

namespace sy {
namespace {

namespace fs = std::filesystem;
using testing::GatewayProcess;

const std::string kGateway = std::string(SY_BIN_DIR) + "/switchyard-gateway";

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sy-config-errors-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string write(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

TEST(GatewayConfigErrors, EachIsOneLineNamingTheFieldAndAnImmediateExit) {
  TempDir dir;
  const std::string model = dir.write("models/m.gguf", "not read: the checks come first");
  const std::string not_executable = dir.write("bin/not-executable", "#!/bin/sh\n");
  const std::string worker = std::string(SY_BIN_DIR) + "/switchyard-worker";
  const std::string head = "listen: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n";
  struct Row {
    std::string name, yaml;
    std::vector<std::string> flags;
    std::string needle;
  };
  const std::vector<Row> rows = {
      {"missing-binary",
       head + "model: " + model + "\nmodes: {throughput: {replicas: 2}}\nworker: {binary: " +
           dir.path() + "/bin/absent}\n",
       {},
       "worker.binary: '" + dir.path() + "/bin/absent' does not exist"},
      // Relative to the file's folder, not to the test's working directory.
      {"relative-missing-binary",
       head + "model: models/m.gguf\nmodes: {throughput: {replicas: 1}}\nworker: {binary: "
              "bin/absent}\n",
       {},
       "worker.binary: '" + dir.path() + "/bin/absent' does not exist"},
      {"binary-not-executable",
       head + "model: " + model +
           "\nmodes: {throughput: {replicas: 1}}\nworker: {binary: bin/not-executable}\n",
       {},
       "worker.binary: '" + not_executable + "' is not executable"},
      {"missing-model",
       head + "model: models/absent.gguf\nmodes: {throughput: {replicas: 1}}\nworker: {binary: " +
           worker + "}\n",
       {},
       "model: '" + dir.path() + "/models/absent.gguf' does not exist"},
      // A flag stays relative to the working directory (the test's: not where the file is).
      {"missing-model-flag",
       head + "model: models/m.gguf\nmodes: {throughput: {replicas: 1}}\nworker: {binary: " +
           worker + "}\n",
       {"--model", "sy-absent-model.gguf"},
       "--model: 'sy-absent-model.gguf' does not exist"},
      {"gpu-absent",
       head +
           "model: models/m.gguf\ndevices: [\"9999\"]\nmodes: {throughput: {replicas: 1}}\nworker: "
           "{binary: " +
           worker + "}\n",
       {},
       "devices[0]: GPU 9999 does not exist"},
      {"mode-wants-more-devices",
       head +
           "model: models/m.gguf\ndevices: [\"0\"]\nmodes: {throughput: {replicas: 2}}\nworker: "
           "{binary: " +
           worker + "}\n",
       {},
       "modes.throughput: 2 replicas × 1 devices need 2 devices, more than the 1 listed"},
      {"unknown-mode-flag",
       head + "model: models/m.gguf\nmodes: {throughput: {replicas: 1}}\nworker: {binary: " +
           worker + "}\n",
       {"--mode", "latency"},
       "default_mode: 'latency' is not one of the modes"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const std::string config = dir.write(r.name + ".yaml", r.yaml);
    std::vector<std::string> args = {"--config", config};
    args.insert(args.end(), r.flags.begin(), r.flags.end());
    GatewayProcess gw(kGateway, args, dir.path() + "/" + r.name + ".log", std::chrono::seconds(10));
    const std::optional<int> code = gw.wait_for_exit(std::chrono::seconds(5));
    ASSERT_TRUE(code.has_value()) << "still running; log:\n" << gw.log();
    EXPECT_NE(*code, 0);
    EXPECT_EQ(gw.port(), 0) << "it listened";
    const std::vector<std::string> lines = lines_of(gw.log());
    ASSERT_EQ(lines.size(), 1u) << gw.log();
    EXPECT_EQ(lines[0].rfind("error: ", 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find(r.needle), std::string::npos) << lines[0] << "\nwanted: " << r.needle;
  }
}

// The same relative file, started from another folder: it serves.
TEST(GatewayConfigErrors, RelativePathsInTheFileWorkFromAnyFolder) {
  TempDir dir;
  fs::create_directories(dir.path() + "/models");
  fs::create_directories(dir.path() + "/bin");
  fs::create_symlink(testing::fixture_path("qwen3-tiny-bf16.gguf"),
                     dir.path() + "/models/tiny.gguf");
  fs::create_symlink(std::string(SY_BIN_DIR) + "/switchyard-worker",
                     dir.path() + "/bin/switchyard-worker");
  const std::string config =
      dir.write("fleet/replicas.yaml",
                "model: ../models/tiny.gguf\nlisten: 127.0.0.1:0\nadmin_listen: 127.0.0.1:0\n"
                "modes: {throughput: {replicas: 1}}\n"
                "worker: {binary: ../bin/switchyard-worker, kv_memory_gb: 0.1}\n"
                "shutdown: {drain_grace_s: 1, worker_stop_grace_s: 2}\n");
  GatewayProcess gw(kGateway, {"--config", config}, dir.path() + "/gateway.log",
                    std::chrono::seconds(30));
  ASSERT_NE(gw.port(), 0) << gw.log();
  // The worker spawned from the resolved path: its ready line reaches the gateway's log.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (gw.log().find("supervisor: r0 ready") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_NE(gw.log().find("supervisor: r0 ready"), std::string::npos) << gw.log();
  EXPECT_EQ(gw.terminate(), 0) << gw.log();
  EXPECT_TRUE(gw.processes_with_its_boot_ids().empty());
}

}  // namespace
}  // namespace sy
