// The nccl communicator on the GPUs of this machine, one thread per rank; skips where
// fewer than two CUDA devices are present. Keep NCCL_NVLS_ENABLE=0 on the lent machines.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "worker/parallel/communicator.h"
#include "worker/parallel/nccl_communicator.h"
#include "device_ranks.h"

namespace sy::parallel {
namespace {

using namespace testing;

#define SKIP_WITHOUT_TWO_GPUS()                                              \
  do {                                                                       \
    if (device_count() < 2) GTEST_SKIP() << "needs at least 2 CUDA devices"; \
  } while (0)

#define CUDA_OK(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

// The group over every device of the machine, at most 8.
CommunicatorGroup all_devices() {
  CommunicatorOptions options;
  options.size = std::min(device_count(), 8);
  return create_communicators("nccl", options);
}

TEST(NcclCommunicator, CollectivesMatchHostReference) {
  SKIP_WITHOUT_TWO_GPUS();
  CommunicatorGroup group = all_devices();
  const int size = static_cast<int>(group.size());
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000}, size_t{1} << 20}) {
    std::vector<float> sum(n, 0.0f), gathered;
    for (int r = 0; r < size; ++r) {
      std::vector<float> v = rank_values(r, n);
      for (size_t i = 0; i < n; ++i) sum[i] += v[i];
      gathered.insert(gathered.end(), v.begin(), v.end());
    }
    run_ranks(group, [&](Communicator& c, const std::function<void()>&) {
      EXPECT_EQ(c.kind(), "nccl");
      EXPECT_EQ(c.memory(), MemoryKind::kDevice);
      cudaStream_t stream;
      CUDA_OK(cudaStreamCreate(&stream));
      const std::vector<float> mine = rank_values(c.rank(), n);
      float *data = nullptr, *recv = nullptr;
      CUDA_OK(cudaMalloc(&data, std::max<size_t>(n, 1) * sizeof(float)));
      CUDA_OK(cudaMalloc(&recv, std::max<size_t>(n * size, 1) * sizeof(float)));
      CUDA_OK(cudaMemcpy(data, mine.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      CUDA_OK(cudaMemset(recv, 0xff, n * size * sizeof(float)));  // NaN poison

      ASSERT_TRUE(c.all_gather(data, n, recv, stream).ok());
      ASSERT_TRUE(c.all_reduce_sum(data, n, stream).ok());
      ASSERT_TRUE(c.barrier(stream).ok());
      CUDA_OK(cudaStreamSynchronize(stream));
      std::vector<float> out(n), all(n * size);
      CUDA_OK(cudaMemcpy(out.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(all.data(), recv, n * size * sizeof(float), cudaMemcpyDeviceToHost));
      EXPECT_EQ(all, gathered);
      for (size_t i = 0; i < n; ++i) {
        // Two ranks: one add, exact in any order; more: NCCL's order, not the host's.
        if (size == 2) {
          ASSERT_EQ(out[i], sum[i]) << i;
        } else {
          ASSERT_NEAR(out[i], sum[i], 1e-5f * size) << i;
        }
      }

      // Broadcast from the last rank.
      const int root = size - 1;
      const std::vector<float> expected = rank_values(root, n);
      CUDA_OK(cudaMemcpy(data, mine.data(), n * sizeof(float), cudaMemcpyHostToDevice));
      ASSERT_TRUE(c.broadcast(data, n, root, stream).ok());
      CUDA_OK(cudaStreamSynchronize(stream));
      CUDA_OK(cudaMemcpy(out.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost));
      EXPECT_EQ(out, expected);

      cudaFree(data);
      cudaFree(recv);
      cudaStreamDestroy(stream);
    });
  }
}

TEST(NcclCommunicator, AllReduceCapturedInCudaGraph) {
  SKIP_WITHOUT_TWO_GPUS();
  CommunicatorGroup group = all_devices();
  const int size = static_cast<int>(group.size());
  const size_t n = 2048;  // 8 KB, a decode step's hidden state
  run_ranks(group, [&](Communicator& c, const std::function<void()>&) {
    cudaStream_t stream;
    CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    float* data = nullptr;
    CUDA_OK(cudaMalloc(&data, n * sizeof(float)));
    std::vector<float> ones(n, 1.0f);
    CUDA_OK(cudaMemcpy(data, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    cudaGraph_t graph;
    CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    CommStatus captured = c.all_reduce_sum(data, n, stream);
    CUDA_OK(cudaStreamEndCapture(stream, &graph));
    ASSERT_TRUE(captured.ok()) << captured.message;
    cudaGraphExec_t exec;
    CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
    // Each replay multiplies by size: 1 -> size -> size^2.
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    std::vector<float> out(n);
    CUDA_OK(cudaMemcpy(out.data(), data, n * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT_EQ(out, std::vector<float>(n, float(size * size)));
    // Graphs that captured NCCL work go before the communicators do.
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);
    cudaFree(data);
    cudaStreamDestroy(stream);
  });
}

TEST(NcclCommunicator, RefusesBadDevicesAndArguments) {
  SKIP_WITHOUT_TWO_GPUS();
  EXPECT_THROW(make_nccl_group({0, 99}), CommunicatorError);
  EXPECT_THROW(make_nccl_group({0, 0}), CommunicatorError);
  EXPECT_THROW(make_nccl_group({}), CommunicatorError);
  CommunicatorGroup group = make_nccl_group({0, 1});
  EXPECT_EQ(group[1]->device(), 1);
  expect_refusals_before_launch(group);
}

}  // namespace
}  // namespace sy::parallel
