#pragma once
// y = x (s . Wq)^T (+ b) with the weight stored as float8_e4m3fn and its scales s: one float32
// for the whole tensor or one per row (output feature). fp8_linear's native variants call this;
// so will the decoder's fp8-weights option, so that the op's figure is about the model's code.
#include <ATen/Tensor.h>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace fourfold::backend {
class device;
}
namespace fourfold::workloads {
class call_context;
}

namespace fourfold::workloads::model_ops {

// fourfold's FP8 GEMV takes 1 to this many rows of x (a decode step).
inline constexpr std::int64_t k_native_fp8_linear_max_tokens = 8;

// x [tokens, K] bf16 (any strides), wq [N, K] float8_e4m3fn (any strides), scale float32 on the
// device: one element (per tensor) or N ([N], [N, 1] or [1, N]: per row), bias [N] bf16
// (contiguous) or undefined. fourfold's FP8 GEMV (kernels/gemv_fp8.cu): the weight streamed
// once in 16-byte loads, the scale and the bias applied to each fp32 sum before its one rounding.
// Its plan goes to ctx.fact("kernel", ...). Throws std::invalid_argument for tensors it does not
// take, std::logic_error in a build without native kernels.
at::Tensor linear_fp8(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& scale,
                      const at::Tensor& bias, const call_context& ctx);

// y = RMSNorm(x) (s . Wq)^T in one launch of the FP8 GEMV: x [tokens, K] bf16 un-normalised (a
// decoder's residual stream), norm_weight bf16 [K], the norm's value and rounding those of
// kernels/rmsnorm.cu, made inside every block. An undefined tensor where the GEMV's plan does
// not take the fusion (one token on the claimed path only: gemv_fp8.hpp); the caller then runs
// the norm on its own.
at::Tensor linear_fp8_rms_normed(const at::Tensor& x, const at::Tensor& norm_weight, double eps,
                                 const at::Tensor& wq, const at::Tensor& scale,
                                 const call_context& ctx);

// y = swiglu(gate_up) (s . Wq)^T (+ b) in one launch of the FP8 GEMV: gate_up [tokens, 2K] bf16
// (gate columns first), kernels/swiglu.cu's value and rounding made inside every block. An
// undefined tensor where the plan does not take the fusion.
at::Tensor linear_fp8_swiglu(const at::Tensor& gate_up, const at::Tensor& wq,
                             const at::Tensor& scale, const at::Tensor& bias,
                             const call_context& ctx);

// The weight-only quantisation fp8_linear's per-row variants and the decoder's fp8_row weights
// use: w [N, K] (any floating dtype, any device) -> {wq float8_e4m3fn [N, K], scale float32 [N]}
// on w's device, scale = max(amax of row n / 448, 1e-12), wq = w / scale rounded to e4m3
// (clamped to +-448). A libtorch without float8 types throws unsupported_here.
std::pair<at::Tensor, at::Tensor> quantise_fp8_row(const at::Tensor& w);

// x (s . wq)^T (+ bias) by libtorch's own ops (generic PyTorch, no fp8 kernel): wq to float32,
// times each row's scale, rounded to x's dtype, then at::linear; the dequantised copy is made in
// every call (fp8_linear's dequant_row path). wq [N, K] float8_e4m3fn, scale float32 [N].
at::Tensor linear_fp8_dequantised(const at::Tensor& x, const at::Tensor& wq,
                                  const at::Tensor& scale, const at::Tensor& bias);

// Why linear_fp8 cannot run on `dev` (not a CUDA device, a build without native kernels, no code
// for the device in the build); nullopt when it can.
std::optional<std::string> linear_fp8_unavailable(const backend::device& dev);

} // namespace fourfold::workloads::model_ops
