#pragma once
// What the two VAE workloads (vae_decode, vae_roundtrip) share on top of the whole-model base:
// the model parameter (a preset or a diffusers AutoencoderKLWan directory), random or loaded
// weights, the twin (the same weights on the CPU: a VAE is small, the reduction is in its
// input), the pad path each variant takes, the cuDNN/TF32 settings of the job, and the seam a
// test-only variant reaches in through to run a job with another pad.
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/workloads/model_ops/op_path.hpp"
#include "fourfold/workloads/models/model_case.hpp"
#include "fourfold/workloads/models/vae_metrics.hpp"
#include "fourfold/workloads/models/vae_session.hpp"
#include "fourfold/workloads/models/vae_weights.hpp"
#include "fourfold/workloads/workload.hpp"

#include <fmt/format.h>
#include <limits>
#include <memory>
#include <string>

namespace fourfold::workloads::models {

// Implemented by both VAE cases: the job's variant function with `pad` in place of
// model_ops::pad (tests register a deliberately wrong pad through it).
class vae_pad_seam {
  public:
    virtual ~vae_pad_seam() = default;
    virtual at::Tensor run_with_pad(const call_context& ctx, const input_set& in,
                                    pad_function pad) const = 0;
};

// The pad path of a registered variant: stock (at::constant_pad_nd), generic (the cat of zero
// blocks), native (fourfold's kernel).
inline model_ops::op_path vae_pad_path(const std::string& variant) {
    if (variant == "stock")
        return model_ops::op_path::stock;
    if (variant == "generic")
        return model_ops::op_path::composite;
    if (variant == "native")
        return model_ops::op_path::native;
    throw std::invalid_argument("the VAE workloads run stock, generic and native, not " + variant);
}

inline bool vae_own_variant(const std::string& variant) {
    return variant == "stock" || variant == "generic" || variant == "native";
}

inline std::string vae_pad_path_text(const std::string& variant) {
    if (variant == "stock")
        return "at::constant_pad_nd (model_ops::pad stock, the pad workload's stock)";
    if (variant == "generic")
        return "cat with freshly allocated zero blocks per padded dimension (model_ops::pad "
               "composite, the pad workload's generic)";
    if (variant == "native")
        return "fourfold's CUDA pad kernel on the call's stream (model_ops::pad native, the pad "
               "workload's native)";
    return "a test's pad";
}

class vae_case_base : public model_case<vae_weights>, public vae_pad_seam {
  public:
    vae_case_base(const case_args& a, vae_parts parts)
        : model_case(a), m_parts(parts), m_model(a.get_text("model")),
          m_source(resolve_vae(m_model)),
          m_seed(static_cast<std::uint64_t>(a.get_int("init_seed"))),
          m_benchmark(a.get_bool("cudnn_benchmark")), m_tf32(a.get_bool("tf32")) {
        if (m_tf32 && a.type != dtype::fp32)
            throw bad_input(fmt::format("tf32=1 applies to fp32 jobs (it lets fp32 convolutions "
                                        "and matmuls run in TF32); this job is {}: give tf32=0",
                                        to_string(a.type)));
        // a checkpoint is validated whole (names, shapes, dtypes) before anything runs
        if (m_source.directory && !m_source.has_weights)
            throw bad_input(fmt::format(
                "VAE directory {} has a config.json but no *.safetensors weights; add the "
                "checkpoint's diffusion_pytorch_model.safetensors, or give a preset ({}) for "
                "random weights",
                m_source.directory->string(), join(vae_preset_names(), ", ")));
        if (m_source.directory) {
            m_checkpoint = std::make_unique<checkpoint>(*m_source.directory);
            check_vae_checkpoint(config(), m_parts, *m_checkpoint);
        }
    }

    const vae_config& config() const { return m_source.config; }

    // The PSNR floor of both VAE workloads, by dtype (and TF32 for fp32).
    std::unique_ptr<extra_metrics> make_extra_metrics() const override {
        switch (args().type) {
        case dtype::fp32:
            return std::make_unique<vae_psnr_metrics>(
                tf32() ? 30.0 : 60.0, tf32() ? "fp32 with TF32" : "fp32: float32 rounding only");
        case dtype::fp16:
            return std::make_unique<vae_psnr_metrics>(35.0, "fp16 rounding");
        default:
            return std::make_unique<vae_psnr_metrics>(25.0, "bf16 rounding");
        }
    }

  protected:
    std::string weights_key() const override {
        return fmt::format("vae|{}|{}|{}|{}", m_model, m_parts == vae_parts::both ? "ed" : "d",
                           to_string(args().type), m_seed);
    }
    vae_weights build_weights(c10::Device device) const override {
        const auto type = backend::scalar_type_or_throw(args().type);
        return m_checkpoint ? load_vae_weights(config(), m_parts, *m_checkpoint, type, device)
                            : random_vae_weights(config(), m_parts, type, device, m_seed);
    }
    vae_weights make_twin(const vae_weights& w) const override {
        return w.to(c10::Device(c10::DeviceType::CPU), w.dtype());
    }

    double weights_bytes() const {
        const auto params = config().decoder_params() +
                            (m_parts == vae_parts::both ? config().encoder_params() : 0);
        return static_cast<double>(params) * static_cast<double>(size_bytes(args().type));
    }

    std::string weights_text() const {
        return m_checkpoint ? fmt::format("checkpoint {}", m_checkpoint->directory().string())
                            : fmt::format("random, seed {}: conv weights normal(0, "
                                          "1/sqrt(fan_in)), documented in docs/performance.md",
                                          m_seed);
    }

    json common_facts(const std::string& variant) const {
        auto& g = at::globalContext();
        return json{{"model", config().to_json()},
                    {"weights", weights_text()},
                    {"weights_bytes", weights_bytes()},
                    {"pad_path", vae_pad_path_text(variant)},
                    {"cudnn_benchmark", m_benchmark},
                    {"tf32", m_tf32},
                    {"settings_scope",
                     fmt::format("cudnn_benchmark and tf32 are set for each call of the job and "
                                 "restored after it (this process otherwise has benchmark {}, "
                                 "TF32 cuDNN {}, TF32 cuBLAS {}); on the CPU nothing reads them",
                                 g.benchmarkCuDNN(), g.allowTF32CuDNN(), g.allowTF32CuBLAS())},
                    {"attention", "single head per frame, written out: scores, softmax, values"}};
    }

    vae_paths paths_of(const std::string& variant) const { return {vae_pad_path(variant), {}}; }

    bool benchmark() const { return m_benchmark; }
    bool tf32() const { return m_tf32; }
    std::uint64_t seed() const { return m_seed; }

  private:
    vae_parts m_parts;
    std::string m_model;
    vae_source m_source;
    std::uint64_t m_seed;
    bool m_benchmark, m_tf32;
    std::unique_ptr<checkpoint> m_checkpoint;
};

// The parameters both VAE workloads declare.
template <class Builder> Builder& vae_common_params(Builder& b, const char* what) {
    return b
        .param_text("model", "wan2.1", {},
                    std::string("a VAE preset (wan2.1: Wan 2.1's VAE, base 96 channels; tiny: the "
                                "same structure at base 16, for the CPU) or a diffusers "
                                "AutoencoderKLWan directory (config.json and *.safetensors) ") +
                        what)
        .param_bool("cudnn_benchmark", false,
                    "torch.backends.cudnn.benchmark for the job's calls: cuDNN's algorithm "
                    "search, whose workspaces the memory ledger sees")
        .param_bool("tf32", false, "TF32 for fp32 convolutions and matmuls (fp32 jobs only)")
        .param_int("init_seed", 1, "seed of the random weights and of the input", 0,
                   std::numeric_limits<std::int32_t>::max());
}

} // namespace fourfold::workloads::models
