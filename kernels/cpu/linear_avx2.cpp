// linear()'s kernels for AVX2 + FMA + F16C (linear_tile.h), in a file of its own
// compiled with -mavx2 -mfma -mf16c; the dispatcher calls them only where the processor
// has all three.
#include "kernels/cpu/linear_tile.h"

namespace sy::cpu::detail {
namespace {

template <bool kPf>
const LinearKernels kKernels = {
    float_rows<Lanes8, WF32, 3, kPf>,
    float_rows<Lanes8, WF16, 3, kPf>,
    float_rows<Lanes8, WBF16, 3, kPf>,
    q_rows<DotAvx2, WQ8_0, 2, kPf>,  // 4 × 2 accumulators and the weights' quants and magnitudes fit
    q_rows<DotAvx2, WQ4_0, 2, kPf>,
    k4_rows<DotAvx2, BlockQ4_K, 2, kPf>,
    k4_rows<DotAvx2, BlockQ5_K, 2, kPf>,
    q6_k_rows<DotAvx2, 2, kPf>,
};

}  // namespace

const LinearKernels* linear_kernels_avx2(bool prefetch) { return prefetch ? &kKernels<true> : &kKernels<false>; }

}  // namespace sy::cpu::detail
