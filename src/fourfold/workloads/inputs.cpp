#include "fourfold/workloads/inputs.hpp"

#include "fourfold/core/rng.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <cmath>

namespace fourfold::workloads {
namespace {

template <class F>
at::Tensor fill(const std::vector<std::int64_t>& shape, c10::ScalarType type, F value_at) {
    auto t = at::empty(shape, at::TensorOptions().dtype(at::kFloat));
    float* p = t.data_ptr<float>();
    at::parallel_for(0, t.numel(), 1 << 16, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t i = begin; i < end; ++i)
            p[i] = static_cast<float>(value_at(static_cast<std::uint64_t>(i)));
    });
    return type == at::kFloat ? t : t.to(type);
}

} // namespace

std::uint64_t sub_seed(std::uint64_t seed, std::uint64_t k) {
    return splitmix64(seed ^ splitmix64(k + 0x5eed));
}

at::Tensor seeded_uniform(const std::vector<std::int64_t>& shape, std::uint64_t seed, double lo,
                          double hi, c10::ScalarType type) {
    const std::uint64_t key = splitmix64(seed);
    return fill(shape, type, [&](std::uint64_t i) {
        return lo + (hi - lo) * unit_interval(splitmix64(key + i));
    });
}

at::Tensor seeded_normal(const std::vector<std::int64_t>& shape, std::uint64_t seed, double mean,
                         double stdev, c10::ScalarType type) {
    const std::uint64_t key = splitmix64(seed);
    return fill(shape, type, [&](std::uint64_t i) {
        const std::uint64_t h = splitmix64(key + 2 * i);
        const double u1 = 1.0 - unit_interval(h);
        const double u2 = unit_interval(splitmix64(h ^ (key + 2 * i + 1)));
        return mean + stdev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    });
}

} // namespace fourfold::workloads
