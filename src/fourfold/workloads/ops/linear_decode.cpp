// F.linear at decode time: tokens x K activations times an N x K weight (+ bias). One token is a
// matrix-vector product that reads the whole weight: bandwidth-bound. Experiment E1, over the 96
// layer shapes of linear_shapes.hpp (the suites `article` and `linear_shapes` sweep them).
// prologue=rms_norm: y = RMSNorm(x) W^T, as a decoder's q/k/v, MLP and LM-head projections take
// their input; prologue=swiglu: y = (silu(gate) * up) W^T, x being [tokens, 2K] gate/up rows, as
// a dense MLP's down projection takes its input. stock computes the prologue with libtorch ops,
// then at::linear; native fuses it into the GEMV (the launch the native decoder makes there).
#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/linear_shapes.hpp"
#include "fourfold/workloads/model_ops/linear.hpp"
#include "fourfold/workloads/ops/projection_prologue.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <cmath>
#include <fmt/format.h>

namespace fourfold::workloads {
namespace {

constexpr std::int64_t k_native_max_tokens = model_ops::k_native_linear_max_tokens;
class linear_decode_case final : public workload_case {
  public:
    explicit linear_decode_case(const case_args& a)
        : workload_case(a), m_tokens(a.get_int("tokens")), m_n(a.get_int("n")), m_k(a.get_int("k")),
          m_bias(a.get_bool("bias")), m_pro{a.get_text("prologue")} {}

    cost declared_cost() const override {
        const double e = static_cast<double>(size_bytes(args().type));
        const double t = static_cast<double>(m_tokens), n = static_cast<double>(m_n),
                     k = static_cast<double>(m_k);
        return {e * (t * k + n * k + (m_bias ? n : 0.0)) + m_pro.extra_read_bytes(t, k, e),
                e * t * n, 2.0 * t * n * k + (m_bias ? t * n : 0.0) + m_pro.extra_flops(t, k),
                m_pro.none() ? "read activations, weight and bias once, write the output once"
                             : "read activations (and the prologue's weight), weight and bias "
                               "once, write the output once"};
    }

    input_set make_inputs(std::uint64_t seed) const override {
        const auto type = backend::scalar_type_or_throw(args().type);
        // Kaiming-uniform weights keep the outputs near unit scale for any K.
        const double bound = 1.0 / std::sqrt(static_cast<double>(m_k));
        input_set in;
        m_pro.add_inputs(in, m_tokens, m_k, seed, type);
        in.add("weight", seeded_uniform({m_n, m_k}, sub_seed(seed, 1), -bound, bound, type));
        if (m_bias)
            in.add("bias", seeded_uniform({m_n}, sub_seed(seed, 2), -bound, bound, type));
        return in;
    }

    reference_plan reference(const input_set& in) const override {
        const auto& w = in["weight"];
        const auto b = m_bias ? in["bias"] : at::Tensor();
        const auto x64 = m_pro.apply_f64(in);
        // chunks of output features: the float64 weight rows dominate the working set
        return chunked_reference(
            1, m_n, (m_k + m_tokens + 1) * 8, m_pro.reference_text("W^T + b in float64 on the CPU"),
            [x64, w, b](std::int64_t start, std::int64_t length) {
                const auto wc = w.narrow(0, start, length).to(at::kDouble);
                const auto bc =
                    b.defined() ? b.narrow(0, start, length).to(at::kDouble) : at::Tensor();
                return at::linear(x64, wc, bc);
            });
    }

    // The three paths of model_ops::linear, the function every projection of the decoder calls.
    at::Tensor stock(const call_context& ctx, const input_set& in) const {
        return model_ops::linear(x_of(in), in["weight"], bias(in), model_ops::op_path::stock, &ctx);
    }

    // matmul, then a separate bias add: the unfused path (an extra pass over the output)
    at::Tensor generic(const call_context& ctx, const input_set& in) const {
        return model_ops::linear(x_of(in), in["weight"], bias(in), model_ops::op_path::composite,
                                 &ctx);
    }

    // fourfold's GEMV (kernels/gemv.cu): the weight streamed once in 16-byte loads, the bias
    // fused into the one rounding of the output.
    // With a prologue it is fused in front (one launch), where the GEMV's plan takes it.
    at::Tensor native(const call_context& ctx, const input_set& in) const {
        if (m_pro.none())
            return model_ops::linear(in["x"], in["weight"], bias(in), model_ops::op_path::native,
                                     &ctx);
        if (m_pro.rms_norm() && m_bias)
            throw unsupported_here("the native GEMV fuses RMSNorm without a bias (no decoder "
                                   "projection has both)");
        auto y = m_pro.rms_norm()
                     ? model_ops::native_linear_rms_normed(in["x"], in["norm_weight"],
                                                           projection_prologue::k_norm_eps,
                                                           in["weight"], ctx)
                     : model_ops::native_linear_swiglu(in["x"], in["weight"], bias(in), ctx);
        if (!y.defined())
            throw unsupported_here(fmt::format(
                "the native GEMV fuses its prologue on its balanced path only (rows of 2 KB or "
                "more, at least 4 rows a block of the wave, T x K elements in 48 KiB); "
                "{} x {} x {} takes another",
                m_tokens, m_n, m_k));
        return y;
    }

    std::optional<std::string> unsupported(const std::string& variant,
                                           const backend::device&) const override {
        if (variant == "native" && m_tokens > k_native_max_tokens)
            return fmt::format("the native GEMV takes 1 to {} tokens (a decode step); {} tokens "
                               "is a GEMM",
                               k_native_max_tokens, m_tokens);
        return std::nullopt;
    }

    // Which real layer this shape is (E1's shape table), and how the bias is applied.
    json variant_facts(const std::string& variant) const override {
        json f{{"weight_storage_bytes", m_n * m_k * size_bytes(args().type)}};
        if (!m_pro.none())
            f["prologue_path"] =
                variant == "native"
                    ? "fused into the GEMV: every block computes its x once, in shared memory"
                    : m_pro.stock_path();
        if (m_bias)
            f["bias_path"] =
                variant == "stock"    ? "at::linear: addmm, bias inside the library's GEMM call"
                : variant == "native" ? "fused: added in fp32 before the output's one rounding"
                                      : "at::matmul, then a separate add";
        if (const auto* s = find_linear_shape(m_n, m_k)) {
            f["layer"] = s->label();
            f["layer_source"] = s->source;
            f["layers_sharing_shape"] = s->also.size();
        }
        return f;
    }

  private:
    at::Tensor bias(const input_set& in) const { return m_bias ? in["bias"] : at::Tensor(); }
    at::Tensor x_of(const input_set& in) const { return m_pro.apply(in); }

    std::int64_t m_tokens, m_n, m_k;
    bool m_bias;
    projection_prologue m_pro;
};

FOURFOLD_WORKLOAD(linear_decode_case, "linear_decode")
    .describe("y = x W^T (+ b) with few tokens: decode-time projection, bandwidth-bound")
    .shape({"tokens", "n", "k"})
    .param_int("tokens", 1, "tokens (rows of x), 1 at decode", 1, 1 << 16)
    .param_int("n", 4096, "output features (rows of W)", 1, 1 << 22)
    .param_int("k", 4096, "input features (columns of W)", 1, 1 << 22)
    .param_bool("bias", false, "add a bias vector")
    .param_text("prologue", "none", {"none", "rms_norm", "swiglu"}, projection_prologue::k_help)
    .dtypes({dtype::bf16, dtype::fp16, dtype::fp32})
    .variant("stock", &linear_decode_case::stock,
             "at::linear (fused bias where the library has it)", false, {.ops = {"linear"}})
    .variant("generic", &linear_decode_case::generic, "at::matmul, then a separate bias add", false,
             {.ops = {"matmul"}})
    .native_variant("native", &linear_decode_case::native,
                    "fourfold's CUDA GEMV: weights streamed once in 16-byte loads, split-K for "
                    "small N, bias fused; 1 to 8 tokens");

} // namespace
} // namespace fourfold::workloads
