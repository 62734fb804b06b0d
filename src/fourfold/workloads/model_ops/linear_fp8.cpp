#include "fourfold/workloads/model_ops/linear_fp8.hpp"

#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/native.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdexcept>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/gemv_fp8.hpp"
#endif

namespace fourfold::workloads::model_ops {

#if FOURFOLD_WITH_KERNELS
static_assert(k_native_fp8_linear_max_tokens == kernels::k_gemv_fp8_max_tokens);

namespace {

void check_inputs(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& scale,
                  const at::Tensor& bias, bool swiglu) {
    auto fail = [](const std::string& what) { throw std::invalid_argument("linear_fp8: " + what); };
    if (x.dim() != 2 || wq.dim() != 2 || x.size(1) != (swiglu ? 2 : 1) * wq.size(1))
        fail(fmt::format("x must be [tokens, {}] and the weight [N, K]; got {} and {}",
                         swiglu ? "2K (gate | up)" : "K", fmt::join(x.sizes(), "x"),
                         fmt::join(wq.sizes(), "x")));
    if (x.scalar_type() != at::kBFloat16)
        fail(fmt::format("x must be bf16, not {}", c10::toString(x.scalar_type())));
#if FOURFOLD_HAS_FLOAT8
    if (wq.scalar_type() != at::kFloat8_e4m3fn)
        fail(fmt::format("the weight must be float8_e4m3fn, not {}",
                         c10::toString(wq.scalar_type())));
#endif
    const auto n = wq.size(0);
    if (scale.scalar_type() != at::kFloat || (scale.numel() != 1 && scale.numel() != n))
        fail(fmt::format("the scale must be float32 with 1 (per tensor) or N = {} (per row) "
                         "elements; got {} with {}",
                         n, c10::toString(scale.scalar_type()), scale.numel()));
    if (bias.defined() && (bias.scalar_type() != at::kBFloat16 || bias.numel() != n ||
                           bias.dim() != 1 || bias.stride(0) != 1))
        fail(fmt::format("the bias must be a contiguous bf16 [N = {}]", n));
    for (const auto* t : {&wq, &scale, &bias})
        if (t->defined() && t->device() != x.device())
            fail("x, the weight, the scale and the bias must be on one device");
}

// the stride between consecutive rows' scales of an [N], [N, 1] or [1, N] tensor
std::int64_t scale_stride(const at::Tensor& scale) {
    std::int64_t inc = 1;
    for (std::int64_t d = 0; d < scale.dim(); ++d)
        if (scale.size(d) > 1)
            inc = scale.stride(d);
    return inc;
}

} // namespace
#endif

namespace {

// linear_fp8 with a prologue: RMSNorm(x) by `norm` (bf16 [K]) and eps, or the SwiGLU of x's
// [gate | up] rows; an undefined tensor where the plan does not take the fusion asked for.
at::Tensor linear_fp8_with(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& scale,
                           const at::Tensor& bias, const call_context& ctx,
                           const at::Tensor& norm = {}, double eps = 0, bool swiglu = false) {
#if FOURFOLD_WITH_KERNELS
    check_inputs(x, wq, scale, bias, swiglu);
    if (norm.defined() && (norm.dim() != 1 || norm.size(0) != x.size(1) || norm.stride(0) != 1 ||
                           norm.scalar_type() != at::kBFloat16 || norm.device() != x.device()))
        throw std::invalid_argument("linear_fp8: the norm weight must be a contiguous bf16 [K] on "
                                    "x's device");
    kernels::gemv_fp8_args a;
    a.x = x.data_ptr();
    a.w = wq.data_ptr();
    a.scale = scale.data_ptr<float>();
    a.bias = bias.defined() ? bias.data_ptr() : nullptr;
    a.tokens = x.size(0);
    a.n = wq.size(0);
    a.k = wq.size(1);
    a.ld_x = x.stride(0);
    a.ld_w = wq.stride(0);
    a.inc_x = x.stride(1);
    a.inc_w = wq.stride(1);
    a.scaling =
        scale.numel() == 1 ? kernels::fp8_scaling::per_tensor : kernels::fp8_scaling::per_row;
    a.inc_scale = scale_stride(scale);
    if (norm.defined()) {
        a.norm_weight = norm.data_ptr();
        a.norm_eps = eps;
    }
    a.swiglu_x = swiglu;
    const auto plan = kernels::plan_gemv_fp8(a, native::limits(ctx));
    if ((norm.defined() && !plan.fused_norm) || (swiglu && !plan.fused_swiglu))
        return {};
    auto y = at::empty({x.size(0), wq.size(0)}, x.options());
    a.y = y.data_ptr();
    a.ld_y = y.stride(0);
    if (ctx.wants_facts()) {
        const int code = kernels::gemv_fp8_code_version(ctx.device().spec().index);
        ctx.fact("kernel",
                 json{{"path", plan.describe()},
                      {"vectorised", plan.vectorised},
                      {"rows_per_warp", plan.rows_per_warp},
                      {"split_k", plan.k_split},
                      {"blocks", plan.blocks},
                      {"threads_per_block", plan.threads},
                      {"scaling", kernels::to_string(a.scaling)},
                      {"claimed", plan.claimed},
                      {"column_stationary", plan.column_stationary},
                      {"bias", bias.defined() ? "fused" : "none"},
                      {"prologue", plan.fused_norm     ? "RMSNorm fused"
                                   : plan.fused_swiglu ? "SwiGLU fused"
                                                       : "none"},
                      {"code", fmt::format("sm_{}", code)},
                      {"e4m3_conversion", code >= 89 ? "cvt.rn.f16x2.e4m3x2, two values an "
                                                       "instruction"
                                                     : "cuda_fp8.h integer emulation (code "
                                                       "below sm_89)"}});
    }
    native::check(kernels::launch_gemv_fp8(plan, a, native::stream(ctx)), "gemv_fp8");
    return y;
#else
    (void)x;
    (void)wq;
    (void)scale;
    (void)bias;
    (void)ctx;
    (void)norm;
    (void)eps;
    (void)swiglu;
    throw std::logic_error("linear_fp8 ran in a build without native kernels");
#endif
}

} // namespace

at::Tensor linear_fp8(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& scale,
                      const at::Tensor& bias, const call_context& ctx) {
    return linear_fp8_with(x, wq, scale, bias, ctx);
}

at::Tensor linear_fp8_rms_normed(const at::Tensor& x, const at::Tensor& norm_weight, double eps,
                                 const at::Tensor& wq, const at::Tensor& scale,
                                 const call_context& ctx) {
    if (!norm_weight.defined())
        throw std::invalid_argument("linear_fp8_rms_normed: the norm weight is undefined");
    return linear_fp8_with(x, wq, scale, at::Tensor(), ctx, norm_weight, eps);
}

at::Tensor linear_fp8_swiglu(const at::Tensor& gate_up, const at::Tensor& wq,
                             const at::Tensor& scale, const at::Tensor& bias,
                             const call_context& ctx) {
    return linear_fp8_with(gate_up, wq, scale, bias, ctx, at::Tensor(), 0, true);
}

std::pair<at::Tensor, at::Tensor> quantise_fp8_row(const at::Tensor& w) {
#if FOURFOLD_HAS_FLOAT8
    constexpr double e4m3_max = 448.0; // largest finite float8_e4m3fn
    if (w.dim() != 2)
        throw std::invalid_argument(
            fmt::format("quantise_fp8_row: the weight must be [N, K]; got {}", w.dim()));
    const auto wf = w.to(at::kFloat);
    auto scale = (wf.abs().amax(1, true) / e4m3_max).clamp_min(1e-12); // [N, 1]
    auto wq = (wf / scale).clamp(-e4m3_max, e4m3_max).to(at::kFloat8_e4m3fn);
    return {std::move(wq), scale.reshape({-1}).contiguous()};
#else
    (void)w;
    throw unsupported_here(fmt::format("float8_e4m3fn weights: libtorch {}.{} has no float8 types "
                                       "(2.1+)",
                                       TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
#endif
}

at::Tensor linear_fp8_dequantised(const at::Tensor& x, const at::Tensor& wq,
                                  const at::Tensor& scale, const at::Tensor& bias) {
    const auto w = (wq.to(at::kFloat) * scale.reshape({-1, 1})).to(x.scalar_type());
    return bias.defined() ? at::linear(x, w, bias) : at::linear(x, w);
}

std::optional<std::string> linear_fp8_unavailable(const backend::device& dev) {
    if (dev.spec().kind != backend::device_kind::cuda)
        return fmt::format("fourfold's FP8 GEMV is a CUDA kernel; device {} is not CUDA",
                           dev.name());
#if FOURFOLD_WITH_KERNELS
    if (auto why = kernels::gemv_fp8_unavailable(dev.spec().index))
        return fmt::format("{} (built for {})", *why, FOURFOLD_KERNEL_ARCHITECTURES);
    return std::nullopt;
#else
    return std::string("this build has no native kernels (libtorch without CUDA, or no CUDA "
                       "toolkit)");
#endif
}

} // namespace fourfold::workloads::model_ops
