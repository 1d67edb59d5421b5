// The elementwise GPU kernels against the CPU reference kernels (kernels/cpu) or a
// plain loop, on fresh random inputs, with outputs poisoned before each launch.
#include <gtest/gtest.h>

#include <numeric>

#include "cuda_test_util.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/norm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cuda/argmax.cuh"
#include "kernels/cuda/bias_add.cuh"
#include "kernels/cuda/delay.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/qk_norm.cuh"
#include "kernels/cuda/rms_norm.cuh"
#include "kernels/cuda/rope.cuh"
#include "kernels/cuda/silu_mul.cuh"

namespace sy {
namespace {

using namespace sy::testing;
using bf16 = __nv_bfloat16;

TEST(CudaGatherRows, CopiesTableRowsToFp32AndBf16) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (int64_t cols : {264, 37}) {
    const int64_t table_rows = 1000, rows = 23;
    const std::vector<uint16_t> table = to_bf16(normal_floats(rng, table_rows * cols));
    std::vector<int32_t> ids(rows);
    for (auto& id : ids) id = static_cast<int32_t>(rng() % table_rows);
    DeviceArray<uint16_t> d_table(table);
    DeviceArray<int32_t> d_ids(ids);
    DeviceArray<float> out_f32(rows * cols);
    DeviceArray<uint16_t> out_bf16(rows * cols);
    out_f32.poison();
    out_bf16.poison();
    cuda::GatherRowsArgs a;
    a.table = d_table.as<bf16>();
    a.table_rows = table_rows;
    a.cols = cols;
    a.ids = d_ids.get();
    a.rows = rows;
    a.out_f32 = out_f32.get();
    SY_CUDA_OK(cuda::gather_rows(a, nullptr));
    a.out_f32 = nullptr;
    a.out_bf16 = out_bf16.as<bf16>();
    SY_CUDA_OK(cuda::gather_rows(a, nullptr));
    const auto got_f32 = out_f32.download();
    const auto got_bf16 = out_bf16.download();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const uint16_t want = table[static_cast<size_t>(ids[r] * cols + c)];
        ASSERT_EQ(got_bf16[static_cast<size_t>(r * cols + c)], want) << "row " << r << " col " << c;
        ASSERT_EQ(got_f32[static_cast<size_t>(r * cols + c)], bf16_to_f32(want))
            << "row " << r << " col " << c;
      }
  }
}

// A vocabulary-parallel rank's slice: the table is rows [row0, row0 + 300) of a larger
// one; ids inside it gather their row, ids outside write zeros (the ranks' rows are
// summed afterwards).
TEST(CudaGatherRows, SliceGathersItsRowsAndZerosTheRest) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const int64_t cols = 264, row0 = 500, slice_rows = 300, rows = 40;
  const std::vector<uint16_t> table = to_bf16(normal_floats(rng, slice_rows * cols));
  std::vector<int32_t> ids(rows);
  for (auto& id : ids) id = static_cast<int32_t>(rng() % 1200);  // about a quarter inside
  ids[0] = static_cast<int32_t>(row0);
  ids[1] = static_cast<int32_t>(row0 + slice_rows - 1);
  ids[2] = static_cast<int32_t>(row0 - 1);
  ids[3] = static_cast<int32_t>(row0 + slice_rows);
  DeviceArray<uint16_t> d_table(table);
  DeviceArray<int32_t> d_ids(ids);
  DeviceArray<float> out(rows * cols);
  out.poison();
  cuda::GatherRowsArgs a;
  a.table = d_table.as<bf16>();
  a.table_rows = slice_rows;
  a.cols = cols;
  a.ids = d_ids.get();
  a.rows = rows;
  a.out_f32 = out.get();
  a.row0 = row0;
  a.slice = true;
  SY_CUDA_OK(cuda::gather_rows(a, nullptr));
  const auto got = out.download();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t local = ids[static_cast<size_t>(r)] - row0;
    const bool inside = local >= 0 && local < slice_rows;
    for (int64_t c = 0; c < cols; ++c) {
      const float want = inside ? bf16_to_f32(table[static_cast<size_t>(local * cols + c)]) : 0.0f;
      ASSERT_EQ(got[static_cast<size_t>(r * cols + c)], want) << "row " << r << " (id " << ids[static_cast<size_t>(r)] << ") col " << c;
    }
  }
}

// n: 4096 and 5120 (one and two float4 per thread of the register kernel), 64 (a
// partly idle warp), 33 (not a multiple of 4: the loop kernel).
TEST(CudaAddRmsNorm, MatchesCpuWithAndWithoutResidualAdd) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (const int n : {4096, 5120, 64, 33}) {
    for (bool add : {true, false}) {
      const int64_t rows = 7;
      std::vector<float> residual = normal_floats(rng, rows * n, 2.0f);
      const std::vector<float> delta = normal_floats(rng, rows * n);
      const std::vector<float> weight = normal_floats(rng, n, 0.2f, 1.0f);
      DeviceArray<float> d_res(residual), d_delta(delta), d_w(weight);
      DeviceArray<uint16_t> d_out(rows * n);
      d_out.poison();
      cuda::AddRmsNormArgs a{d_res.get(),      add ? d_delta.get() : nullptr,
                             d_w.get(),        d_out.as<bf16>(),
                             rows,             n,
                             1e-6f};
      SY_CUDA_OK(cuda::add_rms_norm(a, nullptr));
      std::vector<float> want(rows * n);
      if (add)
        cpu::add_rms_norm(residual.data(), delta.data(), weight.data(), want.data(), rows, n,
                          1e-6f);
      else
        cpu::rms_norm(residual.data(), weight.data(), want.data(), rows, n, 1e-6f);
      EXPECT_EQ(d_res.download(), residual) << "n " << n;  // the same float additions
      EXPECT_LT(relative_error(from_bf16(d_out.download()), want), kBf16Rounding)
          << "n " << n << " add " << add;
    }
  }
}

TEST(CudaRope, MatchesCpuInBothLayoutsAndPartialRotation) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  struct Case {
    cpu::RopeLayout layout;
    int head_dim, rot_dim;
  };
  for (const Case c :
       {Case{cpu::RopeLayout::kRotateHalf, 128, 128}, Case{cpu::RopeLayout::kInterleaved, 128, 128},
        Case{cpu::RopeLayout::kRotateHalf, 64, 32}, Case{cpu::RopeLayout::kInterleaved, 16, 16},
        Case{cpu::RopeLayout::kRotateHalf, 64, 12}, Case{cpu::RopeLayout::kInterleaved, 64, 12}}) {
    const int64_t tokens = 19;
    const int heads = 5;  // e.g. 4 query heads and one key head of a fused row
    const int64_t stride = heads * c.head_dim + 24;  // a row longer than the rotated heads
    const std::vector<float> x = normal_floats(rng, tokens * stride);
    std::vector<int32_t> pos(tokens);
    for (auto& p : pos) p = static_cast<int32_t>(rng() % 32768);
    pos[0] = 0;
    cpu::RopeParams p;
    p.head_dim = c.head_dim;
    p.rot_dim = c.rot_dim;
    p.layout = c.layout;
    p.inv_freq = cpu::rope_inv_freq(c.rot_dim, 500000.0f);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = round_bf16(x[i]);
    const std::vector<float> input = want;
    cpu::rope(want.data(), tokens, stride, heads, pos.data(), p);
    DeviceArray<uint16_t> d_x(to_bf16(x));
    DeviceArray<int32_t> d_pos(pos);
    DeviceArray<float> d_freq(p.inv_freq);
    cuda::RopeArgs a{d_x.as<bf16>(), tokens,   stride,      heads,       c.head_dim,
                     c.rot_dim,      c.layout, d_pos.get(), d_freq.get()};
    SY_CUDA_OK(cuda::rope(a, nullptr));
    const std::vector<uint16_t> got_bits = d_x.download();
    const std::vector<float> got = from_bf16(got_bits);
    EXPECT_LT(relative_error(got, want), kBf16Rounding)
        << "head_dim " << c.head_dim << " rot " << c.rot_dim;
    for (int64_t t = 0; t < tokens; ++t)  // the tail of each row is left alone
      for (int64_t i = heads * c.head_dim; i < stride; ++i)
        ASSERT_EQ(got[t * stride + i], input[t * stride + i]);
  }
}

TEST(CudaQkNorm, NormalizesEveryQueryAndKeyHead) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (int head_dim : {128, 64, 8}) {
    const int64_t tokens = 11;
    const int nq = 4, nkv = 2;
    const int64_t stride = (nq + 2 * nkv) * head_dim;  // q, k, then v (untouched)
    const std::vector<float> x = normal_floats(rng, tokens * stride, 3.0f);
    const std::vector<float> qw = normal_floats(rng, head_dim, 0.2f, 1.0f),
                             kw = normal_floats(rng, head_dim, 0.2f, 1.0f);
    std::vector<float> want(x.size());
    for (size_t i = 0; i < x.size(); ++i) want[i] = round_bf16(x[i]);
    for (int64_t t = 0; t < tokens; ++t) {
      float* row = want.data() + t * stride;
      cpu::rms_norm(row, qw.data(), row, nq, head_dim, 1e-6f);
      cpu::rms_norm(row + nq * head_dim, kw.data(), row + nq * head_dim, nkv, head_dim, 1e-6f);
    }
    DeviceArray<uint16_t> d_x(to_bf16(x));
    DeviceArray<float> d_qw(qw), d_kw(kw);
    cuda::QkNormArgs a{d_x.as<bf16>(), tokens,     stride,     nq,   nkv,
                       head_dim,       d_qw.get(), d_kw.get(), 1e-6f};
    SY_CUDA_OK(cuda::qk_norm(a, nullptr));
    EXPECT_LT(relative_error(from_bf16(d_x.download()), want), kBf16Rounding)
        << "head_dim " << head_dim;
  }
}

TEST(CudaSiluMul, MatchesCpu) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (int64_t n : {1024, 37}) {
    const int64_t rows = 9;
    std::vector<float> gu = normal_floats(rng, rows * 2 * n, 3.0f);
    for (auto& v : gu) v = round_bf16(v);
    std::vector<float> want(rows * n);
    cpu::silu_mul(gu.data(), want.data(), rows, n);
    DeviceArray<uint16_t> d_gu(to_bf16(gu)), d_out(rows * n);
    d_out.poison();
    SY_CUDA_OK(cuda::silu_mul({d_gu.as<bf16>(), d_out.as<bf16>(), rows, n}, nullptr));
    EXPECT_LT(relative_error(from_bf16(d_out.download()), want), kBf16Rounding) << "n " << n;
  }
}

TEST(CudaBiasAdd, AddsBiasToEachRow) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const int64_t rows = 13, cols = 200, stride = 256;
  const std::vector<float> x = normal_floats(rng, rows * stride);
  const std::vector<float> bias = normal_floats(rng, cols);
  std::vector<float> want(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < stride; ++c) {
      const float v = round_bf16(x[r * stride + c]);
      want[r * stride + c] = c < cols ? v + bias[c] : v;
    }
  DeviceArray<uint16_t> d_x(to_bf16(x));
  DeviceArray<float> d_b(bias);
  SY_CUDA_OK(cuda::bias_add({d_x.as<bf16>(), rows, cols, stride, d_b.get()}, nullptr));
  const std::vector<float> got = from_bf16(d_x.download());
  EXPECT_LT(relative_error(got, want), kBf16Rounding);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = cols; c < stride; ++c) ASSERT_EQ(got[r * stride + c], want[r * stride + c]);
}

// Both kernels (several blocks per row, one block per row) on vocabularies of one slice
// and of many; the multi-block kernel twice, so the second call runs on the counters the
// first left, and with other row counts on the same workspace.
TEST(CudaArgmax, FindsFirstMaximumPerRow) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  for (const int vocab : {151680, 128256, 4097, 300, 2}) {
    const int64_t rows = vocab > 8 ? 6 : 2;
    std::vector<float> logits = normal_floats(rng, rows * vocab, 4.0f);
    if (vocab > 8) {
      // Row 1: a tie for the maximum in two slices (the lower index wins); row 2: the
      // maximum at the end; row 3: all -inf but one NaN (NaN is never chosen, so index 0);
      // row 4: all -inf (the first one).
      logits[vocab + 5] = logits[vocab + vocab - 3] = 100.0f;
      logits[2 * vocab + vocab - 1] = 100.0f;
      for (int i = 0; i < vocab; ++i) logits[3 * vocab + i] = logits[4 * vocab + i] = -INFINITY;
      logits[3 * vocab + 7] = NAN;
    }
    std::vector<int32_t> want(rows);
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = logits.data() + r * vocab;
      int32_t best = 0;
      for (int i = 1; i < vocab; ++i)
        if (row[i] > row[best] || (std::isnan(row[best]) && !std::isnan(row[i]))) best = i;
      want[r] = best;
    }
    if (vocab > 8) {
      ASSERT_EQ(want[1], 5);
      ASSERT_EQ(want[3], 0);
    }
    DeviceArray<float> d_logits(logits);
    DeviceArray<int32_t> d_out(rows);
    DeviceArray<uint8_t> workspace(std::vector<uint8_t>(cuda::argmax_workspace_bytes(rows), 0));
    for (const int variant : {0, 0, 1}) {
      d_out.poison();
      cuda::ArgmaxArgs a{d_logits.get(), rows, vocab, d_out.get()};
      a.variant = variant;
      a.workspace = workspace.get();
      SY_CUDA_OK(cuda::argmax(a, nullptr));
      EXPECT_EQ(d_out.download(), want) << "vocab " << vocab << " variant " << variant;
    }
    // Fewer rows on the same workspace (as the backend calls it: one workspace for every
    // step's row count), then all rows again: a row's counter must not move with the
    // row count of a call.
    for (const int64_t n : {int64_t{1}, rows / 2 + 1, rows}) {
      d_out.poison();
      cuda::ArgmaxArgs a{d_logits.get(), n, vocab, d_out.get()};
      a.workspace = workspace.get();
      SY_CUDA_OK(cuda::argmax(a, nullptr));
      const std::vector<int32_t> got = d_out.download();
      for (int64_t r = 0; r < n; ++r)
        EXPECT_EQ(got[static_cast<size_t>(r)], want[static_cast<size_t>(r)])
            << "vocab " << vocab << " row " << r << " of a call of " << n;
    }
  }
  cuda::ArgmaxArgs bad{nullptr, 1, 2, nullptr};
  EXPECT_EQ(cuda::argmax(bad, nullptr), cudaErrorInvalidValue);
}

// A vocabulary split over tensor-parallel ranks: each shard's argmax as a key (its rows a
// padded stride apart, its indices offset by the shard's first), the keys merged: the
// same index as the argmax of the whole row, ties across shards going to the lower index,
// NaN never chosen.
TEST(CudaArgmax, ShardKeysMergeToTheWholeRowsArgmax) {
  SY_SKIP_WITHOUT_CUDA();
  auto rng = fresh_rng();
  const int vocab = 151936, shards = 3, stride = (vocab + shards - 1) / shards;
  const int64_t rows = 5;
  std::vector<float> logits = normal_floats(rng, rows * vocab, 4.0f);
  // Row 1: the maximum tied in shards 0 and 2; row 2: the maximum at the very end; row 3:
  // all -inf but one NaN (index 0); row 4: the maximum at the first index of shard 1.
  logits[vocab + 5] = logits[vocab + 2 * stride + 9] = 100.0f;
  logits[2 * vocab + vocab - 1] = 100.0f;
  for (int i = 0; i < vocab; ++i) logits[3 * vocab + i] = -INFINITY;
  logits[3 * vocab + stride + 3] = NAN;
  logits[4 * vocab + stride] = 100.0f;
  std::vector<int32_t> want(rows);
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits.data() + r * vocab;
    int32_t best = 0;
    for (int i = 1; i < vocab; ++i)
      if (row[i] > row[best] || (std::isnan(row[best]) && !std::isnan(row[i]))) best = i;
    want[static_cast<size_t>(r)] = best;
  }
  ASSERT_EQ(want[1], 5);
  ASSERT_EQ(want[4], stride);
  DeviceArray<uint64_t> keys(static_cast<size_t>(shards * rows));
  keys.poison();
  DeviceArray<uint8_t> workspace(std::vector<uint8_t>(cuda::argmax_workspace_bytes(rows), 0));
  for (int s = 0; s < shards; ++s) {
    // The shard as a rank holds it: its columns, padded to the stride with values that
    // would win if the kernel read past the shard's own columns.
    const int v0 = s * stride, n = std::min(vocab, v0 + stride) - v0;
    std::vector<float> shard(static_cast<size_t>(rows * stride), 1e30f);
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(logits.begin() + r * vocab + v0, n, shard.begin() + r * stride);
    DeviceArray<float> d_shard(shard);
    cuda::ArgmaxArgs a{d_shard.get(), rows, n, nullptr};
    a.row_stride = stride;
    a.index_offset = v0;
    a.keys = reinterpret_cast<unsigned long long*>(keys.get()) + s * rows;
    a.workspace = workspace.get();
    SY_CUDA_OK(cuda::argmax(a, nullptr));
  }
  DeviceArray<int32_t> out(rows);
  out.poison();
  SY_CUDA_OK(cuda::argmax_merge_keys(reinterpret_cast<unsigned long long*>(keys.get()), shards, rows, out.get(), nullptr));
  EXPECT_EQ(out.download(), want);
  cuda::ArgmaxArgs bad{keys.as<float>(), rows, 8, nullptr};
  bad.workspace = workspace.get();
  EXPECT_EQ(cuda::argmax(bad, nullptr), cudaErrorInvalidValue) << "neither out nor keys";
  bad.keys = reinterpret_cast<unsigned long long*>(keys.get());
  bad.variant = 1;
  EXPECT_EQ(cuda::argmax(bad, nullptr), cudaErrorInvalidValue) << "keys need variant 0";
}

// The delay kernel holds the stream: an event behind it completes no sooner than the
// requested time after an event before it, and work queued behind it still runs.
TEST(CudaDelay, HoldsTheStreamForTheRequestedTime) {
  SY_SKIP_WITHOUT_CUDA();
  cudaEvent_t before = nullptr, after = nullptr;
  SY_CUDA_OK(cudaEventCreate(&before));
  SY_CUDA_OK(cudaEventCreate(&after));
  DeviceArray<float> x(std::vector<float>{1.0f, 2.0f});
  DeviceArray<int32_t> out(1);
  out.poison();
  for (const uint64_t ns : {uint64_t{0}, uint64_t{2'000'000}, uint64_t{20'000'000}}) {
    SY_CUDA_OK(cudaEventRecord(before, nullptr));
    SY_CUDA_OK(cuda::delay(ns, nullptr));
    SY_CUDA_OK(cudaEventRecord(after, nullptr));
    cuda::ArgmaxArgs a{x.get(), 1, 2, out.get()};
    a.variant = 1;
    SY_CUDA_OK(cuda::argmax(a, nullptr));
    SY_CUDA_OK(cudaEventSynchronize(after));
    float ms = 0;
    SY_CUDA_OK(cudaEventElapsedTime(&ms, before, after));
    // The global timer ticks in about a microsecond on recent GPUs.
    EXPECT_GE(ms, static_cast<double>(ns) / 1e6 - 0.002) << ns << " ns";
  }
  EXPECT_EQ(out.download(), std::vector<int32_t>{1});
  cudaEventDestroy(before);
  cudaEventDestroy(after);
}

}  // namespace
}  // namespace sy
