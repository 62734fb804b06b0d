#pragma once
// SwiGLU's activation, shared by the decoder's dense MLPs and the MoE experts (model_ops/moe).
#include <ATen/ATen.h>

namespace fourfold::workloads::model_ops {

// silu(gate) * up of a (rows, 2 width) gate/up output, gate columns first.
inline at::Tensor swiglu(const at::Tensor& gate_up) {
    const auto width = gate_up.size(1) / 2;
    return at::silu(gate_up.narrow(1, 0, width)) * gate_up.narrow(1, width, width);
}

} // namespace fourfold::workloads::model_ops
