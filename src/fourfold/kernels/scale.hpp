#pragma once
// y = alpha * x elementwise: the smallest real kernel, used by test-only variants to prove the
// native path end to end (build, the call's stream, graph capture, the correctness ledger).
#include "fourfold/kernels/kernel_api.hpp"

namespace fourfold::kernels {

launch_status launch_scale(const void* x, void* y, std::int64_t n, float alpha, elem type,
                           stream_t stream);

} // namespace fourfold::kernels
