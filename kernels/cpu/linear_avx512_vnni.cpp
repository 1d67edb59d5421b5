// linear()'s kernels for AVX-512 with VNNI (linear_tile.h): the float kernels as on
// AVX-512; Q8_0 block dot products in one vpdpbusd (unsigned × signed bytes summed four
// at a time into int32), the same exact partial sums as AVX2's maddubs + madd, so the
// two levels give the same bits for Q8_0.
#include "kernels/cpu/linear_tile.h"

namespace sy::cpu::detail {
namespace {

struct DotVnni {
  static __m256i dot(__m256i w, __m256i x) { return udot(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)); }
  static __m256i udot(__m256i w, __m256i x) { return _mm256_dpbusd_epi32(_mm256_setzero_si256(), w, x); }
};

const LinearKernels kKernels = {
    float_rows<Lanes8, WF32, 4>,
    float_rows<Lanes8, WF16, 4>,
    float_rows<Lanes8, WBF16, 4>,
    q_rows<DotVnni, WQ8_0, 4>,
    q_rows<DotVnni, WQ4_0, 4>,
    k4_rows<DotVnni, BlockQ4_K, 4>,
    k4_rows<DotVnni, BlockQ5_K, 4>,
    q6_k_rows<DotVnni, 4>,
};

}  // namespace

const LinearKernels* linear_kernels_avx512_vnni() { return &kKernels; }

}  // namespace sy::cpu::detail
