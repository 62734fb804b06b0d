#pragma once
// y = x W^T (+ b): the linear_decode workload's variants and every projection of the decoder
// (q/k/v, o, the dense MLP, the router, the LM head) call this one function.
#include "fourfold/workloads/model_ops/op_path.hpp"

#include <ATen/Tensor.h>
#include <cstdint>

namespace fourfold::workloads {
class call_context;
}

namespace fourfold::workloads::model_ops {

// The native GEMV takes 1 to this many rows of x (a decode step); more is a GEMM.
inline constexpr std::int64_t k_native_linear_max_tokens = 8;

// x [tokens, K], w [N, K], bias [N] or undefined. stock: at::linear (the bias inside the
// library's GEMM call where it has one); composite: at::matmul, then a separate bias add;
// native: fourfold's GEMV (kernels/gemv.cu, 1 to k_native_linear_max_tokens tokens, the bias
// fused into the output's one rounding), which needs `ctx`.
at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, op_path path,
                  const call_context* ctx = nullptr);

} // namespace fourfold::workloads::model_ops
