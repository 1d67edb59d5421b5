// The peer and local communicators against a host reference: random inputs per rank,
// NaN-poisoned outputs, sums compared bit-for-bit with the host's rank-order sum. local:
// 2 and 4 ranks sharing GPU 0; peer (the one-shot kernels' flag rounds): one rank per
// GPU, where the machine has two or more. Skips without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "worker/parallel/communicator.h"
#include "worker/parallel/peer_communicator.h"
#include "device_ranks.h"

namespace sy::parallel {
namespace {

using namespace testing;

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

struct Layout {
  std::string kind;
  std::vector<int> devices;
};

// What to test: local with ranks sharing GPU 0; peer and local with one rank per GPU
// where there are 2+.
std::vector<Layout> layouts() {
  std::vector<Layout> out;
  if (device_count() == 0) return out;
  out.push_back({"local", {0, 0}});
  out.push_back({"local", {0, 0, 0, 0}});
  if (device_count() >= 2) {
    std::vector<int> all;
    for (int d = 0; d < std::min(device_count(), 8); ++d) all.push_back(d);
    out.push_back({"peer", all});
    out.push_back({"local", all});
  }
  return out;
}

CommunicatorGroup make_group(const Layout& l, size_t staging_floats) {
  return l.kind == "peer" ? make_peer_group(l.devices, staging_floats) : make_local_group(l.devices, staging_floats);
}

class PeerCollectives : public ::testing::TestWithParam<size_t> {};

// Sizes: nothing, a few floats, a decode step's hidden state, one staging buffer
// exactly, and three pieces of one.
INSTANTIATE_TEST_SUITE_P(Sizes, PeerCollectives, ::testing::Values(size_t{0}, size_t{1}, size_t{3}, size_t{2048}, size_t{50000}, size_t{123457}));

TEST_P(PeerCollectives, MatchHostReference) {
  if (device_count() == 0) GTEST_SKIP() << "needs a CUDA device";
  const size_t n = GetParam();
  for (const Layout& layout : layouts()) {
    // A small staging buffer so that the larger sizes run in several pieces.
    CommunicatorGroup group = make_group(layout, 50000);
    const int size = static_cast<int>(group.size());
    {
      std::vector<float> sum(n, 0.0f), gathered;
      for (int r = 0; r < size; ++r) {
        const std::vector<float> v = rank_values(r, n);
        for (size_t i = 0; i < n; ++i) sum[i] += v[i];  // rank order, as the kernel sums
        gathered.insert(gathered.end(), v.begin(), v.end());
      }
      run_ranks(group, [&](Communicator& c, const std::function<void()>& meet) {
        EXPECT_EQ(c.kind(), layout.kind);
        EXPECT_EQ(c.memory(), MemoryKind::kDevice);
        cudaStream_t stream;
        CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        const std::vector<float> mine = rank_values(c.rank(), n);
        float *data = nullptr, *recv = nullptr;
        CUDA_OK(cudaMalloc(&data, std::max<size_t>(n, 1) * sizeof(float)));
        CUDA_OK(cudaMalloc(&recv, std::max<size_t>(n * size, 1) * sizeof(float)));
        CUDA_OK(cudaMemcpy(data, mine.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        CUDA_OK(cudaMemset(recv, 0xff, n * size * sizeof(float)));  // NaN poison
        CUDA_OK(cudaDeviceSynchronize());  // the setup done before any collective
        meet();

        EXPECT_TRUE(c.all_gather(data, n, recv, stream).ok());
        EXPECT_TRUE(c.all_reduce_sum(data, n, stream).ok());
        EXPECT_TRUE(c.barrier(stream).ok());
        CUDA_OK(cudaStreamSynchronize(stream));
        std::vector<float> out(n), all(n * size);
        CUDA_OK(cudaMemcpy(out.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(all.data(), recv, n * size * sizeof(float), cudaMemcpyDeviceToHost));
        EXPECT_EQ(all, gathered);
        EXPECT_EQ(out, sum);  // the same bits as the host's rank-order sum, on every rank

        const int root = size - 1;
        CUDA_OK(cudaMemcpy(data, mine.data(), n * sizeof(float), cudaMemcpyHostToDevice));
        EXPECT_TRUE(c.broadcast(data, n, root, stream).ok());
        CUDA_OK(cudaStreamSynchronize(stream));
        CUDA_OK(cudaMemcpy(out.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost));
        EXPECT_EQ(out, rank_values(root, n));
        meet();
        cudaFree(data);
        cudaFree(recv);
        cudaStreamDestroy(stream);
      });
    }
  }
}

// A graph captured once replays with new inputs: the flags are sequence numbers the
// kernel keeps on the device, not launch arguments.
TEST(PeerCommunicator, AllReduceReplaysFromACudaGraph) {
  if (device_count() < 2) GTEST_SKIP() << "needs two CUDA devices (the peer kind)";
  for (const Layout& layout : layouts()) {
    if (layout.kind == "local") continue;  // not capturable
    CommunicatorGroup group = make_group(layout, size_t{4} << 20);
    const int size = static_cast<int>(group.size());
    const size_t n = 4096;  // a decode step's hidden state
    run_ranks(group, [&](Communicator& c, const std::function<void()>& meet) {
      cudaStream_t stream;
      CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
      float* data = nullptr;
      CUDA_OK(cudaMalloc(&data, n * sizeof(float)));
      cudaGraph_t graph;
      CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      const CommStatus captured = c.all_reduce_sum(data, n, stream);
      CUDA_OK(cudaStreamEndCapture(stream, &graph));
      ASSERT_TRUE(captured.ok()) << captured.message;
      cudaGraphExec_t exec;
      CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
      CUDA_OK(cudaDeviceSynchronize());
      meet();
      for (int replay = 0; replay < 5; ++replay) {
        std::vector<float> expected(n, 0.0f);
        for (int r = 0; r < size; ++r) {
          const std::vector<float> v = rank_values(r, n, replay + 1);
          for (size_t i = 0; i < n; ++i) expected[i] += v[i];
        }
        const std::vector<float> mine = rank_values(c.rank(), n, replay + 1);
        CUDA_OK(cudaMemcpyAsync(data, mine.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
        CUDA_OK(cudaGraphLaunch(exec, stream));
        std::vector<float> out(n);
        CUDA_OK(cudaMemcpyAsync(out.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
        CUDA_OK(cudaStreamSynchronize(stream));
        EXPECT_EQ(out, expected) << "replay " << replay;
      }
      meet();
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
      cudaFree(data);
      cudaStreamDestroy(stream);
    });
  }
}

TEST(PeerCommunicator, RefusesBadDevicesAndArguments) {
  if (device_count() == 0) GTEST_SKIP() << "needs a CUDA device";
  EXPECT_THROW(make_peer_group({0, 99}), CommunicatorError);
  EXPECT_THROW(make_peer_group({}), CommunicatorError);
  EXPECT_THROW(make_local_group(std::vector<int>(9, 0)), CommunicatorError);
  EXPECT_THROW(make_peer_group({0, 0}), CommunicatorError);  // spinning kernels on one GPU
  CommunicatorGroup group = create_communicators("local", CommunicatorOptions{2, {0, 0}});
  EXPECT_EQ(group[1]->device(), 0);
  EXPECT_FALSE(group[0]->capturable());
  expect_refusals_before_launch(group);
}

}  // namespace
}  // namespace sy::parallel
