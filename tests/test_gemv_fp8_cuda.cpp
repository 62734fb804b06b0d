// GPU tests (ctest label gpu) of fourfold's FP8 weight-only GEMV (kernels/gemv_fp8.cu) through
// model_ops::linear_fp8, the function fp8_linear's native variants call: against the float64
// product with the dequantised weights over shapes on both paths (16-byte and scalar: odd K,
// offset and strided views), 1 to 8 tokens, both scale kinds, with and without bias; NaN
// weights; chains of dependent launches, each link reading the one before's output, eager and
// captured; and through the workload's ledgers: both correctness figures in the record, graph
// capture, the plan in the facts. Each test skips when no CUDA device is visible, the build has
// no native kernels or libtorch has no float8_e4m3fn.
#include "env_switch.hpp"
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/workloads/model_ops/linear_fp8.hpp"
#include "fourfold/workloads/workload.hpp"
#include "replays_cuda.hpp"
#include "runner_helpers.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <gtest/gtest.h>
#include <iostream>
#include <limits>
#include <utility>
#include <vector>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/gemv_fp8.hpp"
#include "fourfold/workloads/native.hpp"
#endif

using namespace fourfold;
using namespace fourfold::testing;

namespace {

std::unique_ptr<backend::device> gpu() {
    if (!FOURFOLD_WITH_KERNELS || !FOURFOLD_HAS_FLOAT8 || backend::cuda_device_count() == 0)
        return nullptr;
    return backend::open_device({backend::device_kind::cuda, 0});
}

#define REQUIRE_FP8_NATIVE(dev)                                                                    \
    auto dev = gpu();                                                                              \
    if (!dev)                                                                                      \
    GTEST_SKIP() << "no CUDA device visible, a build without native kernels, or a libtorch "       \
                    "without float8_e4m3fn"

// FOURFOLD_NATIVE_TEST_SIZES=small (the sanitizer stage) keeps the cases of at most 4 Mi weights.
bool too_big(std::int64_t elements) {
    const char* v = std::getenv("FOURFOLD_NATIVE_TEST_SIZES");
    return v && std::string(v) == "small" && elements > (std::int64_t{1} << 22);
}

#if FOURFOLD_HAS_FLOAT8
constexpr double k_e4m3_max = 448.0;

// Weights as fp8_linear makes them: bf16 uniform in +-1/sqrt(K), quantised per tensor or per row.
struct quantised {
    at::Tensor wq;    // [N, K] float8_e4m3fn, CPU
    at::Tensor scale; // [1] or [N] float32, CPU
};
quantised quantise(const at::Tensor& w_bf16, bool per_row) {
    const auto w = w_bf16.to(at::kFloat);
    const auto amax = per_row ? w.abs().amax(1, true) : w.abs().amax().reshape({1});
    const auto scale = (amax / k_e4m3_max).clamp_min(1e-12);
    const auto wq = (w / scale).clamp(-k_e4m3_max, k_e4m3_max).to(at::kFloat8_e4m3fn);
    return {wq, scale.reshape({-1}).contiguous()};
}

// x @ (s * Wq)^T + b in float64 on the CPU
at::Tensor dequantised_product(const at::Tensor& x, const at::Tensor& wq, const at::Tensor& scale,
                               const at::Tensor& bias) {
    auto w = wq.cpu().to(at::kFloat).to(at::kDouble);
    const auto s = scale.cpu().to(at::kDouble).reshape({-1});
    w = s.numel() == 1 ? w * s[0] : w * s.unsqueeze(1);
    auto y = at::linear(x.cpu().to(at::kDouble), w);
    return bias.defined() ? y + bias.cpu().to(at::kDouble) : y;
}

// The kernel's own budget (fp8_linear's kernel_tolerance): one rounding to bf16 of fp32 sums
// of exact products. Elementwise |y - ref| <= 8e-3 (|ref| + RMS(ref)), relative L2 <= 4e-3.
void expect_kernel_error_within_budget(const at::Tensor& y, const at::Tensor& ref,
                                       const std::string& what) {
    ASSERT_EQ(y.sizes(), ref.sizes()) << what;
    const auto out = y.cpu().to(at::kDouble);
    ASSERT_TRUE(at::isfinite(out).all().item<bool>()) << what;
    const double rms = ref.pow(2).mean().sqrt().item<double>();
    const auto excess = (out - ref).abs() - 8e-3 * (ref.abs() + rms);
    EXPECT_LE(excess.max().item<double>(), 0.0) << what;
    const double rel_l2 = ((out - ref).norm().item<double>()) / ref.norm().item<double>();
    EXPECT_LE(rel_l2, 4e-3) << what;
}

struct shape {
    std::int64_t t, n, k;
};

at::Tensor run_fp8(backend::device& dev, const at::Tensor& x, const at::Tensor& wq,
                   const at::Tensor& scale, const at::Tensor& bias, json* facts = nullptr) {
    const workloads::call_context ctx(dev, facts);
    auto y = workloads::model_ops::linear_fp8(x, wq, scale, bias, ctx);
    dev.synchronize();
    return y.cpu();
}

// model_ops' FP8 GEMV with prologue p ("none", "rms_norm": RMSNorm(x) with nw and eps, no bias;
// "swiglu": x as [gate | up] rows), on the host; undefined where the plan does not fuse it.
at::Tensor run_with_prologue(backend::device& dev, const std::string& p, const at::Tensor& x,
                             const at::Tensor& nw, double eps, const at::Tensor& wq,
                             const at::Tensor& scale, const at::Tensor& bias, json* facts) {
    const workloads::call_context ctx(dev, facts);
    namespace mo = workloads::model_ops;
    auto y = p == "rms_norm" ? mo::linear_fp8_rms_normed(x, nw, eps, wq, scale, ctx)
             : p == "swiglu" ? mo::linear_fp8_swiglu(x, wq, scale, bias, ctx)
                             : mo::linear_fp8(x, wq, scale, bias, ctx);
    dev.synchronize();
    return y.defined() ? y.cpu() : y;
}

// One token's FP8 GEMV through model_ops with each prologue (none, RMSNorm, SwiGLU; with and
// without the bias, where model_ops takes one) over n x k weights of both scale kinds (seeded
// seed + per_row): each case within the kernel's budget of the float64 product of what the
// prologue rounds with the dequantised weights, its facts naming the prologue and passed to
// `check_path` (the case's name, its prologue, the kernel's facts), and the same bits on `repeats`
// more runs. Adds the cases run to `cases`.
void expect_prologue_cases(
    backend::device& dev, std::int64_t n, std::int64_t k, std::uint64_t seed, int repeats,
    int& cases,
    const std::function<void(const std::string&, const std::string&, const json&)>& check_path) {
    const auto d = dev.torch_device();
    const double eps = 1e-5;
    for (const bool per_row : {false, true}) {
        at::manual_seed(seed + per_row);
        const double bound = 1.0 / std::sqrt(static_cast<double>(k));
        const auto w = at::rand({n, k}).mul(2 * bound).sub(bound).to(at::kBFloat16);
        const auto q = quantise(w, per_row);
        const auto x = at::randn({1, 2 * k}).to(at::kBFloat16);
        const auto nw = at::randn({k}).mul(0.5).add(1).to(at::kBFloat16);
        const auto b = at::randn({n}).mul(bound).to(at::kBFloat16);
        const auto wq = q.wq.to(d), scale = q.scale.to(d);
        for (const char* pro : {"none", "rms_norm", "swiglu"})
            for (const bool bias : {false, true}) {
                const std::string p = pro;
                if (p == "rms_norm" && bias)
                    continue; // model_ops' normed GEMV takes no bias
                const auto xd = (p == "swiglu" ? x : x.narrow(1, 0, k)).to(at::kDouble);
                at::Tensor a; // what the GEMV multiplies, as its prologue rounds it
                if (p == "none") {
                    a = xd;
                } else if (p == "rms_norm") {
                    const auto inv = (xd.pow(2).mean(1, true) + eps).rsqrt();
                    a = (xd * inv * nw.to(at::kDouble)).to(at::kBFloat16).to(at::kDouble);
                } else {
                    const auto g = xd.narrow(1, 0, k), u = xd.narrow(1, k, k);
                    a = (g * at::sigmoid(g) * u).to(at::kBFloat16).to(at::kDouble);
                }
                const auto ref = dequantised_product(a, q.wq, q.scale, bias ? b : at::Tensor());
                const auto xg = xd.to(at::kBFloat16).to(d);
                const auto bg = bias ? b.to(d) : at::Tensor();
                const auto nwd = nw.to(d);
                auto run = [&](json* facts) {
                    return run_with_prologue(dev, p, xg, nwd, eps, wq, scale, bg, facts);
                };
                json facts;
                const auto y = run(&facts);
                const auto what =
                    fmt::format("{}x{} {} {}{}: {}", n, k, per_row ? "per row" : "per tensor", p,
                                bias ? " + bias" : "", facts.dump());
                ASSERT_TRUE(y.defined()) << what;
                check_path(what, p, facts["kernel"]);
                EXPECT_EQ(facts["kernel"]["prologue"], p == "rms_norm" ? "RMSNorm fused"
                                                       : p == "swiglu" ? "SwiGLU fused"
                                                                       : "none")
                    << what;
                expect_kernel_error_within_budget(y, ref, what);
                for (int again = 0; again < repeats; ++again)
                    EXPECT_TRUE(at::equal(run(nullptr), y)) << what << ", run " << again;
                ++cases;
            }
    }
}

#endif

} // namespace

TEST(gemv_fp8, is_compiled_for_this_device) {
    REQUIRE_FP8_NATIVE(dev);
    EXPECT_EQ(workloads::model_ops::linear_fp8_unavailable(*dev), std::nullopt);
#if FOURFOLD_WITH_KERNELS
    EXPECT_GT(kernels::gemv_fp8_code_version(0), 0);
#endif
}

TEST(gemv_fp8, matches_the_float64_dequantised_product_over_shapes_tokens_and_scales) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8
    // 16-byte path: K % 16 == 0 (one row a warp, short rows 2 or 4 to a warp, split K for small
    // N, the persistent grid from 2 row groups a resident warp; one token from 4 rows a block of
    // the wave with rows of 2 KB to 16 KB column-stationary: 2112 x 2048 its least, 3000 x 2064
    // a last slice of one vector, 4096 x 14336 14 slices; wider rows balanced: 2112 x 16400 rows
    // of 9 steps cut between warps, 3000 x 18448 a last step of one vector);
    // the scalar path: odd K, K % 16 == 8
    const std::vector<shape> shapes{
        {1, 1, 16},      {1, 7, 48},       {1, 33, 4096},    {1, 768, 2048},   {1, 4096, 4096},
        {1, 4096, 8192}, {1, 14336, 4096}, {1, 8192, 1024},  {1, 65536, 512},  {1, 32000, 4096},
        {1, 5, 1001},    {1, 300, 4104},   {1, 1, 1},        {1, 2048, 14336}, {1, 2112, 2048},
        {1, 3000, 2064}, {1, 4096, 14336}, {1, 2112, 16400}, {1, 3000, 18448}};
    std::vector<shape> all = shapes;
    for (std::int64_t t = 2; t <= 8; ++t)
        for (const auto& s : {shape{t, 257, 512}, shape{t, 4096, 4096}, shape{t, 1000, 1000},
                              shape{t, 64, 4112}, shape{t, 2048, 16}})
            all.push_back(s);
    const auto on_dev = at::TensorOptions().device(dev->torch_device());
    std::uint64_t seed = 1;
    int cases = 0;
    for (const auto& s : all) {
        if (too_big(s.n * s.k))
            continue;
        for (const bool per_row : {false, true}) {
            const bool with_bias = (seed++ % 2) == 0;
            at::manual_seed(seed);
            const double bound = 1.0 / std::sqrt(static_cast<double>(s.k));
            const auto w = at::rand({s.n, s.k}).mul(2 * bound).sub(bound).to(at::kBFloat16);
            const auto x = at::randn({s.t, s.k}).to(at::kBFloat16);
            const auto b = with_bias ? at::randn({s.n}).mul(bound).to(at::kBFloat16) : at::Tensor();
            const auto q = quantise(w, per_row);
            json facts;
            const auto y = run_fp8(*dev, x.to(on_dev.device()), q.wq.to(on_dev.device()),
                                   q.scale.to(on_dev.device()),
                                   with_bias ? b.to(on_dev.device()) : at::Tensor(), &facts);
            const auto what =
                fmt::format("{}x{}x{} {} {}: {}", s.t, s.n, s.k, per_row ? "per row" : "per tensor",
                            with_bias ? "bias" : "no bias", facts.dump());
            expect_kernel_error_within_budget(y, dequantised_product(x, q.wq, q.scale, b), what);
            EXPECT_EQ(facts["kernel"]["vectorised"].get<bool>(), s.k % 16 == 0) << what;
            EXPECT_EQ(facts["kernel"]["scaling"], per_row && s.n > 1 ? "per_row" : "per_tensor")
                << what;
            ++cases;
        }
    }
    EXPECT_GE(cases, 20);
#endif
}

// One token with K past the column-stationary kernel's 16 KB (K = 16400, 20464): with a prologue
// on the claimed path (gemv_claim over e4m3 weights, 132 blocks of 32 warps on the H200), without
// one on the balanced path: 4 rows a block of the balanced wave and 13 more (no block count
// divides them), rows 16 bytes past whole 2 KB steps and 16 bytes short of them, both scale kinds,
// the RMSNorm and the SwiGLU made in shared memory or no prologue, with and without the bias:
// against the float64 product of what the prologue rounds with the dequantised weights, and the
// same bits on every run (a claimed step's sum has its own slot, whichever warp claimed it). Whole
// sizes: the sanitizer stage runs it as it is.
TEST(gemv_fp8, claimed_steps_and_their_prologues_match_float64_and_repeat_their_bits) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8
    const std::int64_t n = 16 * dev->caps().compute_units + 13;
    int cases = 0;
    for (const std::int64_t k : {std::int64_t{16400}, std::int64_t{20464}})
        expect_prologue_cases(
            *dev, n, k, k, 3, cases,
            [](const std::string& what, const std::string& p, const json& kernel) {
                EXPECT_EQ(kernel["claimed"].get<bool>(), p != "none") << what;
                EXPECT_FALSE(kernel["column_stationary"].get<bool>()) << what;
            });
    EXPECT_EQ(cases, 20);
#endif
}

// The column-stationary kernel (one token, K up to 16 KB): K of 2 slices of 1 KB
// (2048), 5 with the last one partial and its last group of 32 vectors partial (4112: 257
// vectors), 14 with the last partial (14320; 2 warps of the block idle) and 16 (16384); runs of
// 2-17 rows (a partial batch of 8) and, at K = 4112, of 42-43 (several batches); both scale kinds;
// the RMSNorm and the SwiGLU made in shared memory or none, with and without the bias: within the
// kernel's budget of the float64 product of what the prologue rounds with the dequantised
// weights, and the same bits on every run. Whole sizes: the sanitizer stage runs it as it is.
TEST(gemv_fp8, column_stationary_slices_match_float64_and_repeat_their_bits) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8
    const std::int64_t sms = dev->caps().compute_units;
    int cases = 0;
    const std::vector<std::pair<std::int64_t, std::int64_t>> shapes = {{16 * sms + 13, 2048},
                                                                       {16 * sms + 13, 4112},
                                                                       {128 * sms + 5, 4112},
                                                                       {16 * sms + 13, 14320},
                                                                       {16 * sms + 13, 16384}};
    for (const auto& [n, k] : shapes)
        expect_prologue_cases(*dev, n, k, n + k, 2, cases,
                              [](const std::string& what, const std::string&, const json& kernel) {
                                  EXPECT_TRUE(kernel["column_stationary"].get<bool>()) << what;
                              });
    EXPECT_EQ(cases, 50);
#endif
}

// The column-stationary fused SwiGLU made by each warp for its slice (the default) and once a
// block in shared memory (FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0): the same bits, over K of 2, 5 (a
// partial slice) and 14 slices, both scale kinds, with the bias; the RMSNorm's path unchanged.
TEST(gemv_fp8, column_stationary_swiglu_by_slices_gives_the_block_prologues_bits) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8
    const fourfold::testing::env_switch slices("FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES");
    const auto d = dev->torch_device();
    const std::int64_t n = 16 * dev->caps().compute_units + 13;
    int cases = 0;
    for (const std::int64_t k : {std::int64_t{2048}, std::int64_t{4112}, std::int64_t{14320}})
        for (const bool per_row : {false, true}) {
            at::manual_seed(k + per_row);
            const double bound = 1.0 / std::sqrt(static_cast<double>(k));
            const auto q =
                quantise(at::rand({n, k}).mul(2 * bound).sub(bound).to(at::kBFloat16), per_row);
            const auto wq = q.wq.to(d), scale = q.scale.to(d);
            const auto x = at::randn({1, 2 * k}).to(at::kBFloat16).to(d);
            const auto nw = at::randn({k}).mul(0.5).add(1).to(at::kBFloat16).to(d);
            const auto b = at::randn({n}).mul(bound).to(at::kBFloat16).to(d);
            for (const std::string p : {"rms_norm", "swiglu"}) {
                const auto xp = p == "swiglu" ? x : x.narrow(1, 0, k).contiguous();
                const auto bp = p == "swiglu" ? b : at::Tensor();
                slices.set("0");
                const auto base = run_with_prologue(*dev, p, xp, nw, 1e-5, wq, scale, bp, nullptr);
                slices.unset();
                json facts;
                const auto y = run_with_prologue(*dev, p, xp, nw, 1e-5, wq, scale, bp, &facts);
                const auto what = fmt::format("{}x{} {} {}: {}", n, k,
                                              per_row ? "per row" : "per tensor", p, facts.dump());
                ASSERT_TRUE(base.defined() && y.defined()) << what;
                const auto path = facts["kernel"]["path"].get<std::string>();
                EXPECT_EQ(path.find("each warp") != std::string::npos, p == "swiglu") << what;
                EXPECT_TRUE(at::equal(y, base)) << what;
                ++cases;
            }
        }
    EXPECT_EQ(cases, 12);
#endif
}

// Off the claimed path (several tokens, too few rows) the fused forms give an undefined tensor,
// and the caller runs the norm or the SwiGLU on its own.
TEST(gemv_fp8, a_prologue_off_the_claimed_path_is_an_undefined_tensor) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8
    const auto d = dev->torch_device();
    const workloads::call_context ctx(*dev);
    const auto q = quantise(at::rand({768, 2048}).mul(0.04).sub(0.02).to(at::kBFloat16), true);
    const auto wq = q.wq.to(d), scale = q.scale.to(d);
    const auto nw = at::ones({2048}, at::TensorOptions().dtype(at::kBFloat16).device(d));
    const auto x = at::randn({2, 4096}).to(at::kBFloat16).to(d);
    namespace mo = workloads::model_ops;
    EXPECT_FALSE(
        mo::linear_fp8_rms_normed(x.narrow(1, 0, 2048).narrow(0, 0, 1), nw, 1e-5, wq, scale, ctx)
            .defined()); // 768 rows: under 4 a block of the wave
    EXPECT_FALSE(mo::linear_fp8_swiglu(x, wq, scale, at::Tensor(), ctx).defined()); // 2 tokens
    EXPECT_THROW(mo::linear_fp8_swiglu(x.narrow(1, 0, 2048), wq, scale, at::Tensor(), ctx),
                 std::invalid_argument); // [tokens, K], not [tokens, 2K]
#endif
}

TEST(gemv_fp8, offset_and_strided_views_take_the_scalar_path_and_stay_exact) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8
    const auto d = dev->torch_device();
    const std::int64_t n = 300, k = 4096;
    for (const std::int64_t t : {1, 3, 8}) {
        at::manual_seed(t);
        const auto w = at::rand({n, k}).mul(0.03).sub(0.015).to(at::kBFloat16);
        const auto q = quantise(w, true);
        const auto x = at::randn({t, k}).to(at::kBFloat16);
        // x at an offset of 3 elements, W at an offset of one byte, the scales a [1, N] row
        const auto x_view = at::cat({at::zeros({t, 3}, x.options()), x}, 1).to(d).narrow(1, 3, k);
        const auto wide = at::empty({n, k + 1}, at::TensorOptions().dtype(at::kFloat8_e4m3fn));
        wide.narrow(1, 1, k).copy_(q.wq);
        const auto w_view = wide.to(d).narrow(1, 1, k);
        json facts;
        const auto y =
            run_fp8(*dev, x_view, w_view, q.scale.reshape({1, n}).to(d), at::Tensor(), &facts);
        expect_kernel_error_within_budget(y, dequantised_product(x, q.wq, q.scale, at::Tensor()),
                                          "offset views, tokens " + std::to_string(t));
        EXPECT_FALSE(facts["kernel"]["vectorised"].get<bool>()) << facts.dump();
        // W stored transposed (K is not the contiguous dimension)
        const auto w_t = q.wq.t().contiguous().to(d).t();
        json facts_t;
        const auto y_t = run_fp8(*dev, x.to(d), w_t, q.scale.to(d), at::Tensor(), &facts_t);
        expect_kernel_error_within_budget(y_t, dequantised_product(x, q.wq, q.scale, at::Tensor()),
                                          "transposed W, tokens " + std::to_string(t));
        EXPECT_NE(facts_t["kernel"]["path"].get<std::string>().find("not the contiguous"),
                  std::string::npos)
            << facts_t.dump();
    }
#endif
}

TEST(gemv_fp8, a_nan_weight_makes_its_row_nan_and_no_other) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8
    const auto d = dev->torch_device();
    for (const std::int64_t k : {4096, 1001}) { // both paths
        const std::int64_t n = 64;
        const auto bytes = at::full({n, k}, 0x38, at::TensorOptions().dtype(at::kByte)); // 1.0
        bytes[5][k / 2] = 0x7f; // e4m3fn NaN
        const auto wq = bytes.view(at::kFloat8_e4m3fn);
        const auto x = at::ones({2, k}).to(at::kBFloat16);
        const auto y = run_fp8(*dev, x.to(d), wq.to(d), at::ones({1}).to(d), at::Tensor());
        const auto nan = at::isnan(y.to(at::kFloat));
        EXPECT_TRUE(nan.select(1, 5).all().item<bool>()) << "k " << k;
        EXPECT_EQ(nan.sum().item<std::int64_t>(), 2) << "k " << k;
        // the other rows sum K ones: K rounded once to bf16
        EXPECT_EQ(
            y.to(at::kFloat)[0][0].item<float>(),
            at::full({1}, static_cast<double>(k)).to(at::kBFloat16).to(at::kFloat).item<float>())
            << "k " << k;
    }
#endif
}

// y_1 = f_1(x), y_2 = f_2(y_1), ...: each link a dependent launch (from sm_90) reading the
// output of the one just before it. Launched back to back with no host synchronisation, eagerly
// and as a captured graph: a link that read its x before the link before it had written all of
// it would read the NaN every output is set to first. Each link must match the float64 product
// of its own input, and every replay the eager chain bitwise.
TEST(gemv_fp8, a_chain_of_dependent_launches_matches_eager_captured_and_float64) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8 && FOURFOLD_WITH_KERNELS
    const auto d = dev->torch_device();
    const workloads::call_context ctx(*dev);
    const auto& limits = workloads::native::limits(ctx);
    struct chain {
        std::int64_t t;
        std::vector<std::int64_t> widths; // link i: K = widths[i], N = widths[i + 1]
        int sm_count;                     // the plan's; fewer than the device's, a smaller wave
        const char* path;                 // every link's, or the vector links' of a mixed chain
    };
    const std::vector<chain> chains{
        {1, {4096, 4096, 4096, 4096, 4096, 4096, 4096}, 0, "1 KB slice"},
        // 4 SMs: column-stationary links of 600 and 1000 rows (runs of 30 and 50 rows, a last
        // slice of one vector) between scalar ones (K = 600, 1000)
        {1, {2064, 600, 2064, 1000, 2064}, 4, "1 KB slice"},
        // a balanced link (K past 16 slices) and a column-stationary one
        {1, {16400, 2112, 16400}, 0, "16-byte loads"},
        {1, {1024, 1024, 1024, 1024, 1024}, 0, "a block per row block"},
        {4, {4096, 4096, 4096, 4096, 4096}, 0, "streamed"},
        {8, {2048, 2048, 2048, 2048, 2048}, 0, "a block per row block"},
        {3, {1000, 1000, 1000, 1000, 1000}, 0, "scalar"}};
    struct link {
        quantised q;
        at::Tensor wq, scale, bias, y; // on the device
        at::Tensor bias_cpu;
        kernels::gemv_fp8_args a;
        kernels::gemv_fp8_plan plan;
    };
    std::uint64_t seed = 100;
    for (const auto& c : chains) {
        std::int64_t biggest = 0;
        for (std::size_t i = 0; i + 1 < c.widths.size(); ++i)
            biggest = std::max(biggest, c.widths[i] * c.widths[i + 1]);
        if (too_big(biggest))
            continue;
        auto lim = limits;
        if (c.sm_count > 0)
            lim.sm_count = c.sm_count;
        at::manual_seed(++seed);
        const auto x = at::randn({c.t, c.widths[0]}).to(at::kBFloat16).to(d);
        std::vector<link> links(c.widths.size() - 1);
        for (std::size_t i = 0; i < links.size(); ++i) {
            auto& l = links[i];
            const std::int64_t k = c.widths[i], n = c.widths[i + 1];
            const double bound = 1.0 / std::sqrt(static_cast<double>(k));
            const bool per_row = i % 2 == 0;
            l.q = quantise(at::rand({n, k}).mul(2 * bound).sub(bound).to(at::kBFloat16), per_row);
            l.wq = l.q.wq.to(d);
            l.scale = l.q.scale.to(d);
            if (i % 2 == 1) {
                l.bias_cpu = at::randn({n}).mul(bound).to(at::kBFloat16);
                l.bias = l.bias_cpu.to(d);
            }
            l.y = at::empty({c.t, n}, x.options());
            auto& a = l.a;
            a.x = i == 0 ? x.data_ptr() : links[i - 1].y.data_ptr();
            a.w = l.wq.data_ptr();
            a.scale = l.scale.data_ptr<float>();
            a.bias = l.bias.defined() ? l.bias.data_ptr() : nullptr;
            a.y = l.y.data_ptr();
            a.tokens = c.t;
            a.n = n;
            a.k = k;
            a.ld_x = k;
            a.ld_w = k;
            a.ld_y = n;
            a.scaling = per_row ? kernels::fp8_scaling::per_row : kernels::fp8_scaling::per_tensor;
            l.plan = kernels::plan_gemv_fp8(a, lim);
            ASSERT_TRUE(l.plan.valid.empty()) << l.plan.valid;
            EXPECT_EQ(l.plan.dependent_launch, limits.cc_major >= 9) << l.plan.describe();
            if (l.plan.vectorised || std::string(c.path) == "scalar") {
                EXPECT_NE(l.plan.describe().find(c.path), std::string::npos) << l.plan.describe();
            }
        }
        auto poison = [&] {
            for (auto& l : links)
                l.y.fill_(std::numeric_limits<float>::quiet_NaN());
        };
        auto run_chain = [&] {
            for (const auto& l : links)
                workloads::native::check(
                    kernels::launch_gemv_fp8(l.plan, l.a, workloads::native::stream(ctx)),
                    "gemv_fp8");
        };
        const auto what = [&](std::size_t i) {
            return fmt::format("chain {} x {} link {}: {}", c.t, fmt::join(c.widths, "-"), i,
                               links[i].plan.describe());
        };
        poison();
        run_chain();
        dev->synchronize();
        std::vector<at::Tensor> eager;
        for (std::size_t i = 0; i < links.size(); ++i) {
            eager.push_back(links[i].y.cpu());
            const auto in = i == 0 ? x.cpu() : eager[i - 1];
            expect_kernel_error_within_budget(
                eager[i],
                dequantised_product(in, links[i].q.wq, links[i].q.scale, links[i].bias_cpu),
                what(i));
        }
        expect_replays_give(
            *dev, run_chain, poison,
            [&] {
                std::vector<at::Tensor> y;
                for (const auto& l : links)
                    y.push_back(l.y.cpu());
                return y;
            },
            eager, what);
    }
#endif
}

// A decoder's feed-forward block twice over, as the FP8 decoder launches it: gate_up = the GEMV of
// RMSNorm(h) (N = 2I), then h' = the GEMV of SwiGLU(gate_up) with h as the bias (the residual),
// each launch dependent on the one before and reading its output. The outputs are NaN before each
// run, so a link that read its input before the link before had written all of it gives NaN or
// other bits. With the SwiGLU made once a block (FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0) and by each
// warp (the default): the same bits, eagerly and in 3 replays of the captured chain, and the
// SwiGLU links within the kernel's budget of the float64 product of the gate_up link's output.
// Every link column-stationary (N of 4 rows a block of the wave or more, K of 2 KB or more;
// 3 and 6 slices). (Session 41:
// the SwiGLU made by each warp from __ldg loads gave the same bits on every single-kernel test
// and a relative L2 of 0.27 in llama3-8b's decode.)
TEST(gemv_fp8, a_fused_swiglu_link_reads_its_gate_up_link_only_after_it) {
    REQUIRE_FP8_NATIVE(dev);
#if FOURFOLD_HAS_FLOAT8 && FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch slices("FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES");
    const auto d = dev->torch_device();
    const workloads::call_context ctx(*dev);
    const auto& limits = workloads::native::limits(ctx);
    const std::int64_t h = std::max<std::int64_t>(2560, 16 * std::int64_t{limits.sm_count} + 16);
    const std::int64_t inter = 5632;
    at::manual_seed(41);
    const auto x = at::randn({1, h}).to(at::kBFloat16).to(d);
    struct layer {
        quantised gu, down;
        at::Tensor gu_w, gu_s, down_w, down_s, norm, gu_y, y;
    };
    std::vector<layer> layers(2);
    for (auto& l : layers) {
        const double b1 = 1.0 / std::sqrt(static_cast<double>(h));
        const double b2 = 1.0 / std::sqrt(static_cast<double>(inter));
        l.gu = quantise(at::rand({2 * inter, h}).mul(2 * b1).sub(b1).to(at::kBFloat16), true);
        l.down = quantise(at::rand({h, inter}).mul(2 * b2).sub(b2).to(at::kBFloat16), false);
        l.gu_w = l.gu.wq.to(d);
        l.gu_s = l.gu.scale.to(d);
        l.down_w = l.down.wq.to(d);
        l.down_s = l.down.scale.to(d);
        l.norm = at::randn({h}).mul(0.5).add(1).to(at::kBFloat16).to(d);
        l.gu_y = at::empty({1, 2 * inter}, x.options());
        l.y = at::empty({1, h}, x.options());
    }
    struct launch {
        kernels::gemv_fp8_args a;
        kernels::gemv_fp8_plan plan;
    };
    const auto plan_chain = [&] {
        std::vector<launch> chain;
        const void* in = x.data_ptr();
        for (auto& l : layers) {
            launch g;
            g.a.x = in;
            g.a.w = l.gu_w.data_ptr();
            g.a.scale = l.gu_s.data_ptr<float>();
            g.a.y = l.gu_y.data_ptr();
            g.a.tokens = 1;
            g.a.n = 2 * inter;
            g.a.k = h;
            g.a.ld_x = h;
            g.a.ld_w = h;
            g.a.ld_y = 2 * inter;
            g.a.scaling = kernels::fp8_scaling::per_row;
            g.a.norm_weight = l.norm.data_ptr();
            g.a.norm_eps = 1e-5;
            launch s;
            s.a.x = l.gu_y.data_ptr();
            s.a.swiglu_x = true;
            s.a.w = l.down_w.data_ptr();
            s.a.scale = l.down_s.data_ptr<float>();
            s.a.bias = in; // the residual
            s.a.y = l.y.data_ptr();
            s.a.tokens = 1;
            s.a.n = h;
            s.a.k = inter;
            s.a.ld_x = 2 * inter;
            s.a.ld_w = inter;
            s.a.ld_y = h;
            s.a.scaling = kernels::fp8_scaling::per_tensor;
            for (auto* c : {&g, &s}) {
                c->plan = kernels::plan_gemv_fp8(c->a, limits);
                EXPECT_TRUE(c->plan.valid.empty() && c->plan.column_stationary)
                    << c->plan.describe() << c->plan.valid;
                chain.push_back(*c);
            }
            in = l.y.data_ptr();
        }
        return chain;
    };
    const auto poison = [&] {
        for (auto& l : layers) {
            l.gu_y.fill_(std::numeric_limits<float>::quiet_NaN());
            l.y.fill_(std::numeric_limits<float>::quiet_NaN());
        }
    };
    const auto outputs = [&] {
        std::vector<at::Tensor> out;
        for (auto& l : layers) {
            out.push_back(l.gu_y.cpu());
            out.push_back(l.y.cpu());
        }
        return out;
    };
    std::vector<at::Tensor> base;
    const env_switch prefetch("FOURFOLD_GEMV_EPILOGUE_PREFETCH");
    // each SwiGLU form with the epilogue's scale and bias fetched at the start (the default),
    // then the SwiGLU by slices with them loaded after the block barrier
    for (const auto& form :
         std::vector<std::pair<bool, bool>>{{false, true}, {true, true}, {true, false}}) {
        const bool by_slices = form.first, early = form.second;
        slices.set(by_slices ? "1" : "0");
        prefetch.set(early ? "1" : "0");
        const auto chain = plan_chain();
        const auto run_chain = [&] {
            for (const auto& c : chain)
                workloads::native::check(
                    kernels::launch_gemv_fp8(c.plan, c.a, workloads::native::stream(ctx)),
                    "gemv_fp8");
        };
        const auto what = [&](std::size_t i) {
            return fmt::format("SwiGLU by slices {}, epilogue prefetch {}, launch {}: {}",
                               by_slices, early, i, chain[i].plan.describe());
        };
        EXPECT_EQ(chain[1].plan.swiglu_slices, by_slices) << what(1);
        EXPECT_EQ(chain[1].plan.epilogue_prefetch, early) << what(1);
        poison();
        run_chain();
        dev->synchronize();
        const auto eager = outputs();
        if (base.empty()) {
            base = eager;
            for (std::size_t i = 1; i < base.size(); i += 2) {
                const auto& l = layers[i / 2];
                const auto gu = base[i - 1].to(at::kDouble);
                const auto g = gu.narrow(1, 0, inter), u = gu.narrow(1, inter, inter);
                const auto a = (g * at::sigmoid(g) * u).to(at::kBFloat16).to(at::kDouble);
                const auto residual = i == 1 ? x.cpu() : base[i - 2];
                expect_kernel_error_within_budget(
                    base[i], dequantised_product(a, l.down.wq, l.down.scale, residual), what(i));
            }
        }
        for (std::size_t i = 0; i < eager.size(); ++i)
            ASSERT_TRUE(at::equal(eager[i], base[i])) << what(i) << ", eager";
        expect_replays_give(*dev, run_chain, poison, outputs, base, what);
    }
#endif
}

TEST(gemv_fp8, fp8_linear_records_both_errors_and_is_graph_captured) {
    REQUIRE_FP8_NATIVE(dev);
    const auto r = run_jobs(*dev,
                            {{"fp8_linear",
                              json{{"tokens", 1}, {"n", 4096}, {"k", 4096}},
                              dtype::bf16,
                              {"bf16", "native_bf16", "native_fp8_tensor", "native_fp8_row"},
                              ""}},
                            "op_time,correctness");
    for (const char* v : {"native_fp8_tensor", "native_fp8_row"}) {
        const auto* c = find_record(r, ledger::correctness, v);
        ASSERT_NE(c, nullptr) << v;
        ASSERT_EQ(c->status, record_status::ok) << v << ": " << c->reason;
        const auto& f = c->figures;
        EXPECT_EQ(f["verdict"], "PASS") << f.dump();
        // the shared metrics: against the original bf16 weights, the fp8 budget
        EXPECT_EQ(f["tolerance"]["rel_l2"], 0.08) << v;
        // the kernel's own error against the dequantised product, a bf16 rounding's budget
        const auto& ke = f["metrics"]["kernel_error"];
        EXPECT_EQ(ke["verdict"], "PASS") << ke.dump();
        EXPECT_EQ(ke["tolerance"]["rel_l2"], 4e-3) << ke.dump();
        const double kernel_l2 = ke["metrics"]["rel_l2"].get<double>();
        const double quant_l2 = f["metrics"]["quantisation_error"]["rel_l2"].get<double>();
        // the quantisation's error dominates the shared figure; the kernel's is a rounding's
        EXPECT_GT(quant_l2, 5 * kernel_l2) << f["metrics"].dump();
        EXPECT_NEAR(f["metrics"]["rel_l2"].get<double>(), quant_l2, 0.25 * quant_l2)
            << f["metrics"].dump();
        EXPECT_EQ(f["facts"]["kernel"]["scaling"],
                  std::string(v) == "native_fp8_row" ? "per_row" : "per_tensor");
        EXPECT_EQ(f["facts"]["weight_storage_bytes"],
                  4096 * 4096 + 4 * (std::string(v) == "native_fp8_row" ? 4096 : 1));
    }
    for (const char* v : {"bf16", "native_bf16", "native_fp8_tensor", "native_fp8_row"}) {
        const auto* t = find_record(r, ledger::op_time, v);
        ASSERT_NE(t, nullptr) << v;
        ASSERT_EQ(t->status, record_status::ok) << v << ": " << t->reason;
        EXPECT_EQ(t->figures["mode"], "graph") << v;
        std::cout << "fp8_linear 1x4096x4096 " << v << ": median " << t->figures["stats"]["median"]
                  << " us\n";
    }
    // the bf16 variants carry no second check
    EXPECT_FALSE(find_record(r, ledger::correctness, "native_bf16")
                     ->figures["metrics"]
                     .contains("kernel_error"));
}

// fp8_linear with a prologue runs the decoder's fused launch (model_ops::linear_fp8_rms_normed,
// linear_fp8_swiglu): the q/k/v shape with the RMSNorm, the down shape with the SwiGLU and the
// residual as the bias; both native variants PASS both checks (against the bf16 original and
// against the dequantised product, each after the prologue in float64), their facts say the
// column-stationary path with the prologue fused, and their op figures are graph-timed beside
// at::linear's; a shape off the claimed path is a skip with its reason.
TEST(gemv_fp8, fp8_linear_with_a_prologue_times_the_decoders_fused_launch) {
    REQUIRE_FP8_NATIVE(dev);
    struct shape_case {
        std::int64_t n, k;
        const char* prologue;
        bool bias;
        const char* fused;
    };
    for (const auto& c : {shape_case{6144, 4096, "rms_norm", false, "RMSNorm fused"},
                          shape_case{4096, 14336, "swiglu", true, "SwiGLU fused"}}) {
        const auto what = fmt::format("{} x {} {}", c.n, c.k, c.prologue);
        const auto r = run_jobs(*dev,
                                {{"fp8_linear",
                                  json{{"tokens", 1},
                                       {"n", c.n},
                                       {"k", c.k},
                                       {"prologue", c.prologue},
                                       {"bias", c.bias}},
                                  dtype::bf16,
                                  {"bf16", "native_bf16", "native_fp8_row"},
                                  ""}},
                                "op_time,correctness");
        for (const char* v : {"bf16", "native_bf16", "native_fp8_row"}) {
            const auto* k = find_record(r, ledger::correctness, v);
            ASSERT_NE(k, nullptr) << what << " " << v;
            ASSERT_EQ(k->status, record_status::ok) << what << " " << v << ": " << k->reason;
            const auto& f = k->figures;
            EXPECT_EQ(f["verdict"], "PASS") << what << " " << v << " " << f["metrics"].dump();
            EXPECT_TRUE(f["facts"].contains("prologue_path")) << what << " " << v;
            if (std::string(v) != "bf16") {
                EXPECT_EQ(f["facts"]["kernel"]["prologue"], c.fused)
                    << what << " " << v << " " << f["facts"].dump();
            }
            if (std::string(v) == "native_fp8_row") {
                EXPECT_TRUE(f["facts"]["kernel"]["column_stationary"].get<bool>())
                    << f["facts"].dump();
                EXPECT_EQ(f["metrics"]["kernel_error"]["verdict"], "PASS")
                    << what << " " << f["metrics"]["kernel_error"].dump();
            }
            const auto* t = find_record(r, ledger::op_time, v);
            ASSERT_NE(t, nullptr) << what << " " << v;
            ASSERT_EQ(t->status, record_status::ok) << what << " " << v << ": " << t->reason;
            EXPECT_EQ(t->figures["mode"], "graph") << what << " " << v;
            std::cout << "fp8_linear 1x" << what << (c.bias ? " + bias " : " ") << v << ": median "
                      << t->figures["stats"]["median"] << " us\n";
        }
    }
    const auto small =
        run_jobs(*dev,
                 {{"fp8_linear",
                   json{{"tokens", 1}, {"n", 64}, {"k", 256}, {"prologue", "swiglu"}},
                   dtype::bf16,
                   {"native_fp8_row"},
                   ""}},
                 "correctness");
    const auto* s = find_record(small, ledger::correctness, "native_fp8_row");
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->status, record_status::skipped);
    EXPECT_NE(s->reason.find("claimed path only"), std::string::npos) << s->reason;
}

TEST(gemv_fp8, more_than_8_tokens_is_a_skip_with_its_reason) {
    REQUIRE_FP8_NATIVE(dev);
    const auto r = run_jobs(*dev,
                            {{"fp8_linear",
                              json{{"tokens", 16}, {"n", 256}, {"k", 512}},
                              dtype::bf16,
                              {"native_fp8_tensor"},
                              ""}},
                            "correctness");
    const auto* c = find_record(r, ledger::correctness, "native_fp8_tensor");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->status, record_status::skipped);
    EXPECT_NE(c->reason.find("1 to 8 tokens"), std::string::npos) << c->reason;
}
