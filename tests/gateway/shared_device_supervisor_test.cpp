// Several replicas on one GPU (issue 20, item 2), on a machine without one: the
// supervisor starts a stand-in worker (a shell script that writes down its environment
// and arguments) for each replica of `devices: ["0", "0", "0"]`, and each gets
// CUDA_VISIBLE_DEVICES=0, --device cuda, its own --kv-memory-gb and its own
// --kv-host-gb (worker.kv_host_gb, the KV host tier).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gateway/supervisor.h"

namespace sy::gateway {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(SharedDeviceSupervisor, EachReplicaOnTheSharedGpuGetsItsShare) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("sy_shared_gpu_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string script = (dir / "worker.sh").string(), seen = (dir / "seen.txt").string();
  // Never ready: it records how it was started and waits to be stopped.
  std::ofstream(script) << "#!/bin/sh\necho \"CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES $*\" >> "
                        << seen << "\nexec sleep 60\n";
  ::chmod(script.c_str(), 0755);
  SupervisorOptions options;
  options.fleet = FleetConfig::parse(
      "model: m.gguf\ndevices: [\"0\", \"0\", \"0\"]\nmodes: {throughput: {replicas: 3}}\n"
      "worker: {binary: " +
          script +
          ", kv_memory_gb: 14, kv_host_gb: 16}\n"
          "startup: {max_parallel_loads: 3, stagger_s: 0}\n",
      "test.yaml");
  options.gateway_id = "t";
  options.log = [](const std::string&) {};
  boost::asio::io_context ioc;
  auto sup = std::make_shared<Supervisor>(ioc.get_executor(), options);
  sup->start(options.fleet.modes.at("throughput"));
  // Bounded wait for the three starts (not a timing assertion: the check is what they got).
  for (int i = 0; i < 400 && lines_of(seen).size() < 3; ++i)
    ioc.run_for(std::chrono::milliseconds(25));
  bool stopped = false;
  sup->stop_all(std::chrono::milliseconds(500), [&] { stopped = true; });
  for (int i = 0; i < 400 && !stopped; ++i) ioc.run_for(std::chrono::milliseconds(25));
  EXPECT_TRUE(stopped);
  const auto lines = lines_of(seen);
  ASSERT_EQ(lines.size(), 3u);
  for (const std::string& l : lines) {
    EXPECT_EQ(l.rfind("CUDA_VISIBLE_DEVICES=0 serve ", 0), 0u) << l;
    EXPECT_NE(l.find(" --device cuda"), std::string::npos) << l;
    EXPECT_NE(l.find(" --kv-memory-gb 14"), std::string::npos) << l;
    EXPECT_NE(l.find(" --kv-host-gb 16"), std::string::npos) << l;
    EXPECT_EQ(l.find(" --tp "), std::string::npos) << l;
  }
  for (const auto& r : sup->replicas()) EXPECT_EQ(r.devices, std::vector<std::string>{"0"});
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sy::gateway
