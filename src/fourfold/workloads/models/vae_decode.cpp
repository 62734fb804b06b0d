// vae_decode: experiment E5, a tiled causal 3-D-conv video VAE decode (Wan 2.1's decoder, in
// libtorch ops): the latent split into tiles of `tile` latents every `stride` (32 and 24 by
// default, blended over the overlap), each decoded one latent frame at a time with the causal
// convs' cached frames, as diffusers' AutoencoderKLWan does. Every causal conv is a constant pad
// through model_ops::pad (the pad workload's code; the variant picks the path) then a conv3d:
// thousands of pad calls per decode, each counted. Ledgers: memory (every level, the sampled
// driver-level timeline, its peak and when), throughput (frames/s, a tile per step), correctness
// (a reduced decode, 2 tiles of up to 4 latents and up to 3 latent frames, against the float64
// reference decoded without caches: vae_reference.hpp).
#include "fourfold/core/text.hpp"
#include "fourfold/measure/statistics.hpp"
#include "fourfold/measure/step_timer.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/models/vae_case.hpp"
#include "fourfold/workloads/models/vae_metrics.hpp"
#include "fourfold/workloads/models/vae_reference.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace fourfold::workloads {
namespace {

using namespace models;

constexpr std::int64_t k_twin_tile = 4;
constexpr std::int64_t k_twin_frames = 3;
// Whole decodes timed however long one takes (1-6 s for wan2.1 on an H200, past a suite's
// per-job budget): three give the frames/s figure a spread and a confidence interval.
constexpr std::int64_t k_min_rounds = 3;

class vae_decode_case final : public vae_case_base {
  public:
    explicit vae_decode_case(const case_args& a)
        : vae_case_base(a, vae_parts::decoder), m_frames(a.get_int("frames")),
          m_height(a.get_int("height")), m_width(a.get_int("width")), m_tile(a.get_int("tile")),
          m_stride(a.get_int("stride")) {
        if (m_stride > m_tile)
            throw bad_input(fmt::format("stride={} exceeds tile={}: tiles would leave gaps; give "
                                        "stride <= tile (24 of 32 by default)",
                                        m_stride, m_tile));
    }

    std::int64_t tiles() const {
        return static_cast<std::int64_t>(vae_tile_starts(m_height, m_tile, m_stride).size() *
                                         vae_tile_starts(m_width, m_tile, m_stride).size());
    }
    std::int64_t output_frames() const { return config().output_frames(m_frames); }
    std::int64_t pad_calls_per_decode() const {
        return tiles() * config().decode_pad_calls(m_frames);
    }
    double output_bytes() const {
        const auto f = config().spatial_factor();
        return 3.0 * static_cast<double>(output_frames() * m_height * f * m_width * f) *
               static_cast<double>(size_bytes(args().type));
    }

    // Twin geometry: 2 tiles of up to 4 latents side by side, the job's overlap scaled.
    std::int64_t twin_tile() const { return std::min(m_tile, k_twin_tile); }
    std::int64_t twin_stride() const {
        if (m_stride == m_tile)
            return twin_tile();
        return std::clamp<std::int64_t>(twin_tile() * m_stride / m_tile, 1, twin_tile() - 1);
    }

    cost declared_cost() const override {
        const double e = static_cast<double>(size_bytes(args().type));
        return {weights_bytes() * static_cast<double>(tiles() * m_frames) +
                    static_cast<double>(config().z_dim * m_frames * m_height * m_width) * e,
                output_bytes(), 0,
                "one tiled decode: the decoder's weights read once per tile and latent frame, "
                "the latent read, the video written (activations not counted)"};
    }

    input_set make_inputs(std::uint64_t) const override {
        const auto type = backend::scalar_type_or_throw(args().type);
        const auto z = config().z_dim;
        return input_set()
            .add("z", seeded_normal({1, z, m_frames, m_height, m_width}, sub_seed(seed(), 11), 0, 1,
                                    type))
            .add("z_twin", seeded_normal({1, z, std::min(m_frames, k_twin_frames), twin_tile(),
                                          twin_tile() + twin_stride()},
                                         sub_seed(seed(), 12), 0, 1, type));
    }

    reference_plan reference(const input_set& in) const override {
        const auto model = last_model();
        const auto& z = in["z_twin"];
        const auto f = config().spatial_factor();
        const auto per_frame = 3 * z.size(3) * f * z.size(4) * f * 8;
        const auto frames = config().output_frames(z.size(2));
        return chunked_reference(
            2, frames, per_frame,
            fmt::format("the reduced decode ({} latent frames, latent {}x{} as {} tiles of {} "
                        "every {}) in float64 on the CPU: each tile decoded whole, every causal "
                        "conv over all its frames at once (zeros in front, no caches), blended "
                        "as the session blends",
                        z.size(2), z.size(3), z.size(4),
                        vae_tile_starts(z.size(4), twin_tile(), twin_stride()).size(), twin_tile(),
                        twin_stride()),
            [this, model, z](std::int64_t start, std::int64_t length) {
                const auto& ref =
                    twin_reference(*model, z, [this](const vae_weights& w, const at::Tensor& zz) {
                        return vae_reference_decode(w, zz, twin_tile(), twin_stride());
                    });
                return ref.narrow(2, start, length);
            });
    }

    std::optional<std::string> unsupported(const std::string& variant,
                                           const backend::device& dev) const override {
        const auto f = config().spatial_factor();
        // per tile: the largest activation (the last stage's channels at full resolution over
        // the frames a chunk makes) a few times over, and the cached frames of every conv
        const double act = static_cast<double>(config().base_dim * 4 * m_tile * f * m_tile * f) *
                           static_cast<double>(size_bytes(args().type)) * 8;
        return memory_shortfall(
            dev, fmt::format("vae_decode {} in {}", config().name, to_string(args().type)),
            weights_bytes(), "tile activations and the output", act + 2 * output_bytes());
    }

    measure::tolerance tolerance() const override {
        switch (args().type) {
        case dtype::fp32:
            return tf32() ? measure::tolerance{2e-2, 0.2, 0.2,
                                               "vae_decode fp32 with TF32: 10-bit mantissa "
                                               "products in every conv"}
                          : measure::tolerance{1e-4, 1e-3, 1e-3,
                                               "vae_decode fp32: float32 accumulation over "
                                               "~30 convs"};
        case dtype::fp16:
            return {1e-2, 0.1, 0.1, "vae_decode fp16: rounding in every conv and norm"};
        default:
            return {5e-2, 0.5, 0.5, "vae_decode bf16: rounding in every conv and norm"};
        }
    }

    json variant_facts(const std::string& variant) const override {
        auto f = common_facts(variant);
        const auto sf = config().spatial_factor();
        f.update(json{
            {"latent", {config().z_dim, m_frames, m_height, m_width}},
            {"output", {3, output_frames(), m_height * sf, m_width * sf}},
            {"tiles", tiles()},
            {"tile_grid",
             {vae_tile_starts(m_height, m_tile, m_stride).size(),
              vae_tile_starts(m_width, m_tile, m_stride).size()}},
            {"tile_latents", m_tile},
            {"tile_stride_latents", m_stride},
            {"pad_calls_per_decode", pad_calls_per_decode()},
            {"pad_calls_per_tile", config().decode_pad_calls(m_frames)},
            {"pad_calls_basis",
             "one per causal conv call: post_quant_conv once per tile, then per latent frame "
             "every causal conv of the decoder (shortcuts included) and, from the second frame "
             "on, the two time upsamplers' convs; counted by the session at every call"},
            {"decode", "causal: one latent frame at a time per tile, the last 2 frames of every "
                       "causal conv's input cached (diffusers' AutoencoderKLWan feat_cache)"},
            {"correctness_twin",
             json{{"latent",
                   {config().z_dim, std::min(m_frames, k_twin_frames), twin_tile(),
                    twin_tile() + twin_stride()}},
                  {"tile", twin_tile()},
                  {"stride", twin_stride()},
                  {"what", "the same weights, a reduced latent of 2 overlapping tiles, decoded "
                           "by the job's session on its device"}}},
            {"memory_pass", "the session made first; each call one whole tiled decode of the "
                            "job's latent"}});
        return f;
    }

    throughput_result measure_throughput(const std::string& variant, const input_set& in,
                                         const throughput_context& tc) const override {
        const auto& z = in["z"];
        const auto model = acquire(z.device());
        const call_context ctx(tc.dev);
        vae_session s(model->weights, paths_of(variant), &ctx);
        const vae_backend_settings settings(benchmark(), tf32());
        std::int64_t pads_last_round = -1;
        const auto n = tiles();
        const auto timing = measure::time_steps(tc.dev, tc.timing.stop,
                                                {[&] {
                                                     if (s.pad_calls() > 0)
                                                         pads_last_round = s.pad_calls();
                                                     s.reset_pad_calls();
                                                     s.begin_decode(z, m_tile, m_stride);
                                                 },
                                                 [&](std::int64_t i) {
                                                     s.decode_step(i);
                                                     if (i == n - 1)
                                                         (void)s.finish_decode();
                                                 },
                                                 n, k_min_rounds});
        if (pads_last_round < 0)
            pads_last_round = s.pad_calls();
        const auto stats = measure::summarize(timing.step_ms);
        // a round's decode time: the sum of its tiles' times (the lead-in only zeroes the output)
        std::vector<double> decode_ms;
        for (std::size_t i = 0; i + static_cast<std::size_t>(n) <= timing.step_ms.size();
             i += static_cast<std::size_t>(n)) {
            double sum = 0;
            for (std::int64_t k = 0; k < n; ++k)
                sum += timing.step_ms[i + static_cast<std::size_t>(k)];
            decode_ms.push_back(sum);
        }
        const auto per_decode = measure::summarize(decode_ms);
        const double frames_per_s =
            per_decode.median > 0
                ? 1000.0 * static_cast<double>(output_frames()) / per_decode.median
                : 0;
        throughput_result r;
        r.unit = "frames/s";
        r.context_axis = "frames";
        r.step_unit = "ms/tile";
        r.figures = timing.to_json();
        r.figures.update(json{{"frames", m_frames},
                              {"output_frames", output_frames()},
                              {"mode", "eager"},
                              {"host_paced", true},
                              {"frames_per_s", frames_per_s},
                              {"rate", frames_per_s}, // what throughput_figures reads
                              {"step_stats", stats.to_json()},
                              {"frames_per_s_basis",
                               "output frames x 1000 / median ms per whole decode (the sum "
                               "of a round's tile times)"},
                              {"ms_per_decode", per_decode.to_json()},
                              {"ms_per_tile", stats.to_json()},
                              {"tiles", n},
                              {"pad_calls_per_decode", pads_last_round},
                              {"pad_calls_expected", pad_calls_per_decode()},
                              {"timing", timing.method("the lead-in zeroes the blended output")}});
        r.samples_ms = timing.step_ms;
        return r;
    }

    std::function<void()> memory_call(const std::string& variant, const input_set& in,
                                      backend::device& dev) const override {
        if (!vae_own_variant(variant))
            return {};
        const auto model = acquire(in["z"].device());
        auto ctx = std::make_shared<call_context>(dev);
        auto s = std::make_shared<vae_session>(model->weights, paths_of(variant), ctx.get());
        return [this, s, ctx, model, z = in["z"]] {
            const vae_backend_settings settings(benchmark(), tf32());
            (void)s->decode(z, m_tile, m_stride);
        };
    }

    at::Tensor run_with_pad(const call_context& ctx, const input_set& in,
                            pad_function pad) const override {
        return twin_decode(ctx, in, {model_ops::op_path::stock, std::move(pad)});
    }

    at::Tensor stock(const call_context& ctx, const input_set& in) const {
        return twin_decode(ctx, in, paths_of("stock"));
    }
    at::Tensor generic(const call_context& ctx, const input_set& in) const {
        return twin_decode(ctx, in, paths_of("generic"));
    }
    at::Tensor native(const call_context& ctx, const input_set& in) const {
        return twin_decode(ctx, in, paths_of("native"));
    }

  private:
    at::Tensor twin_decode(const call_context& ctx, const input_set& in, vae_paths paths) const {
        const auto& z = in["z_twin"];
        const auto model = acquire(z.device());
        vae_session s(model->weights, std::move(paths), &ctx);
        const vae_backend_settings settings(benchmark(), tf32());
        auto out = s.decode(z, twin_tile(), twin_stride());
        if (ctx.wants_facts())
            ctx.fact("correctness_twin_pad_calls", s.pad_calls());
        return out;
    }

    std::int64_t m_frames, m_height, m_width, m_tile, m_stride;
};

// FOURFOLD_WORKLOAD's builder, with the parameters both VAE workloads share (vae_case.hpp)
[[maybe_unused]] static auto vae_decode_registration =
    vae_common_params(
        workload_builder<vae_decode_case>("vae_decode")
            .describe(
                "E5: a tiled causal 3-D-conv video VAE decode (Wan 2.1's decoder), one latent "
                "frame at a time per tile; every constant pad counted; frames/s, the memory "
                "levels and their timeline")
            .param_int("frames", 3, "latent frames (the video has 1 + 4 (frames - 1))", 1, 1 << 10)
            .param_int("height", 104, "latent height (x8 pixels)", 1, 1 << 12)
            .param_int("width", 176, "latent width (x8 pixels)", 1, 1 << 12)
            .param_int("tile", 32, "tile size in latents (diffusers: 256 pixels)", 2, 1 << 12)
            .param_int("stride", 24, "tile stride in latents (diffusers: 192 pixels)", 1, 1 << 12),
        "(its decoder and post_quant_conv)")
        .dtypes({dtype::bf16, dtype::fp32, dtype::fp16})
        .ledgers(ledger_set::of({ledger::throughput, ledger::correctness, ledger::memory}))
        .variant("stock", &vae_decode_case::stock, "pads through at::constant_pad_nd", false,
                 {.ops = {"constant_pad", "conv3d", "conv2d", "upsample_nearest"}})
        .variant("generic", &vae_decode_case::generic,
                 "pads as cat with allocated zero blocks (a composite path)", false,
                 {.ops = {"cat", "conv3d", "conv2d", "upsample_nearest"}})
        .native_variant("native", &vae_decode_case::native,
                        "pads through fourfold's CUDA pad kernel");

} // namespace
} // namespace fourfold::workloads
