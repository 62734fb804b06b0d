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

// y = RMSNorm(x) W^T in one launch of fourfold's GEMV: x [tokens, K] un-normalised (a decoder's
// residual stream), norm_weight [K], the norm's value and its one rounding those of
// kernels/rmsnorm.cu (and of the norm before linear() in the decoder), computed inside every
// block of the GEMV. An undefined tensor where the GEMV's plan does not take the fusion (it
// needs the balanced path: see kernels/gemv.hpp); the caller then runs the norm on its own.
at::Tensor native_linear_rms_normed(const at::Tensor& x, const at::Tensor& norm_weight, double eps,
                                    const at::Tensor& w, const call_context& ctx);

// y = swiglu(gate_up) W^T (+ b) in one launch of fourfold's GEMV: gate_up [tokens, 2K] (gate
// columns first), the activation's value and rounding those of kernels/swiglu.cu, computed inside
// every block of the GEMV. An undefined tensor where the plan does not take the fusion.
at::Tensor native_linear_swiglu(const at::Tensor& gate_up, const at::Tensor& w,
                                const at::Tensor& bias, const call_context& ctx);

} // namespace fourfold::workloads::model_ops
