#pragma once
// What comes in front of a decode-time projection, as a decoder's projections take their input:
// the two operator workloads of a projection (linear_decode: bf16/fp16/fp32 weights;
// fp8_linear: e4m3 weights) share the parameter, the inputs it adds, libtorch's path for the
// stock variants and the float64 reference, so that their op figures are about the prologues
// the native decoder fuses (decoder_session's native_fused step).
//   rms_norm: y = RMSNorm(x) W^T, a weight of K, eps 1e-5 (Llama 3's): q/k/v, MLP, LM head.
//   swiglu:   y = (silu(gate) * up) W^T, x being [tokens, 2K] gate/up rows: an MLP's down.
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/model_ops/swiglu.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <cstdint>
#include <string>

namespace fourfold::workloads {

struct projection_prologue {
    static constexpr double k_norm_eps = 1e-5; // Llama 3's rms_norm_eps
    static constexpr const char* k_help =
        "what comes in front of the product, as a decoder's projections take their input: "
        "rms_norm (a weight of K, eps 1e-5: q/k/v, MLP, LM head) or swiglu (x is [tokens, 2K] "
        "gate/up rows: the MLP's down projection)";

    std::string name = "none"; // none, rms_norm, swiglu

    bool none() const { return name == "none"; }
    bool rms_norm() const { return name == "rms_norm"; }
    bool swiglu() const { return name == "swiglu"; }

    // columns of x for K input features
    std::int64_t x_columns(std::int64_t k) const { return swiglu() ? 2 * k : k; }

    // x [tokens, x_columns(k)] (normal) and, for rms_norm, "norm_weight" [k] in [0.5, 1.5]:
    // linear_decode's seeds (sub-seeds 0 and 3), so both workloads see the same activations
    void add_inputs(input_set& in, std::int64_t tokens, std::int64_t k, std::uint64_t seed,
                    c10::ScalarType type) const {
        in.add("x", seeded_normal({tokens, x_columns(k)}, sub_seed(seed, 0), 0.0, 1.0, type));
        if (rms_norm())
            in.add("norm_weight", seeded_uniform({k}, sub_seed(seed, 3), 0.5, 1.5, type));
    }

    // stock's path: libtorch ops, rounded once to x's dtype (kernels/rmsnorm.cu's and
    // kernels/swiglu.cu's values), then the product takes it
    at::Tensor apply(const input_set& in) const {
        const auto& x = in["x"];
        if (rms_norm()) {
            const auto xf = x.to(at::kFloat);
            const auto inv = at::rsqrt(xf.pow(2).mean(-1, true) + k_norm_eps);
            return (xf * inv * in["norm_weight"].to(at::kFloat)).to(x.scalar_type());
        }
        return swiglu() ? model_ops::swiglu(x) : x;
    }

    // the reference's input: the prologue of x in float64
    at::Tensor apply_f64(const input_set& in) const {
        auto x64 = in["x"].to(at::kDouble);
        if (rms_norm())
            return x64 * at::rsqrt(x64.pow(2).mean(-1, true) + k_norm_eps) *
                   in["norm_weight"].to(at::kDouble);
        return swiglu() ? model_ops::swiglu(x64) : x64;
    }

    // bytes the prologue adds to a call's reads beyond x's K columns: up's K more for swiglu,
    // the norm's weight for rms_norm (elements of `bytes` each)
    double extra_read_bytes(double tokens, double k, double bytes) const {
        return swiglu() ? tokens * k * bytes : rms_norm() ? k * bytes : 0.0;
    }
    // its arithmetic: about 3 per input element (square and sum, scale; or silu and product)
    double extra_flops(double tokens, double k) const { return none() ? 0.0 : 3.0 * tokens * k; }

    // stock's path, in words, for the records' facts
    std::string stock_path() const {
        return rms_norm() ? "libtorch ops (float32 mean of squares, rsqrt, scale), then the "
                            "linear"
                          : "at::silu(gate) * up, then the linear";
    }
    std::string reference_text(const char* product) const {
        return rms_norm() ? std::string("RMSNorm(x) @ ") + product
               : swiglu() ? std::string("(silu(gate) * up) @ ") + product
                          : std::string("x @ ") + product;
    }
};

} // namespace fourfold::workloads
