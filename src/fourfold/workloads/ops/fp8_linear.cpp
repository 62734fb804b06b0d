// A linear layer whose weights are stored as float8_e4m3fn (1 byte per value instead of 2), with
// per-tensor or per-row (per output feature) scales: experiment E3. The storage of the weight
// halves, the numerics change (3 mantissa bits), and the time depends on the path. Every variant
// is checked against the float64 product with the ORIGINAL bf16 weights, so the quantisation
// error is in the correctness ledger; each variant's weight storage goes with its records.
//
// The native variants (fourfold's FP8 GEMV, kernels/gemv_fp8.cu, through model_ops::linear_fp8)
// are checked twice, as E3 asks: the shared metrics against the bf16 original (the quantisation's
// error, the fp8 budget), and `kernel_error` against the float64 product with the dequantised
// weights s * Wq (the kernel's own error, a bf16 rounding's budget); `quantisation_error` is that
// dequantised product against the original one, no kernel involved. `native_bf16` is the bf16
// GEMV on the original weights in the same job: the FP8 GEMV's reference point.
//
// prologue=rms_norm / swiglu and bias=true (ops/projection_prologue.hpp): the projections of an
// fp8 decoder as its native_fused step runs them, the norm or the SwiGLU fused into the FP8 GEMV
// (model_ops::linear_fp8_rms_normed, linear_fp8_swiglu: the very launch the decoder makes), the
// residual add as the bias; the other variants compute the prologue with libtorch's ops first.
//
// Quantisation of the weights is offline (in make_inputs, like a checkpoint converted once);
// the activations of the _scaled_mm variants are quantised in the call (dynamic, amax / 448),
// because a decode step produces them at run time.
#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/measure/correctness.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/model_ops/linear.hpp"
#include "fourfold/workloads/model_ops/linear_fp8.hpp"
#include "fourfold/workloads/ops/projection_prologue.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <vector>

namespace fourfold::workloads {
namespace {

constexpr double k_e4m3_max = 448.0; // largest finite float8_e4m3fn

// e4m3 keeps 3 mantissa bits: a rounding error up to 1/16 of a value, about 2.7 % RMS for
// values spread over a binade; the _scaled_mm variants quantise the activations too (about 4 %
// together). Twice that in relative L2, and elementwise 0.25 of the output RMS (over 6 standard
// deviations of that error) plus 1/8 of the value.
measure::tolerance fp8_tolerance() {
    return {0.08, 0.125, 0.25,
            "fp8_linear: e4m3 weights (and, for _scaled_mm, activations) against the float64 "
            "product with the original bf16 weights"};
}

// The FP8 GEMV against the float64 product with the dequantised weights: fp32 sums of exact
// products (e4m3 and bf16 are exact in fp32), then one rounding to bf16, half an ulp (2^-9 of
// the value). Elementwise two ulps (2^-7) and 0.8 % of the output RMS; rel L2 0.4 %.
measure::tolerance kernel_tolerance() {
    return {4e-3, 8e-3, 8e-3,
            "fp8_linear native: the FP8 GEMV against the float64 product with the dequantised "
            "weights s * Wq (fp32 sums, one rounding to bf16)"};
}

bool is_native_fp8(const std::string& variant) {
    return variant.rfind("native_fp8", 0) == 0;
}
bool is_bf16(const std::string& variant) {
    return variant == "bf16" || variant == "native_bf16";
}
bool per_row(const std::string& variant) {
    return variant.find("row") != std::string::npos;
}

// the input slots
constexpr const char* k_x = "x"; // projection_prologue's names: "x", "norm_weight"
constexpr const char* k_bias = "bias";
constexpr const char* k_w = "weight";
constexpr const char* k_wq_tensor = "weight_fp8_tensor";
constexpr const char* k_scale_tensor = "scale_tensor";
constexpr const char* k_wq_row = "weight_fp8_row";
constexpr const char* k_scale_row = "scale_row";

// The native variants' second check: the output against x (s * Wq)^T (+ b) in float64 (the
// kernel's own error), and that product against the reference with the original weights (the
// quantisation's error alone); x64 is the prologue's float64 output where there is one. The
// reference chunks arrive along N; the output slices are kept (views of the CPU output) until
// finish(), whose tolerance needs the whole output's RMS.
class dequantised_metrics final : public extra_metrics {
  public:
    dequantised_metrics(at::Tensor x64, at::Tensor wq, at::Tensor scale, at::Tensor bias,
                        bool per_row, std::string what)
        : m_x64(std::move(x64)), m_wq(std::move(wq)), m_scale(std::move(scale)),
          m_bias(std::move(bias)), m_per_row(per_row), m_what(std::move(what)) {}

    void add(const at::Tensor& out, const at::Tensor& ref, std::int64_t dim,
             std::int64_t start) override {
        m_slices.push_back({out, ref, dim, start});
    }

    result finish() override {
        result r;
        if (m_slices.empty())
            return r;
        std::vector<std::int64_t> shape = {m_x64.size(0), m_wq.size(0)};
        double sum_sq = 0;
        std::int64_t count = 0;
        for (const auto& s : m_slices) {
            const auto d = s.out.to(at::kDouble);
            const auto finite = at::isfinite(d);
            sum_sq += at::where(finite, d * d, at::zeros_like(d)).sum().item<double>();
            count += finite.sum().item<std::int64_t>();
        }
        const double rms = count > 0 ? std::sqrt(sum_sq / static_cast<double>(count)) : 0.0;
        measure::error_accumulator kernel(dtype::bf16, shape, kernel_tolerance(), rms);
        double q_err_sq = 0, q_ref_sq = 0, q_max_abs = 0;
        for (const auto& s : m_slices) {
            const auto length = s.out.size(s.dim);
            const auto dq = dequantised(s.start, length); // (tokens, length), s.dim == 1
            kernel.add(s.out, dq, s.dim, s.start);
            const auto diff = dq - s.ref;
            q_err_sq += (diff * diff).sum().item<double>();
            q_ref_sq += (s.ref * s.ref).sum().item<double>();
            q_max_abs = std::max(q_max_abs, diff.abs().max().item<double>());
        }
        const auto k = kernel.finish();
        json kernel_json = k.to_json();
        kernel_json["tolerance"] = kernel_tolerance().to_json();
        kernel_json["reference"] =
            m_what + " in float64 on the CPU: the product with the dequantised weights";
        r.metrics["kernel_error"] = kernel_json;
        r.metrics["quantisation_error"] =
            json{{"rel_l2", q_ref_sq > 0 ? std::sqrt(q_err_sq / q_ref_sq) : 0.0},
                 {"max_abs", q_max_abs},
                 {"what", "x @ (s * Wq)^T against x @ W^T with the original bf16 weights, both in "
                          "float64: the quantisation's error alone, no kernel involved"}};
        for (const auto& c : k.failed_checks)
            r.failed_checks.push_back("kernel error against the dequantised product: " + c);
        if (!k.pass && k.failed_checks.empty())
            r.failed_checks.push_back("kernel error against the dequantised product: FAIL");
        return r;
    }

  private:
    struct slice {
        at::Tensor out, ref;
        std::int64_t dim, start;
    };

    // x @ (s * Wq[start : start + length])^T (+ b) in float64
    at::Tensor dequantised(std::int64_t start, std::int64_t length) const {
        auto w = m_wq.narrow(0, start, length).to(at::kFloat).to(at::kDouble);
        const auto s = m_scale.to(at::kDouble).reshape({-1});
        w = m_per_row ? w * s.narrow(0, start, length).unsqueeze(1) : w * s[0];
        const auto b =
            m_bias.defined() ? m_bias.narrow(0, start, length).to(at::kDouble) : at::Tensor();
        return at::linear(m_x64, w, b);
    }

    at::Tensor m_x64, m_wq, m_scale, m_bias;
    bool m_per_row;
    std::string m_what;
    std::vector<slice> m_slices;
};

class fp8_linear_case final : public workload_case {
  public:
    explicit fp8_linear_case(const case_args& a)
        : workload_case(a), m_tokens(a.get_int("tokens")), m_n(a.get_int("n")), m_k(a.get_int("k")),
          m_bias(a.get_bool("bias")), m_pro{a.get_text("prologue")} {}

    cost declared_cost() const override { return variant_cost("bf16"); }

    cost variant_cost(const std::string& variant) const override {
        const double t = static_cast<double>(m_tokens), n = static_cast<double>(m_n),
                     k = static_cast<double>(m_k);
        return {2 * t * k + static_cast<double>(weight_storage_bytes(variant)) +
                    (m_bias ? 2 * n : 0.0) + m_pro.extra_read_bytes(t, k, 2),
                2 * t * n, 2 * t * n * k + (m_bias ? t * n : 0.0) + m_pro.extra_flops(t, k),
                m_pro.none() ? "read bf16 activations, the variant's stored weight (and scales) "
                               "and the bias once, write the bf16 output once"
                             : "read bf16 activations (and the prologue's weight), the variant's "
                               "stored weight (and scales) and the bias once, write the bf16 "
                               "output once"};
    }

    measure::tolerance variant_tolerance(const std::string& variant) const override {
        return is_bf16(variant) ? tolerance() : fp8_tolerance();
    }

    input_set make_inputs(std::uint64_t seed) const override {
        const auto bf16 = backend::scalar_type_or_throw(args().type);
        const double bound = 1.0 / std::sqrt(static_cast<double>(m_k));
        input_set in;
        m_pro.add_inputs(in, m_tokens, m_k, seed, bf16); // k_x, and the norm's weight
        in.add(k_w, seeded_uniform({m_n, m_k}, sub_seed(seed, 1), -bound, bound, bf16));
        if (m_bias)
            in.add(k_bias, seeded_uniform({m_n}, sub_seed(seed, 2), -bound, bound, bf16));
#if FOURFOLD_HAS_FLOAT8
        const auto w = in[k_w].to(at::kFloat);
        const auto scale_tensor = (w.abs().amax() / k_e4m3_max).clamp_min(1e-12).reshape({1});
        const auto scale_row = (w.abs().amax(1, true) / k_e4m3_max).clamp_min(1e-12); // (N, 1)
        auto quantise = [](const at::Tensor& v) {
            return v.clamp(-k_e4m3_max, k_e4m3_max).to(at::kFloat8_e4m3fn);
        };
        in.add(k_wq_tensor, quantise(w / scale_tensor))
            .add(k_scale_tensor, scale_tensor)
            .add(k_wq_row, quantise(w / scale_row))
            .add(k_scale_row,
                 scale_row.reshape({1, m_n}).contiguous()); // (1, N): _scaled_mm's form
#endif
        return in;
    }

    reference_plan reference(const input_set& in) const override {
        const auto x64 = m_pro.apply_f64(in);
        const auto& w = in[k_w];
        const auto b = bias(in);
        return chunked_reference(
            1, m_n, (m_k + m_tokens + 1) * 8,
            m_pro.reference_text(m_bias ? "W^T + b" : "W^T") +
                " in float64 on the CPU with the original bf16 weights",
            [x64, w, b](std::int64_t start, std::int64_t length) {
                const auto bc =
                    b.defined() ? b.narrow(0, start, length).to(at::kDouble) : at::Tensor();
                return at::linear(x64, w.narrow(0, start, length).to(at::kDouble), bc);
            });
    }

    std::unique_ptr<extra_metrics> make_variant_metrics(const std::string& variant,
                                                        const input_set& in) const override {
        if (!is_native_fp8(variant))
            return nullptr;
        const bool row = per_row(variant);
        return std::make_unique<dequantised_metrics>(
            m_pro.apply_f64(in), in[row ? k_wq_row : k_wq_tensor],
            in[row ? k_scale_row : k_scale_tensor], bias(in), row,
            m_pro.reference_text(m_bias ? "(s * Wq)^T + b" : "(s * Wq)^T"));
    }

    std::optional<std::string> unsupported(const std::string& variant,
                                           const backend::device& dev) const override {
        if (variant == "native_bf16" && m_tokens > model_ops::k_native_linear_max_tokens)
            return fmt::format("the native GEMV takes 1 to {} tokens (a decode step); {} tokens "
                               "is a GEMM",
                               model_ops::k_native_linear_max_tokens, m_tokens);
        if (variant.rfind("native", 0) == 0 && m_pro.rms_norm() && m_bias)
            return std::string("the native GEMVs fuse an RMSNorm without a bias (no decoder "
                               "projection has both)");
        if (is_bf16(variant))
            return std::nullopt;
        if (const auto why = dev.caps().missing("float8"))
            return "float8_e4m3fn: " + *why;
        if (is_native_fp8(variant)) {
            if (m_tokens > model_ops::k_native_fp8_linear_max_tokens)
                return fmt::format("the FP8 GEMV takes 1 to {} tokens (a decode step); {} tokens "
                                   "is a GEMM",
                                   model_ops::k_native_fp8_linear_max_tokens, m_tokens);
            return model_ops::linear_fp8_unavailable(dev);
        }
        if (variant.rfind("scaled_mm", 0) != 0)
            return std::nullopt;
        if (dev.spec().kind != backend::device_kind::cuda)
            return fmt::format("fourfold runs _scaled_mm on CUDA only (the FP8 tensor-core path, "
                               "sm_89+); device {} is not CUDA",
                               dev.name());
        if (const auto why = dev.caps().missing("scaled_mm"))
            return *why;
        if (m_k % 16 != 0 || m_n % 16 != 0)
            return fmt::format("_scaled_mm needs k and n to be multiples of 16; k={}, n={}", m_k,
                               m_n);
        return std::nullopt;
    }

    json variant_facts(const std::string& variant) const override {
        json f{{"weight_storage_bytes", weight_storage_bytes(variant)},
               {"weight_dtype", is_bf16(variant) ? "bf16" : "float8_e4m3fn"},
               {"scale_bytes", scale_bytes(variant)},
               {"bf16_weight_bytes", 2 * m_n * m_k},
               {"memory_note", "the memory pass holds every variant's weights (the inputs are "
                               "shared); weight_storage_bytes is this variant's own"}};
        if (variant == "bf16")
            f["path"] = "at::linear on the bf16 weights (reference point)";
        if (variant == "native_bf16")
            f["path"] = "fourfold's bf16 GEMV (kernels/gemv.cu) on the original weights: the FP8 "
                        "GEMV's reference point";
        if (is_native_fp8(variant)) {
            f["path"] = "fourfold's FP8 GEMV (kernels/gemv_fp8.cu): e4m3 weights streamed once, "
                        "converted in registers, the scale applied to each fp32 sum";
            f["correctness"] = "shared metrics: against the original bf16 weights (quantisation "
                               "budget); metrics.kernel_error: against the dequantised weights";
        }
        if (variant.rfind("dequant", 0) == 0)
            f["path"] = "fp8 -> fp32, times the scale, -> bf16, then at::linear: a full-precision "
                        "copy of the weight is made in every call";
        if (variant.rfind("scaled_mm", 0) == 0) {
            f["path"] = "at::_scaled_mm (fp8 x fp8 -> bf16)";
            f["activation"] = fmt::format("quantised to e4m3 in the call, {} amax / 448",
                                          variant == "scaled_mm_row" ? "per row" : "per tensor");
        }
        if (!is_bf16(variant))
            f["scaling"] = per_row(variant) ? "per_row" : "per_tensor";
        const bool native = variant.rfind("native", 0) == 0;
        if (!m_pro.none())
            f["prologue_path"] = native ? "fused into the GEMV (the native decoder's launch): "
                                          "every block computes its x once, in shared memory"
                                        : m_pro.stock_path();
        if (m_bias)
            f["bias_path"] = native ? "fused: added in fp32 before the output's one rounding"
                             : variant.rfind("scaled_mm", 0) == 0
                                 ? "added after _scaled_mm (a separate add)"
                                 : "at::linear: bias inside the library's GEMM call";
        return f;
    }

    at::Tensor bf16(const call_context&, const input_set& in) const {
        return at::linear(m_pro.apply(in), in[k_w], bias(in));
    }

    at::Tensor dequant_tensor(const call_context&, const input_set& in) const {
        return dequant_linear(m_pro.apply(in), in[k_wq_tensor], in[k_scale_tensor], bias(in));
    }
    at::Tensor dequant_row(const call_context&, const input_set& in) const {
        return dequant_linear(m_pro.apply(in), in[k_wq_row], in[k_scale_row].t(), bias(in));
    }

    at::Tensor scaled_mm_tensor(const call_context&, const input_set& in) const {
        return with_bias(scaled_linear(m_pro.apply(in), in[k_wq_tensor], in[k_scale_tensor], false),
                         in);
    }
    at::Tensor scaled_mm_row(const call_context&, const input_set& in) const {
        return with_bias(scaled_linear(m_pro.apply(in), in[k_wq_row], in[k_scale_row], true), in);
    }

    // The native variants fuse the prologue into their GEMV where its plan takes it (the
    // decoder's native_fused launch); where it does not, a skip with the reason.
    at::Tensor native_bf16(const call_context& ctx, const input_set& in) const {
        if (m_pro.none())
            return model_ops::linear(in[k_x], in[k_w], bias(in), model_ops::op_path::native, &ctx);
        return fused_or_skip(
            m_pro.rms_norm()
                ? model_ops::native_linear_rms_normed(in[k_x], in["norm_weight"],
                                                      projection_prologue::k_norm_eps, in[k_w], ctx)
                : model_ops::native_linear_swiglu(in[k_x], in[k_w], bias(in), ctx),
            "bf16");
    }
    at::Tensor native_fp8_tensor(const call_context& ctx, const input_set& in) const {
        return native_fp8(ctx, in, in[k_wq_tensor], in[k_scale_tensor]);
    }
    at::Tensor native_fp8_row(const call_context& ctx, const input_set& in) const {
        return native_fp8(ctx, in, in[k_wq_row], in[k_scale_row]);
    }

  private:
    at::Tensor bias(const input_set& in) const {
        return m_bias ? in[k_bias] : at::Tensor();
    }
    at::Tensor with_bias(const at::Tensor& y, const input_set& in) const {
        return m_bias ? y + in[k_bias] : y;
    }

    at::Tensor native_fp8(const call_context& ctx, const input_set& in, const at::Tensor& wq,
                          const at::Tensor& scale) const {
        if (m_pro.none())
            return model_ops::linear_fp8(in[k_x], wq, scale, bias(in), ctx);
        return fused_or_skip(m_pro.rms_norm()
                                 ? model_ops::linear_fp8_rms_normed(in[k_x], in["norm_weight"],
                                                                    projection_prologue::k_norm_eps,
                                                                    wq, scale, ctx)
                                 : model_ops::linear_fp8_swiglu(in[k_x], wq, scale, bias(in), ctx),
                             "FP8");
    }

    at::Tensor fused_or_skip(const at::Tensor& y, const char* which) const {
        if (!y.defined())
            throw unsupported_here(fmt::format(
                "the native {} GEMV fuses a prologue on its column-stationary or claimed path "
                "only (one token, rows of 2 KB or more, at least 4 rows a block of the wave, the "
                "prologue's x in 48 KiB); {} x {} x {} takes another",
                which, m_tokens, m_n, m_k));
        return y;
    }

    std::int64_t scale_bytes(const std::string& variant) const {
        if (is_bf16(variant))
            return 0;
        return 4 * (per_row(variant) ? m_n : 1);
    }
    std::int64_t weight_storage_bytes(const std::string& variant) const {
        return is_bf16(variant) ? 2 * m_n * m_k : m_n * m_k + scale_bytes(variant);
    }

    static at::Tensor dequant_linear(const at::Tensor& x, const at::Tensor& wq,
                                     const at::Tensor& scale, const at::Tensor& bias) {
        return at::linear(x, (wq.to(at::kFloat) * scale).to(x.scalar_type()), bias);
    }

    static at::Tensor scaled_linear(const at::Tensor& x, const at::Tensor& wq,
                                    const at::Tensor& w_scale, bool per_row) {
#if FOURFOLD_HAS_SCALED_MM && FOURFOLD_HAS_FLOAT8
        const auto xf = x.to(at::kFloat);
        const auto amax = per_row ? xf.abs().amax(1, true) : xf.abs().amax().reshape({1});
        const auto x_scale = (amax / k_e4m3_max).clamp_min(1e-12);
        const auto xq = (xf / x_scale).clamp(-k_e4m3_max, k_e4m3_max).to(at::kFloat8_e4m3fn);
        // b column-major: the (N, K) weight seen as (K, N) through t()
        return at::_scaled_mm(xq, wq.t(), x_scale, w_scale, std::nullopt, std::nullopt,
                              x.scalar_type(), false);
#else
        throw std::logic_error("fp8_linear _scaled_mm ran on a build without it");
#endif
    }

    std::int64_t m_tokens, m_n, m_k;
    bool m_bias;
    projection_prologue m_pro;
};

FOURFOLD_WORKLOAD(fp8_linear_case, "fp8_linear")
    .describe("y = x W^T with W stored as float8_e4m3fn, per-tensor or per-row scales")
    .shape({"tokens", "n", "k"})
    .param_int("tokens", 16, "tokens (rows of x)", 1, 1 << 16)
    .param_int("n", 4096, "output features (rows of W)", 1, 1 << 22)
    .param_int("k", 4096, "input features (columns of W)", 1, 1 << 22)
    .param_bool("bias", false, "add a bias vector (the fp8 decoder's residual add)")
    .param_text("prologue", "none", {"none", "rms_norm", "swiglu"}, projection_prologue::k_help)
    .dtypes({dtype::bf16})
    .variant("bf16", &fp8_linear_case::bf16, "at::linear on bf16 weights (the reference point)",
             false, {.ops = {"linear"}})
    .variant("dequant_tensor", &fp8_linear_case::dequant_tensor,
             "fp8 weights, per-tensor scale: dequantise to bf16, then at::linear")
    .variant("dequant_row", &fp8_linear_case::dequant_row,
             "fp8 weights, per-row scales: dequantise to bf16, then at::linear")
    .variant("scaled_mm_tensor", &fp8_linear_case::scaled_mm_tensor,
             "at::_scaled_mm, per-tensor scales (activations quantised in the call)")
    .variant("scaled_mm_row", &fp8_linear_case::scaled_mm_row,
             "at::_scaled_mm, per-row scales (activations quantised per row in the call)")
    .native_variant("native_bf16", &fp8_linear_case::native_bf16,
                    "fourfold's bf16 GEMV on the original weights (the FP8 GEMV's reference "
                    "point); 1 to 8 tokens")
    .native_variant("native_fp8_tensor", &fp8_linear_case::native_fp8_tensor,
                    "fourfold's FP8 weight-only GEMV, per-tensor scale: e4m3 weights streamed "
                    "once in 16-byte loads, bf16 activations; 1 to 8 tokens")
    .native_variant("native_fp8_row", &fp8_linear_case::native_fp8_row,
                    "fourfold's FP8 weight-only GEMV, per-row scales; 1 to 8 tokens");

} // namespace
} // namespace fourfold::workloads
