// The temporal mixer's ALiBi attention written out in double from its definition (docs/locotrack-spec.md §2.5), for
// the torch-free emulation tests of the kernels that compute it (gpu/mixer_emulation, gpu/attention_mma_emulation).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace trackscope::test {

/// The slopes of `heads` heads (even): the forward heads' heads/2 slopes 1 / 24^(k / (heads/2)), k = 1.., then the
/// same for the backward heads.
inline std::vector<float> alibi_slopes_reference(int heads) {
  const int half = heads / 2;
  const double base = std::pow(24.0, 1.0 / half);
  std::vector<float> slopes;
  for (int repeat = 0; repeat < 2; ++repeat) {
    for (int k = 1; k <= half; ++k) slopes.push_back(static_cast<float>(1.0 / std::pow(base, k)));
  }
  return slopes;
}

/// softmax(q k^T / 8 + ALiBi bias) v per head of one sequence: qkv [frames, 3 * heads * 64] (q | k | v, head h at
/// columns h * 64 of each) -> [frames, heads * 64]. Heads [0, H/2) attend forward (j <= i, bias slope * (j - i)),
/// heads [H/2, H) backward (j >= i, bias slope * (i - j)).
inline std::vector<double> reference_alibi_attention(const std::vector<double>& qkv, int frames, int heads,
                                                     const std::vector<float>& slopes) {
  const int dim = heads * 64;
  std::vector<double> out(static_cast<size_t>(frames * dim), 0.0);
  std::vector<double> score(static_cast<size_t>(frames));
  for (int h = 0; h < heads; ++h) {
    const bool forward = h < heads / 2;
    for (int i = 0; i < frames; ++i) {
      double top = -INFINITY;
      for (int j = 0; j < frames; ++j) {
        double s = 0.0;
        for (int c = 0; c < 64; ++c) s += qkv[i * 3 * dim + h * 64 + c] * qkv[j * 3 * dim + dim + h * 64 + c];
        const bool visible = forward ? j <= i : j >= i;
        s = s * 0.125 + (visible ? static_cast<double>(slopes[h]) * (forward ? j - i : i - j) : -1e9);
        score[j] = s;
        top = std::max(top, s);
      }
      double total = 0.0;
      for (int j = 0; j < frames; ++j) total += (score[j] = std::exp(score[j] - top));
      for (int j = 0; j < frames; ++j) {
        for (int c = 0; c < 64; ++c) {
          out[i * dim + h * 64 + c] += score[j] / total * qkv[j * 3 * dim + 2 * dim + h * 64 + c];
        }
      }
    }
  }
  return out;
}

}  // namespace trackscope::test
