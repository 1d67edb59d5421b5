// linear()'s kernels for AVX-512 with VNNI: the float kernels as on AVX-512
// (linear_tile.h); the int8 block types on 512-bit vectors of two weight columns
// (linear_tile512.h), each block product one vpdpbusd (unsigned × signed bytes summed
// four at a time into int32): the same exact partial sums as AVX2's maddubs + madd, in
// the same sequence, so every level gives the same bits.
#include "kernels/cpu/linear_tile512.h"

namespace sy::cpu::detail {
namespace {

template <bool kPf>
const LinearKernels kKernels = {
    float_rows<Lanes8, WF32, 4, kPf>,
    float_rows<Lanes8, WF16, 4, kPf>,
    float_rows<Lanes8, WBF16, 4, kPf>,
    q_rows512<WQ8_0, 4, kPf>,
    q_rows512<WQ4_0, 4, kPf>,
    k4_rows512<BlockQ4_K, 4, kPf>,
    k4_rows512<BlockQ5_K, 4, kPf>,
    q6_k_rows512<4, kPf>,
    8,
};

}  // namespace

const LinearKernels* linear_kernels_avx512_vnni(bool prefetch) { return prefetch ? &kKernels<true> : &kKernels<false>; }

}  // namespace sy::cpu::detail
