// linear()'s kernels for AVX-512 F/BW/VL/DQ (linear_tile.h), compiled with those flags
// and F16C/FMA: AVX2's eight-lane operations (the same bits; decode is bound by memory,
// not by vector width) with the 32 vector registers holding a wider tile.
#include "kernels/cpu/linear_tile.h"

namespace sy::cpu::detail {
namespace {

template <bool kPf>
const LinearKernels kKernels = {
    float_rows<Lanes8, WF32, 4, kPf>,
    float_rows<Lanes8, WF16, 4, kPf>,
    float_rows<Lanes8, WBF16, 4, kPf>,
    q_rows<DotAvx2, WQ8_0, 4, kPf>,
    q_rows<DotAvx2, WQ4_0, 4, kPf>,
    k4_rows<DotAvx2, BlockQ4_K, 4, kPf>,
    k4_rows<DotAvx2, BlockQ5_K, 4, kPf>,
    q6_k_rows<DotAvx2, 4, kPf>,
};

}  // namespace

const LinearKernels* linear_kernels_avx512(bool prefetch) { return prefetch ? &kKernels<true> : &kKernels<false>; }

}  // namespace sy::cpu::detail
