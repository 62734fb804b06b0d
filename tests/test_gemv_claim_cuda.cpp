// GPU tests (label gpu) of kernels/gemv.cu's one-token GEMVs with a block an SM: the one whose 2 KB
// steps are claimed at run time by the 32 warps of an SM's block (gemv_claim, gemv_plan::claimed)
// and the column-stationary one (gemv_cs, bf16 and fp16 rows of 8 KB or more by default): against
// float64 with no prologue, the RMSNorm and the SwiGLU prologues, with and without the bias, rows
// past whole steps or slices and a row count no block count divides; and the same bits on every
// run. Calls model_ops directly (no runner), so the sanitizer stage runs it whole. And the
// tensor-core GEMV of 2..8 tokens in rounds (gemv_mma_rounds, the trial of session 44).
#include "decoder_kernels_cuda.hpp"
#include "env_switch.hpp"
#include "fourfold/workloads/model_ops/linear.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/gemv.hpp"
#endif

#include <ATen/CPUGeneratorImpl.h>
#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

using namespace fourfold;
using namespace fourfold::testing::decoder_kernels;
namespace mo = fourfold::workloads::model_ops;

#if FOURFOLD_WITH_KERNELS
namespace {

// One token through model_ops' native GEMV with each prologue (none, RMSNorm, SwiGLU; with and
// without the bias where model_ops takes one), n rows of K = k_of(type) for each type of `ts`: the
// plan passed to `check_plan` (the case's name, the plan), each case within the type's tolerance
// of float64 (the prologue's rounding applied), and the same bits on 3 more runs.
void expect_one_token_cases(
    backend::device& dev, std::int64_t n, const std::vector<at::ScalarType>& ts,
    const std::function<std::int64_t(at::ScalarType)>& k_of,
    const std::function<void(const std::string&, const kernels::gemv_plan&)>& check_plan) {
    const workloads::call_context ctx(dev);
    const double eps = 1e-5;
    auto gen = at::detail::createCPUGenerator(17);
    for (const auto t : ts) {
        const std::int64_t k = k_of(t);
        const auto o = at::TensorOptions().dtype(t).device(dev.torch_device());
        auto r = [&](std::vector<std::int64_t> shape, double scale) {
            return (at::randn(shape, gen, at::TensorOptions().dtype(at::kDouble)) * scale)
                .to(t)
                .to(at::kDouble);
        };
        const auto x = r({1, 2 * k}, 1.0), w = r({n, k}, 1.0 / std::sqrt(double(k)));
        const auto b = r({n}, 1.0), nw = r({k}, 0.5) + 1;
        for (const char* pro : {"none", "rms_norm", "swiglu"})
            for (const bool bias : {false, true}) {
                if (std::string(pro) == "rms_norm" && bias)
                    continue; // model_ops' normed GEMV takes no bias
                const auto xd = std::string(pro) == "swiglu" ? x : x.narrow(1, 0, k);
                at::Tensor a; // what the GEMV multiplies, as its prologue rounds it
                if (std::string(pro) == "none") {
                    a = xd;
                } else if (std::string(pro) == "rms_norm") {
                    const auto inv = (xd.pow(2).mean(1, true) + eps).rsqrt();
                    a = rounded(xd * inv * nw, t);
                } else {
                    const auto g = xd.narrow(1, 0, k), u = xd.narrow(1, k, k);
                    a = rounded(g * at::sigmoid(g) * u, t);
                }
                auto ref = at::matmul(a, w.t());
                if (bias)
                    ref = ref + b;
                const auto xg = xd.to(o), wg = w.to(o), bg = bias ? b.to(o) : at::Tensor();
                auto run = [&] {
                    if (std::string(pro) == "rms_norm")
                        return mo::native_linear_rms_normed(xg, nw.to(o), eps, wg, ctx);
                    if (std::string(pro) == "swiglu")
                        return mo::native_linear_swiglu(xg, wg, bg, ctx);
                    return mo::linear(xg, wg, bg, mo::op_path::native, &ctx);
                };
                auto ga = one_token(xg.data_ptr(), wg.data_ptr(), nullptr, n, k, xg.stride(0), t);
                ga.norm_weight = std::string(pro) == "rms_norm" ? wg.data_ptr() : nullptr;
                ga.swiglu_x = std::string(pro) == "swiglu";
                const auto plan = kernels::plan_gemv(ga, workloads::native::limits(ctx));
                const auto what = std::string(c10::toString(t)) + " " + std::to_string(n) + "x" +
                                  std::to_string(k) + " " + pro + (bias ? " + bias" : "") + ": " +
                                  plan.describe();
                check_plan(what, plan);
                const auto y = run();
                ASSERT_TRUE(y.defined()) << what;
                EXPECT_LT(scaled_error(y, ref), tolerance(t)) << what;
                for (int again = 0; again < 3; ++again)
                    EXPECT_TRUE(at::equal(run().cpu(), y.cpu())) << what << ", run " << again;
            }
    }
}

// The column-stationary kernel's cases of n rows of K = k, bf16 and fp16: every plan takes it,
// the SwiGLU made by each warp for its slice where one is fused.
void expect_column_stationary_cases(backend::device& dev, std::int64_t n, std::int64_t k) {
    expect_one_token_cases(
        dev, n, {at::kBFloat16, at::kHalf}, [k](at::ScalarType) { return k; },
        [](const std::string& what, const kernels::gemv_plan& plan) {
            EXPECT_TRUE(plan.column_stationary && !plan.balanced) << what;
            EXPECT_EQ(plan.swiglu_slices, plan.fused_swiglu) << what;
        });
}

} // namespace
#endif

TEST(gemv_claim_cuda, claimed_steps_match_float64_and_repeat_their_bits) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    // 4 rows a block of the one-token wave and 13 more: the balanced path, rows no block count
    // divides; K 16 bytes past whole 2 KB steps, rows of 8 KB or more (claimed; 2-byte elements
    // are column-stationary there by default since session 43)
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "0");
    const std::int64_t n = 16 * dev->caps().compute_units + 13;
    expect_one_token_cases(
        *dev, n, types(), [](at::ScalarType t) { return t == at::kFloat ? 2052 : 4104; },
        [](const std::string& what, const kernels::gemv_plan& plan) {
            EXPECT_TRUE(plan.claimed) << what;
        });
#endif
}

// The column-stationary kernel (FOURFOLD_GEMV_CS=1: at any row length), bf16 and fp16: K of 3
// slices of 512 elements (the last 128: K = 1152, 5 runs a block, the trial FOURFOLD_GEMV_CS_TAIL's
// rows), of 4, of 9 (the last one vector: K = 4104) and of 16; runs of 3-20 rows; the SwiGLU made
// by each warp for its slice.
TEST(gemv_claim_cuda, column_stationary_trial_matches_float64_and_repeats_its_bits) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "1");
    const std::int64_t n = 16 * dev->caps().compute_units + 13;
    for (const std::int64_t k :
         {std::int64_t{1152}, std::int64_t{2048}, std::int64_t{4104}, std::int64_t{8192}})
        expect_column_stationary_cases(*dev, n, k);
#endif
}

// The column-stationary kernel below the balanced path's 4 rows a block of the wave, 4 rows a run
// or more (on the H200: 1029 rows of K = 4104, 9 slices, one run a block, 7 or 8 rows a run; 1100
// of K = 4096, 8 slices, 2 runs a block, 4 or 5 rows a run), bf16 and fp16, every prologue, the
// bias or not.
TEST(gemv_claim_cuda, column_stationary_few_rows_match_float64_and_repeat_their_bits) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch few("FOURFOLD_GEMV_CS_FEW");
    const std::int64_t sms = dev->caps().compute_units;
    expect_column_stationary_cases(*dev, 8 * sms - 27, 4104);
    expect_column_stationary_cases(*dev, 8 * sms + 44, 4096);
#endif
}

#if FOURFOLD_WITH_KERNELS
namespace {
// The norm-fused column-stationary GEMV of each shape (bf16 and fp16) with the switch `sw` unset
// and set to "0" or "1" (`on`): the same bits both ways, finite; `check(what, plan, set)` sees
// each plan.
void expect_same_bits_either_way(
    backend::device& dev, const fourfold::testing::env_switch& sw, const char* on,
    const std::vector<std::pair<std::int64_t, std::int64_t>>& shapes,
    const std::function<void(const std::string&, const kernels::gemv_plan&, bool)>& check) {
    const workloads::call_context ctx(dev);
    auto gen = at::detail::createCPUGenerator(29);
    for (const auto t : {at::kBFloat16, at::kHalf})
        for (const auto& [n, k] : shapes) {
            const auto o = at::TensorOptions().dtype(t).device(dev.torch_device());
            auto r = [&](std::vector<std::int64_t> shape, double scale) {
                return (at::randn(shape, gen, at::TensorOptions().dtype(at::kDouble)) * scale)
                    .to(o);
            };
            const auto x = r({1, k}, 1.0), w = r({n, k}, 1.0 / std::sqrt(double(k)));
            const auto nw = r({k}, 0.5) + 1;
            auto ga = one_token(x.data_ptr(), w.data_ptr(), nullptr, n, k, k, t);
            ga.norm_weight = nw.data_ptr();
            const auto what =
                std::string(c10::toString(t)) + " " + std::to_string(n) + "x" + std::to_string(k);
            at::Tensor y[2];
            for (const bool set : {false, true}) {
                if (set)
                    sw.set(on);
                else
                    sw.unset();
                const auto plan = kernels::plan_gemv(ga, workloads::native::limits(ctx));
                EXPECT_TRUE(plan.column_stationary) << what << ": " << plan.describe();
                check(what + ": " + plan.describe(), plan, set);
                y[set] = mo::native_linear_rms_normed(x, nw, 1e-5, w, ctx).cpu();
            }
            EXPECT_TRUE(at::equal(y[0], y[1])) << what;
            EXPECT_TRUE(at::isfinite(y[0]).all().item<bool>()) << what;
        }
}
} // namespace
#endif

// The column-stationary kernel with the norm fused loads its first rows' weights before the
// prologue (session 47; FOURFOLD_GEMV_CS_FETCH_FIRST=0: after it): the order of loads alone, so
// the same bits either way, bf16 and fp16, K of 4, 9 and 16 slices, runs of 4-20 rows and of 7-8
// (below the balanced path's 4 rows a block). The cases' values against float64 are the tests
// above (the default order).
TEST(gemv_claim_cuda, column_stationary_norm_gives_the_same_bits_before_and_after_the_prologue) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "1");
    const fourfold::testing::env_switch first("FOURFOLD_GEMV_CS_FETCH_FIRST");
    const std::int64_t sms = dev->caps().compute_units;
    expect_same_bits_either_way(
        *dev, first, "0",
        {{16 * sms + 13, 2048}, {16 * sms + 13, 4104}, {16 * sms + 13, 8192}, {8 * sms - 27, 4104}},
        [](const std::string& what, const kernels::gemv_plan& plan, bool set) {
            EXPECT_EQ(plan.cs_fetch_first, !set) << what;
        });
#endif
}

// The trial FOURFOLD_GEMV_CS_HALF=1: the column-stationary kernel in two blocks of 8 warps an SM
// where a row's slices divide 8 (K = 2048: 4 slices, 4096: 8), the same runs as one block of 16:
// against float64 with every prologue, the bias or not, the same bits on every run, and the same
// bits as one block of 16 (runs of 4-20 rows, and of 4-5 below the balanced path's 4 rows a
// block).
TEST(gemv_claim_cuda, column_stationary_in_two_blocks_an_sm_matches_float64_and_one_block) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "1");
    const fourfold::testing::env_switch half("FOURFOLD_GEMV_CS_HALF", "1");
    const std::int64_t sms = dev->caps().compute_units;
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {
        {16 * sms + 13, 2048}, {16 * sms + 13, 4096}, {8 * sms + 44, 4096}};
    for (const auto& [n, k] : shapes)
        expect_one_token_cases(
            *dev, n, {at::kBFloat16, at::kHalf}, [k = k](at::ScalarType) { return k; },
            [](const std::string& what, const kernels::gemv_plan& plan) {
                EXPECT_TRUE(plan.column_stationary) << what;
                EXPECT_EQ(plan.threads, 256) << what;
            });
    expect_same_bits_either_way(*dev, half, "1", shapes,
                                [](const std::string& what, const kernels::gemv_plan& plan,
                                   bool set) { EXPECT_EQ(plan.threads, set ? 256 : 512) << what; });
#endif
}

// 2..8 tokens on the tensor cores in rounds (gemv_mma_rounds; FOURFOLD_GEMV_MMA_ROUNDS=1 takes it
// at every size, the default from 64 MiB of weights), bf16 and fp16, with and without the bias:
// blocks of 1, 2, 3 and 8 warps; 3 to 10 rounds a block (both buffers of the split's sums written
// again); K chunks that leave the last warps one unit or none (K = 160: 5 units over 3 warps; K =
// 416: 13 over 8); rows past the last whole tile. Within the type's tolerance of float64, and the
// same bits on 3 more runs.
TEST(gemv_claim_cuda, tensor_cores_in_rounds_match_float64_and_repeat_their_bits) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch rounds("FOURFOLD_GEMV_MMA_ROUNDS", "1");
    const workloads::call_context ctx(*dev);
    auto gen = at::detail::createCPUGenerator(29);
    struct shape {
        std::int64_t n, k;
    };
    for (const auto t : {at::kBFloat16, at::kHalf})
        for (const shape s : {shape{120000, 32}, shape{120000, 64}, shape{60005, 256},
                              shape{50021, 160}, shape{4099, 416}})
            for (const std::int64_t tokens : {2, 5, 8}) {
                const auto o = at::TensorOptions().dtype(t).device(dev->torch_device());
                auto r = [&](std::vector<std::int64_t> dims, double scale) {
                    return (at::randn(dims, gen, at::TensorOptions().dtype(at::kDouble)) * scale)
                        .to(t)
                        .to(at::kDouble);
                };
                const auto x = r({tokens, s.k}, 1.0),
                           w = r({s.n, s.k}, 1.0 / std::sqrt(double(s.k)));
                const auto b = r({s.n}, 1.0);
                const auto xg = x.to(o), wg = w.to(o);
                kernels::gemv_args ga;
                ga.x = xg.data_ptr();
                ga.w = wg.data_ptr();
                ga.tokens = tokens;
                ga.n = s.n;
                ga.k = s.k;
                ga.ld_x = s.k;
                ga.ld_w = s.k;
                ga.ld_y = s.n;
                ga.type = workloads::native::elem_of(t);
                const auto plan = kernels::plan_gemv(ga, workloads::native::limits(ctx));
                for (const bool bias : {false, true}) {
                    const auto what = std::string(c10::toString(t)) + " " + std::to_string(tokens) +
                                      "x" + std::to_string(s.n) + "x" + std::to_string(s.k) +
                                      (bias ? " + bias" : "") + ": " + plan.describe();
                    EXPECT_TRUE(plan.tensor_cores) << what;
                    EXPECT_GE(plan.mma_rounds, 1) << what;
                    const auto bg = bias ? b.to(o) : at::Tensor();
                    auto run = [&] { return mo::linear(xg, wg, bg, mo::op_path::native, &ctx); };
                    auto ref = at::matmul(x, w.t());
                    if (bias)
                        ref = ref + b;
                    const auto y = run();
                    ASSERT_TRUE(y.defined()) << what;
                    EXPECT_LT(scaled_error(y, ref), tolerance(t)) << what;
                    for (int again = 0; again < 3; ++again)
                        EXPECT_TRUE(at::equal(run().cpu(), y.cpu())) << what << ", run " << again;
                }
            }
#endif
}
