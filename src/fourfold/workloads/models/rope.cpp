#include "fourfold/workloads/models/rope.hpp"

#include <ATen/ATen.h>
#include <cmath>

namespace fourfold::workloads::models {

std::vector<double> rope_inv_freq(const model_config& c) {
    std::vector<double> f(static_cast<std::size_t>(c.head_dim / 2));
    for (std::size_t i = 0; i < f.size(); ++i)
        f[i] = 1.0 / std::pow(c.rope.theta,
                              2.0 * static_cast<double>(i) / static_cast<double>(c.head_dim));
    if (c.rope.type == "llama3") {
        // Llama 3.1: long wavelengths slowed by `factor`, short ones kept, a smooth blend between.
        const double pi = 3.14159265358979323846;
        const double orig = static_cast<double>(c.rope.original_max_positions);
        const double low_wavelen = orig / c.rope.low_freq_factor;
        const double high_wavelen = orig / c.rope.high_freq_factor;
        for (auto& v : f) {
            const double wavelen = 2 * pi / v;
            if (wavelen < high_wavelen)
                continue;
            if (wavelen > low_wavelen) {
                v /= c.rope.factor;
                continue;
            }
            const double smooth = (orig / wavelen - c.rope.low_freq_factor) /
                                  (c.rope.high_freq_factor - c.rope.low_freq_factor);
            v = (1 - smooth) * v / c.rope.factor + smooth * v;
        }
    }
    return f;
}

at::Tensor rope_inv_freq_tensor(const model_config& c, c10::ScalarType type) {
    const auto f = rope_inv_freq(c);
    auto t =
        at::empty({static_cast<std::int64_t>(f.size())}, at::TensorOptions().dtype(at::kDouble));
    std::copy(f.begin(), f.end(), t.data_ptr<double>());
    return t.to(type);
}

} // namespace fourfold::workloads::models
