// Programmatic dependent launch (kernels/cuda/launch.cuh): a chain of dependent kernels
// (residual add + RMSNorm → bf16 GEMV into the next delta → multi-block argmax of it)
// launched with it, eagerly and replayed from a captured graph, gives bit for bit what
// the same chain gives launched in order. The chain is queued behind a delay kernel so
// that the host is far ahead and every launch can start early; a kernel reading its
// input before pdl_wait() would read the previous iteration's values.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/cuda/argmax.cuh"
#include "kernels/cuda/delay.cuh"
#include "kernels/cuda/gemv_bf16.cuh"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/rms_norm.cuh"

namespace sy {
namespace {

using testing::DeviceArray;
using bf16 = __nv_bfloat16;

constexpr int64_t kN = 4096;
constexpr int kIterations = 12;

struct Chain {
  DeviceArray<float> residual0, residual, delta, norm_w;
  DeviceArray<uint16_t> h, w;
  DeviceArray<int32_t> ids;
  DeviceArray<uint8_t> argmax_ws;

  explicit Chain(std::mt19937_64& rng)
      : residual0(testing::normal_floats(rng, kN)),
        residual(kN),
        delta(kN),
        norm_w(testing::normal_floats(rng, kN, 0.2f, 1.0f)),
        h(kN),
        w(testing::to_bf16(testing::normal_floats(rng, kN * kN, 1.0f / 64))),
        ids(kIterations),
        argmax_ws(cuda::argmax_workspace_bytes(1)) {}

  // Resets the state (device to device: a graph captures it too), then queues the chain
  // behind a 20 ms delay.
  void enqueue(cudaStream_t s) {
    ASSERT_EQ(cudaMemcpyAsync(residual.get(), residual0.get(), kN * sizeof(float),
                              cudaMemcpyDeviceToDevice, s),
              cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(delta.get(), 0, kN * sizeof(float), s), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(argmax_ws.get(), 0, cuda::argmax_workspace_bytes(1), s), cudaSuccess);
    ASSERT_EQ(cudaMemsetAsync(ids.get(), 0xff, kIterations * sizeof(int32_t), s), cudaSuccess);
    ASSERT_EQ(cuda::delay(20'000'000, s), cudaSuccess);
    for (int i = 0; i < kIterations; ++i) {
      cuda::AddRmsNormArgs n{residual.get(), delta.get(), norm_w.get(), h.as<bf16>(), 1, kN, 1e-5f};
      ASSERT_EQ(cuda::add_rms_norm(n, s), cudaSuccess);
      cuda::GemvBf16Args g{w.as<bf16>(), kN, kN, h.as<bf16>(), 1};
      g.y_f32 = delta.get();
      ASSERT_EQ(cuda::gemv_bf16(g, s), cudaSuccess);
      cuda::ArgmaxArgs a{delta.get(), 1, static_cast<int>(kN), ids.get() + i};
      a.workspace = argmax_ws.get();
      ASSERT_EQ(cuda::argmax(a, s), cudaSuccess);
    }
  }
};

TEST(CudaProgrammaticLaunch, DependentChainMatchesOrderedLaunches) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = testing::fresh_rng();
  Chain chain(rng);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);

  chain.enqueue(s);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  const std::vector<float> want = chain.residual.download();
  const std::vector<int32_t> want_ids = chain.ids.download();
  for (const int32_t id : want_ids) ASSERT_GE(id, 0);

  {
    const cuda::ProgrammaticLaunch pdl(true);
    EXPECT_TRUE(cuda::ProgrammaticLaunch::active());
    chain.enqueue(s);
  }
  EXPECT_FALSE(cuda::ProgrammaticLaunch::active());
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(chain.residual.download(), want) << "eager";
  EXPECT_EQ(chain.ids.download(), want_ids) << "eager";

  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  {
    const cuda::ProgrammaticLaunch pdl(true);
    chain.enqueue(s);
  }
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int replay = 0; replay < 3; ++replay) {
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    EXPECT_EQ(chain.residual.download(), want) << "graph replay " << replay;
    EXPECT_EQ(chain.ids.download(), want_ids) << "graph replay " << replay;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace sy
