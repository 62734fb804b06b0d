// GPU tests (ctest label gpu) of fourfold's native kernels through fourfold's own ledgers:
// every native variant against the float64 CPU reference at edge sizes and in every dtype,
// special values and offset views against stock, graph capture, the configuration in the
// records' facts, memory beyond the output, and the stream a variant is handed. Each test skips
// when no CUDA device is visible or the build has no native kernels.
#include "env_switch.hpp"
#include "fourfold/backend/device.hpp"
#include "fourfold/runner/plan.hpp"
#include "fourfold/workloads/models/captured_step.hpp"
#include "fourfold/workloads/workload.hpp"
#include "runner_helpers.hpp"
#include "test_variants.hpp"

#include <ATen/ATen.h>
#include <cstdlib>
#include <gtest/gtest.h>
#include <iostream>
#include <limits>
#if FOURFOLD_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

using namespace fourfold;
using namespace fourfold::testing;

namespace {

std::unique_ptr<backend::device> gpu() {
    if (!FOURFOLD_WITH_KERNELS || backend::cuda_device_count() == 0)
        return nullptr;
    return backend::open_device({backend::device_kind::cuda, 0});
}

#define REQUIRE_NATIVE(dev)                                                                        \
    auto dev = gpu();                                                                              \
    if (!dev)                                                                                      \
    GTEST_SKIP() << "no CUDA device visible, or a build without native kernels"

const std::vector<dtype> k_types{dtype::fp32, dtype::bf16, dtype::fp16};

// FOURFOLD_NATIVE_TEST_SIZES=small (the sanitizer stage) keeps the cases of at most 4 Mi
// elements: compute-sanitizer slows every kernel and API call by one to two orders.
bool small_only() {
    const char* v = std::getenv("FOURFOLD_NATIVE_TEST_SIZES");
    return v && std::string(v) == "small";
}
bool too_big(std::int64_t elements) {
    return small_only() && elements > (std::int64_t{1} << 22);
}

// run_jobs, but under the sanitizer without the copy-bandwidth measurement (21 copies of 1 GiB,
// each instrumented): % of bandwidth is not what these tests look at.
quick_run run_native(backend::device& dev, const std::vector<runner::job_spec>& specs,
                     const std::string& ledgers) {
    if (!small_only())
        return run_jobs(dev, specs, ledgers);
    auto s = quick_settings(ledgers);
    s.timing = measure::timing_settings::defaults_for(dev.caps());
    s.timing.stop.min_time_s = 0.02;
    s.timing.stop.timeout_s = 0.3;
    s.timing.warmup_s = 0.005;
    const auto plan = runner::make_plan(specs, s, dev);
    runner::memory_sink sink;
    runner::run_context ctx{dev, backend::bandwidth_figure{1e12, 0, "not measured (sanitizer run)"},
                            sink};
    quick_run out;
    out.summary = runner::execute(plan, ctx);
    out.records = sink.records;
    return out;
}

// Runs stock and native through the correctness ledger; both must PASS, native under the same
// tolerance as stock, and its record must carry the kernel's configuration.
void expect_native_passes(backend::device& dev, const std::string& workload, const json& params,
                          dtype t) {
    const auto r = run_native(dev, {{workload, params, t, {"stock", "native"}, ""}}, "correctness");
    const auto* stock = find_record(r, ledger::correctness, "stock");
    const auto* native = find_record(r, ledger::correctness, "native");
    const auto what = workload + " " + params.dump() + " " + std::string(to_string(t));
    ASSERT_TRUE(stock && native) << what;
    ASSERT_EQ(native->status, record_status::ok) << what << ": " << native->reason;
    if (stock->figures["verdict"] == "FAIL") {
        // the output dtype cannot hold the answer (fp16 softmax over 2^20 columns: every
        // probability is a subnormal, quantised in steps of 2^-24): native must be no worse
        const double s = stock->figures["metrics"]["rel_l2"].get<double>();
        const double n = native->figures["metrics"]["rel_l2"].get<double>();
        std::cout << what << ": stock FAILs too (relative L2 " << s << "); native " << n << '\n';
        EXPECT_LE(n, 1.1 * s) << what;
    } else {
        EXPECT_EQ(native->figures["verdict"], "PASS")
            << what << " " << native->figures["failed_checks"].dump() << " "
            << native->figures["metrics"].dump() << " " << native->figures["worst"].dump();
    }
    EXPECT_EQ(native->figures["tolerance"], stock->figures["tolerance"]) << what;
    ASSERT_TRUE(native->figures.contains("facts")) << what;
    EXPECT_FALSE(native->figures["facts"]["kernel"]["path"].get<std::string>().empty()) << what;
}

// The case of a job, for calling variants on inputs a test makes itself.
struct direct_case {
    runner::plan plan;
    const runner::job_group& group() const { return plan.groups.at(0); }
    at::Tensor call(backend::device& dev, const std::string& variant,
                    const workloads::input_set& in, json* facts = nullptr) const {
        const workloads::call_context ctx(dev, facts);
        auto out = group().w->run(variant, *group().c, ctx, in);
        dev.synchronize();
        return out.to(at::kCPU);
    }
};

direct_case make_case(backend::device& dev, const std::string& workload, const json& params,
                      dtype t) {
    runner::run_settings s;
    return {runner::make_plan({{workload, params, t, {"stock", "native"}, ""}}, s, dev)};
}

// Same NaN positions, same infinities, finite values within `tol` of each other (relative to
// the largest magnitude).
void expect_same_values(const at::Tensor& a, const at::Tensor& b, double tol,
                        const std::string& what) {
    const auto x = a.to(at::kDouble), y = b.to(at::kDouble);
    EXPECT_TRUE(at::equal(at::isnan(x), at::isnan(y))) << what << ": NaN positions differ";
    EXPECT_TRUE(at::equal(at::isinf(x), at::isinf(y))) << what << ": Inf positions differ";
    const auto finite = at::isfinite(x).logical_and(at::isfinite(y));
    if (finite.any().item<bool>()) {
        const auto diff = (x - y).abs().masked_select(finite).max().item<double>();
        const auto scale = x.abs().masked_select(finite).max().item<double>();
        EXPECT_LE(diff, tol * std::max(scale, 1e-30)) << what;
    }
}

double tol_of(dtype t) {
    return t == dtype::fp32 ? 1e-5 : 1e-2;
}

} // namespace

TEST(native, softmax_matches_the_float64_reference_at_edge_sizes) {
    REQUIRE_NATIVE(dev);
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes{
        {1, 1},      {1, 2},      {3, 7},       {1, 31},      {5, 1000},
        {7, 1025},   {1, 128256}, {64, 128256}, {13, 151936}, {1, 1 << 20},
        {2, 262144}, {4096, 8},   {4096, 257},  {1000, 32000}};
    for (const auto t : k_types)
        for (const auto& [rows, vocab] : shapes)
            if (!too_big(rows * vocab))
                expect_native_passes(*dev, "softmax", json{{"rows", rows}, {"vocab", vocab}}, t);
}

TEST(native, softmax_special_values_match_what_stock_does) {
    REQUIRE_NATIVE(dev);
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const auto t : k_types)
        for (const std::int64_t vocab :
             {std::int64_t{7}, std::int64_t{4096}, std::int64_t{128256}}) {
            if (too_big(6 * vocab * 32))
                continue;
            const auto dc = make_case(*dev, "softmax", json{{"rows", 6}, {"vocab", vocab}}, t);
            auto x = at::randn({6, vocab}, at::TensorOptions().dtype(at::kDouble)) * 2;
            x[0].fill_(-inf);                               // a row of -inf
            x[1][vocab / 2] = nan;                          // one NaN
            x[2][vocab - 1] = inf;                          // one +inf
            x[3].narrow(0, 0, (vocab + 1) / 2).fill_(-inf); // half masked
            x[4].fill_(3.0);                                // all equal
            x[5][0] = 1e4;                                  // one dominant logit
            const auto typed = x.to(dc.group().c->args().type == dtype::fp32   ? at::kFloat
                                    : dc.group().c->args().type == dtype::bf16 ? at::kBFloat16
                                                                               : at::kHalf);
            workloads::input_set in;
            in.add("logits", typed.to(dev->torch_device()));
            const auto stock = dc.call(*dev, "stock", in);
            const auto native = dc.call(*dev, "native", in);
            const auto what = "softmax " + std::to_string(vocab) + " " + std::string(to_string(t));
            expect_same_values(native, stock, tol_of(t), what);
            if (t == dtype::fp32 && vocab == 4096)
                std::cout << "stock softmax of a row of -inf gives " << stock[0][0].item<float>()
                          << "; of a row with one NaN " << stock[1][0].item<float>()
                          << "; of a row with one +inf " << stock[2][0].item<float>() << '\n';
        }
}

// The cooperative grid path's per-row barriers live in the kernel's module and reset
// themselves: launches of different row counts one after another, then one captured launch
// replayed over new logits, each against stock on the same input.
TEST(native, softmax_grid_path_barriers_reset_over_launches_and_graph_replays) {
    REQUIRE_NATIVE(dev);
    const std::int64_t vocab = 1 << 20; // longer than a cluster's registers hold
    for (const std::int64_t rows : {1, 6, 3, 1, 2, 8, 1}) {
        const auto dc =
            make_case(*dev, "softmax", json{{"rows", rows}, {"vocab", vocab}}, dtype::fp32);
        workloads::input_set in;
        in.add("logits",
               at::randn({rows, vocab}, at::TensorOptions().device(dev->torch_device())) * 2);
        json facts;
        const auto native = dc.call(*dev, "native", in, &facts);
        const auto stock = dc.call(*dev, "stock", in);
        const auto path = facts["kernel"]["path"].get<std::string>();
        expect_same_values(native, stock, tol_of(dtype::fp32),
                           "softmax rows " + std::to_string(rows) + ", " + path);
        if (rows < 8) {
            EXPECT_NE(path.find("cooperative grid"), std::string::npos) << path;
        }
    }
    if (!dev->caps().graphs)
        GTEST_SKIP() << "no graph capture on this device";
    const auto dc = make_case(*dev, "softmax", json{{"rows", 1}, {"vocab", vocab}}, dtype::fp32);
    auto logits = at::randn({1, vocab}, at::TensorOptions().device(dev->torch_device()));
    workloads::input_set in;
    in.add("logits", logits);
    const workloads::call_context ctx(*dev, nullptr);
    at::Tensor out;
    workloads::models::captured_step step;
    step.capture(*dev, [&] { out = dc.group().w->run("native", *dc.group().c, ctx, in); });
    ASSERT_TRUE(step.captured());
    for (int replay = 0; replay < 20; ++replay) {
        logits.copy_(at::randn({1, vocab}, logits.options()) * (1 + replay % 4));
        step.run([] { FAIL() << "not captured"; });
        dev->synchronize();
        const auto stock = at::softmax(logits, -1);
        expect_same_values(out.to(at::kCPU), stock.to(at::kCPU), tol_of(dtype::fp32),
                           "replay " + std::to_string(replay));
    }
}

TEST(native, softmax_of_an_offset_view_takes_the_scalar_path_and_agrees_with_stock) {
    REQUIRE_NATIVE(dev);
    for (const auto t : k_types) {
        const std::int64_t vocab = 128256;
        const auto dc = make_case(*dev, "softmax", json{{"rows", 3}, {"vocab", vocab}}, t);
        const auto type = t == dtype::fp32   ? at::kFloat
                          : t == dtype::bf16 ? at::kBFloat16
                                             : at::kHalf;
        const auto big =
            at::randn({3, vocab + 1}, at::TensorOptions().dtype(type).device(dev->torch_device()));
        workloads::input_set in;
        in.add("logits", big.narrow(1, 1, vocab)); // row stride vocab + 1, first element misaligned
        json facts;
        const auto native = dc.call(*dev, "native", in, &facts);
        const auto stock = dc.call(*dev, "stock", in);
        expect_same_values(native, stock, tol_of(t), "softmax offset view");
        EXPECT_NE(facts["kernel"]["path"].get<std::string>().find("scalar"), std::string::npos)
            << facts.dump();
    }
}

TEST(native, gemv_matches_the_float64_reference_at_edge_sizes) {
    REQUIRE_NATIVE(dev);
    struct shape {
        std::int64_t t, n, k;
    };
    const std::vector<shape> shapes{{1, 1, 1},
                                    {1, 1, 4096},
                                    {1, 4096, 1},
                                    {3, 5, 7},
                                    {1, 8, 4096},
                                    {1, 768, 2048},
                                    {2, 1024, 4095},
                                    {8, 1000, 1000},
                                    {1, 4096, 4096},
                                    {4, 14336, 4096},
                                    {8, 2048, 768},
                                    {1, 151936, 1024},
                                    // rows balanced over a block's warps, cut between runs:
                                    // 2 steps a row, the last one nearly empty; 3 steps; fp32
                                    // several tokens on the FMA path
                                    {1, 2113, 1032},
                                    {1, 3001, 3000},
                                    {3, 1100, 1024},
                                    // one token, balanced: K past whole 2 KB steps by 16 bytes
                                    // (bf16) or 32 (fp32), rows cut at every block's end
                                    {1, 4099, 4104},
                                    // the same with 11 or 12 rows a block of the H200's wave
                                    {1, 6144, 4104}};
    for (const auto t : k_types)
        for (const auto& s : shapes)
            for (const bool bias : {false, true})
                if (!too_big(s.n * s.k))
                    expect_native_passes(
                        *dev, "linear_decode",
                        json{{"tokens", s.t}, {"n", s.n}, {"k", s.k}, {"bias", bias}}, t);
}

// A prologue fused into the GEMV (prologue=rms_norm, swiglu): PASS against the prologue then the
// linear in float64 with stock's tolerance where the balanced path takes it (one token from 4
// rows a block of the wave, 2 or more tokens off the tensor-core path: K not a multiple of 32),
// a skip with its reason where it does not.
TEST(native, gemv_with_a_fused_prologue_matches_the_float64_reference) {
    REQUIRE_NATIVE(dev);
    const std::int64_t wave = 4 * dev->caps().compute_units; // one token's resident blocks
    for (const char* pro : {"rms_norm", "swiglu"})
        for (const auto t : k_types) {
            const std::int64_t k = t == dtype::fp32 ? 520 : 1032;
            for (const auto& [tokens, n] : std::vector<std::pair<std::int64_t, std::int64_t>>{
                     {1, 4 * wave},
                     {1, 4 * wave + 13},
                     {3, 2 * wave + 7},
                     // 23 or 24 rows a block of the H200's wave
                     {1, 12288}}) {
                if (too_big(n * k))
                    continue;
                expect_native_passes(
                    *dev, "linear_decode",
                    json{{"tokens", tokens}, {"n", n}, {"k", k}, {"prologue", pro}}, t);
            }
        }
    // with the bias a down projection takes (the residual)
    expect_native_passes(
        *dev, "linear_decode",
        json{{"tokens", 1}, {"n", 4 * wave}, {"k", 1032}, {"bias", true}, {"prologue", "swiglu"}},
        dtype::bf16);
    const auto r =
        run_native(*dev,
                   {{"linear_decode",
                     json{{"tokens", 1}, {"n", 768}, {"k", 2048}, {"prologue", "rms_norm"}},
                     dtype::bf16,
                     {"stock", "native"},
                     ""}},
                   "correctness");
    const auto* native = find_record(r, ledger::correctness, "native");
    ASSERT_TRUE(native);
    EXPECT_EQ(native->status, record_status::skipped);
    EXPECT_NE(native->reason.find("balanced path"), std::string::npos) << native->reason;
}

TEST(native, gemv_of_offset_views_takes_the_scalar_path_and_agrees_with_stock) {
    REQUIRE_NATIVE(dev);
    for (const auto t : k_types) {
        const std::int64_t n = 300, k = 4096;
        const auto dc = make_case(*dev, "linear_decode",
                                  json{{"tokens", 2}, {"n", n}, {"k", k}, {"bias", true}}, t);
        const auto type = t == dtype::fp32   ? at::kFloat
                          : t == dtype::bf16 ? at::kBFloat16
                                             : at::kHalf;
        const auto o = at::TensorOptions().dtype(type).device(dev->torch_device());
        const auto wide = at::randn({n, k + 1}, o).narrow(1, 1, k); // misaligned rows
        workloads::input_set in;
        in.add("x", at::randn({2, k + 3}, o).narrow(1, 3, k))
            .add("weight", wide)
            .add("bias", at::randn({n + 1}, o).narrow(0, 1, n));
        json facts;
        const auto native = dc.call(*dev, "native", in, &facts);
        const auto stock = dc.call(*dev, "stock", in);
        expect_same_values(native, stock, t == dtype::fp32 ? 1e-4 : 2e-2, "gemv offset view");
        EXPECT_FALSE(facts["kernel"]["vectorised"].get<bool>()) << facts.dump();
    }
}

TEST(native, pad_matches_the_float64_reference_at_edge_sizes) {
    REQUIRE_NATIVE(dev);
    struct shape {
        std::int64_t c, f, h, w, pt, ps;
    };
    // fp32 twice: at the plan's choice (the register path up to 4 rounds of loads a warp, the
    // staged one past it) and staged wherever the rows allow (FOURFOLD_PAD_STAGED=1): staged,
    // 96x5x130x130 takes 3 tiles a plane, input rows at every 4-byte offset; 7000-wide rows a
    // tile each; 20000-wide rows (40 KB in bf16) the register path either way
    const std::vector<shape> shapes{
        {1, 1, 1, 1, 0, 0},      {1, 1, 1, 1, 2, 1},     {3, 2, 5, 7, 1, 1},
        {96, 5, 130, 130, 2, 1}, {384, 3, 32, 32, 2, 1}, {5, 4, 9, 16, 0, 3},
        {2, 3, 1, 1000, 2, 8},   {17, 1, 33, 15, 4, 0},  {2, 1, 3, 7000, 1, 2},
        {1, 1, 2, 20000, 1, 1},  {3, 2, 200, 67, 1, 0}};
    for (const auto t : k_types)
        for (const bool staged : {false, true}) {
            if (staged && t != dtype::fp32)
                continue; // 2-byte pads never stage
            const fourfold::testing::env_switch stage("FOURFOLD_PAD_STAGED");
            if (staged)
                stage.set("1");
            for (const auto& s : shapes)
                if (!too_big(s.c * (s.f + s.pt) * (s.h + 2 * s.ps) * (s.w + 2 * s.ps)))
                    expect_native_passes(*dev, "pad",
                                         json{{"channels", s.c},
                                              {"frames", s.f},
                                              {"height", s.h},
                                              {"width", s.w},
                                              {"pad_time", s.pt},
                                              {"pad_space", s.ps}},
                                         t);
        }
}

TEST(native, pad_of_offset_and_strided_views_agrees_with_stock) {
    REQUIRE_NATIVE(dev);
    for (const auto t : k_types) {
        const json params{{"channels", 6}, {"frames", 3}, {"height", 20}, {"width", 21}};
        const auto dc = make_case(*dev, "pad", params, t);
        const auto type = t == dtype::fp32   ? at::kFloat
                          : t == dtype::bf16 ? at::kBFloat16
                                             : at::kHalf;
        const auto o = at::TensorOptions().dtype(type).device(dev->torch_device());
        const auto offset = at::randn({1, 6, 3, 20, 22}, o).narrow(4, 1, 21); // odd offset
        const auto strided = at::randn({1, 6, 3, 21, 20}, o).transpose(3, 4); // last stride 20
        // contiguous rows at a one-element offset (one copy a tile, its ends element by element)
        const auto shifted = at::randn({6 * 3 * 20 * 21 + 1}, o).narrow(0, 1, 6 * 3 * 20 * 21);
        // rows copied alone over several tiles a plane (300 rows of 300, 302 apart)
        const auto wide = at::randn({1, 2, 3, 300, 302}, o).narrow(4, 1, 300);
        // fewer than 5 dimensions: the pads of the last three
        const auto three = at::randn({3, 20, 21}, o);
        const auto four = at::randn({6, 3, 20, 21}, o).narrow(3, 0, 20);
        for (const auto& x :
             {offset, strided, shifted.view({1, 6, 3, 20, 21}), wide, three, four}) {
            workloads::input_set in;
            in.add("x", x);
            const auto native = dc.call(*dev, "native", in);
            const auto stock = dc.call(*dev, "stock", in);
            EXPECT_TRUE(at::equal(native, stock)) << "pad of a view, " << to_string(t);
        }
        // strided rows whose output rows take wide stores, each its own units a lane: 24 wide
        // (16-byte units of every dtype) and 20 wide (8-byte units of 2-byte elements, 16-byte
        // ones of fp32)
        for (const std::int64_t w : {22, 18}) {
            const auto wc = make_case(
                *dev, "pad", json{{"channels", 6}, {"frames", 3}, {"height", 20}, {"width", w}}, t);
            workloads::input_set in;
            in.add("x", at::randn({1, 6, 3, w, 20}, o).transpose(3, 4));
            EXPECT_TRUE(at::equal(wc.call(*dev, "native", in), wc.call(*dev, "stock", in)))
                << "pad of a strided view, width " << w << ", " << to_string(t);
        }
    }
}

TEST(native, kernels_are_graph_captured_and_record_their_configuration) {
    REQUIRE_NATIVE(dev);
    const auto r = run_native(
        *dev,
        {{"softmax", json{{"rows", 1}, {"vocab", 128256}}, dtype::fp32, {"stock", "native"}, ""},
         {"linear_decode",
          json{{"n", 768}, {"k", 2048}, {"bias", true}},
          dtype::bf16,
          {"stock", "native"},
          ""},
         {"pad",
          json{{"channels", 96}, {"frames", 5}, {"height", 130}, {"width", 130}},
          dtype::bf16,
          {"stock", "native"},
          ""}},
        "op_time,correctness");
    int native_timed = 0;
    for (const auto& rec : r.records) {
        ASSERT_EQ(rec.status, record_status::ok)
            << rec.job.workload << " " << rec.job.variant << ": " << rec.reason;
        if (rec.job.variant != "native")
            continue;
        EXPECT_TRUE(rec.figures["facts"].contains("kernel")) << rec.figures.dump();
        if (rec.which == ledger::op_time) {
            ++native_timed;
            EXPECT_EQ(rec.figures["mode"], "graph");
            std::cout << rec.job.workload << " native: median " << rec.figures["stats"]["median"]
                      << " us, " << rec.figures["facts"]["kernel"]["path"] << '\n';
        }
    }
    EXPECT_EQ(native_timed, 3);
}

TEST(native, memory_shows_no_allocation_beyond_the_output) {
    REQUIRE_NATIVE(dev);
    struct job {
        std::string workload;
        json params;
        dtype t;
        std::int64_t out_bytes;
    };
    const std::vector<job> jobs{
        {"softmax", json{{"rows", 8}, {"vocab", 128256}}, dtype::fp32, 8ll * 128256 * 4},
        {"linear_decode", json{{"tokens", 4}, {"n", 4096}, {"k", 4096}, {"bias", true}},
         dtype::bf16, 4ll * 4096 * 2},
        {"pad", json{{"channels", 96}, {"frames", 5}, {"height", 130}, {"width", 130}}, dtype::bf16,
         96ll * 7 * 132 * 132 * 2}};
    for (const auto& j : jobs) {
        const auto r = run_jobs(*dev, {{j.workload, j.params, j.t, {"native"}, ""}}, "memory");
        const auto* m = find_record(r, ledger::memory, "native");
        ASSERT_TRUE(m);
        ASSERT_EQ(m->status, record_status::ok) << m->reason;
        const auto extra = m->figures["delta_peak_bytes"]["allocated"].get<std::int64_t>();
        const auto rounded = (j.out_bytes + 511) / 512 * 512; // the caching allocator's granule
        EXPECT_LE(extra, rounded) << j.workload << ": " << extra
                                  << " B allocated over the baseline";
        std::cout << j.workload << " native: " << extra
                  << " B allocated above the baseline, output " << j.out_bytes << " B\n";
    }
}

TEST(native, the_scale_kernel_proves_the_path_and_a_wrong_scale_fails) {
    REQUIRE_NATIVE(dev);
    const auto r = run_native(*dev,
                              {{"softmax",
                                json{{"rows", 4}, {"vocab", 4096}},
                                dtype::fp32,
                                {"stock", "native_scale", "native_scale_off"},
                                ""}},
                              "correctness,op_time");
    const auto* ok = find_record(r, ledger::correctness, "native_scale");
    const auto* off = find_record(r, ledger::correctness, "native_scale_off");
    ASSERT_TRUE(ok && off);
    ASSERT_EQ(ok->status, record_status::ok) << ok->reason;
    EXPECT_EQ(ok->figures["verdict"], "PASS");
    EXPECT_EQ(off->figures["verdict"], "FAIL");
    const auto* timed = find_record(r, ledger::op_time, "native_scale");
    ASSERT_TRUE(timed);
    EXPECT_EQ(timed->figures["mode"], "graph"); // captured: the kernel went on the capture stream
}

namespace {

// A test workload whose variant records the stream it was handed and the stream libtorch
// calls current at that moment.
struct stream_seen {
    void* handed;
    void* current;
};
std::vector<stream_seen> g_streams;

class stream_probe_case final : public workloads::workload_case {
  public:
    using workload_case::workload_case;
    workloads::cost declared_cost() const override { return {4096, 4096, 0, "x * 1"}; }
    workloads::input_set make_inputs(std::uint64_t seed) const override {
        return workloads::input_set().add("x",
                                          at::randn({1024}, at::TensorOptions().dtype(at::kFloat)));
    }
    workloads::reference_plan reference(const workloads::input_set& in) const override {
        const auto x = in["x"];
        return workloads::chunked_reference(0, 1024, 8, "x", [x](std::int64_t s, std::int64_t l) {
            return x.narrow(0, s, l).to(at::kDouble);
        });
    }
    at::Tensor probe(const workloads::call_context& ctx, const workloads::input_set& in) const {
#if FOURFOLD_WITH_CUDA
        g_streams.push_back({ctx.stream(), at::cuda::getCurrentCUDAStream().stream()});
#endif
        return in["x"] * 1;
    }
};

FOURFOLD_WORKLOAD(stream_probe_case, "stream_probe")
    .describe("tests only: records the stream each call is handed")
    .dtypes({dtype::fp32})
    .variant("stock", &stream_probe_case::probe, "x * 1, noting the stream");

} // namespace

TEST(native, a_variant_is_handed_the_stream_it_runs_on_also_while_captured) {
    REQUIRE_NATIVE(dev);
    g_streams.clear();
    const auto r = run_jobs(*dev, {{"stream_probe", json::object(), dtype::fp32, {"stock"}, ""}},
                            "correctness,op_time");
    ASSERT_FALSE(g_streams.empty());
    bool captured_elsewhere = false;
    for (const auto& s : g_streams) {
        EXPECT_EQ(s.handed, s.current);
        captured_elsewhere |= s.handed != g_streams.front().handed;
    }
    // the correctness call ran on the device's stream, the captured ones on the capture stream
    EXPECT_TRUE(captured_elsewhere);
    EXPECT_EQ(find_record(r, ledger::op_time, "stock")->figures["mode"], "graph");
}
