// The decoder (model_config, decoder, the decode workload): real shapes count the parameters the
// published models have; config.json parsing takes transformers 4 and 5 forms and refuses what
// it cannot build; the KV-cache decode computes what one causal pass computes, and both match the
// float64 reference; a checkpoint written to disk loads into the same logits; and the workload's
// three ledgers run on the CPU with the skips said plainly.
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "fourfold/workloads/models/model_config.hpp"
#include "runner_helpers.hpp"
#include "test_helpers.hpp"

#include <ATen/ATen.h>
#include <fstream>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::workloads::models;
using fourfold::testing::temp_dir;

namespace {

const std::vector<std::string> k_tiny{"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe"};

model_config preset(const std::string& name) {
    auto p = find_preset(name);
    if (!p)
        throw std::runtime_error("no preset " + name);
    return *p;
}

std::shared_ptr<const decoder_weights> tiny_weights(const std::string& name, c10::ScalarType type,
                                                    std::uint64_t seed = 5) {
    return std::make_shared<const decoder_weights>(
        random_weights(preset(name), type, c10::Device(c10::DeviceType::CPU), seed));
}

at::Tensor some_tokens(std::int64_t n, std::int64_t vocab) {
    return at::arange(n, at::TensorOptions().dtype(at::kLong)).mul(7919).remainder(vocab);
}

// Logits of every position: prefill `prompt` tokens, then teacher-forced decode steps.
at::Tensor stepwise_logits(std::shared_ptr<const decoder_weights> w, const at::Tensor& tokens,
                           std::int64_t prompt, moe_path moe) {
    decoder_session s(std::move(w), 64, moe);
    std::vector<at::Tensor> rows{s.prefill_teacher_forced(tokens, prompt)};
    for (std::int64_t p = prompt; p < tokens.size(0); ++p) {
        s.step();
        rows.push_back(s.logits().clone());
    }
    return at::cat(rows, 0);
}

double rel_l2(const at::Tensor& a, const at::Tensor& ref) {
    const auto d = a.to(at::kDouble) - ref.to(at::kDouble);
    return d.norm().item<double>() / ref.to(at::kDouble).norm().item<double>();
}

moe_path cpu_moe_path() {
    return FOURFOLD_HAS_GROUPED_MM ? moe_path::grouped_mm : moe_path::host_loop;
}

void write_config(const std::filesystem::path& dir, const model_config& c) {
    std::ofstream(dir / "config.json") << c.to_hf_config().dump(2);
}

} // namespace

TEST(model_config, presets_count_the_parameters_of_the_published_models) {
    // Llama-3-8B, Qwen3-8B and Qwen3-30B-A3B as their checkpoints hold them.
    EXPECT_EQ(preset("llama3-8b").total_params(), 8030261248);
    EXPECT_EQ(preset("qwen3-8b").total_params(), 8190735360);
    EXPECT_EQ(preset("qwen3-30b-a3b").total_params(), 30532122624);
    // Active per token: all but 120 of 128 experts' weights and the embedding table's other rows.
    const auto moe = preset("qwen3-30b-a3b");
    EXPECT_EQ(moe.params_read_per_token(), 3041869824);
    EXPECT_LT(moe.params_read_per_token(), moe.total_params() / 9);
    const auto llama = preset("llama3-8b");
    EXPECT_EQ(llama.params_read_per_token(),
              llama.total_params() - llama.vocab * llama.hidden + llama.hidden);
    // 128 KiB of bf16 KV cache per position for Llama-3-8B: 32 layers x 2 x 8 heads x 128
    EXPECT_EQ(llama.kv_elements_per_position() * 2, 131072);
    for (const auto& name : preset_names())
        EXPECT_NO_THROW(preset(name).validate()) << name;
}

TEST(model_config, hf_config_json_in_both_transformers_forms) {
    // transformers 4: rope_theta + rope_scaling (Llama 3.1)
    auto j = json::parse(R"({"model_type":"llama","hidden_size":64,"intermediate_size":128,
        "num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100,
        "max_position_embeddings":2048,"rms_norm_eps":1e-5,"rope_theta":500000.0,
        "rope_scaling":{"rope_type":"llama3","factor":8.0,"low_freq_factor":1.0,
        "high_freq_factor":4.0,"original_max_position_embeddings":8192},"hidden_act":"silu",
        "tie_word_embeddings":false})");
    auto c = parse_hf_config(j, "test");
    EXPECT_EQ(c.head_dim, 16);
    EXPECT_EQ(c.rope.type, "llama3");
    EXPECT_EQ(c.rope.theta, 500000.0);
    EXPECT_FALSE(c.qk_norm);
    // transformers 5: rope_parameters
    j.erase("rope_scaling");
    j.erase("rope_theta");
    j["rope_parameters"] = json{{"rope_type", "default"}, {"rope_theta", 1e6}};
    j["model_type"] = "qwen3";
    c = parse_hf_config(j, "test");
    EXPECT_EQ(c.rope.theta, 1e6);
    EXPECT_TRUE(c.qk_norm);
    // our own config.json reads back as the same model
    for (const auto& name : preset_names()) {
        const auto p = preset(name);
        const auto back = parse_hf_config(p.to_hf_config(), name);
        EXPECT_EQ(back.total_params(), p.total_params()) << name;
        EXPECT_EQ(back.rope.to_json(), p.rope.to_json()) << name;
        EXPECT_EQ(back.tie_embeddings, p.tie_embeddings) << name;
    }
}

TEST(model_config, what_cannot_be_built_is_bad_input_naming_the_field) {
    const auto base = preset("tiny-llama").to_hf_config();
    const std::vector<std::pair<std::function<void(json&)>, std::string>> cases{
        {[](json& j) { j["model_type"] = "gpt2"; }, "valid: llama, qwen3, qwen3_moe"},
        {[](json& j) { j.erase("hidden_size"); }, "hidden_size"},
        {[](json& j) { j["hidden_size"] = "big"; }, "hidden_size"},
        {[](json& j) { j["num_key_value_heads"] = 3; }, "num_key_value_heads"},
        {[](json& j) { j["attention_bias"] = true; }, "attention_bias"},
        {[](json& j) { j["hidden_act"] = "gelu"; }, "gelu"},
        {[](json& j) {
             j["rope_scaling"] = json{{"rope_type", "yarn"}};
         },
         "yarn"},
        {[](json& j) { j["head_dim"] = 15; }, "even"},
        {[](json& j) { j["vocab_size"] = 0; }, "vocab_size"},
        {[](json& j) {
             j["model_type"] = "qwen3_moe";
             j["num_experts"] = 4;
             j["num_experts_per_tok"] = 5;
             j["moe_intermediate_size"] = 8;
         },
         "num_experts_per_tok"},
    };
    for (const auto& [edit, needle] : cases) {
        auto j = base;
        edit(j);
        try {
            (void)parse_hf_config(j, "cfg");
            ADD_FAILURE() << needle << ": accepted";
        } catch (const bad_input& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW((void)resolve_model("no-such-model"), bad_input);
}

TEST(decoder, kv_cache_decode_equals_one_causal_pass_and_the_float64_reference) {
    for (const auto& name : k_tiny) {
        const auto w = tiny_weights(name, at::kFloat);
        const auto tokens = some_tokens(20, w->config.vocab);
        // all 20 positions in one prefill, and 4 prefilled + 16 decode steps through the cache
        decoder_session whole(w, 64, cpu_moe_path());
        const auto one_pass = whole.prefill_teacher_forced(tokens, 20);
        const auto stepwise = stepwise_logits(w, tokens, 4, cpu_moe_path());
        ASSERT_EQ(stepwise.sizes(), one_pass.sizes());
        EXPECT_LT(rel_l2(stepwise, one_pass), 1e-5) << name;
        const auto ref =
            reference_logits_f64(*w, reference_hidden_f64(*w, tokens), 0, w->config.vocab);
        EXPECT_LT(rel_l2(one_pass, ref), 1e-5) << name;
        EXPECT_LT(rel_l2(stepwise, ref), 1e-5) << name;
        EXPECT_TRUE(at::isfinite(stepwise).all().item<bool>()) << name;
        // logits near unit scale: the initialisation keeps activations in range
        const double rms = ref.pow(2).mean().sqrt().item<double>();
        EXPECT_GT(rms, 0.1) << name;
        EXPECT_LT(rms, 10) << name;
    }
}

TEST(decoder, moe_paths_compute_the_same_function) {
    const auto w = tiny_weights("tiny-qwen3-moe", at::kFloat);
    const auto tokens = some_tokens(12, w->config.vocab);
    const auto loop = stepwise_logits(w, tokens, 5, moe_path::host_loop);
    const auto ref = reference_logits_f64(*w, reference_hidden_f64(*w, tokens), 0, w->config.vocab);
    EXPECT_LT(rel_l2(loop, ref), 1e-5);
    if (!FOURFOLD_HAS_GROUPED_MM)
        GTEST_SKIP() << "no at::_grouped_mm in this libtorch";
    const auto grouped = stepwise_logits(w, tokens, 5, moe_path::grouped_mm);
    EXPECT_LT(rel_l2(grouped, loop), 1e-5);
}

TEST(decoder, greedy_decoding_samples_the_argmax_into_the_sequence) {
    const auto w = tiny_weights("tiny-llama", at::kFloat);
    decoder_session s(w, 64, moe_path::host_loop);
    const auto prompt = some_tokens(10, w->config.vocab);
    auto logits = s.prefill(prompt);
    for (int i = 0; i < 5; ++i) {
        const auto expected = logits.argmax(-1).item<std::int64_t>();
        EXPECT_EQ(s.tokens()[s.position()].item<std::int64_t>(), expected);
        s.step();
        logits = s.logits();
    }
    EXPECT_EQ(s.position(), 15);
    EXPECT_TRUE(at::equal(s.tokens().narrow(0, 0, 10), prompt));
    EXPECT_EQ(s.kv_cache_bytes(),
              2 * 2 * 2 * 64 * 16 * 4); // k and v, 2 layers, 2 kv heads, 64 x 16 fp32
}

TEST(decoder, random_weights_are_seeded_and_rounded_from_float32) {
    const auto a = tiny_weights("tiny-qwen3", at::kFloat, 11);
    const auto b = tiny_weights("tiny-qwen3", at::kFloat, 11);
    const auto c = tiny_weights("tiny-qwen3", at::kFloat, 12);
    const auto h = tiny_weights("tiny-qwen3", at::kBFloat16, 11);
    EXPECT_TRUE(at::equal(a->layers[1].qkv, b->layers[1].qkv));
    EXPECT_FALSE(at::equal(a->layers[1].qkv, c->layers[1].qkv));
    EXPECT_TRUE(at::equal(a->layers[1].qkv.to(at::kBFloat16), h->layers[1].qkv));
    EXPECT_TRUE(a->lm_head.is_same(a->embed)); // tiny-qwen3 ties its embeddings
    // fan-in scaling: the projection's rows have unit expected squared norm
    const double row_sq = a->layers[0].qkv.pow(2).sum(1).mean().item<double>();
    EXPECT_NEAR(row_sq, 1.0, 0.2);
    EXPECT_EQ(a->bytes(), a->config.total_params() * 4);
    const auto twin = a->first_layers(1);
    EXPECT_EQ(twin.layers.size(), 1u);
    EXPECT_TRUE(twin.layers[0].qkv.is_same(a->layers[0].qkv));
}

TEST(decoder, a_checkpoint_on_disk_loads_into_the_same_logits) {
    for (const auto& name : k_tiny) {
        for (const bool fused : {false, true}) {
            if (fused && name != "tiny-qwen3-moe")
                continue;
            temp_dir dir;
            const auto w = tiny_weights(name, at::kFloat, 3);
            auto tensors = hf_tensors(*w);
            if (fused) {
                // transformers 5 keeps each layer's experts in two stacked tensors
                named_tensors out;
                for (auto& [n, t] : tensors)
                    if (n.find(".mlp.experts.") == std::string::npos)
                        out.emplace_back(n, t);
                for (std::int64_t l = 0; l < w->config.layers; ++l) {
                    const auto p = "model.layers." + std::to_string(l) + ".mlp.experts.";
                    out.emplace_back(p + "gate_up_proj",
                                     w->layers[static_cast<std::size_t>(l)].experts_gate_up);
                    out.emplace_back(p + "down_proj",
                                     w->layers[static_cast<std::size_t>(l)].experts_down);
                }
                tensors = out;
            }
            write_sharded_checkpoint(dir.path(), tensors, 40000);
            write_config(dir.path(), w->config);
            const auto source = resolve_model(dir.path());
            ASSERT_TRUE(source.has_weights);
            const checkpoint ck(dir.path());
            EXPECT_GT(ck.file_count(), 1u) << name;
            const auto loaded = std::make_shared<const decoder_weights>(
                load_weights(source.config, ck, at::kFloat, c10::Device(c10::DeviceType::CPU)));
            const auto tokens = some_tokens(12, w->config.vocab);
            EXPECT_TRUE(at::equal(stepwise_logits(loaded, tokens, 6, moe_path::host_loop),
                                  stepwise_logits(w, tokens, 6, moe_path::host_loop)))
                << name << (fused ? " fused" : "");
        }
    }
}

TEST(decoder, a_checkpoint_that_does_not_fit_the_config_is_refused) {
    temp_dir dir;
    const auto w = tiny_weights("tiny-llama", at::kFloat);
    auto tensors = hf_tensors(*w);
    write_config(dir.path(), w->config);
    auto without = tensors;
    without.erase(without.begin() + 3);
    const auto missing_name = tensors[3].first;
    write_safetensors(dir / "model.safetensors", without);
    try {
        check_checkpoint(w->config, checkpoint(dir.path()));
        ADD_FAILURE() << "a missing tensor was accepted";
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find(missing_name), std::string::npos) << e.what();
    }
    auto reshaped = tensors;
    reshaped[0].second = at::randn({7, 3});
    write_safetensors(dir / "model.safetensors", reshaped);
    try {
        check_checkpoint(w->config, checkpoint(dir.path()));
        ADD_FAILURE() << "a wrong shape was accepted";
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("[7, 3]"), std::string::npos) << e.what();
    }
}

#if FOURFOLD_HAS_FLOAT8
TEST(decoder, float8_weights_are_dequantised_with_their_block_scales) {
    temp_dir dir;
    const auto w = tiny_weights("tiny-llama", at::kFloat);
    named_tensors tensors;
    for (auto [n, t] : hf_tensors(*w)) {
        if (n.find("mlp.down_proj") != std::string::npos) {
            const auto scale = at::full({2, 3}, 0.5);
            // weight = stored * scale blockwise: store weight / 0.5 in float8
            tensors.emplace_back(n, (t / 0.5).to(at::kFloat8_e4m3fn));
            tensors.emplace_back(n + "_scale_inv", scale);
            continue;
        }
        tensors.emplace_back(n, t);
    }
    write_config(dir.path(), w->config);
    write_safetensors(dir / "model.safetensors", tensors);
    const auto loaded = load_weights(w->config, checkpoint(dir.path()), at::kFloat,
                                     c10::Device(c10::DeviceType::CPU));
    const auto expect = (w->layers[0].down / 0.5).to(at::kFloat8_e4m3fn).to(at::kFloat) * 0.5;
    EXPECT_TRUE(at::equal(loaded.layers[0].down, expect));
}
#endif

// --- the decode workload through the runner ---------------------------------------------------

namespace {

runner::job_spec decode_job(const std::string& model, dtype t, const std::string& mode = "eager",
                            std::vector<std::string> variants = {}) {
    return {"decode", json{{"model", model}, {"ctx", 24}, {"tokens", 6}, {"mode", mode}}, t,
            std::move(variants), ""};
}

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

} // namespace

TEST(decode_workload, three_ledgers_on_the_cpu_for_every_tiny_preset) {
    auto dev = cpu();
    for (const auto& name : k_tiny) {
        const auto r = fourfold::testing::run_jobs(*dev, {decode_job(name, dtype::fp32)},
                                                   "throughput,correctness,memory");
        std::map<ledger, int> ok;
        for (const auto& rec : r.records) {
            EXPECT_NE(rec.status, record_status::failed)
                << name << " " << rec.job.variant << ": " << rec.reason;
            if (rec.status == record_status::skipped) {
                EXPECT_FALSE(rec.reason.empty());
                continue;
            }
            ++ok[rec.which];
            const auto& f = rec.figures;
            EXPECT_TRUE(f["facts"].contains("weights_bytes")) << name;
            EXPECT_TRUE(f["facts"].contains("kv_cache_bytes")) << name;
            if (rec.which == ledger::throughput) {
                EXPECT_EQ(rec.unit, "tokens/s");
                EXPECT_EQ(f["ctx"], 24);
                EXPECT_EQ(f["mode"], "eager");
                EXPECT_GT(f["tokens_per_s"].get<double>(), 0);
                EXPECT_NEAR(f["tokens_per_s"].get<double>(),
                            1000.0 / f["ms_per_token"]["median"].get<double>(), 1e-6);
                EXPECT_GT(f["prefill_ms"].get<double>(), 0);
                EXPECT_GT(f["bandwidth_limit_tokens_per_s"].get<double>(), 0);
                EXPECT_EQ(rec.samples.size(), static_cast<std::size_t>(6 * f["rounds"].get<int>()));
                EXPECT_EQ(f["generated_tokens"].size(), 7u);
                // bytes read per token: the active weights plus the cache at the mean length
                const auto c = preset(name);
                EXPECT_DOUBLE_EQ(f["bytes_read_per_token"].get<double>(),
                                 4.0 * (static_cast<double>(c.params_read_per_token()) +
                                        static_cast<double>(c.kv_elements_per_position()) * 26.5));
            }
            if (rec.which == ledger::correctness) {
                EXPECT_EQ(f["verdict"], "PASS") << name << " " << f["failed_checks"].dump();
                EXPECT_EQ(f["metrics"]["top1_agreement"], 1.0) << name;
                EXPECT_LT(f["metrics"]["kl_max"].get<double>(), 1e-8) << name;
                EXPECT_EQ(f["metrics"]["positions"], 16);
            }
            if (rec.which == ledger::memory) {
                EXPECT_GT(f["driver_peak_bytes"].get<double>(), 0);
            }
        }
        EXPECT_EQ(ok[ledger::throughput], ok[ledger::correctness]) << name;
        EXPECT_EQ(ok[ledger::memory], ok[ledger::correctness]) << name;
        EXPECT_GE(ok[ledger::correctness], 1) << name;
        EXPECT_EQ(r.summary.exit_code(), 0) << name;
    }
}

TEST(decode_workload, bf16_twins_pass_their_documented_tolerance) {
    auto dev = cpu();
    for (const auto& name : k_tiny) {
        const auto r =
            fourfold::testing::run_jobs(*dev, {decode_job(name, dtype::bf16)}, "correctness");
        for (const auto& rec : r.records) {
            if (rec.status != record_status::ok)
                continue;
            EXPECT_EQ(rec.figures["verdict"], "PASS")
                << name << rec.figures["failed_checks"].dump();
            EXPECT_GT(rec.figures["metrics"]["rel_l2"].get<double>(), 0); // bf16 is not exact
        }
    }
}

TEST(decode_workload, what_cannot_run_here_is_a_skip_with_its_reason) {
    auto dev = cpu();
    const auto r = fourfold::testing::run_jobs(*dev,
                                               {decode_job("tiny-llama", dtype::fp32, "graph"),
                                                decode_job("tiny-llama", dtype::fp32, "eager"),
                                                decode_job("tiny-qwen3-moe", dtype::fp32, "eager")},
                                               "throughput,correctness");
    for (const auto& rec : r.records) {
        EXPECT_NE(rec.status, record_status::failed) << rec.reason;
        const auto mode = rec.job.params["mode"].get<std::string>();
        const auto model = rec.job.params["model"].get<std::string>();
        if (rec.job.variant == "native" || rec.job.variant == "native_fused") {
            // fourfold's kernels: CUDA only, whatever the mode
            EXPECT_EQ(rec.status, record_status::skipped);
            EXPECT_NE(rec.reason.find("cuda"), std::string::npos) << rec.reason;
        } else if (model == "tiny-llama" && rec.job.variant == "generic") {
            EXPECT_EQ(rec.status, record_status::skipped);
            EXPECT_NE(rec.reason.find("dense"), std::string::npos) << rec.reason;
        } else if (mode == "graph") {
            EXPECT_EQ(rec.status, record_status::skipped);
            EXPECT_NE(rec.reason.find("mode=graph"), std::string::npos) << rec.reason;
        }
        if (model == "tiny-qwen3-moe" && rec.job.variant == "generic") {
            EXPECT_EQ(rec.status, record_status::ok);
        }
        if (model == "tiny-qwen3-moe" && rec.job.variant == "stock" && !FOURFOLD_HAS_GROUPED_MM) {
            EXPECT_EQ(rec.status, record_status::skipped);
            EXPECT_NE(rec.reason.find("_grouped_mm"), std::string::npos) << rec.reason;
        }
    }
}

TEST(decode_workload, bad_parameters_are_bad_input_before_anything_runs) {
    auto dev = cpu();
    runner::run_settings s;
    EXPECT_THROW(runner::make_plan({decode_job("nosuch", dtype::fp32)}, s, *dev), bad_input);
    auto too_long = decode_job("tiny-llama", dtype::fp32);
    too_long.params["ctx"] = 4095;
    try {
        (void)runner::make_plan({too_long}, s, *dev);
        ADD_FAILURE() << "ctx past max positions accepted";
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("max_position_embeddings"), std::string::npos)
            << e.what();
    }
}

TEST(decode_workload, deliberately_wrong_logits_fail_correctness) {
    auto dev = cpu();
    const auto r = fourfold::testing::run_jobs(
        *dev,
        {decode_job("tiny-qwen3", dtype::fp32, "eager",
                    {"stock", "wrong_one_element", "bf16_rounded", "nan_one"})},
        "correctness");
    EXPECT_EQ(fourfold::testing::find_record(r, ledger::correctness, "stock")->figures["verdict"],
              "PASS");
    for (const char* wrong : {"wrong_one_element", "bf16_rounded", "nan_one"}) {
        const auto* rec = fourfold::testing::find_record(r, ledger::correctness, wrong);
        ASSERT_NE(rec, nullptr);
        EXPECT_EQ(rec->figures["verdict"], "FAIL") << wrong;
    }
}
