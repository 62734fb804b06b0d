#pragma once
// Softmax over the last dimension: the softmax workload's variants and the decoder's sampling
// and MoE routing call this one function.
#include "fourfold/workloads/model_ops/op_path.hpp"

#include <ATen/Tensor.h>
#include <c10/core/ScalarType.h>
#include <optional>

namespace fourfold::workloads {
class call_context;
}

namespace fourfold::workloads::model_ops {

// x [rows, n] (any leading dims for the library paths). `out_type`: the output's dtype, unset
// for the input's; the decoder samples and routes in float32 from bf16 logits, as Hugging
// Face's models do. stock: at::softmax; composite: max, subtract, exp, sum, divide as separate
// ops in the output's dtype; native: fourfold's kernel (2-D, contiguous rows, the input's dtype),
// which needs `ctx`.
at::Tensor softmax(const at::Tensor& x, op_path path, const call_context* ctx = nullptr,
                   std::optional<c10::ScalarType> out_type = std::nullopt);

} // namespace fourfold::workloads::model_ops
