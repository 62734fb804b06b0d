#pragma once
// Seeded inputs that are the same on every machine and libtorch version: element i of a tensor
// is a pure function of (seed, i), computed on the CPU in parallel, then cast to the job dtype.
// The same values therefore reach every device, and the float64 reference upcasts exactly them.
#include <ATen/Tensor.h>
#include <c10/core/ScalarType.h>
#include <cstdint>
#include <vector>

namespace fourfold::workloads {

// Uniform in [lo, hi).
at::Tensor seeded_uniform(const std::vector<std::int64_t>& shape, std::uint64_t seed, double lo,
                          double hi, c10::ScalarType type);
// Normal(mean, stdev) by Box-Muller on two hashed uniforms.
at::Tensor seeded_normal(const std::vector<std::int64_t>& shape, std::uint64_t seed, double mean,
                         double stdev, c10::ScalarType type);
// A sub-seed for the k-th tensor of a job.
std::uint64_t sub_seed(std::uint64_t seed, std::uint64_t k);

} // namespace fourfold::workloads
