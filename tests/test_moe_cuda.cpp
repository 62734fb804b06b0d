// GPU tests (ctest label gpu) of the native MoE decode step (kernels/moe.cu through
// model_ops::moe_ffn and grouped_linear): against a float64 reference over seeds, token counts
// 1..8 (and a prefill's 13, taken 8 at a time) and dtypes; against the stock grouped_mm path;
// ties in the routing; run-to-run bitwise determinism; the moe_decode workload's native variant
// through the ledgers (graph-captured op_time, correctness PASS, the plan in its facts); the
// decoder's MoE layers on the native path, eager and captured. Each test skips without a CUDA
// device or in a build without native kernels.
#include "env_switch.hpp"
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/model_ops/moe.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "fourfold/workloads/workload.hpp"
#include "graph_timing.hpp"
#include "runner_helpers.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <gtest/gtest.h>
#include <iostream>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/moe.hpp"
#include "fourfold/kernels/rmsnorm.hpp"
#include "fourfold/workloads/model_ops/linear.hpp"
#include "fourfold/workloads/native.hpp"
#endif

using namespace fourfold;
using namespace fourfold::testing;
using fourfold::workloads::call_context;
using fourfold::workloads::model_ops::moe_path;
namespace mo = fourfold::workloads::model_ops;

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

struct shape {
    std::int64_t experts, top_k, hidden, width;
};
const shape k_qwen3{128, 8, 2048, 768}; // Qwen3-30B-A3B
const shape k_small{16, 4, 256, 128};
const shape k_tiny{8, 2, 64, 32}; // the tiny-qwen3-moe preset
// more output columns than the one launch has warps (4096 > 2112), and down rows of 125 vectors:
// a warp takes two columns, and a stage chunk of 768 vectors ends inside an expert's row
const shape k_wide{12, 8, 4096, 1000};
// more than 128 experts: the routing warp's 8 logits a lane (7 live), and past 256 its 16 (10 live)
const shape k_many{200, 6, 128, 64};
const shape k_most{320, 8, 128, 64};

// Expert weights on the CPU (kept for the reference) and on the device.
struct experts {
    at::Tensor gate_up_cpu, down_cpu, gate_up, down;
    // expert e's matrices in float64, converted once (the reference's cost on the qwen3 shape)
    mutable std::map<std::int64_t, std::pair<at::Tensor, at::Tensor>> in_double;
    const std::pair<at::Tensor, at::Tensor>& f64(std::int64_t e) const {
        auto it = in_double.find(e);
        if (it == in_double.end())
            it = in_double
                     .emplace(e, std::make_pair(gate_up_cpu[e].to(at::kDouble),
                                                down_cpu[e].to(at::kDouble)))
                     .first;
        return it->second;
    }
};
experts make_experts(const shape& s, c10::ScalarType type, std::uint64_t seed, c10::Device dev) {
    using namespace fourfold::workloads;
    const double gb = 1.0 / std::sqrt(static_cast<double>(s.hidden));
    const double db = 1.0 / std::sqrt(static_cast<double>(s.width));
    experts e;
    e.gate_up_cpu = seeded_uniform({s.experts, 2 * s.width, s.hidden}, seed * 3 + 1, -gb, gb, type);
    e.down_cpu = seeded_uniform({s.experts, s.hidden, s.width}, seed * 3 + 2, -db, db, type);
    e.gate_up = e.gate_up_cpu.to(dev);
    e.down = e.down_cpu.to(dev);
    return e;
}

// Router logits with a random ranking per token and gaps of at least 3/E between any two: the
// same top-k in fp32 and float64 (and in bf16: 2^-6 apart at most at |l| < 4).
at::Tensor ranked_logits(std::int64_t tokens, std::int64_t experts, std::uint64_t seed) {
    auto t = at::empty({tokens, experts}, at::TensorOptions().dtype(at::kFloat));
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> jitter(0.0, 0.5);
    std::vector<std::int64_t> rank(static_cast<std::size_t>(experts));
    for (std::int64_t i = 0; i < tokens; ++i) {
        std::iota(rank.begin(), rank.end(), 0);
        std::shuffle(rank.begin(), rank.end(), rng);
        for (std::int64_t e = 0; e < experts; ++e)
            t[i][e] = (static_cast<double>(rank[static_cast<std::size_t>(e)]) + jitter(rng)) *
                          (6.0 / static_cast<double>(experts)) -
                      3.0;
    }
    return t;
}

// The block in float64 on the CPU, token by token, for the given choice and weights (T, k).
at::Tensor reference_with(const at::Tensor& x, const experts& w, const at::Tensor& chosen,
                          const at::Tensor& weights) {
    const auto xd = x.cpu().to(at::kDouble);
    const auto width = w.down_cpu.size(2);
    auto out = at::zeros({x.size(0), x.size(1)}, xd.options());
    for (std::int64_t t = 0; t < x.size(0); ++t)
        for (std::int64_t s = 0; s < chosen.size(1); ++s) {
            const auto e = chosen[t][s].item<std::int64_t>();
            const auto& [gate_up, down] = w.f64(e);
            const auto gu = at::mv(gate_up, xd[t]);
            const auto h = at::silu(gu.narrow(0, 0, width)) * gu.narrow(0, width, width);
            out[t] += weights[t][s].item<double>() * at::mv(down, h);
        }
    return out;
}

// Softmax, top-k, renormalised, all in float64 (the logits as the kernel sees them).
at::Tensor reference(const at::Tensor& x, const at::Tensor& logits, const experts& w,
                     std::int64_t top_k) {
    const auto probs = at::softmax(logits.cpu().to(at::kDouble), -1);
    const auto top = at::topk(probs, top_k, -1);
    const auto v = std::get<0>(top);
    return reference_with(x, w, std::get<1>(top), v / v.sum(-1, true));
}

// The largest error relative to the reference's RMS.
double error_ratio(const at::Tensor& got, const at::Tensor& ref) {
    const auto g = got.cpu().to(at::kDouble);
    return (g - ref).abs().max().item<double>() / ref.pow(2).mean().sqrt().item<double>();
}

double bound_of(c10::ScalarType t) {
    // bf16: the intermediate and the output each rounded once (2^-9 relative each), against
    // errors measured ~0.5 % of the RMS; fp32: fp32 accumulation over 2048 terms
    return t == at::kBFloat16 ? 2e-2 : t == at::kHalf ? 4e-3 : 1e-4;
}

at::Tensor run_native(backend::device& dev, const at::Tensor& x, const at::Tensor& logits,
                      const experts& w, std::int64_t top_k) {
    call_context ctx(dev);
    return mo::moe_ffn(x, logits, w.gate_up, w.down, top_k, true, moe_path::native, &ctx);
}

// The shapes of a test: FOURFOLD_NATIVE_TEST_SIZES=small (the sanitizer stages, where every
// kernel runs one to two orders slower) keeps the small one alone.
std::vector<shape> shapes_of(std::initializer_list<shape> all) {
    const char* v = std::getenv("FOURFOLD_NATIVE_TEST_SIZES");
    if (v && std::string(v) == "small")
        return {k_small};
    return all;
}

#if FOURFOLD_WITH_KERNELS
// kernels::moe_args for x (T x H) on shape s with the experts w, its dtype for the logits too;
// the caller gives the logits or the fused prologue, y and the workspace.
kernels::moe_args step_args(const at::Tensor& x, const experts& w, const shape& s) {
    kernels::moe_args a;
    a.x = x.data_ptr();
    a.w_gate_up = w.gate_up.data_ptr();
    a.w_down = w.down.data_ptr();
    a.tokens = x.size(0);
    a.experts = s.experts;
    a.top_k = s.top_k;
    a.hidden = s.hidden;
    a.width = s.width;
    a.ld_x = a.ld_y = s.hidden;
    a.ld_logits = s.experts;
    a.type = a.logits_type =
        x.scalar_type() == at::kFloat ? kernels::elem::f32 : kernels::elem::bf16;
    return a;
}

// The fused block's arguments (the norm and the router in the launch: what
// model_ops::moe_block_native plans).
kernels::moe_args fused_block_args(const at::Tensor& x, const at::Tensor& nw,
                                   const at::Tensor& router, const experts& w, const shape& s,
                                   double eps) {
    auto a = step_args(x, w, s);
    a.norm_weight = nw.data_ptr();
    a.router = router.data_ptr();
    a.norm_eps = eps;
    a.normalise = true;
    return a;
}

// The fused block's norm weight and router for shape s (router seed `seed`), on d.
struct fused_weights {
    at::Tensor nw, router;
};
fused_weights make_fused_weights(const shape& s, at::ScalarType type, std::uint64_t seed,
                                 const at::Device& d) {
    const double gb = 1.0 / std::sqrt(static_cast<double>(s.hidden));
    return {workloads::seeded_uniform({s.hidden}, 5, 0.5, 1.5, type).to(d),
            workloads::seeded_uniform({s.experts, s.hidden}, seed, -gb, gb, type).to(d)};
}

// n inputs of T x H on d, seeds seed0, seed0 + 1, ...
std::vector<at::Tensor> token_inputs(int n, std::int64_t tokens, std::int64_t hidden,
                                     std::uint64_t seed0, at::ScalarType type,
                                     const at::Device& d) {
    std::vector<at::Tensor> xs;
    for (int i = 0; i < n; ++i)
        xs.push_back(workloads::seeded_normal({tokens, hidden},
                                              seed0 + static_cast<std::uint64_t>(i), 0.0, 1.0, type)
                         .to(d));
    return xs;
}

// a's plan with a workspace of its own: planned for the size, ws allocated (bytes, on like's
// device) and set in a, then planned again with it (the plan checks the workspace's alignment).
kernels::moe_plan plan_with_workspace(kernels::moe_args& a, const call_context& ctx, at::Tensor& ws,
                                      const at::Tensor& like) {
    const auto plan = kernels::plan_moe(a, workloads::native::limits(ctx));
    EXPECT_TRUE(plan.valid.empty()) << plan.valid;
    ws = at::empty({plan.workspace_bytes}, like.options().dtype(at::kByte));
    a.workspace = ws.data_ptr();
    return kernels::plan_moe(a, workloads::native::limits(ctx));
}

// step_args for the one launch without the fused prologue: fp32 logits (the kernel before's:
// `logits`, on x's device), the chosen weights normalised.
kernels::moe_args unfused_args(const at::Tensor& x, const experts& w, const shape& s,
                               const at::Tensor& logits) {
    auto a = step_args(x, w, s);
    a.logits = logits.data_ptr();
    a.logits_type = kernels::elem::f32;
    a.normalise = true;
    return a;
}

// One launch of plan p with a's arguments on the workspace ws, input x and output y, stopped
// after phase `stop` (moe_args::probe_stop_after; 0: the whole step).
void launch_step(const call_context& ctx, const kernels::moe_plan& p, kernels::moe_args a,
                 const at::Tensor& ws, const at::Tensor& x, const at::Tensor& y, int stop) {
    a.workspace = ws.data_ptr();
    a.x = x.data_ptr();
    a.y = y.data_ptr();
    a.probe_stop_after = stop;
    workloads::native::check(kernels::launch_moe(p, a, workloads::native::stream(ctx)), "moe");
}

// n outputs shaped as `like` (filled with -7 first, so one never written shows), each written by
// launch(i, its output) for i = 0..n-1: eagerly, or captured in one graph replayed twice.
std::vector<at::Tensor> launch_outputs(backend::device& dev, int n, const at::Tensor& like,
                                       bool graph,
                                       const std::function<void(int, const at::Tensor&)>& launch) {
    std::vector<at::Tensor> ys;
    for (int i = 0; i < n; ++i)
        ys.push_back(at::full_like(like, -7.0));
    auto sequence = [&] {
        for (int i = 0; i < n; ++i)
            launch(i, ys[static_cast<std::size_t>(i)]);
    };
    if (graph) {
        auto g = dev.capture(sequence);
        g->replay();
        g->replay();
    } else {
        sequence();
    }
    dev.synchronize();
    return ys;
}
// A case's words in a failure's message: dtype, experts, tokens, eager or graph.
std::string describe_case(at::ScalarType type, const shape& s, std::int64_t tokens, bool graph) {
    return std::string(c10::toString(type)) + " E=" + std::to_string(s.experts) +
           " T=" + std::to_string(tokens) + (graph ? " (graph)" : " (eager)");
}

// got's n outputs bitwise equal to want's, each said with `what` and its launch; want's first two
// differ (the launches' inputs differ, and so must their outputs: a comparison that can fail).
void expect_same_bits(const std::vector<at::Tensor>& got, const std::vector<at::Tensor>& want,
                      const std::string& what) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i)
        EXPECT_TRUE(at::equal(got[i], want[i])) << what << " launch " << i;
    EXPECT_FALSE(at::equal(want[0], want[1])) << what;
}
#endif

} // namespace

TEST(moe_cuda, native_step_matches_float64_for_1_to_8_tokens_over_seeds) {
    REQUIRE_NATIVE(dev);
    const auto d = dev->torch_device();
    for (const auto type : {at::kBFloat16, at::kHalf, at::kFloat}) {
        const auto w = make_experts(k_qwen3, type, 11, d);
        for (std::int64_t tokens = 1; tokens <= 8; ++tokens)
            for (std::uint64_t seed = 1; seed <= (type == at::kBFloat16 ? 3u : 1u); ++seed) {
                const auto x = workloads::seeded_normal(
                    {tokens, k_qwen3.hidden}, seed * 100 + static_cast<std::uint64_t>(tokens), 0.0,
                    1.0, type);
                const auto logits = ranked_logits(tokens, k_qwen3.experts, seed * 7 + 3);
                const auto got = run_native(*dev, x.to(d), logits.to(d), w, k_qwen3.top_k);
                const auto err = error_ratio(got, reference(x, logits, w, k_qwen3.top_k));
                EXPECT_LT(err, bound_of(type))
                    << c10::toString(type) << " tokens " << tokens << " seed " << seed;
                if (seed == 1)
                    std::cout << c10::toString(type) << " T=" << tokens
                              << ": max error / RMS = " << err << '\n';
            }
    }
}

TEST(moe_cuda, native_step_matches_float64_on_small_shapes_and_a_prefill_of_13_tokens) {
    REQUIRE_NATIVE(dev);
    const auto d = dev->torch_device();
    for (const auto& s : {k_small, k_tiny, k_many, k_most})
        for (const auto type : {at::kBFloat16, at::kFloat})
            for (std::uint64_t seed = 1; seed <= 3; ++seed) {
                const auto w = make_experts(s, type, seed, d);
                for (const std::int64_t tokens : {1, 3, 8, 13}) {
                    const auto x =
                        workloads::seeded_normal({tokens, s.hidden}, seed * 31 + 5, 0.0, 1.0, type);
                    const auto logits = ranked_logits(tokens, s.experts, seed);
                    const auto got = run_native(*dev, x.to(d), logits.to(d), w, s.top_k);
                    EXPECT_LT(error_ratio(got, reference(x, logits, w, s.top_k)), bound_of(type))
                        << "E=" << s.experts << " H=" << s.hidden << " " << c10::toString(type)
                        << " T=" << tokens << " seed " << seed;
                }
            }
}

TEST(moe_cuda, native_step_agrees_with_the_stock_paths) {
    REQUIRE_NATIVE(dev);
    const auto d = dev->torch_device();
    for (const auto type : {at::kBFloat16, at::kFloat}) {
        const auto w = make_experts(k_qwen3, type, 5, d);
        for (const std::int64_t tokens : {1, 4, 8}) {
            const auto x =
                workloads::seeded_normal({tokens, k_qwen3.hidden}, 77, 0.0, 1.0, type).to(d);
            const auto logits = ranked_logits(tokens, k_qwen3.experts, 9).to(d);
            const auto native = run_native(*dev, x, logits, w, k_qwen3.top_k);
            // the host loop takes every dtype; _grouped_mm's fast path bf16 (where it exists)
            const auto loop =
                mo::moe_ffn(x, logits, w.gate_up, w.down, k_qwen3.top_k, true, moe_path::host_loop);
            const auto ref = loop.cpu().to(at::kDouble);
            EXPECT_LT(error_ratio(native, ref), 1.5 * bound_of(type))
                << c10::toString(type) << " T=" << tokens << " vs host_loop";
#if FOURFOLD_HAS_GROUPED_MM
            if (type == at::kBFloat16 && dev->caps().missing("grouped_mm_fast") == std::nullopt) {
                const auto stock = mo::moe_ffn(x, logits, w.gate_up, w.down, k_qwen3.top_k, true,
                                               moe_path::grouped_mm);
                EXPECT_LT(error_ratio(native, stock.cpu().to(at::kDouble)), 1.5 * bound_of(type))
                    << "T=" << tokens << " vs grouped_mm";
            }
#endif
        }
    }
}

TEST(moe_cuda, native_step_is_bitwise_deterministic_and_takes_bf16_logits) {
    REQUIRE_NATIVE(dev);
    const auto d = dev->torch_device();
    const auto w = make_experts(k_qwen3, at::kBFloat16, 3, d);
    const auto x = workloads::seeded_normal({8, k_qwen3.hidden}, 1, 0.0, 1.0, at::kBFloat16);
    const auto logits = ranked_logits(8, k_qwen3.experts, 4);
    const auto a = run_native(*dev, x.to(d), logits.to(d), w, k_qwen3.top_k);
    for (int i = 0; i < 5; ++i)
        EXPECT_TRUE(at::equal(a, run_native(*dev, x.to(d), logits.to(d), w, k_qwen3.top_k)));
    // the decoder's router logits are in the activations' dtype
    const auto lb = logits.to(at::kBFloat16);
    const auto b = run_native(*dev, x.to(d), lb.to(d), w, k_qwen3.top_k);
    EXPECT_LT(error_ratio(b, reference(x, lb, w, k_qwen3.top_k)), bound_of(at::kBFloat16));
}

// Equal probabilities: the kernel takes the lower expert index first (at::topk promises no order
// on ties), so k equal logits at the top pick experts 0..k-1 with weights 1/k. The routing warp
// at each of its logits-a-lane widths: 4 (16 and 128 experts), 8 (200) and 16 (320).
TEST(moe_cuda, ties_in_the_routing_go_to_the_lower_expert_index) {
    REQUIRE_NATIVE(dev);
    const auto d = dev->torch_device();
    for (const auto& sh : {k_small, k_qwen3, k_many, k_most}) {
        const auto w = make_experts(sh, at::kFloat, 2, d);
        for (const std::int64_t tokens : {3, 8}) {
            const std::int64_t k = sh.top_k;
            const auto x = workloads::seeded_normal({tokens, sh.hidden}, 8, 0.0, 1.0, at::kFloat);
            auto logits = at::zeros({tokens, sh.experts}, at::kFloat); // all tied
            logits[2].fill_(-1.0);
            logits[2][9] = 1.0; // token 2: expert 9 first, then the ties among the rest: 0, 1, 2
            const auto got = run_native(*dev, x.to(d), logits.to(d), w, k);
            auto chosen = at::empty({tokens, k}, at::kLong);
            auto weights = at::full({tokens, k}, 1.0 / static_cast<double>(k), at::kDouble);
            for (std::int64_t t = 0; t < tokens; ++t)
                for (std::int64_t s = 0; s < k; ++s)
                    chosen[t][s] = s;
            chosen[2][0] = 9;
            for (std::int64_t s = 1; s < k; ++s)
                chosen[2][s] = s - 1;
            const auto p = at::softmax(logits[2].to(at::kDouble), -1);
            const double top = p[9].item<double>(), rest = p[0].item<double>();
            const double sum = top + (k - 1) * rest;
            weights[2][0] = top / sum;
            for (std::int64_t s = 1; s < k; ++s)
                weights[2][s] = rest / sum;
            EXPECT_LT(error_ratio(got, reference_with(x, w, chosen, weights)), 1e-4)
                << "E=" << sh.experts << " T=" << tokens;
        }
    }
}

TEST(moe_cuda, grouped_gemv_matches_float64_with_empty_and_long_groups) {
    REQUIRE_NATIVE(dev);
    const auto d = dev->torch_device();
    for (const auto type : {at::kBFloat16, at::kFloat}) {
        const std::int64_t experts = 16, n = 250, k = 512;
        const auto w = workloads::seeded_uniform({experts, n, k}, 4, -0.05, 0.05, type);
        // group sizes: empty groups, one of 20 rows (more than the 8 a warp takes at once)
        const std::vector<std::int32_t> sizes{0, 3, 20, 0, 1, 0, 0, 8, 9, 0, 0, 2, 0, 0, 0, 1};
        std::vector<std::int32_t> ends(sizes.size());
        std::partial_sum(sizes.begin(), sizes.end(), ends.begin());
        const std::int64_t rows_count = ends.back();
        const auto rows = workloads::seeded_normal({rows_count, k}, 6, 0.0, 1.0, type);
        call_context ctx(*dev);
        const auto got =
            mo::grouped_linear(rows.to(d), w.to(d), at::tensor(ends).to(d), moe_path::native, &ctx);
        auto ref = at::zeros({rows_count, n}, at::kDouble);
        std::int64_t start = 0;
        for (std::int64_t e = 0; e < experts; ++e) {
            const std::int64_t stop = ends[static_cast<std::size_t>(e)];
            if (stop > start)
                ref.narrow(0, start, stop - start)
                    .copy_(at::matmul(rows.narrow(0, start, stop - start).to(at::kDouble),
                                      w[e].to(at::kDouble).t()));
            start = stop;
        }
        // bf16: the output is rounded once, half an ulp is 2^-8 of a value, and the largest of
        // these ~11,000 outputs is ~4 RMS: up to ~1.6e-2 of the RMS (0.0117 measured on the H200)
        EXPECT_LT(error_ratio(got, ref), type == at::kFloat ? 1e-5 : bound_of(type))
            << c10::toString(type);
    }
}

TEST(moe_cuda, moe_decode_native_passes_in_graph_mode_and_records_its_plan) {
    REQUIRE_NATIVE(dev);
    std::vector<runner::job_spec> jobs;
    for (const std::int64_t tokens : {1, 8})
        for (const char* part : {"ffn", "gate_up", "block"})
            jobs.push_back({"moe_decode",
                            json{{"tokens", tokens}, {"part", part}},
                            dtype::bf16,
                            {"stock", "native"},
                            ""});
    jobs.push_back(
        {"moe_decode",
         json{{"tokens", 4}, {"experts", 8}, {"top_k", 2}, {"hidden", 64}, {"width", 32}},
         dtype::fp32,
         {"generic", "native"},
         ""});
    const auto r = run_jobs(*dev, jobs, "op_time,correctness");
    int native_timed = 0;
    for (const auto& rec : r.records) {
        if (rec.job.variant != "native")
            continue;
        const auto what = rec.job.params.dump();
        ASSERT_EQ(rec.status, record_status::ok) << what << ": " << rec.reason;
        EXPECT_TRUE(rec.figures["facts"].contains("kernel")) << rec.figures.dump();
        EXPECT_EQ(rec.figures["facts"]["host_sync"], false);
        if (rec.which == ledger::correctness) {
            EXPECT_EQ(rec.figures["verdict"], "PASS") << what << " " << rec.figures.dump();
        }
        if (rec.which == ledger::op_time) {
            ++native_timed;
            EXPECT_EQ(rec.figures["mode"], "graph");
            std::cout << "moe_decode native " << what << ": median "
                      << rec.figures["stats"]["median"] << " us; "
                      << rec.figures["facts"]["kernel"]["path"] << '\n';
        }
    }
    EXPECT_EQ(native_timed, 7);
    for (const auto& rec : r.records)
        if (rec.which == ledger::op_time && rec.job.variant == "stock" &&
            rec.status == record_status::ok)
            std::cout << "moe_decode stock " << rec.job.params.dump() << ": median "
                      << rec.figures["stats"]["median"] << " us\n";
}

TEST(moe_cuda, decoder_moe_layers_on_the_native_path_eager_and_captured) {
    REQUIRE_NATIVE(dev);
    using namespace fourfold::workloads::models;
    const auto w = std::make_shared<const decoder_weights>(
        random_weights(*find_preset("tiny-qwen3-moe"), at::kBFloat16, dev->torch_device(), 9));
    const auto tokens = at::arange(20, at::TensorOptions().dtype(at::kLong))
                            .mul(31)
                            .remainder(w->config.vocab)
                            .to(dev->torch_device());
    auto teacher_forced = [&](moe_path moe, bool capture) {
        decoder_paths paths;
        paths.moe = moe;
        decoder_session s(w, 64, paths, call_context(*dev));
        std::vector<at::Tensor> rows{s.prefill_teacher_forced(tokens, 6)};
        if (capture)
            s.capture(*dev);
        for (std::int64_t p = 6; p < tokens.size(0); ++p) {
            s.step();
            rows.push_back(s.logits().clone());
        }
        return at::cat(rows, 0).to(at::kFloat);
    };
    const auto loop = teacher_forced(moe_path::host_loop, false);
    const auto rel = [&](const at::Tensor& a) {
        return (a - loop).norm().item<double>() / loop.norm().item<double>();
    };
    const auto eager = teacher_forced(moe_path::native, false);
    const auto graph = teacher_forced(moe_path::native, true);
    EXPECT_LT(rel(eager), 2e-2);
    EXPECT_LT(rel(graph), 2e-2);
    EXPECT_LT((graph - eager).norm().item<double>() / eager.norm().item<double>(), 2e-2);
}

// The three ways to run the step on the Qwen3-30B-A3B shape: two kernels without and with the
// L2 prefetch of the down weights at kernel 1's tail (a matter of time only: the same bits), and
// the one launch (another summation order in the down phase: held against float64 like the
// others). Prints each one's µs a step (graph replays of 20 steps, device events) and the byte
// time of the experts read at the device's measured copy bandwidth.
TEST(moe_cuda, one_launch_and_two_kernels_agree_and_their_times_are_printed) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const auto d = dev->torch_device();
    const auto w = make_experts(k_qwen3, at::kBFloat16, 1, d);
    const auto bw = dev->measure_copy_bandwidth().bytes_per_s;
    call_context ctx(*dev);
    struct way {
        const char* name;
        bool one_launch;
        std::int64_t l2_prefetch;
    };
    const way ways[] = {{"two kernels", false, 0},
                        {"two kernels, L2 prefetch", false, kernels::k_moe_default_l2_prefetch},
                        {"one launch", true, 0}};
    for (const std::int64_t tokens : {1, 2, 4, 8}) {
        const auto x =
            workloads::seeded_normal({tokens, k_qwen3.hidden}, 3, 0.0, 1.0, at::kBFloat16).to(d);
        const auto logits = ranked_logits(tokens, k_qwen3.experts, 21).to(d);
        const auto ref = reference(x, logits, w, k_qwen3.top_k);
        std::vector<at::Tensor> outs;
        for (const auto& way : ways) {
            auto y = at::empty_like(x);
            auto a = step_args(x, w, k_qwen3);
            a.logits = logits.data_ptr();
            a.y = y.data_ptr();
            a.l2_prefetch_bytes = way.l2_prefetch;
            a.one_launch = way.one_launch;
            a.logits_type = kernels::elem::f32;
            auto plan = kernels::plan_moe(a, workloads::native::limits(ctx));
            ASSERT_TRUE(plan.valid.empty()) << plan.valid;
            EXPECT_EQ(plan.kernels, way.one_launch ? 1 : 2);
            const auto ws = at::empty({plan.workspace_bytes}, x.options().dtype(at::kByte));
            a.workspace = ws.data_ptr();
            plan = kernels::plan_moe(a, workloads::native::limits(ctx));
            constexpr int steps = 20;
            // µs a step of `a` as it stands: one graph of `steps` launches, the best of 10 replays
            auto best_us = [&] {
                return graph_us_per_call(*dev, steps, [&] {
                    workloads::native::check(
                        kernels::launch_moe(plan, a, workloads::native::stream(ctx)), "moe");
                });
            };
            const double best = best_us();
            // the experts this routing reaches, and their bytes
            const auto chosen = std::get<1>(at::topk(logits.cpu(), k_qwen3.top_k, -1));
            std::set<std::int64_t> reached;
            for (std::int64_t i = 0; i < chosen.numel(); ++i)
                reached.insert(chosen.reshape({-1})[i].item<std::int64_t>());
            const auto active = static_cast<std::int64_t>(reached.size());
            const double bytes = static_cast<double>(active) * 3 * 768 * 2048 * 2;
            std::cout << "moe native T=" << tokens << " " << way.name << ": " << best
                      << " us a step (best of 10 x " << steps << " replays); " << active
                      << " experts, " << bytes / 1e6 << " MB = " << bytes / bw * 1e6
                      << " us at the measured " << bw / 1e12 << " TB/s\n";
            EXPECT_LT(error_ratio(y, ref), bound_of(at::kBFloat16)) << way.name << " T=" << tokens;
            outs.push_back(y);
            if (!way.one_launch)
                continue;
            const int resident = kernels::moe_one_launch_residency(plan, a);
            EXPECT_EQ(resident, kernels::k_moe_blocks_per_sm);
            // the phases: stopped after each (y not the step's)
            const char* const phases[] = {"", "the routing", "the gate/up units", "the barrier",
                                          "the dots"};
            for (const int phase : {1, 2, 3, 4}) {
                a.probe_stop_after = phase;
                const double t = best_us();
                std::cout << "moe native T=" << tokens << " one launch stopped after "
                          << phases[phase] << ": " << t << " us (" << resident
                          << " blocks an SM)\n";
            }
            a.probe_stop_after = 0;
        }
        EXPECT_TRUE(at::equal(outs[0], outs[1])) << "T=" << tokens;
    }
#endif
}

// The one launch where a warp takes two output columns and a stage chunk ends inside an
// expert's down row; the two kernels on the same inputs, both against float64.
TEST(moe_cuda, one_launch_takes_two_columns_a_warp_and_chunks_inside_a_row) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const auto d = dev->torch_device();
    for (const auto type : {at::kBFloat16, at::kFloat}) {
        const auto w = make_experts(k_wide, type, 5, d);
        for (const std::int64_t tokens : {1, 3, 8}) {
            const auto x = workloads::seeded_normal(
                {tokens, k_wide.hidden}, static_cast<std::uint64_t>(tokens), 0.0, 1.0, type);
            const auto logits = ranked_logits(tokens, k_wide.experts, 40 + tokens);
            const auto ref = reference(x, logits, w, k_wide.top_k);
            const auto got = run_native(*dev, x.to(d), logits.to(d), w, k_wide.top_k);
            EXPECT_LT(error_ratio(got, ref), bound_of(type))
                << c10::toString(type) << " T=" << tokens;
            // the plan the call took: one launch, fewer warps than columns
            call_context ctx(*dev);
            kernels::moe_args a;
            a.x = a.logits = a.w_gate_up = a.w_down = w.gate_up.data_ptr();
            a.y = a.workspace = w.gate_up.data_ptr();
            a.tokens = tokens;
            a.experts = k_wide.experts;
            a.top_k = k_wide.top_k;
            a.hidden = a.ld_x = a.ld_y = k_wide.hidden;
            a.width = k_wide.width;
            a.ld_logits = k_wide.experts;
            a.type = type == at::kFloat ? kernels::elem::f32 : kernels::elem::bf16;
            const auto plan = kernels::plan_moe(a, workloads::native::limits(ctx));
            ASSERT_TRUE(plan.valid.empty()) << plan.valid;
            EXPECT_EQ(plan.kernels, 1);
            EXPECT_LT(plan.one_launch_blocks * (kernels::k_moe_threads / 32), k_wide.hidden);
        }
    }
#endif
}

// The fused prologue (model_ops::moe_block_native): RMSNorm and the router inside the one launch,
// from the residual stream, against float64 from the same rounding points (h rounded to the
// dtype, the logits rounded to it). The router's rows are constant (alpha_e everywhere) and x has
// a positive mean, so each token's logits rank the experts by alpha_e with gaps of about 0.04:
// the top-k is the same in the kernel's fp32 and in float64.
TEST(moe_cuda, the_fused_norm_and_router_match_float64_from_the_residual_stream) {
    REQUIRE_NATIVE(dev);
    const auto d = dev->torch_device();
    for (const auto type : {at::kBFloat16, at::kFloat})
        for (const auto& s : {k_qwen3, k_small}) {
            const auto w = make_experts(s, type, 21, d);
            const double eps = 1e-6;
            const auto nw = workloads::seeded_uniform({s.hidden}, 5, 0.5, 1.5, type);
            std::vector<std::int64_t> rank(static_cast<std::size_t>(s.experts));
            std::iota(rank.begin(), rank.end(), 0);
            std::shuffle(rank.begin(), rank.end(), std::mt19937_64(3));
            auto router = at::empty({s.experts, s.hidden}, at::TensorOptions().dtype(at::kDouble));
            const double h_sum = 0.89 * static_cast<double>(s.hidden); // ~ h . 1 for this x
            for (std::int64_t e = 0; e < s.experts; ++e)
                router[e].fill_((static_cast<double>(rank[static_cast<std::size_t>(e)]) -
                                 static_cast<double>(s.experts) / 2 + 0.5) *
                                6.0 / (static_cast<double>(s.experts) * h_sum));
            router = router.to(type);
            for (const std::int64_t tokens : {1, 2, 8}) {
                const auto x = workloads::seeded_normal(
                    {tokens, s.hidden}, 40 + static_cast<std::uint64_t>(tokens), 1.0, 0.5, type);
                call_context ctx(*dev);
                const auto got = mo::moe_block_native(x.to(d), nw.to(d), eps, router.to(d),
                                                      w.gate_up, w.down, s.top_k, true, false, ctx);
                ASSERT_TRUE(got.defined()) << "the plan refused the fused block";
                // float64 from the kernel's rounding points
                const auto xd = x.to(at::kDouble);
                const auto inv = at::rsqrt(xd.pow(2).mean(-1, true) + eps);
                const auto h = (xd * inv * nw.to(at::kDouble)).to(type);
                const auto logits = at::mm(h.to(at::kDouble), router.to(at::kDouble).t()).to(type);
                const auto ref = reference(h, logits, w, s.top_k);
                EXPECT_LT(error_ratio(got, ref), bound_of(type))
                    << c10::toString(type) << " H=" << s.hidden << " T=" << tokens;
                // with the residual add: x + the block, rounded once
                const auto added =
                    mo::moe_block_native(x.to(d), nw.to(d), eps, router.to(d), w.gate_up, w.down,
                                         s.top_k, true, true, ctx);
                ASSERT_TRUE(added.defined());
                EXPECT_LT(error_ratio(added, xd + ref), bound_of(type))
                    << "residual added, " << c10::toString(type) << " H=" << s.hidden
                    << " T=" << tokens;
                // the unfused native path (the same h and logits given) agrees as closely
                const auto unfused = run_native(*dev, h.to(d), logits.to(d), w, s.top_k);
                EXPECT_LT(error_ratio(got, unfused.cpu().to(at::kDouble)), bound_of(type))
                    << c10::toString(type) << " H=" << s.hidden << " T=" << tokens;
            }
        }
}

// The fused block (one launch: the norm, the router's GEMV and the experts) against the three
// launches it replaces in the decoder (kernels/rmsnorm.cu, the router's native GEMV, the MoE
// step on h and the logits), on Qwen3-30B-A3B's shape at 1 and 8 tokens, and the fused
// launch's phases (probe stops: the prologue, the routing, then the experts' gate/up units, the
// down phase's barrier and its dots): printed for docs/performance.md; the two results agree.
TEST(moe_cuda, the_fused_block_and_the_three_launches_it_replaces_are_timed_and_printed) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    namespace nat = workloads::native;
    const auto d = dev->torch_device();
    const auto& s = k_qwen3;
    const auto bf16 = at::kBFloat16;
    const auto w = make_experts(s, bf16, 1, d);
    const double gb = 1.0 / std::sqrt(static_cast<double>(s.hidden));
    const auto nw = workloads::seeded_uniform({s.hidden}, 5, 0.5, 1.5, bf16).to(d);
    const auto router = workloads::seeded_uniform({s.experts, s.hidden}, 6, -gb, gb, bf16).to(d);
    const double eps = 1e-6;
    constexpr int steps = 20;
    call_context ctx(*dev);
    for (const std::int64_t tokens : {1, 8}) {
        const auto x = workloads::seeded_normal({tokens, s.hidden}, 3, 0.0, 1.0, bf16).to(d);
        // the three launches
        const auto h = at::empty_like(x);
        kernels::rmsnorm_args ra;
        ra.x = x.data_ptr();
        ra.weight = nw.data_ptr();
        ra.normed = h.data_ptr();
        ra.rows = tokens;
        ra.cols = s.hidden;
        ra.ld_x = ra.ld_normed = s.hidden;
        ra.eps = eps;
        ra.type = kernels::elem::bf16;
        const auto rp = kernels::plan_rmsnorm(ra, nat::limits(ctx));
        ASSERT_TRUE(rp.valid.empty()) << rp.valid;
        at::Tensor three_y;
        const double three = graph_us_per_call(*dev, steps, [&] {
            nat::check(kernels::launch_rmsnorm(rp, ra, nat::stream(ctx)), "rmsnorm");
            const auto logits = mo::linear(h, router, {}, mo::op_path::native, &ctx);
            three_y =
                mo::moe_ffn(h, logits, w.gate_up, w.down, s.top_k, true, moe_path::native, &ctx);
        });
        // the one launch, as model_ops::moe_block_native plans it
        auto y = at::empty_like(x);
        auto a = fused_block_args(x, nw, router, w, s, eps);
        a.y = y.data_ptr();
        auto plan = kernels::plan_moe(a, nat::limits(ctx));
        ASSERT_TRUE(plan.valid.empty()) << plan.valid;
        ASSERT_TRUE(plan.fused_prologue);
        const auto ws = at::empty({plan.workspace_bytes}, x.options().dtype(at::kByte));
        a.workspace = ws.data_ptr();
        plan = kernels::plan_moe(a, nat::limits(ctx));
        auto fused_us = [&] {
            return graph_us_per_call(*dev, steps, [&] {
                nat::check(kernels::launch_moe(plan, a, nat::stream(ctx)), "moe");
            });
        };
        const double fused = fused_us();
        std::cout << "moe block T=" << tokens << ": three launches (rmsnorm, router GEMV, MoE) "
                  << three << " us, the fused launch " << fused << " us a step (best of 10 x "
                  << steps << " replays)\n";
        EXPECT_LT(error_ratio(y, three_y.cpu().to(at::kDouble)), bound_of(bf16)) << "T=" << tokens;
        const char* const phases[] = {"the routing",
                                      "the norm and the router's dots",
                                      "the prologue's grid barrier",
                                      "the routing's softmax",
                                      "the routing's top-k",
                                      "the gate/up units",
                                      "the down phase's grid barrier",
                                      "the down dots (before the block's sums)"};
        const int stops[] = {1, 5, 6, 7, 8, 2, 3, 4};
        for (int i = 0; i < 8; ++i) {
            a.probe_stop_after = stops[i];
            std::cout << "moe block T=" << tokens << " fused launch stopped after " << phases[i]
                      << ": " << fused_us() << " us\n";
        }
        a.probe_stop_after = 0;
    }
#endif
}

// The trial FOURFOLD_MOE_FLAGGED_LOGITS=1 (moe_plan::flagged_logits: the fused prologue's logits
// stored with a flag word each and polled, no first grid barrier) against the barrier: the same
// bits, launch after launch on one workspace, eager and in a captured graph replayed twice. Each
// launch of a sequence takes another x, after a probe's launch (stopped before the down barrier,
// which advances the generation otherwise) on yet another, so a launch that routed on an earlier
// launch's logits (a stale flag taken for its own) would differ from the barrier's output.
TEST(moe_cuda, flagged_logits_give_the_barriers_bits_launch_after_launch) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    namespace nat = workloads::native;
    const auto d = dev->torch_device();
    call_context ctx(*dev);
    constexpr int n = 3;
    for (const auto type : {at::kBFloat16, at::kFloat})
        for (const auto& s : shapes_of({k_qwen3, k_small})) {
            const auto w = make_experts(s, type, 31, d);
            const auto fw = make_fused_weights(s, type, 7, d);
            const auto& nw = fw.nw;
            const auto& router = fw.router;
            for (const std::int64_t tokens : {1, 2, 8}) {
                const auto xs = token_inputs(n, tokens, s.hidden, 60, type, d);
                // the n launches' outputs, with the flagged logits or the barrier
                auto run = [&](bool flagged, bool graph) {
                    const fourfold::testing::env_switch trial("FOURFOLD_MOE_FLAGGED_LOGITS",
                                                              flagged ? "1" : "0");
                    auto a = fused_block_args(xs[0], nw, router, w, s, 1e-6);
                    at::Tensor ws;
                    const auto plan = plan_with_workspace(a, ctx, ws, xs[0]);
                    EXPECT_EQ(plan.flagged_logits, flagged);
                    // each launch after a probe's (stopped after the prologue, or after the
                    // routing) on the next x: its logits are in the workspace with a flag
                    // that must not pass for the launch's own
                    return launch_outputs(*dev, n, xs[0], graph, [&](int i, const at::Tensor& y) {
                        a.x = xs[static_cast<std::size_t>((i + 1) % n)].data_ptr();
                        a.probe_stop_after = i % 2 == 0 ? 6 : 1;
                        nat::check(kernels::launch_moe(plan, a, nat::stream(ctx)), "probe");
                        a.probe_stop_after = 0;
                        a.x = xs[static_cast<std::size_t>(i)].data_ptr();
                        a.y = y.data_ptr();
                        nat::check(kernels::launch_moe(plan, a, nat::stream(ctx)), "moe");
                    });
                };
                for (const bool graph : {false, true}) {
                    const auto barrier = run(false, graph);
                    expect_same_bits(run(true, graph), barrier,
                                     describe_case(type, s, tokens, graph));
                }
            }
        }
#endif
}

// The down counters (moe_plan::down_counters, the default with the flagged logits; =0 the down
// barrier) against the barriers (FOURFOLD_MOE_FLAGGED_LOGITS=0): the same bits, launch after
// launch on one workspace, eager and in a captured graph replayed twice. Between two counted
// launches come a probe's (stopped after the prologue, the routing, the gate/up units, the
// counters' wait or the first dots: a set of counters left part-counted), a launch of the
// barriers' plan (the generation moved on by 2, the counters' sequence not) and one of the flagged
// logits without the counters (by 1): a launch that took a set counted by an earlier launch for
// its own would read the intermediate before it is written, and differ. The units counted one at
// a time (FOURFOLD_MOE_DOWN_COUNT=unit), a block's at once (the default since session 52) and the
// defaults compiled into the kernel's instance (the trial FOURFOLD_MOE_COMPILED_DEFAULTS=1) alike.
TEST(moe_cuda, down_counters_give_the_barriers_bits_launch_after_launch) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const auto d = dev->torch_device();
    call_context ctx(*dev);
    constexpr int n = 5;
    for (const auto type : {at::kBFloat16, at::kFloat})
        for (const auto& s : shapes_of({k_qwen3, k_small})) {
            const auto w = make_experts(s, type, 33, d);
            const auto fw = make_fused_weights(s, type, 8, d);
            const auto& nw = fw.nw;
            const auto& router = fw.router;
            for (const std::int64_t tokens : {1, 2, 8}) {
                const auto xs = token_inputs(n, tokens, s.hidden, 80, type, d);
                auto a = fused_block_args(xs[0], nw, router, w, s, 1e-6);
                // the three plans, each on its own workspace
                auto plan_of = [&](const char* flagged, const char* counters, at::Tensor& ws,
                                   const char* count = "unit", const char* compiled = "0") {
                    const fourfold::testing::env_switch f("FOURFOLD_MOE_FLAGGED_LOGITS", flagged);
                    const fourfold::testing::env_switch c("FOURFOLD_MOE_DOWN_COUNTERS", counters);
                    const fourfold::testing::env_switch m("FOURFOLD_MOE_DOWN_COUNT", count);
                    const fourfold::testing::env_switch k("FOURFOLD_MOE_COMPILED_DEFAULTS",
                                                          compiled);
                    auto b = a;
                    return plan_with_workspace(b, ctx, ws, xs[0]);
                };
                at::Tensor ws_counted, ws_blocks, ws_compiled, ws_barriers, ws_flagged;
                const auto unit_counted = plan_of("1", "1", ws_counted);
                const auto block_counted = plan_of("1", "1", ws_blocks, "block");
                const auto compiled = plan_of("1", "1", ws_compiled, "block", "1");
                const auto barriers = plan_of("0", "1", ws_barriers);
                const auto flagged = plan_of("1", "0", ws_flagged);
                EXPECT_TRUE(unit_counted.down_counters);
                EXPECT_FALSE(unit_counted.down_counts_a_block);
                EXPECT_TRUE(block_counted.down_counts_a_block);
                EXPECT_FALSE(block_counted.compiled_defaults);
                EXPECT_TRUE(compiled.compiled_defaults);
                EXPECT_FALSE(barriers.down_counters);
                EXPECT_FALSE(flagged.down_counters);
                EXPECT_TRUE(flagged.flagged_logits);
                auto launch = [&](const kernels::moe_plan& p, const at::Tensor& ws,
                                  const at::Tensor& x, const at::Tensor& y,
                                  int stop) { launch_step(ctx, p, a, ws, x, y, stop); };
                const auto scratch = at::empty_like(xs[0]);
                const int stops[] = {6, 1, 2, 3, 4};
                // the n launches' outputs: counted (between the others) or the barriers' plan
                auto run = [&](const kernels::moe_plan* counted, const at::Tensor& ws_c,
                               bool graph) {
                    return launch_outputs(*dev, n, xs[0], graph, [&](int i, const at::Tensor& y) {
                        const auto& x = xs[static_cast<std::size_t>(i)];
                        const auto& other = xs[static_cast<std::size_t>((i + 1) % n)];
                        if (counted) {
                            launch(*counted, ws_c, other, scratch, stops[i]);
                            if (i % 2 == 1)
                                launch(barriers, ws_barriers, other, scratch, 0);
                            if (i % 3 == 2)
                                launch(flagged, ws_flagged, other, scratch, 0);
                            launch(*counted, ws_c, x, y, 0);
                        } else {
                            launch(barriers, ws_barriers, x, y, 0);
                        }
                    });
                };
                const struct {
                    const kernels::moe_plan* plan;
                    const at::Tensor* ws;
                    const char* what;
                } counted_plans[] = {
                    {&unit_counted, &ws_counted, "units counted one at a time"},
                    {&block_counted, &ws_blocks, "a block's units counted at once"},
                    {&compiled, &ws_compiled, "the defaults compiled in"},
                };
                for (const auto& c : counted_plans) {
                    for (const bool graph : {false, true}) {
                        const auto want = run(nullptr, ws_barriers, graph);
                        expect_same_bits(run(c.plan, *c.ws, graph), want,
                                         describe_case(type, s, tokens, graph) + ", " + c.what);
                    }
                }
            }
        }
#endif
}

// The unfused counters (moe_plan::down_counters without the fused prologue: moe_ffn's one
// launch, its fp32 logits the kernel before's; the default from 2 tokens, at every T with
// FOURFOLD_MOE_UNFUSED_COUNTERS=1, none with =0): the down barrier's bits, launch
// after launch on one workspace, eager and in a graph replayed twice. Between two counted
// launches come a probe's (stopped after the routing, the gate/up units, the counters' wait or
// the first dots: a set left part-counted), a launch of the barriers' plan and one of the fused
// block's compiled defaults (its counters on the same sequence): a launch that took a set counted
// by an earlier one would read the intermediate before it is written, and differ.
TEST(moe_cuda, the_unfused_counters_give_the_barriers_bits_launch_after_launch) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const auto d = dev->torch_device();
    call_context ctx(*dev);
    constexpr int n = 5;
    for (const auto type : {at::kBFloat16, at::kFloat})
        for (const auto& s : shapes_of({k_qwen3, k_small})) {
            const auto w = make_experts(s, type, 37, d);
            const auto fw = make_fused_weights(s, type, 10, d);
            for (const std::int64_t tokens : {1, 2, 8}) {
                const auto xs = token_inputs(n, tokens, s.hidden, 90, type, d);
                const auto logits = ranked_logits(tokens, s.experts, 91).to(d);
                auto a = unfused_args(xs[0], w, s, logits);
                at::Tensor ws_barrier, ws_counted, ws_fused;
                const auto barrier = [&] {
                    const fourfold::testing::env_switch u("FOURFOLD_MOE_UNFUSED_COUNTERS", "0");
                    auto b = a;
                    return plan_with_workspace(b, ctx, ws_barrier, xs[0]);
                }();
                const auto counted = [&] {
                    const fourfold::testing::env_switch u("FOURFOLD_MOE_UNFUSED_COUNTERS", "1");
                    auto b = a;
                    return plan_with_workspace(b, ctx, ws_counted, xs[0]);
                }();
                auto f = fused_block_args(xs[0], fw.nw, fw.router, w, s, 1e-6);
                const auto fused = plan_with_workspace(f, ctx, ws_fused, xs[0]);
                ASSERT_FALSE(barrier.down_counters);
                ASSERT_TRUE(counted.down_counters);
                ASSERT_TRUE(counted.down_counts_a_block);
                auto launch = [&](const kernels::moe_plan& p, const kernels::moe_args& args,
                                  const at::Tensor& ws, const at::Tensor& x, const at::Tensor& y,
                                  int stop) { launch_step(ctx, p, args, ws, x, y, stop); };
                const auto scratch = at::empty_like(xs[0]);
                const int stops[] = {1, 2, 3, 4, 1};
                auto run = [&](bool with_counters, bool graph) {
                    return launch_outputs(*dev, n, xs[0], graph, [&](int i, const at::Tensor& y) {
                        const auto& x = xs[static_cast<std::size_t>(i)];
                        const auto& other = xs[static_cast<std::size_t>((i + 1) % n)];
                        if (!with_counters) {
                            launch(barrier, a, ws_barrier, x, y, 0);
                            return;
                        }
                        launch(counted, a, ws_counted, other, scratch, stops[i]);
                        if (i % 2 == 1)
                            launch(barrier, a, ws_barrier, other, scratch, 0);
                        if (i % 3 == 2)
                            launch(fused, f, ws_fused, other, scratch, 0);
                        launch(counted, a, ws_counted, x, y, 0);
                    });
                };
                for (const bool graph : {false, true}) {
                    const auto want = run(false, graph);
                    expect_same_bits(run(true, graph), want, describe_case(type, s, tokens, graph));
                }
            }
        }
#endif
}

// FOURFOLD_MOE_COMPILED_UNFUSED (moe_plan::compiled_unfused, the default since session 62): the
// one launch without the fused prologue in its own instance gives the general instance's (=0) bits,
// behind the down barrier (T = 1) and with the down counters (T = 2 and 8), launch after launch,
// eager and captured, each full launch after a probe's early stop (which moves the counters'
// sequence on).
TEST(moe_cuda, the_compiled_unfused_instance_gives_the_general_instances_bits) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const auto d = dev->torch_device();
    call_context ctx(*dev);
    constexpr int n = 4;
    const auto type = at::kBFloat16;
    for (const auto& s : shapes_of({k_qwen3, k_small})) {
        const auto w = make_experts(s, type, 41, d);
        for (const std::int64_t tokens : {1, 2, 8}) {
            const auto xs = token_inputs(n, tokens, s.hidden, 94, type, d);
            const auto logits = ranked_logits(tokens, s.experts, 95).to(d);
            const auto a = unfused_args(xs[0], w, s, logits);
            at::Tensor ws_general, ws_compiled;
            const auto general = [&] {
                const fourfold::testing::env_switch c("FOURFOLD_MOE_COMPILED_UNFUSED", "0");
                auto g = a;
                return plan_with_workspace(g, ctx, ws_general, xs[0]);
            }();
            auto b = a;
            const auto compiled = plan_with_workspace(b, ctx, ws_compiled, xs[0]);
            ASSERT_FALSE(general.compiled_unfused);
            ASSERT_TRUE(compiled.compiled_unfused);
            ASSERT_EQ(compiled.down_counters, general.down_counters);
            auto launch = [&](const kernels::moe_plan& p, const at::Tensor& ws, const at::Tensor& x,
                              const at::Tensor& y,
                              int stop) { launch_step(ctx, p, a, ws, x, y, stop); };
            const auto scratch = at::empty_like(xs[0]);
            const int stops[] = {1, 2, 3, 4};
            auto run = [&](bool use_compiled, bool graph) {
                return launch_outputs(*dev, n, xs[0], graph, [&](int i, const at::Tensor& y) {
                    const auto& x = xs[static_cast<std::size_t>(i)];
                    if (!use_compiled) {
                        launch(general, ws_general, x, y, 0);
                        return;
                    }
                    const auto& other = xs[static_cast<std::size_t>((i + 1) % n)];
                    launch(compiled, ws_compiled, other, scratch, stops[i]);
                    launch(compiled, ws_compiled, x, y, 0);
                });
            };
            for (const bool graph : {false, true})
                expect_same_bits(run(true, graph), run(false, graph),
                                 describe_case(type, s, tokens, graph));
        }
    }
#endif
}

// The trial FOURFOLD_MOE_TOPK_LOGITS=1 (moe_plan::topk_on_logits: the one launch's top-k on the
// logits, only the k chosen exponentiated): against float64 over token counts, expert counts (4,
// 8 and 16 logits a lane) and dtypes, as close to the softmax path as both are to float64, and the
// ties still to the lower expert index (all-equal logits: experts 0..k-1 at 1/k each).
TEST(moe_cuda, top_k_on_the_logits_matches_float64_and_keeps_the_ties) {
    REQUIRE_NATIVE(dev);
    const auto d = dev->torch_device();
    for (const auto type : {at::kBFloat16, at::kFloat})
        for (const auto& s : shapes_of({k_qwen3, k_small, k_many, k_most})) {
            const auto w = make_experts(s, type, 41, d);
            for (const std::int64_t tokens : {1, 3, 8}) {
                const auto x = workloads::seeded_normal({tokens, s.hidden}, 70, 0.0, 1.0, type);
                const auto logits = ranked_logits(tokens, s.experts, 71);
                at::Tensor softmax_path, on_logits;
                {
                    const fourfold::testing::env_switch trial("FOURFOLD_MOE_TOPK_LOGITS", "0");
                    softmax_path = run_native(*dev, x.to(d), logits.to(d), w, s.top_k);
                }
                {
                    const fourfold::testing::env_switch trial("FOURFOLD_MOE_TOPK_LOGITS", "1");
                    on_logits = run_native(*dev, x.to(d), logits.to(d), w, s.top_k);
                }
                const auto ref = reference(x, logits, w, s.top_k);
                EXPECT_LT(error_ratio(on_logits, ref), bound_of(type))
                    << c10::toString(type) << " E=" << s.experts << " T=" << tokens;
                EXPECT_LT(error_ratio(on_logits, softmax_path.cpu().to(at::kDouble)),
                          bound_of(type))
                    << c10::toString(type) << " E=" << s.experts << " T=" << tokens;
            }
            const fourfold::testing::env_switch trial("FOURFOLD_MOE_TOPK_LOGITS", "1");
            const std::int64_t tokens = 2, k = s.top_k;
            const auto x = workloads::seeded_normal({tokens, s.hidden}, 72, 0.0, 1.0, type);
            const auto tied = at::zeros({tokens, s.experts}, at::kFloat);
            auto chosen = at::empty({tokens, k}, at::kLong);
            for (std::int64_t t = 0; t < tokens; ++t)
                for (std::int64_t j = 0; j < k; ++j)
                    chosen[t][j] = j;
            const auto weights = at::full({tokens, k}, 1.0 / static_cast<double>(k), at::kDouble);
            EXPECT_LT(error_ratio(run_native(*dev, x.to(d), tied.to(d), w, k),
                                  reference_with(x, w, chosen, weights)),
                      bound_of(type))
                << "ties, " << c10::toString(type) << " E=" << s.experts;
        }
}
