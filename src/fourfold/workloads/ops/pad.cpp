// Constant padding of the 5-D activations (batch, channels, frames, height, width) of a causal
// 3-D-convolution video VAE before each convolution: `pad_time` frames in front only (causal),
// `pad_space` on each side of height and width. Experiments E5/E6 moved this op to a dedicated
// kernel; a tiled VAE decode calls it thousands of times, so what each call allocates matters as
// much as its time (the memory ledger).
#include "fourfold/workloads/model_ops/pad.hpp"

#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace fourfold::workloads {
namespace {

class pad_case final : public workload_case {
  public:
    explicit pad_case(const case_args& a)
        : workload_case(a), m_batch(a.get_int("batch")), m_channels(a.get_int("channels")),
          m_frames(a.get_int("frames")), m_height(a.get_int("height")), m_width(a.get_int("width")),
          m_pad_time(a.get_int("pad_time")), m_pad_space(a.get_int("pad_space")) {}

    std::int64_t in_elements() const {
        return m_batch * m_channels * m_frames * m_height * m_width;
    }
    std::int64_t out_elements() const {
        return m_batch * m_channels * (m_frames + m_pad_time) * (m_height + 2 * m_pad_space) *
               (m_width + 2 * m_pad_space);
    }

    cost declared_cost() const override {
        const double e = static_cast<double>(size_bytes(args().type));
        return {e * static_cast<double>(in_elements()), e * static_cast<double>(out_elements()), 0,
                "read the activations once, write the padded output once"};
    }

    input_set make_inputs(std::uint64_t seed) const override {
        return input_set().add("x",
                               seeded_normal({m_batch, m_channels, m_frames, m_height, m_width},
                                             sub_seed(seed, 0), 0.0, 1.0,
                                             backend::scalar_type_or_throw(args().type)));
    }

    reference_plan reference(const input_set& in) const override {
        const auto& x = in["x"];
        const auto pad = pads();
        const auto per_channel = (in_elements() + out_elements()) / m_channels * 8;
        // channels are independent of the padding, so the reference is sliced along them
        return chunked_reference(
            1, m_channels, per_channel, "constant_pad_nd in float64 on the CPU",
            [x, pad](std::int64_t start, std::int64_t length) {
                return at::constant_pad_nd(x.narrow(1, start, length).to(at::kDouble), pad, 0);
            });
    }

    json variant_facts(const std::string& variant) const override {
        const auto e = size_bytes(args().type);
        json f{{"output_bytes", out_elements() * e}, {"pad", pads()}};
        if (variant == "stock") {
            f["path"] = "at::constant_pad_nd (on CUDA: fill the whole output, then copy the "
                        "input into its interior)";
            f["intermediate_bytes"] = 0;
        } else if (variant == "native") {
            f["path"] = "fourfold's kernel: one pass, each output element written once (the input "
                        "value or the constant)";
            f["intermediate_bytes"] = 0;
        } else {
            f["path"] = "at::cat of zero blocks along width, then height, then time";
            f["intermediate_bytes"] = intermediate_elements() * e;
        }
        return f;
    }

    // The three paths are model_ops::pad's, the very code the VAE workloads' causal convolutions
    // call (vae_decode, vae_roundtrip).
    at::Tensor stock(const call_context& ctx, const input_set& in) const {
        return model_ops::pad(in["x"], pads(), 0, model_ops::op_path::stock, &ctx);
    }
    at::Tensor native(const call_context& ctx, const input_set& in) const {
        return model_ops::pad(in["x"], pads(), 0, model_ops::op_path::native, &ctx);
    }
    // A composite of the kind the report replaced: each padded dimension becomes a cat with
    // freshly allocated constant blocks, so every step allocates and writes a whole intermediate.
    at::Tensor generic(const call_context& ctx, const input_set& in) const {
        return model_ops::pad(in["x"], pads(), 0, model_ops::op_path::composite, &ctx);
    }

  private:
    // constant_pad_nd order: last dimension first, (before, after) each
    std::vector<std::int64_t> pads() const {
        return {m_pad_space, m_pad_space, m_pad_space, m_pad_space, m_pad_time, 0};
    }

    // What generic allocates besides its output: the zero blocks and the width- and
    // height-padded intermediates.
    std::int64_t intermediate_elements() const {
        return model_ops::pad_composite_intermediate_elements(
            {m_batch, m_channels, m_frames, m_height, m_width}, pads());
    }

    std::int64_t m_batch, m_channels, m_frames, m_height, m_width, m_pad_time, m_pad_space;
};

FOURFOLD_WORKLOAD(pad_case, "pad")
    .describe("constant_pad_nd on 5-D video-VAE activations: causal time pad, spatial pad")
    .shape({"batch", "channels", "frames", "height", "width"})
    .param_int("batch", 1, "batch (tiles decoded together)", 1, 1 << 10)
    .param_int("channels", 128, "channels (96-384 in a Wan VAE decoder)", 1, 1 << 16)
    .param_int("frames", 3, "latent frames in the causal window", 1, 1 << 12)
    .param_int("height", 64, "height", 1, 1 << 16)
    .param_int("width", 64, "width", 1, 1 << 16)
    .param_int("pad_time", 2, "frames padded in front (causal: none behind)", 0, 64)
    .param_int("pad_space", 1, "pad on each side of height and width", 0, 64)
    .dtypes({dtype::bf16, dtype::fp32, dtype::fp16})
    .variant("stock", &pad_case::stock, "at::constant_pad_nd", false, {.ops = {"constant_pad"}})
    .variant("generic", &pad_case::generic,
             "cat with allocated zero blocks along each padded dimension (a composite path)", false,
             {.ops = {"cat"}})
    .native_variant("native", &pad_case::native,
                    "fourfold's CUDA kernel: one pass, every output element written once");

} // namespace
} // namespace fourfold::workloads
