#include "fourfold/workloads/model_ops/linear.hpp"

#include "fourfold/workloads/native.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <stdexcept>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/gemv.hpp"
#endif

namespace fourfold::workloads::model_ops {
namespace {

#if FOURFOLD_WITH_KERNELS
static_assert(k_native_linear_max_tokens == kernels::k_gemv_max_tokens);
#endif

// fourfold's GEMV (kernels/gemv.cu): the weight streamed once in 16-byte loads, the bias fused
// into the one rounding of the output; with `norm` defined, RMSNorm(x) with that weight fused in
// front, with `swiglu` x as [gate | up] rows and their SwiGLU fused in front; an undefined tensor
// where the plan does not take the fusion asked for.
at::Tensor native_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                         const call_context* ctx, const at::Tensor& norm = {}, double eps = 0,
                         bool swiglu = false) {
#if FOURFOLD_WITH_KERNELS
    if (!ctx)
        throw std::logic_error("the native linear needs a call context (its stream)");
    if (b.defined() && b.stride(0) != 1)
        throw std::logic_error("linear native: bias must be contiguous");
    if (norm.defined() && (norm.dim() != 1 || norm.size(0) != x.size(1) || norm.stride(0) != 1 ||
                           norm.scalar_type() != x.scalar_type()))
        throw std::logic_error("linear native: the norm weight must be [K], contiguous, x's dtype");
    if (swiglu && x.size(1) != 2 * w.size(1))
        throw std::logic_error("linear native: a fused SwiGLU's input is [tokens, 2K]");
    kernels::gemv_args a;
    a.x = x.data_ptr();
    a.w = w.data_ptr();
    a.bias = b.defined() ? b.data_ptr() : nullptr;
    a.tokens = x.size(0);
    a.n = w.size(0);
    a.k = w.size(1);
    a.swiglu_x = swiglu;
    a.ld_x = x.stride(0);
    a.ld_w = w.stride(0);
    a.inc_x = x.stride(1);
    a.inc_w = w.stride(1);
    a.type = native::elem_of(x.scalar_type());
    if (norm.defined()) {
        a.norm_weight = norm.data_ptr();
        a.norm_eps = eps;
    }
    const auto plan = kernels::plan_gemv(a, native::limits(*ctx));
    if ((norm.defined() && !plan.fused_norm) || (swiglu && !plan.fused_swiglu))
        return {};
    auto y = at::empty({x.size(0), w.size(0)}, x.options());
    a.y = y.data_ptr();
    a.ld_y = y.stride(0);
    if (ctx->wants_facts())
        ctx->fact("kernel", json{{"path", plan.describe()},
                                 {"vectorised", plan.vectorised},
                                 {"balanced", plan.balanced},
                                 {"claimed", plan.claimed},
                                 {"column_stationary", plan.column_stationary},
                                 {"dependent_launch", plan.dependent_launch},
                                 {"rows_per_warp", plan.rows_per_warp},
                                 {"split_k", plan.k_split},
                                 {"tile_rounds", plan.mma_rounds},
                                 {"blocks", plan.blocks},
                                 {"threads_per_block", plan.threads},
                                 {"bias", b.defined() ? "fused" : "none"},
                                 {"prologue", plan.fused_norm     ? "RMSNorm fused"
                                              : plan.fused_swiglu ? "SwiGLU fused"
                                                                  : "none"}});
    native::check(kernels::launch_gemv(plan, a, native::stream(*ctx)), "gemv");
    return y;
#else
    (void)x;
    (void)w;
    (void)b;
    (void)ctx;
    (void)norm;
    (void)eps;
    (void)swiglu;
    throw std::logic_error("linear native ran in a build without native kernels");
#endif
}

} // namespace

at::Tensor native_linear_rms_normed(const at::Tensor& x, const at::Tensor& norm_weight, double eps,
                                    const at::Tensor& w, const call_context& ctx) {
    if (!norm_weight.defined())
        throw std::logic_error("native_linear_rms_normed: the norm weight is undefined");
    return native_linear(x, w, at::Tensor(), &ctx, norm_weight, eps);
}

at::Tensor native_linear_swiglu(const at::Tensor& gate_up, const at::Tensor& w,
                                const at::Tensor& bias, const call_context& ctx) {
    return native_linear(gate_up, w, bias, &ctx, at::Tensor(), 0, true);
}

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias, op_path path,
                  const call_context* ctx) {
    switch (path) {
    case op_path::stock:
        return at::linear(x, w, bias);
    case op_path::composite: {
        auto out = at::matmul(x, w.t());
        return bias.defined() ? out + bias : out;
    }
    case op_path::native:
        return native_linear(x, w, bias, ctx);
    }
    throw std::logic_error("linear: unknown path");
}

} // namespace fourfold::workloads::model_ops
