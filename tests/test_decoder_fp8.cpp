// The decode workload's weights=fp8_row option on the CPU: the parameter parses (and a wrong value
// is bad input naming the valid ones); at its default it stays out of the job's params, so a
// decode case's key is the one computed before the option existed (older stored runs still pair
// in compare); the fp8 footprint counts 1 byte a quantised weight and 4 a row scale, and only
// the projections; on a libtorch without float8 types every fp8 record is a skip that says why.
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/runner/plan.hpp"
#include "fourfold/workloads/model_ops/linear_fp8.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "runner_helpers.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::workloads::models;

namespace {

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

runner::job_spec decode_job(json params, std::vector<std::string> variants = {"stock"}) {
    return {"decode", std::move(params), dtype::bf16, std::move(variants), ""};
}

job_id stock_job(const json& params) {
    auto dev = cpu();
    const auto p = runner::make_plan({decode_job(params)}, runner::run_settings{}, *dev);
    EXPECT_EQ(p.groups.size(), 1u);
    return p.groups.at(0).job("stock", dev->name());
}

} // namespace

// The keys below were computed by the fourfold binary of main at d255bce (before the weights
// parameter existed): `fourfold decode --model tiny-llama --ctx 8 --tokens 2 --device cpu`
// printed case_key bc81b23f4cfd45aa; the llama3-8b one is the same hash (fnv1a64 of the
// canonical {"params": ..., "workload": "decode"}) over its params.
TEST(decoder_fp8, default_weights_leave_a_decode_case_key_as_it_was) {
    const json tiny{{"model", "tiny-llama"}, {"ctx", 8}, {"tokens", 2}, {"mode", "eager"}};
    const auto a = stock_job(tiny);
    EXPECT_EQ(a.case_key(), "bc81b23f4cfd45aa") << a.params.dump();
    EXPECT_FALSE(a.params.contains("weights")) << a.params.dump();
    auto explicit_default = tiny;
    explicit_default["weights"] = "model";
    EXPECT_EQ(stock_job(explicit_default).case_key(), "bc81b23f4cfd45aa");

    const auto big = stock_job(json{{"model", "llama3-8b"}, {"ctx", 512}, {"mode", "graph"}});
    EXPECT_EQ(big.case_key(), "a951633f02cc8259") << big.params.dump();

    // the fp8 model is another case, and its records say so
    auto fp8 = tiny;
    fp8["weights"] = "fp8_row";
    const auto f = stock_job(fp8);
    EXPECT_NE(f.case_key(), a.case_key());
    EXPECT_EQ(f.params.value("weights", ""), "fp8_row") << f.params.dump();
}

TEST(decoder_fp8, the_weights_parameter_parses_and_a_wrong_value_is_bad_input) {
    auto dev = cpu();
    const auto* w = workloads::registry::instance().find("decode");
    ASSERT_NE(w, nullptr);
    const auto* spec = w->find_param("weights");
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(spec->default_value, "model");
    EXPECT_TRUE(spec->omit_at_default);
    EXPECT_EQ(spec->to_json()["choices"], json::array({"model", "fp8_row"}));
    try {
        (void)runner::make_plan({decode_job(json{{"model", "tiny-llama"}, {"weights", "fp8"}})},
                                runner::run_settings{}, *dev);
        ADD_FAILURE() << "weights=fp8 accepted";
    } catch (const bad_input& e) {
        EXPECT_NE(std::string(e.what()).find("fp8_row"), std::string::npos) << e.what();
    }
}

// 1 byte a quantised weight, one scale a row, and only what fp8_row quantises: everything but the
// embedding, the norms (and Qwen3's q/k norms), the MoE routers and experts, a tied LM head.
TEST(decoder_fp8, the_footprint_counts_the_projections_only) {
    for (const char* name : {"tiny-llama", "tiny-qwen3", "tiny-qwen3-moe", "llama3-8b"}) {
        const auto c = *find_preset(name);
        const auto fp = fp8_row_footprint(c);
        std::int64_t kept = c.vocab * c.hidden + c.hidden; // embedding, final norm
        std::int64_t rows = c.tie_embeddings ? 0 : c.vocab;
        for (std::int64_t l = 0; l < c.layers; ++l) {
            kept += 2 * c.hidden + (c.qk_norm ? 2 * c.head_dim : 0);
            rows += c.qkv_dim() + c.hidden;
            if (c.is_moe_layer(l))
                kept += c.experts * c.hidden + c.experts * 3 * c.hidden * c.moe_intermediate;
            else
                rows += 2 * c.intermediate + c.hidden;
        }
        EXPECT_EQ(fp.weights, c.total_params() - kept) << name;
        EXPECT_EQ(fp.scales, rows) << name;
    }
    // llama3-8b: 8.03e9 parameters, of which the embedding (0.53e9) stays bf16
    const auto fp = fp8_row_footprint(*find_preset("llama3-8b"));
    EXPECT_NEAR(static_cast<double>(fp.weights), 7.50e9, 0.01e9);
}

TEST(decoder_fp8, what_cannot_run_here_is_a_skip_that_says_why) {
    auto dev = cpu();
    const auto r = fourfold::testing::run_jobs(*dev,
                                               {decode_job(json{{"model", "tiny-llama"},
                                                                {"ctx", 8},
                                                                {"tokens", 2},
                                                                {"mode", "eager"},
                                                                {"weights", "fp8_row"}},
                                                           {"stock", "native", "native_fused"})},
                                               "throughput,correctness,memory");
    int records = 0;
    for (const auto& rec : r.records) {
        ++records;
        EXPECT_NE(rec.status, record_status::failed) << rec.job.variant << ": " << rec.reason;
        EXPECT_EQ(rec.job.params.value("weights", ""), "fp8_row");
        if (rec.job.variant != "stock") {
            // fourfold's kernels: CUDA only
            EXPECT_EQ(rec.status, record_status::skipped) << rec.job.variant;
            EXPECT_NE(rec.reason.find("cuda"), std::string::npos) << rec.reason;
            continue;
        }
        if (!FOURFOLD_HAS_FLOAT8) {
            EXPECT_EQ(rec.status, record_status::skipped);
            EXPECT_NE(rec.reason.find("weights=fp8_row"), std::string::npos) << rec.reason;
            EXPECT_NE(rec.reason.find("float8"), std::string::npos) << rec.reason;
            continue;
        }
        // a libtorch with float8 on the CPU: the stock (dequantising) path runs
        EXPECT_EQ(rec.status, record_status::ok) << rec.reason;
        if (rec.which == ledger::correctness) {
            EXPECT_EQ(rec.figures["verdict"], "PASS") << rec.figures["failed_checks"].dump();
            const auto& q = rec.figures["metrics"]["quantisation_error"];
            ASSERT_TRUE(q.is_object()) << rec.figures["metrics"].dump();
            EXPECT_GT(q["rel_l2"].get<double>(), 0);
            EXPECT_TRUE(q["within_budget"].get<bool>()) << q.dump();
        }
    }
    EXPECT_EQ(records, 9); // three variants x three ledgers
}

TEST(decoder_fp8, fp8_weights_need_float8_types) {
    const auto c = *find_preset("tiny-llama");
    if (FOURFOLD_HAS_FLOAT8)
        GTEST_SKIP() << "this libtorch has float8 types";
    EXPECT_THROW((void)random_weights(c, at::kBFloat16, c10::Device(c10::DeviceType::CPU), 1,
                                      weight_format::fp8_row, 2),
                 unsupported_here);
    EXPECT_THROW((void)workloads::model_ops::quantise_fp8_row(at::ones({2, 2})), unsupported_here);
    // the model format is what it was
    const auto w = random_weights(c, at::kBFloat16, c10::Device(c10::DeviceType::CPU), 1);
    EXPECT_EQ(w.format, weight_format::model);
    EXPECT_FALSE(w.originals);
    EXPECT_FALSE(w.layers[0].qkv_scale.defined());
    EXPECT_EQ(w.bytes(), c.total_params() * 2);
    EXPECT_THROW((void)w.with_originals(), std::logic_error);
}
