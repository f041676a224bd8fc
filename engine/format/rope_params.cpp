#include <cmath>

#include "format/rope_params.h"

namespace llmwb {

RopeParams RopeParams::from(const ModelConfig& c) {
  RopeParams rp;
  rp.head_dim = c.head_dim;
  rp.layout = c.rope_layout;
  const int half = c.head_dim / 2;
  rp.inv_freq.resize(static_cast<size_t>(half));
  const RopeScaling& s = c.rope_scaling;
  for (int i = 0; i < half; ++i) {
    double f = std::pow(static_cast<double>(c.rope_theta), -2.0 * i / c.head_dim);
    if (s.type == "linear" && s.factor > 0) {
      // Position interpolation (Chen et al., 2023): positions divided by the factor.
      f /= s.factor;
    } else if (s.type == "llama3" && s.factor > 0) {
      // Llama 3.1: long wavelengths scaled by 1/factor, short ones kept, smooth in between.
      const double old_len = s.original_max_position;
      const double low_wavelen = old_len / s.low_freq_factor;
      const double high_wavelen = old_len / s.high_freq_factor;
      const double wavelen = 2.0 * M_PI / f;
      if (wavelen > low_wavelen) {
        f /= s.factor;
      } else if (wavelen >= high_wavelen) {
        const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
        f = (1.0 - smooth) * f / s.factor + smooth * f;
      }
    }
    if (!c.rope_freq_factors.empty()) f /= c.rope_freq_factors[static_cast<size_t>(i)];
    rp.inv_freq[static_cast<size_t>(i)] = f;
  }
  return rp;
}

}  // namespace llmwb
