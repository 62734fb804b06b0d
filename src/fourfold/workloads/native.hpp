#pragma once
// The seam between workloads (libtorch tensors) and fourfold's native kernels (raw pointers and
// a stream): element types, the device's limits, the call's stream, and launch errors. Only
// meaningful in a build with FOURFOLD_WITH_KERNELS; a native variant is declared with
// workload_builder::native_variant, so it never runs where this is absent.
#include "fourfold/core/dtype.hpp"
#include "fourfold/workloads/workload.hpp"

#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/kernel_api.hpp"

#include <string_view>

namespace fourfold::workloads::native {

// The kernels' element type of a job dtype; throws std::logic_error for one they do not take.
kernels::elem elem_of(dtype t);
// The same for a tensor's element type (what a model_ops function sees).
kernels::elem elem_of(c10::ScalarType t);
// The limits of the call's device, read once per device.
const kernels::device_limits& limits(const call_context& ctx);
kernels::stream_t stream(const call_context& ctx);
// Throws device_error naming the kernel when its launch failed.
void check(const kernels::launch_status& status, std::string_view kernel);

} // namespace fourfold::workloads::native
#endif
