// switchyard-allreduce-bench: the all-reduce of a tensor-parallel step, one-shot peer
// kernels against NCCL, eager and replayed from a CUDA graph, 8 KB to 8 MB per rank.
// One thread per rank, as in the worker. Each result is checked against the exact sum
// before its time is printed. Ranks sharing one GPU (--devices 0,0) run the local kind in
// place of peer (host-synchronized, eager only): that checks the tool and measures
// nothing about NVLink; NCCL needs distinct GPUs.
//
//   switchyard-allreduce-bench [--devices 0,1] [--iters 200]
//
// Prints one row per size: microseconds per all-reduce (median of 5 runs of `iters`
// calls) for peer eager, peer graph, nccl eager, nccl graph, and which is faster in a
// graph (the decode steps replay graphs).
#include <cuda_runtime.h>

#include <algorithm>
#include <barrier>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "worker/parallel/communicator.h"

namespace {

using sy::parallel::Communicator;
using sy::parallel::CommunicatorGroup;

void die(const std::string& what) {
  std::fprintf(stderr, "allreduce-bench: %s\n", what.c_str());
  std::exit(1);
}

void ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) die(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Result {
  double eager_us = 0, graph_us = 0;
  bool correct = true;
};

// Every rank holds rank+1 in each element; one all-reduce gives Σ (r+1) exactly. The
// timed runs keep reducing the running value (it overflows to inf, which costs the same),
// so correctness is checked on a fresh value before and after them.
Result measure(CommunicatorGroup& group, size_t n, int iters) {
  const int size = static_cast<int>(group.size());
  std::barrier sync(size);
  std::vector<Result> results(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      Communicator& c = *group[static_cast<size_t>(r)];
      ok(cudaSetDevice(c.device()), "selecting the device");
      cudaStream_t stream;
      ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
      float* data = nullptr;
      ok(cudaMalloc(&data, n * sizeof(float)), "allocating");
      cudaEvent_t start, stop;
      ok(cudaEventCreate(&start), "event");
      ok(cudaEventCreate(&stop), "event");
      const std::vector<float> init(n, static_cast<float>(r + 1));
      auto reset = [&] { ok(cudaMemcpyAsync(data, init.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream), "copy"); };
      auto check = [&] {
        std::vector<float> got(n);
        ok(cudaMemcpyAsync(got.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost, stream), "copy");
        ok(cudaStreamSynchronize(stream), "sync");
        const double want = size * (size + 1) / 2.0;
        for (float v : got)
          if (static_cast<double>(v) != want) results[static_cast<size_t>(r)].correct = false;
      };
      auto time_calls = [&](auto&& enqueue) {
        std::vector<double> runs;
        for (int run = 0; run < 5; ++run) {
          sync.arrive_and_wait();
          ok(cudaEventRecord(start, stream), "event");
          enqueue();
          ok(cudaEventRecord(stop, stream), "event");
          ok(cudaEventSynchronize(stop), "event");
          float ms = 0;
          ok(cudaEventElapsedTime(&ms, start, stop), "event");
          runs.push_back(1000.0 * ms / iters);
        }
        std::sort(runs.begin(), runs.end());
        return runs[2];
      };
      // Correctness first: one call on known values.
      reset();
      sync.arrive_and_wait();
      if (!c.all_reduce_sum(data, n, stream).ok()) die("all-reduce failed");
      check();
      results[static_cast<size_t>(r)].eager_us = time_calls([&] {
        for (int i = 0; i < iters; ++i)
          if (!c.all_reduce_sum(data, n, stream).ok()) die("all-reduce failed");
      });
      // A graph of `iters` all-reduces, replayed.
      if (!c.capturable()) {
        sync.arrive_and_wait();
        cudaFree(data);
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        cudaStreamDestroy(stream);
        return;
      }
      cudaGraph_t graph;
      ok(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "capture");
      for (int i = 0; i < iters; ++i)
        if (!c.all_reduce_sum(data, n, stream).ok()) die("all-reduce failed in capture");
      ok(cudaStreamEndCapture(stream, &graph), "capture");
      cudaGraphExec_t exec;
      ok(cudaGraphInstantiate(&exec, graph, 0), "instantiate");
      sync.arrive_and_wait();
      results[static_cast<size_t>(r)].graph_us = time_calls([&] { ok(cudaGraphLaunch(exec, stream), "replay"); });
      reset();
      sync.arrive_and_wait();
      if (!c.all_reduce_sum(data, n, stream).ok()) die("all-reduce failed");
      check();
      sync.arrive_and_wait();
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaFree(data);
      cudaEventDestroy(start);
      cudaEventDestroy(stop);
      cudaStreamDestroy(stream);
    });
  }
  for (auto& t : threads) t.join();
  Result out = results[0];
  for (const Result& r : results) out.correct = out.correct && r.correct;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> devices;
  int iters = 200;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--devices" && i + 1 < argc) {
      const std::string list = argv[++i];
      for (size_t p = 0; p <= list.size();) {
        const size_t e = std::min(list.find(',', p), list.size());
        devices.push_back(std::atoi(list.substr(p, e - p).c_str()));
        p = e + 1;
      }
    } else if (a == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else {
      die("usage: switchyard-allreduce-bench [--devices 0,1] [--iters 200]");
    }
  }
  int count = 0;
  ok(cudaGetDeviceCount(&count), "counting devices");
  if (devices.empty()) {
    for (int d = 0; d < std::min(count, 8); ++d) devices.push_back(d);
    if (devices.size() == 1) devices.push_back(0);
  }
  std::vector<int> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  const bool shared = std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end();
  const std::vector<std::string> kinds = sy::parallel::communicator_kinds();
  const bool nccl = !shared && std::find(kinds.begin(), kinds.end(), "nccl") != kinds.end();
  sy::parallel::CommunicatorOptions options;
  options.size = static_cast<int>(devices.size());
  options.devices = devices;
  CommunicatorGroup peer = sy::parallel::create_communicators(shared ? "local" : "peer", options);
  CommunicatorGroup ring;
  if (nccl) ring = sy::parallel::create_communicators("nccl", options);
  std::printf("%zu ranks on devices", devices.size());
  for (int d : devices) std::printf(" %d", d);
  std::printf("%s; %d calls per run, median of 5 runs; microseconds per all-reduce\n",
              shared ? " (shared: not an NVLink measurement)" : "", iters);
  std::printf("%10s %12s %12s %12s %12s  %s\n", "bytes/rank", shared ? "local eager" : "peer eager", "peer graph", "nccl eager", "nccl graph",
              "faster in a graph");
  for (size_t bytes = size_t{8} << 10; bytes <= size_t{8} << 20; bytes *= 2) {
    const size_t n = bytes / sizeof(float);
    const Result p = measure(peer, n, iters);
    Result r;
    if (nccl) r = measure(ring, n, iters);
    if (!p.correct || !r.correct) die("wrong sum at " + std::to_string(bytes) + " bytes: no time printed");
    if (shared)
      std::printf("%10zu %12.1f %12s %12s %12s  -\n", bytes, p.eager_us, "-", "-", "-");
    else if (nccl)
      std::printf("%10zu %12.1f %12.1f %12.1f %12.1f  %s\n", bytes, p.eager_us, p.graph_us, r.eager_us, r.graph_us,
                  p.graph_us < r.graph_us ? "peer" : "nccl");
    else
      std::printf("%10zu %12.1f %12.1f %12s %12s  -\n", bytes, p.eager_us, p.graph_us, "-", "-");
  }
  return 0;
}
