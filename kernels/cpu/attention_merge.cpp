#include "kernels/cpu/attention_merge.h"

#include <algorithm>
#include <cmath>

namespace sy::cpu {

void merge_attention_states(const float* const* outs, const float* const* lses, int num_parts, float* out,
                            float* lse, int64_t rows, int heads, int head_dim) {
  for (int64_t r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      const int64_t i = r * heads + h;
      float m = -INFINITY;
      for (int p = 0; p < num_parts; ++p) m = std::max(m, lses[p][i]);
      float* o = out + i * head_dim;
      if (m == -INFINITY) {  // no part saw a key
        std::fill_n(o, head_dim, 0.0f);
        if (lse) lse[i] = -INFINITY;
        continue;
      }
      double sum = 0;
      for (int p = 0; p < num_parts; ++p) sum += std::exp(static_cast<double>(lses[p][i]) - m);
      std::fill_n(o, head_dim, 0.0f);
      for (int p = 0; p < num_parts; ++p) {
        if (lses[p][i] == -INFINITY) continue;
        const auto w = static_cast<float>(std::exp(static_cast<double>(lses[p][i]) - m) / sum);
        const float* op = outs[p] + i * head_dim;
        for (int d = 0; d < head_dim; ++d) o[d] += w * op[d];
      }
      if (lse) lse[i] = static_cast<float>(m + std::log(sum));
    }
}

}  // namespace sy::cpu
