// vae_roundtrip: experiment E6, an image VAE round trip (one frame through Wan 2.1's encoder,
// its latent mean through the decoder), compared with the float64 CPU reference's round trip of
// the same image: PSNR over [-1, 1], relative L2, max abs, per pad variant, dtype and TF32
// setting. The report's bug was a pad on the wrong side (MPS); the tests register such a pad (a
// test-only variant through vae_pad_seam) and see the PSNR fall by tens of dB and the job FAIL.
// Every pad (the causal convs' and the downsamplers' one-sided (0, 1, 0, 1)) goes through
// model_ops::pad, the pad workload's code.
#include "fourfold/core/text.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/models/vae_case.hpp"
#include "fourfold/workloads/models/vae_metrics.hpp"
#include "fourfold/workloads/models/vae_reference.hpp"

#include <ATen/ATen.h>
#include <cmath>
#include <fmt/format.h>

namespace fourfold::workloads {
namespace {

using namespace models;

class vae_roundtrip_case final : public vae_case_base {
  public:
    explicit vae_roundtrip_case(const case_args& a)
        : vae_case_base(a, vae_parts::both), m_height(a.get_int("height")),
          m_width(a.get_int("width")) {
        const auto f = config().spatial_factor();
        if (m_height % f != 0 || m_width % f != 0)
            throw bad_input(fmt::format("height={} width={}: the image must be a multiple of {} "
                                        "pixels each way (the VAE's spatial factor)",
                                        m_height, m_width, f));
    }

    cost declared_cost() const override {
        const double e = static_cast<double>(size_bytes(args().type));
        const double pixels = 3.0 * static_cast<double>(m_height * m_width) * e;
        return {weights_bytes() + pixels, pixels, 0,
                "one round trip: the encoder's and decoder's weights read once, the image read, "
                "the decoded image written (activations not counted)"};
    }

    // A smooth image (two plane waves per channel) with some seeded noise, in [-1, 1].
    input_set make_inputs(std::uint64_t) const override {
        const auto opts = at::TensorOptions().dtype(at::kDouble);
        const auto y = at::linspace(0, 1, m_height, opts).view({m_height, 1});
        const auto x = at::linspace(0, 1, m_width, opts).view({1, m_width});
        std::vector<at::Tensor> channels;
        channels.reserve(3);
        for (int c = 0; c < 3; ++c)
            channels.push_back(0.5 * at::sin(6.283185307179586 * (1.5 * x + 0.7 * y) + c) +
                               0.3 * at::cos(6.283185307179586 * (0.8 * x - 2.1 * y) + 2 * c));
        auto img = at::stack(channels, 0).view({1, 3, 1, m_height, m_width});
        img = img + 0.15 * seeded_normal({1, 3, 1, m_height, m_width}, sub_seed(seed(), 21), 0, 1,
                                         at::kDouble);
        return input_set().add("image",
                               img.clamp(-1, 1).to(backend::scalar_type_or_throw(args().type)));
    }

    reference_plan reference(const input_set& in) const override {
        const auto model = last_model();
        const auto& image = in["image"];
        return chunked_reference(
            3, m_height, 3 * m_width * 8 * 2,
            "the round trip in float64 on the CPU: encode (every causal conv with its zeros in "
            "front, the downsamplers' (0, 1, 0, 1) zero pads), the latent mean, decode; clamped",
            [this, model, image](std::int64_t start, std::int64_t length) {
                const auto& ref = twin_reference(*model, image, vae_reference_roundtrip);
                return ref.narrow(3, start, length);
            });
    }

    std::optional<std::string> unsupported(const std::string&,
                                           const backend::device& dev) const override {
        const double act = static_cast<double>(config().base_dim * 4 * m_height * m_width) *
                           static_cast<double>(size_bytes(args().type)) * 8;
        return memory_shortfall(
            dev, fmt::format("vae_roundtrip {} in {}", config().name, to_string(args().type)),
            weights_bytes(), "activations", act);
    }

    measure::tolerance tolerance() const override {
        switch (args().type) {
        case dtype::fp32:
            return tf32() ? measure::tolerance{5e-2, 0.5, 0.5,
                                               "vae_roundtrip fp32 with TF32: 10-bit mantissa "
                                               "products through encoder and decoder"}
                          : measure::tolerance{1e-4, 1e-3, 1e-3,
                                               "vae_roundtrip fp32: float32 accumulation "
                                               "through encoder and decoder"};
        case dtype::fp16:
            return {2e-2, 0.2, 0.2, "vae_roundtrip fp16: rounding through encoder and decoder"};
        default:
            return {1e-1, 1.0, 1.0, "vae_roundtrip bf16: rounding through encoder and decoder"};
        }
    }

    json variant_facts(const std::string& variant) const override {
        auto f = common_facts(variant);
        f.update(
            json{{"image", {3, 1, m_height, m_width}},
                 {"latent",
                  {config().z_dim, 1, m_height / config().spatial_factor(),
                   m_width / config().spatial_factor()}},
                 {"pad_calls_per_call", config().encode_pad_calls() + config().decode_pad_calls(1)},
                 {"round_trip", "encode one frame (first chunk: no time downsampling), take "
                                "the latent mean (quant_conv's first z channels), decode "
                                "it (one frame), clamp to [-1, 1]"}});
        return f;
    }

    at::Tensor run_with_pad(const call_context& ctx, const input_set& in,
                            pad_function pad) const override {
        return round_trip(ctx, in, {model_ops::op_path::stock, std::move(pad)});
    }

    at::Tensor stock(const call_context& ctx, const input_set& in) const {
        return round_trip(ctx, in, paths_of("stock"));
    }
    at::Tensor generic(const call_context& ctx, const input_set& in) const {
        return round_trip(ctx, in, paths_of("generic"));
    }
    at::Tensor native(const call_context& ctx, const input_set& in) const {
        return round_trip(ctx, in, paths_of("native"));
    }

  private:
    at::Tensor round_trip(const call_context& ctx, const input_set& in, vae_paths paths) const {
        const auto& image = in["image"];
        const auto model = acquire(image.device());
        vae_session s(model->weights, std::move(paths), &ctx);
        const vae_backend_settings settings(benchmark(), tf32());
        auto out = s.decode_tile(s.encode_image(image)).clamp(-1, 1);
        if (ctx.wants_facts())
            ctx.fact("pad_calls_counted", s.pad_calls());
        return out;
    }

    std::int64_t m_height, m_width;
};

// FOURFOLD_WORKLOAD's builder, with the parameters both VAE workloads share (vae_case.hpp)
[[maybe_unused]] static auto vae_roundtrip_registration =
    vae_common_params(
        workload_builder<vae_roundtrip_case>("vae_roundtrip")
            .describe("E6: an image VAE round trip (Wan 2.1's encoder then decoder, one frame) "
                      "against the float64 CPU reference's: PSNR, relative L2, max abs per pad "
                      "variant, dtype and TF32 setting")
            .param_int("height", 256, "image height in pixels (a multiple of 8)", 8, 1 << 14)
            .param_int("width", 256, "image width in pixels (a multiple of 8)", 8, 1 << 14),
        "(its encoder, quant_conv, post_quant_conv and decoder)")
        .dtypes({dtype::bf16, dtype::fp32, dtype::fp16})
        .ledgers(ledger_set::of({ledger::op_time, ledger::correctness, ledger::memory}))
        .variant("stock", &vae_roundtrip_case::stock, "pads through at::constant_pad_nd", false,
                 {.ops = {"constant_pad", "conv3d", "conv2d", "upsample_nearest"}})
        .variant("generic", &vae_roundtrip_case::generic,
                 "pads as cat with allocated zero blocks (a composite path)", false,
                 {.ops = {"cat", "conv3d", "conv2d", "upsample_nearest"}})
        .native_variant("native", &vae_roundtrip_case::native,
                        "pads through fourfold's CUDA pad kernel");

} // namespace
} // namespace fourfold::workloads
