// switchyard-gateway --config FILE [--model PATH] [--listen HOST:PORT] [--mode NAME]
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/cli/args.h"
#include "common/config/host_check.h"
#include "gateway/gateway.h"

int main(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
      std::puts("usage: switchyard-gateway --config replicas.yaml [--model PATH] [--listen HOST:PORT] [--admin-listen HOST:PORT] [--mode NAME]");
      return 0;
    }
    sy::cli::Args a(args, {"config", "model", "listen", "admin-listen", "mode"}, {});
    sy::FleetConfig config = sy::FleetConfig::load(a.get("config"));
    if (a.has("model")) {
      config.model = a.get("model");
      config.served_model_name = std::filesystem::path(config.model).stem().string();
    }
    if (a.has("listen")) config.listen = a.get("listen");
    if (a.has("admin-listen")) config.admin_listen = a.get("admin-listen");
    if (a.has("mode")) config.default_mode = a.get("mode");
    if (config.worker.binary.empty())  // the worker built beside this gateway, wherever it runs from
      config.worker.binary = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "switchyard-worker").string();
    config.validate("command line");
    // Before the model is loaded or any worker spawned: a missing file or GPU is one line
    // naming the field, not a fleet that restarts forever.
    if (const auto problem = sy::host_problem(config, sy::probe_host_devices())) {
      const std::string from = problem->first == "model" && a.has("model") ? "--model" : a.get("config") + ": " + problem->first;
      std::fprintf(stderr, "error: %s: %s\n", from.c_str(), problem->second.c_str());
      return 1;
    }
    sy::gateway::Gateway gw(std::move(config));
    return gw.run();
  } catch (const sy::cli::UsageError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
