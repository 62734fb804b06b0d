// The video VAE (models/vae_*): the causal, cached, frame-by-frame session against the float64
// reference decoded whole; the pad-call count against the structure's; random weights keep
// activations O(1); a checkpoint written here loads into the same output and every bad one is
// refused naming the key; both workloads through the real runner on the CPU (three ledgers,
// pad counts, frames/s, the timeline; a deliberately wrong pad FAILs the round trip).
#include "fourfold/backend/device.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/figures.hpp"
#include "fourfold/workloads/models/safetensors.hpp"
#include "fourfold/workloads/models/vae_case.hpp"
#include "fourfold/workloads/models/vae_reference.hpp"
#include "fourfold/workloads/models/vae_session.hpp"
#include "fourfold/workloads/workload.hpp"
#include "runner_helpers.hpp"
#include "test_helpers.hpp"
#include "vae_test_variants.hpp"

#include <ATen/ATen.h>
#include <chrono>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::workloads::models;
using fourfold::testing::register_wrong_pads;
using fourfold::testing::temp_dir;

namespace {

vae_config tiny() {
    return *find_vae_preset("tiny");
}

// A smaller VAE still (base 8, z 4) for the checkpoint files.
vae_config small_config() {
    vae_config c;
    c.name = "small";
    c.base_dim = 8;
    c.z_dim = 4;
    return c;
}

std::shared_ptr<const vae_weights> weights_of(const vae_config& c, vae_parts parts,
                                              c10::ScalarType t = at::kFloat) {
    return std::make_shared<const vae_weights>(
        random_vae_weights(c, parts, t, c10::Device(c10::DeviceType::CPU), 7));
}

double rel_l2(const at::Tensor& a, const at::Tensor& ref) {
    return ((a.to(at::kDouble) - ref).norm() / ref.norm()).item<double>();
}

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

} // namespace

TEST(vae, tiles_cover_the_latent_and_the_default_grid_is_28_tiles) {
    EXPECT_EQ(vae_tile_starts(104, 32, 24), (std::vector<std::int64_t>{0, 24, 48, 72}));
    EXPECT_EQ(vae_tile_starts(176, 32, 24).size(), 7u);
    EXPECT_EQ(vae_tile_starts(176, 32, 24).back(), 144);
    EXPECT_EQ(vae_tile_starts(20, 32, 24), (std::vector<std::int64_t>{0}));
    // an irregular last tile ends at the edge
    EXPECT_EQ(vae_tile_starts(40, 32, 24), (std::vector<std::int64_t>{0, 8}));
    EXPECT_EQ(vae_tile_starts(14, 8, 6), (std::vector<std::int64_t>{0, 6}));
}

TEST(vae, the_presets_have_wan_2_1s_shapes) {
    const auto w = *find_vae_preset("wan2.1");
    EXPECT_EQ(w.decoder_dims(), (std::vector<std::int64_t>{384, 384, 384, 192, 96}));
    EXPECT_EQ(w.encoder_dims(), (std::vector<std::int64_t>{96, 96, 192, 384, 384}));
    EXPECT_EQ(w.spatial_factor(), 8);
    EXPECT_EQ(w.temporal_factor(), 4);
    EXPECT_EQ(w.output_frames(3), 9);
    // Wan 2.1's VAE has 126.9 M parameters (encoder ~54 M, decoder ~73 M)
    EXPECT_NEAR(static_cast<double>(w.decoder_params() + w.encoder_params()), 126.9e6, 0.5e6);
    // per tile of 3 latent frames: post_quant_conv, 31 causal convs a frame, 2 time convs from
    // the second frame on
    EXPECT_EQ(w.decode_pad_calls(1), 32);
    EXPECT_EQ(w.decode_pad_calls(3), 1 + 3 * 31 + 2 * 2);
    const auto names = vae_expected_tensors(w, vae_parts::both);
    auto has = [&](const std::string& n) {
        return std::any_of(names.begin(), names.end(),
                           [&](const vae_tensor_spec& s) { return s.name == n; });
    };
    for (const char* n :
         {"decoder.mid_block.resnets.0.norm1.gamma", "decoder.up_blocks.0.resnets.0.conv1.weight",
          "decoder.up_blocks.0.upsamplers.0.resample.1.weight",
          "decoder.up_blocks.1.upsamplers.0.time_conv.weight", "post_quant_conv.weight",
          "decoder.up_blocks.1.resnets.0.conv_shortcut.weight",
          "decoder.mid_block.attentions.0.to_qkv.weight", "encoder.down_blocks.5.time_conv.weight",
          "encoder.down_blocks.2.resample.1.weight", "quant_conv.weight"})
        EXPECT_TRUE(has(n)) << n;
    EXPECT_FALSE(has("decoder.up_blocks.2.upsamplers.0.time_conv.weight"));
}

TEST(vae, the_cached_causal_decode_equals_the_whole_clip_float64_reference) {
    const auto c = tiny();
    const auto w = weights_of(c, vae_parts::decoder);
    const auto z = at::randn({1, c.z_dim, 3, 4, 7}, at::TensorOptions().dtype(at::kFloat));
    vae_session s(w, {}, nullptr);
    const auto out = s.decode(z, 4, 3);
    EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{1, 3, 9, 32, 56}));
    // one pad per causal conv call: the structure's count, per tile (2 tiles)
    EXPECT_EQ(s.pad_calls(), 2 * c.decode_pad_calls(3));
    const auto ref = vae_reference_decode(*w, z, 4, 3);
    EXPECT_LT(rel_l2(out, ref), 1e-5);
    // generic pads compute the same function
    vae_session g(w, {workloads::model_ops::op_path::composite, {}}, nullptr);
    EXPECT_LT(rel_l2(g.decode(z, 4, 3), ref), 1e-5);
    // dropping the caches (each frame decoded alone) is another function: the check can see it
    std::vector<at::Tensor> alone;
    vae_session a(w, {}, nullptr);
    for (std::int64_t t = 0; t < 3; ++t)
        alone.push_back(a.decode_tile(z.narrow(2, t, 1).narrow(4, 0, 4)));
    const auto first_tile_ref = vae_reference_decode(*w, z.narrow(4, 0, 4), 4, 3);
    EXPECT_GT(rel_l2(alone[1].clamp(-1, 1), first_tile_ref.narrow(2, 1, 1)), 1e-2);
}

TEST(vae, the_image_round_trip_equals_the_float64_reference_and_counts_its_pads) {
    const auto c = tiny();
    const auto w = weights_of(c, vae_parts::both);
    const auto x = at::randn({1, 3, 1, 32, 48}, at::TensorOptions().dtype(at::kFloat)).clamp(-1, 1);
    vae_session s(w, {}, nullptr);
    const auto mu = s.encode_image(x);
    EXPECT_EQ(mu.sizes(), (std::vector<std::int64_t>{1, c.z_dim, 1, 4, 6}));
    EXPECT_EQ(s.pad_calls(), c.encode_pad_calls());
    const auto out = s.decode_tile(mu).clamp(-1, 1);
    EXPECT_EQ(s.pad_calls(), c.encode_pad_calls() + c.decode_pad_calls(1));
    const auto ref = vae_reference_roundtrip(*w, x);
    EXPECT_LT(rel_l2(out, ref), 1e-5);
}

TEST(vae, random_weights_keep_activations_finite_and_of_unit_scale) {
    // the wan2.1 preset itself, on one small tile (a second frame too: the time upsamplers)
    for (const auto& c : {tiny(), *find_vae_preset("wan2.1")}) {
        const auto w = weights_of(c, vae_parts::both);
        vae_session s(w, {}, nullptr);
        const auto z = at::randn({1, c.z_dim, 2, 2, 2}, at::TensorOptions().dtype(at::kFloat));
        const auto out = s.decode_tile(z);
        EXPECT_TRUE(at::isfinite(out).all().item<bool>()) << c.name;
        const double rms = out.pow(2).mean().sqrt().item<double>();
        EXPECT_GT(rms, 0.05) << c.name;
        EXPECT_LT(rms, 1.0) << c.name; // mostly inside [-1, 1] before the clamp
        const auto x = at::rand({1, 3, 1, 16, 16}, at::TensorOptions().dtype(at::kFloat)) * 2 - 1;
        const auto mu = s.encode_image(x);
        const double mu_rms = mu.pow(2).mean().sqrt().item<double>();
        EXPECT_TRUE(std::isfinite(mu_rms)) << c.name;
        EXPECT_GT(mu_rms, 0.05) << c.name;
        EXPECT_LT(mu_rms, 5.0) << c.name;
    }
}

namespace {

void write_config(const std::string& dir, const vae_config& c) {
    fourfold::testing::write_file(dir + "/config.json",
                                  json{{"_class_name", "AutoencoderKLWan"},
                                       {"base_dim", c.base_dim},
                                       {"z_dim", c.z_dim},
                                       {"dim_mult", c.dim_mult},
                                       {"num_res_blocks", c.num_res_blocks},
                                       {"temperal_downsample", c.temporal_downsample},
                                       {"attn_scales", json::array()},
                                       {"dropout", 0.0}}
                                      .dump());
}

named_tensors as_named(const vae_weights& w) {
    named_tensors out;
    for (const auto& [name, t] : w.tensors)
        out.emplace_back(name, t);
    return out;
}

// Expects resolving and checking `dir` to be a bad_input naming every needle.
void expect_refused(const std::string& dir, const std::vector<std::string>& needles) {
    try {
        const auto src = resolve_vae(dir);
        checkpoint ck(*src.directory);
        check_vae_checkpoint(src.config, vae_parts::both, ck);
        FAIL() << dir << " was accepted";
    } catch (const bad_input& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
        for (const auto& n : needles)
            EXPECT_NE(msg.find(n), std::string::npos) << "'" << n << "' not in: " << msg;
    }
}

} // namespace

TEST(vae, a_diffusers_checkpoint_written_here_loads_into_the_same_output) {
    temp_dir dir;
    const auto c = small_config();
    const auto w =
        random_vae_weights(c, vae_parts::both, at::kFloat, c10::Device(c10::DeviceType::CPU), 3);
    write_config(dir.path(), c);
    auto named = as_named(w);
    named.emplace_back("encoder.unused_extra", at::zeros({2})); // extra keys are ignored
    write_safetensors(dir / "diffusion_pytorch_model.safetensors", named);
    const auto src = resolve_vae(dir.path());
    EXPECT_TRUE(src.has_weights);
    EXPECT_EQ(src.config.base_dim, 8);
    EXPECT_EQ(src.config.z_dim, 4);
    checkpoint ck(*src.directory);
    const auto loaded = std::make_shared<const vae_weights>(load_vae_weights(
        src.config, vae_parts::both, ck, at::kFloat, c10::Device(c10::DeviceType::CPU)));
    for (const auto& [name, t] : w.tensors)
        EXPECT_TRUE(at::equal(loaded->at(name), t)) << name;
    const auto x = at::rand({1, 3, 1, 16, 16}) * 2 - 1;
    vae_session a(loaded, {}, nullptr);
    vae_session b(std::make_shared<const vae_weights>(w), {}, nullptr);
    EXPECT_TRUE(at::equal(a.decode_tile(a.encode_image(x)), b.decode_tile(b.encode_image(x))));
}

TEST(vae, a_bad_checkpoint_is_one_line_naming_the_key) {
    const auto c = small_config();
    const auto w =
        random_vae_weights(c, vae_parts::both, at::kFloat, c10::Device(c10::DeviceType::CPU), 3);
    auto write = [&](const temp_dir& d, const named_tensors& t) {
        write_config(d.path(), c);
        write_safetensors(d / "diffusion_pytorch_model.safetensors", t);
    };
    const std::string key = "decoder.up_blocks.1.resnets.0.conv1.weight";
    {
        temp_dir d;
        auto t = as_named(w);
        t.erase(std::find_if(t.begin(), t.end(), [&](const auto& p) { return p.first == key; }));
        write(d, t);
        expect_refused(d.path(), {key, "no tensor"});
    }
    {
        temp_dir d;
        auto t = as_named(w);
        for (auto& [n, v] : t)
            if (n == key)
                v = at::zeros({3, 3});
        write(d, t);
        expect_refused(d.path(), {key, "shape [3, 3]", "[32, 16, 3, 3, 3]"});
    }
    {
        temp_dir d;
        auto t = as_named(w);
        for (auto& [n, v] : t)
            if (n == key)
                v = v.to(at::kInt);
        write(d, t);
        expect_refused(d.path(), {key, "dtype I32"});
    }
    {
        temp_dir d;
        write(d, as_named(w));
        const auto p = d / "diffusion_pytorch_model.safetensors";
        const auto bytes = fourfold::testing::read_file(p);
        fourfold::testing::write_file(p, bytes.substr(0, bytes.size() - 100));
        expect_refused(d.path(), {"diffusion_pytorch_model.safetensors", "truncated"});
    }
    {
        temp_dir d;
        write_config(d.path(), c);
        try {
            const workloads::case_args a{"vae_decode",
                                         json{{"model", d.path()},
                                              {"frames", 1},
                                              {"height", 4},
                                              {"width", 4},
                                              {"tile", 4},
                                              {"stride", 3},
                                              {"cudnn_benchmark", false},
                                              {"tf32", false},
                                              {"init_seed", 1}},
                                         dtype::fp32};
            (void)workloads::registry::instance().find("vae_decode")->make_case(a);
            FAIL() << "a directory without weights was accepted";
        } catch (const bad_input& e) {
            EXPECT_NE(std::string(e.what()).find("no *.safetensors"), std::string::npos)
                << e.what();
        }
    }
}

namespace {

runner::job_spec decode_job(dtype t = dtype::fp32, const json& extra = json::object()) {
    json p{{"model", "tiny"}, {"frames", 3}, {"height", 4},
           {"width", 7},      {"tile", 4},   {"stride", 3}};
    p.update(extra);
    return {"vae_decode", p, t, {}, ""};
}

runner::job_spec roundtrip_job(dtype t = dtype::fp32, std::vector<std::string> variants = {}) {
    return {"vae_roundtrip", json{{"model", "tiny"}, {"height", 64}, {"width", 64}}, t,
            std::move(variants), ""};
}

} // namespace

TEST(vae_decode_workload, three_ledgers_pad_counts_frames_per_s_and_the_timeline_on_the_cpu) {
    auto dev = cpu();
    const auto t0 = std::chrono::steady_clock::now();
    const auto r =
        fourfold::testing::run_jobs(*dev, {decode_job()}, "throughput,correctness,memory");
    std::cout << "vae_decode CPU preset, three ledgers: "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
              << " s\n";
    const auto c = tiny();
    std::map<ledger, int> ok;
    for (const auto& rec : r.records) {
        EXPECT_NE(rec.status, record_status::failed) << rec.job.variant << ": " << rec.reason;
        if (rec.status == record_status::skipped) {
            EXPECT_EQ(rec.job.variant, "native"); // no CUDA here
            EXPECT_FALSE(rec.reason.empty());
            continue;
        }
        ++ok[rec.which];
        const auto& f = rec.figures;
        EXPECT_EQ(f["facts"]["tiles"], 2);
        EXPECT_EQ(f["facts"]["pad_calls_per_decode"], 2 * c.decode_pad_calls(3));
        if (rec.which == ledger::throughput) {
            EXPECT_EQ(rec.unit, "frames/s");
            EXPECT_EQ(f["pad_calls_per_decode"], 2 * c.decode_pad_calls(3));
            EXPECT_GT(f["frames_per_s"].get<double>(), 0);
            // the typed figure every reader (tables, compare, report) takes the rate from
            const auto t = throughput_figures::from(f);
            EXPECT_DOUBLE_EQ(t.rate, f["frames_per_s"].get<double>());
            EXPECT_EQ(t.step_unit, "ms/tile");
            ASSERT_TRUE(t.step_stats.has_value());
            EXPECT_GT(t.step_stats->median, 0);
            EXPECT_EQ(f["output_frames"], 9);
            EXPECT_EQ(rec.samples.size() % 2, 0u); // two tiles a round
            std::cout << rec.job.variant << ": " << f["frames_per_s"].get<double>() << " frames/s, "
                      << f["ms_per_decode"]["median"].get<double>() << " ms per decode\n";
        }
        if (rec.which == ledger::correctness) {
            EXPECT_EQ(f["verdict"], "PASS") << rec.job.variant << f["failed_checks"].dump();
            EXPECT_GT(f["metrics"]["image_psnr_db"].get<double>(), 60);
            std::cout << rec.job.variant << ": PSNR " << f["metrics"]["image_psnr_db"]
                      << " dB, rel_l2 " << f["metrics"]["rel_l2"] << "\n";
        }
        if (rec.which == ledger::memory) {
            EXPECT_GT(f["driver_peak_bytes"].get<double>(), 0);
            EXPECT_GE(f["timeline"].size(), 2u);
            EXPECT_TRUE(f.contains("driver_peak_t_ms"));
        }
    }
    EXPECT_EQ(ok[ledger::throughput], 2);
    EXPECT_EQ(ok[ledger::correctness], 2);
    EXPECT_EQ(ok[ledger::memory], 2);
}

TEST(vae_decode_workload, bad_parameters_are_bad_input) {
    auto dev = cpu();
    EXPECT_THROW(fourfold::testing::run_jobs(*dev, {decode_job(dtype::fp32, {{"stride", 9}})},
                                             "correctness"),
                 bad_input);
    EXPECT_THROW(fourfold::testing::run_jobs(*dev, {decode_job(dtype::bf16, {{"tf32", true}})},
                                             "correctness"),
                 bad_input);
    EXPECT_THROW(fourfold::testing::run_jobs(*dev, {decode_job(dtype::fp32, {{"model", "nope"}})},
                                             "correctness"),
                 bad_input);
}

TEST(vae_roundtrip_workload, psnr_per_variant_and_a_wrong_pad_fails_by_tens_of_db) {
    register_wrong_pads();
    auto dev = cpu();
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = fourfold::testing::run_jobs(
        *dev,
        {roundtrip_job(dtype::fp32,
                       {"stock", "generic", "native", "wrong_pad_side", "wrong_pad_value"})},
        "correctness,memory");
    std::cout << "vae_roundtrip CPU preset: "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
              << " s\n";
    std::map<std::string, double> psnr;
    std::map<std::string, std::string> verdict;
    for (const auto& rec : r.records) {
        EXPECT_NE(rec.status, record_status::failed) << rec.job.variant << ": " << rec.reason;
        if (rec.status != record_status::ok || rec.which != ledger::correctness)
            continue;
        psnr[rec.job.variant] = rec.figures["metrics"]["image_psnr_db"].get<double>();
        verdict[rec.job.variant] = rec.figures["verdict"];
        std::cout << rec.job.variant << ": PSNR " << psnr[rec.job.variant] << " dB, "
                  << rec.figures["verdict"] << ", rel_l2 " << rec.figures["metrics"]["rel_l2"]
                  << ", max_abs " << rec.figures["metrics"]["image_max_abs_error"] << "\n";
    }
    EXPECT_EQ(verdict["stock"], "PASS");
    EXPECT_EQ(verdict["generic"], "PASS");
    EXPECT_EQ(verdict["wrong_pad_side"], "FAIL");
    EXPECT_EQ(verdict["wrong_pad_value"], "FAIL");
    EXPECT_GT(psnr["stock"] - psnr["wrong_pad_side"], 30.0);
    EXPECT_GT(psnr["stock"] - psnr["wrong_pad_value"], 30.0);
    EXPECT_LT(psnr["wrong_pad_side"], 30.0);
}

TEST(vae_decode_workload, a_wrong_pad_fails_the_reduced_decode) {
    register_wrong_pads();
    auto dev = cpu();
    const auto r = fourfold::testing::run_jobs(*dev,
                                               {{"vae_decode",
                                                 json{{"model", "tiny"},
                                                      {"frames", 2},
                                                      {"height", 4},
                                                      {"width", 4},
                                                      {"tile", 4},
                                                      {"stride", 3}},
                                                 dtype::fp32,
                                                 {"stock", "wrong_pad_side"},
                                                 ""}},
                                               "correctness");
    std::map<std::string, std::string> verdict;
    for (const auto& rec : r.records)
        if (rec.status == record_status::ok)
            verdict[rec.job.variant] = rec.figures["verdict"];
    EXPECT_EQ(verdict["stock"], "PASS");
    EXPECT_EQ(verdict["wrong_pad_side"], "FAIL");
}
