#pragma once
// SwiGLU's activation of a fused gate/up projection: out[t, i] = silu(gu[t, i]) * gu[t, W + i]
// for a tokens x 2W input (gate columns first), in fp32, rounded once. Elementwise and
// bandwidth-bound; 16-byte packets where the pointers, W and the strides allow. On compute
// capability 9 and up a dependent launch (everything is read after the wait).
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

struct swiglu_args {
    const void* gate_up = nullptr; // tokens x 2 width (row stride ld_in)
    void* out = nullptr;           // tokens x width (row stride ld_out)
    std::int64_t tokens = 1, width = 0, ld_in = 0, ld_out = 0;
    elem type = elem::bf16;
};

struct swiglu_plan {
    int vec = 1;
    int threads = 256;
    std::int64_t blocks = 0;
    bool dependent_launch = false; // programmatic dependent launch (compute capability >= 9)
    std::string why_scalar;
    std::string valid;
    std::string describe() const;
};

swiglu_plan plan_swiglu(const swiglu_args& a, const device_limits& d);
launch_status launch_swiglu(const swiglu_plan& p, const swiglu_args& a, stream_t stream);

} // namespace fourfold::kernels
