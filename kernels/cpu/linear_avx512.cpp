// linear()'s kernels for AVX-512 F/BW/VL/DQ (linear_tile.h), compiled with those flags
// and F16C/FMA: float weights sixteen lanes at a time; Q8_0 as on AVX2 (32-byte blocks),
// with the 32 vector registers holding a wider tile.
#include "kernels/cpu/linear_tile.h"

namespace sy::cpu::detail {
namespace {

const LinearKernels kKernels = {
    float_rows<Avx512, WF32>,
    float_rows<Avx512, WF16>,
    float_rows<Avx512, WBF16>,
    q8_0_rows<DotAvx2, 4>,
};

}  // namespace

const LinearKernels* linear_kernels_avx512() { return &kKernels; }

}  // namespace sy::cpu::detail
