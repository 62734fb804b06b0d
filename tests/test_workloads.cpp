// The operator workloads of the article suite (linear_decode over the layer-shape table, softmax,
// moe_decode, pad, fp8_linear): each one's variants agree with the float64 reference within the
// tolerance its dtype (or its documented per-workload policy) allows, what the build cannot do is
// a skip with its reason, and the declared bytes moved match a count by hand for one shape.
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/linear_shapes.hpp"
#include "runner_helpers.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <set>

using namespace fourfold;
using namespace fourfold::testing;

namespace {

std::unique_ptr<backend::device> cpu() {
    return backend::open_device({backend::device_kind::cpu, 0});
}

// The case a job spec becomes, with every parameter filled in as a run would.
std::unique_ptr<workloads::workload_case> case_of(const std::string& workload, json params,
                                                  dtype type) {
    auto dev = cpu();
    auto p = runner::make_plan({{workload, std::move(params), type, {}, ""}},
                               runner::run_settings{}, *dev);
    return std::move(p.groups.at(0).c);
}

// Runs the correctness pass; every record ran and PASSed or was skipped with a reason. Returns
// the records for further checks.
std::vector<record> expect_pass_or_reasoned_skip(const std::vector<runner::job_spec>& specs,
                                                 std::size_t min_passes) {
    auto dev = cpu();
    const auto r = run_jobs(*dev, specs, "correctness");
    std::size_t passes = 0;
    for (const auto& rec : r.records) {
        const auto what = rec.job.workload + " " + rec.job.variant + " " + rec.job.dtype + " " +
                          rec.job.params_text();
        EXPECT_NE(rec.status, record_status::failed) << what << ": " << rec.reason;
        if (rec.status == record_status::skipped) {
            EXPECT_FALSE(rec.reason.empty()) << what;
            continue;
        }
        EXPECT_EQ(rec.figures["verdict"], "PASS")
            << what << " " << rec.figures["failed_checks"].dump() << " "
            << rec.figures["metrics"].dump();
        ++passes;
    }
    EXPECT_GE(passes, min_passes);
    EXPECT_EQ(r.summary.exit_code(), 0);
    return r.records;
}

const record* find(const std::vector<record>& records, const std::string& variant,
                   const std::string& dtype = "") {
    for (const auto& r : records)
        if (r.job.variant == variant && (dtype.empty() || r.job.dtype == dtype))
            return &r;
    return nullptr;
}

} // namespace

TEST(linear_shapes, the_table_holds_96_distinct_real_layer_shapes) {
    const auto& table = workloads::linear_shape_table();
    ASSERT_EQ(table.size(), workloads::k_linear_shape_count);
    std::set<std::pair<std::int64_t, std::int64_t>> distinct;
    std::set<std::string> models;
    for (const auto& s : table) {
        distinct.emplace(s.n, s.k);
        models.insert(s.model);
        EXPECT_GT(s.n, 0);
        EXPECT_GT(s.k, 0);
        EXPECT_NE(s.source.find("config.json"), std::string::npos) << s.label();
    }
    EXPECT_EQ(distinct.size(), 96u);
    for (const char* m : {"Llama-3-8B", "Llama-3-70B", "Qwen3-0.6B", "Qwen3-32B", "Qwen3-30B-A3B",
                          "Mistral-7B-v0.1", "Gemma-3-27B", "gpt-oss-20b"})
        EXPECT_TRUE(models.count(m)) << m;
    // spot checks against the published configs
    const auto* q = workloads::find_linear_shape(4096, 4096);
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->label(), "Llama-3-8B q_proj");
    const auto* head = workloads::find_linear_shape(128256, 4096);
    ASSERT_NE(head, nullptr);
    EXPECT_EQ(head->projection, "lm_head");
    const auto* router = workloads::find_linear_shape(128, 2048);
    ASSERT_NE(router, nullptr);
    EXPECT_EQ(router->label(), "Qwen3-30B-A3B router");
    EXPECT_EQ(workloads::find_linear_shape(4097, 4096), nullptr);
}

TEST(linear_shapes, a_malformed_table_is_refused_with_the_line_named) {
    const std::string header = "model,projection,n,k,source,also\n";
    EXPECT_THROW(workloads::parse_linear_shapes("model,n,k\n", "t.csv"), std::logic_error);
    try {
        workloads::parse_linear_shapes(header + "A,q,4,4,src,\nB,k,4,4,src,\n", "t.csv");
        FAIL() << "a repeated shape was accepted";
    } catch (const std::logic_error& e) {
        EXPECT_NE(std::string(e.what()).find("t.csv line 3"), std::string::npos) << e.what();
    }
    EXPECT_THROW(workloads::parse_linear_shapes(header + "A,q,0,4,src,\n", "t.csv"),
                 std::logic_error);
    EXPECT_THROW(workloads::parse_linear_shapes(header + "A,q,4,4,src\n", "t.csv"),
                 std::logic_error);
    const auto ok = workloads::parse_linear_shapes(header + "A,q,4,8,src,B:q;C:q\n", "t.csv");
    ASSERT_EQ(ok.size(), 1u);
    EXPECT_EQ(ok[0].also.size(), 2u);
}

TEST(linear_decode, a_table_shape_passes_and_its_records_name_the_layer) {
    const auto recs = expect_pass_or_reasoned_skip(
        {{"linear_decode", json{{"n", 256}, {"k", 640}, {"bias", true}}, dtype::bf16, {}, ""},
         {"linear_decode", json{{"tokens", 3}, {"n", 256}, {"k", 640}}, dtype::fp32, {}, ""}},
        4);
    const auto* rec = find(recs, "stock", "bf16");
    ASSERT_NE(rec, nullptr);
    EXPECT_EQ(rec->figures["facts"]["layer"], "Gemma-3-270M k_proj");
    EXPECT_EQ(rec->figures["facts"]["weight_storage_bytes"], 256 * 640 * 2);
    // 2 tokens x 3 outputs x 5 inputs, bf16, with bias: x, W, b read once, y written once
    const auto c = case_of("linear_decode", json{{"tokens", 2}, {"n", 3}, {"k", 5}, {"bias", true}},
                           dtype::bf16);
    EXPECT_DOUBLE_EQ(c->declared_cost().bytes_read, 2.0 * (2 * 5 + 3 * 5 + 3));
    EXPECT_DOUBLE_EQ(c->declared_cost().bytes_written, 2.0 * (2 * 3));
}

TEST(softmax, variants_pass_over_the_article_vocabularies_and_bytes_match_a_hand_count) {
    expect_pass_or_reasoned_skip(
        {{"softmax", json{{"rows", 3}, {"vocab", 151936}}, dtype::fp32, {}, ""},
         {"softmax", json{{"rows", 2}, {"vocab", 32000}}, dtype::bf16, {}, ""}},
        4);
    // 3 rows x 1000 fp32: read 12,000 bytes, write 12,000
    const auto c = case_of("softmax", json{{"rows", 3}, {"vocab", 1000}}, dtype::fp32);
    EXPECT_DOUBLE_EQ(c->declared_cost().bytes_read, 12000);
    EXPECT_DOUBLE_EQ(c->declared_cost().bytes_written, 12000);
}

TEST(moe_decode, generic_passes_and_stock_runs_or_says_why_not) {
    std::vector<runner::job_spec> specs;
    for (const auto t : {dtype::fp32, dtype::bf16})
        for (const char* part : {"ffn", "gate_up", "block"})
            specs.push_back({"moe_decode",
                             json{{"tokens", 4},
                                  {"experts", 16},
                                  {"top_k", 4},
                                  {"hidden", 64},
                                  {"width", 32},
                                  {"part", part}},
                             t,
                             {},
                             ""});
    const auto recs = expect_pass_or_reasoned_skip(specs, 6);
    const auto* stock = find(recs, "stock");
    ASSERT_NE(stock, nullptr);
    if (!FOURFOLD_HAS_GROUPED_MM) {
        ASSERT_EQ(stock->status, record_status::skipped);
        EXPECT_NE(stock->reason.find("needs grouped_mm"), std::string::npos) << stock->reason;
    }
    const auto* generic = find(recs, "generic");
    ASSERT_NE(generic, nullptr);
    ASSERT_EQ(generic->status, record_status::ok);
    EXPECT_EQ(generic->figures["facts"]["host_sync"], true);
    EXPECT_LE(generic->figures["facts"]["active_experts"].get<int>(), 16);
    EXPECT_GE(generic->figures["facts"]["active_experts"].get<int>(), 4);
}

TEST(moe_decode, declared_bytes_match_a_hand_count) {
    // top_k = experts: all 4 experts are reached. fp32, 3 tokens, hidden 16, expert width 8.
    const json shape{{"tokens", 3}, {"experts", 4}, {"top_k", 4}, {"hidden", 16}, {"width", 8}};
    auto ffn = shape;
    ffn["part"] = "ffn";
    const auto c = case_of("moe_decode", ffn, dtype::fp32);
    // weights 4 x (16x16 gate/up + 16x8 down) x 4 B, tokens 3x16x4 B, logits 3x4x4 B
    EXPECT_DOUBLE_EQ(c->declared_cost().bytes_read,
                     4.0 * (2 * 8 * 16 + 16 * 8) * 4 + 3 * 16 * 4 + 3 * 4 * 4);
    EXPECT_DOUBLE_EQ(c->declared_cost().bytes_written, 3.0 * 16 * 4);
    auto gate_up = shape;
    gate_up["part"] = "gate_up";
    const auto g = case_of("moe_decode", gate_up, dtype::fp32);
    // gate/up weights 4 x 16x16 x 4 B, 12 sorted rows x 16 x 4 B, 4 int32 offsets
    EXPECT_DOUBLE_EQ(g->declared_cost().bytes_read, 4.0 * 16 * 16 * 4 + 12 * 16 * 4 + 4 * 4);
    EXPECT_DOUBLE_EQ(g->declared_cost().bytes_written, 12.0 * 16 * 4);
    // fewer experts reached than exist: the bytes follow the routing, which the facts report
    const auto sparse =
        case_of("moe_decode", json{{"tokens", 1}, {"experts", 128}, {"top_k", 8}}, dtype::bf16);
    EXPECT_EQ(sparse->variant_facts("stock")["active_experts"], 8);
    EXPECT_DOUBLE_EQ(sparse->declared_cost().bytes_read,
                     2.0 * (8 * 3 * 768 * 2048 + 2048) + 4.0 * 128);
}

TEST(moe_decode, top_k_above_the_expert_count_is_bad_input) {
    EXPECT_THROW(case_of("moe_decode", json{{"experts", 4}, {"top_k", 8}}, dtype::bf16), bad_input);
}

TEST(pad, variants_pass_and_the_memory_ledger_shows_what_generic_allocates) {
    expect_pass_or_reasoned_skip(
        {{"pad",
          json{{"channels", 8}, {"frames", 3}, {"height", 10}, {"width", 12}},
          dtype::fp32,
          {},
          ""},
         {"pad",
          json{{"channels", 8}, {"frames", 3}, {"height", 10}, {"width", 12}},
          dtype::bf16,
          {},
          ""}},
        4);
    // 1x128x3x64x64 bf16, time pad (2, 0), spatial pad 1: 1x128x5x66x66 out
    const json shape{{"batch", 1}, {"channels", 128}, {"frames", 3}, {"height", 64}, {"width", 64}};
    const auto c = case_of("pad", shape, dtype::bf16);
    EXPECT_DOUBLE_EQ(c->declared_cost().bytes_read, 128.0 * 3 * 64 * 64 * 2);
    EXPECT_DOUBLE_EQ(c->declared_cost().bytes_written, 128.0 * 5 * 66 * 66 * 2);
    // generic's intermediates: width blocks 384x64x1, width-padded 384x64x66, height blocks
    // 384x1x66, height-padded 384x66x66, time block 128x2x66x66 (elements, x2 bytes)
    const std::int64_t y2 = std::int64_t{384} * 66 * 66,
                       time_block = std::int64_t{128} * 2 * 66 * 66;
    EXPECT_EQ(c->variant_facts("generic")["intermediate_bytes"],
              2 * (384 * 64 + 384 * 64 * 66 + 384 * 66 + y2 + time_block));
    EXPECT_EQ(c->variant_facts("stock")["intermediate_bytes"], 0);

    auto dev = cpu();
    const auto r = run_jobs(*dev, {{"pad", shape, dtype::bf16, {}, ""}}, "memory");
    const auto* stock = find(r.records, "stock");
    const auto* generic = find(r.records, "generic");
    ASSERT_TRUE(stock && generic);
    ASSERT_EQ(stock->status, record_status::ok) << stock->reason;
    ASSERT_EQ(generic->status, record_status::ok) << generic->reason;
    const auto peak = [](const record* rec) {
        return rec->figures["allocated_peak_bytes"].get<std::int64_t>();
    };
    // during generic's last cat, the height-padded intermediate and the time block live beside
    // the input and the output; stock holds only the input and the output
    EXPECT_GE(peak(generic) - peak(stock), 2 * (y2 + time_block))
        << "stock " << peak(stock) << " generic " << peak(generic);
}

TEST(fp8_linear, the_bf16_point_passes_and_fp8_variants_run_or_say_why_not) {
    const auto recs = expect_pass_or_reasoned_skip(
        {{"fp8_linear", json{{"tokens", 16}, {"n", 256}, {"k", 512}}, dtype::bf16, {}, ""}}, 1);
    const auto* bf16 = find(recs, "bf16");
    ASSERT_NE(bf16, nullptr);
    ASSERT_EQ(bf16->status, record_status::ok);
    EXPECT_EQ(bf16->figures["tolerance"]["rel_l2"], 1e-2);
    for (const char* v : {"dequant_tensor", "dequant_row", "scaled_mm_tensor", "scaled_mm_row"}) {
        const auto* rec = find(recs, v);
        ASSERT_NE(rec, nullptr) << v;
        if (!FOURFOLD_HAS_FLOAT8) {
            ASSERT_EQ(rec->status, record_status::skipped) << v;
            EXPECT_NE(rec->reason.find("float8"), std::string::npos) << rec->reason;
            continue;
        }
        if (rec->status == record_status::skipped)
            continue; // _scaled_mm: CUDA only
        // the numerics change, visibly, and stay inside the documented fp8 policy
        EXPECT_EQ(rec->figures["tolerance"]["rel_l2"], 0.08) << v;
        EXPECT_GT(rec->figures["metrics"]["rel_l2"].get<double>(),
                  5 * bf16->figures["metrics"]["rel_l2"].get<double>())
            << v;
    }
}

TEST(fp8_linear, the_native_variants_are_skips_with_their_reason_off_cuda) {
    auto dev = cpu();
    const auto r = run_jobs(*dev,
                            {{"fp8_linear",
                              json{{"tokens", 1}, {"n", 64}, {"k", 256}},
                              dtype::bf16,
                              {"bf16", "native_bf16", "native_fp8_tensor", "native_fp8_row"},
                              ""}},
                            "correctness,op_time");
    EXPECT_EQ(r.summary.exit_code(), 0);
    const auto* bf16 = find(r.records, "bf16");
    ASSERT_NE(bf16, nullptr);
    EXPECT_EQ(bf16->status, record_status::ok);
    for (const char* v : {"native_bf16", "native_fp8_tensor", "native_fp8_row"})
        for (const auto& rec : r.records)
            if (rec.job.variant == v) {
                EXPECT_EQ(rec.status, record_status::skipped) << v;
                EXPECT_FALSE(rec.reason.empty()) << v;
            }
}

// The native variants' second check, fed by hand: an output equal to the dequantised product
// (rounded to bf16) passes it and shows the quantisation's error beside it; the bf16 original's
// product, which no fp8 kernel computes, fails it. Needs float8_e4m3fn (libtorch 2.1+).
TEST(fp8_linear, the_kernel_error_is_measured_against_the_dequantised_product) {
    if (!FOURFOLD_HAS_FLOAT8)
        GTEST_SKIP() << "libtorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR
                     << " has no float8_e4m3fn";
    const auto c = case_of("fp8_linear", json{{"tokens", 4}, {"n", 96}, {"k", 512}}, dtype::bf16);
    const auto in = c->make_inputs(7);
    EXPECT_EQ(c->make_variant_metrics("bf16", in), nullptr);
    EXPECT_EQ(c->make_variant_metrics("dequant_row", in), nullptr);
    const auto ref = c->reference(in);
    for (const char* v : {"native_fp8_tensor", "native_fp8_row"}) {
        const bool row = std::string(v) == "native_fp8_row";
        auto w = in[row ? "weight_fp8_row" : "weight_fp8_tensor"].to(at::kDouble);
        const auto s = in[row ? "scale_row" : "scale_tensor"].to(at::kDouble).reshape({-1});
        w = row ? w * s.unsqueeze(1) : w * s[0];
        const auto dequantised = at::linear(in["x"].to(at::kDouble), w).to(at::kBFloat16);
        const auto original =
            at::linear(in["x"].to(at::kDouble), in["weight"].to(at::kDouble)).to(at::kBFloat16);
        for (const bool exact : {true, false}) {
            auto m = c->make_variant_metrics(v, in);
            ASSERT_NE(m, nullptr) << v;
            const auto& out = exact ? dequantised : original;
            for (std::int64_t i = 0; i < ref.chunks; ++i) {
                const auto chunk = ref.chunk(i);
                m->add(out.narrow(chunk.dim, chunk.start, chunk.values.size(chunk.dim)),
                       chunk.values, chunk.dim, chunk.start);
            }
            const auto res = m->finish();
            const auto& ke = res.metrics["kernel_error"];
            const double q = res.metrics["quantisation_error"]["rel_l2"].get<double>();
            EXPECT_GT(q, 5e-3) << v; // e4m3's 3 mantissa bits: about 2-3 %
            EXPECT_LT(q, 0.08) << v;
            if (exact) {
                EXPECT_TRUE(res.failed_checks.empty()) << v << " " << ke.dump();
                EXPECT_EQ(ke["verdict"], "PASS") << ke.dump();
                EXPECT_LT(ke["metrics"]["rel_l2"].get<double>(), 4e-3) << ke.dump();
            } else {
                EXPECT_FALSE(res.failed_checks.empty()) << v << " " << ke.dump();
                EXPECT_EQ(ke["verdict"], "FAIL") << ke.dump();
                EXPECT_NEAR(ke["metrics"]["rel_l2"].get<double>(), q, 0.25 * q) << ke.dump();
            }
        }
    }
}

// prologue=rms_norm / swiglu and bias (the fp8 decoder's projections as its native_fused step
// runs them): the bf16 point computes the prologue with libtorch's ops and passes against the
// float64 reference of the prologue's product; the bytes count the prologue's reads and the
// bias; the native variants are skips here, and RMSNorm with a bias is one everywhere (the fused
// kernels take none).
TEST(fp8_linear, a_prologue_and_a_bias_are_computed_in_the_reference_and_counted) {
    for (const char* pro : {"rms_norm", "swiglu"}) {
        const bool norm = std::string(pro) == "rms_norm";
        const json params{{"tokens", 2}, {"n", 96}, {"k", 256}, {"prologue", pro}, {"bias", !norm}};
        const auto recs = expect_pass_or_reasoned_skip(
            {{"fp8_linear", params, dtype::bf16, {"bf16", "dequant_row", "native_fp8_row"}, ""}},
            1);
        const auto* bf16 = find(recs, "bf16");
        ASSERT_NE(bf16, nullptr) << pro;
        ASSERT_EQ(bf16->status, record_status::ok) << pro << ": " << bf16->reason;
        EXPECT_NE(bf16->figures["facts"]["prologue_path"].get<std::string>().find(norm ? "rsqrt"
                                                                                       : "silu"),
                  std::string::npos)
            << bf16->figures["facts"].dump();
        EXPECT_EQ(bf16->figures["facts"].contains("bias_path"), !norm) << pro;
        const auto* native = find(recs, "native_fp8_row");
        ASSERT_NE(native, nullptr) << pro;
        EXPECT_EQ(native->status, record_status::skipped) << pro;

        const auto c = case_of("fp8_linear", params, dtype::bf16);
        // x [2, K or 2K] bf16, W 96 x 256 bf16, the norm's weight or the bias
        const double x = 2.0 * 256 * 2 * (norm ? 1 : 2), w = 96.0 * 256 * 2;
        EXPECT_DOUBLE_EQ(c->variant_cost("bf16").bytes_read, x + w + (norm ? 256 * 2 : 96 * 2))
            << pro;
        EXPECT_DOUBLE_EQ(c->variant_cost("native_fp8_row").bytes_read,
                         x + w / 2 + 96 * 4 + (norm ? 256 * 2 : 96 * 2))
            << pro;
        const auto in = c->make_inputs(3);
        EXPECT_EQ(in["x"].size(1), norm ? 256 : 512) << pro;
        // the reference is the prologue's product: a plain x @ W^T is far from it
        const auto ref = c->reference(in).chunk(0).values;
        const auto plain = at::linear(in["x"].narrow(1, 0, 256).to(at::kDouble),
                                      in["weight"].narrow(0, 0, ref.size(1)).to(at::kDouble));
        EXPECT_GT((ref - plain).norm().item<double>(), 0.1 * ref.norm().item<double>()) << pro;
    }
    auto dev = cpu();
    const auto r = run_jobs(
        *dev,
        {{"fp8_linear",
          json{{"tokens", 1}, {"n", 64}, {"k", 256}, {"prologue", "rms_norm"}, {"bias", true}},
          dtype::bf16,
          {"bf16", "native_bf16", "native_fp8_row"},
          ""}},
        "correctness");
    EXPECT_EQ(r.summary.exit_code(), 0);
    for (const auto& rec : r.records)
        if (rec.job.variant != "bf16") {
            EXPECT_EQ(rec.status, record_status::skipped) << rec.job.variant;
            EXPECT_FALSE(rec.reason.empty()) << rec.job.variant;
        }
}

TEST(fp8_linear, storage_and_bytes_moved_follow_the_variant) {
    const auto c =
        case_of("fp8_linear", json{{"tokens", 16}, {"n", 1024}, {"k", 1024}}, dtype::bf16);
    // bf16: x 16x1024x2 + W 1024x1024x2 read, y 16x1024x2 written
    EXPECT_DOUBLE_EQ(c->variant_cost("bf16").bytes_read, 16.0 * 1024 * 2 + 1024.0 * 1024 * 2);
    EXPECT_DOUBLE_EQ(c->variant_cost("bf16").bytes_written, 16.0 * 1024 * 2);
    // fp8 per row: W 1 byte per value plus 1024 fp32 scales
    EXPECT_DOUBLE_EQ(c->variant_cost("dequant_row").bytes_read,
                     16.0 * 1024 * 2 + 1024.0 * 1024 + 4096);
    EXPECT_DOUBLE_EQ(c->variant_cost("scaled_mm_tensor").bytes_read,
                     16.0 * 1024 * 2 + 1024.0 * 1024 + 4);
    EXPECT_EQ(c->variant_facts("bf16")["weight_storage_bytes"], 2 * 1024 * 1024);
    EXPECT_EQ(c->variant_facts("scaled_mm_row")["weight_storage_bytes"], 1024 * 1024 + 4 * 1024);
    EXPECT_EQ(c->variant_facts("dequant_tensor")["weight_storage_bytes"], 1024 * 1024 + 4);
}
