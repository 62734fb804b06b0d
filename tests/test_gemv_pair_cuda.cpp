// GPU tests (label gpu) of kernels/gemv.cu's GEMV pair (model_ops::native_linear_pair): both
// outputs bit for bit those of the two launches it replaces (the same grid cut, the same sums),
// with and without the SwiGLU prologue, in every dtype and at edge row counts; the pair's grid
// barrier over many launches and graph replays; the plan's refusals; and the pair's time beside
// the two launches' at llama3-8b's shapes (printed for docs/performance.md, never asserted).
#include "decoder_kernels_cuda.hpp"
#include "graph_timing.hpp"

#include "fourfold/workloads/model_ops/linear.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/gemv.hpp"
#endif

#include <ATen/CPUGeneratorImpl.h>
#include <array>
#include <cmath>
#include <iostream>

using namespace fourfold;
using namespace fourfold::testing::decoder_kernels;
namespace mo = fourfold::workloads::model_ops;

namespace {

struct pair_case {
    at::Tensor x, w, bias, norm, w2;
    bool swiglu = false;
};

// x [1, K] (or [1, 2K]), w [N, K], the residual as w's bias, norm [N], w2 [N2, N]
pair_case make_case(at::ScalarType t, std::int64_t n, std::int64_t k, std::int64_t n2,
                    bool swiglu, backend::device& dev, std::uint64_t seed) {
    const auto o = at::TensorOptions().dtype(t).device(dev.torch_device());
    auto gen = at::detail::createCPUGenerator(seed);
    auto r = [&](std::vector<std::int64_t> shape, double scale) {
        return (at::randn(shape, gen, at::TensorOptions().dtype(at::kFloat)) * scale).to(o);
    };
    pair_case c;
    c.swiglu = swiglu;
    c.x = r({1, (swiglu ? 2 : 1) * k}, 1.0);
    c.w = r({n, k}, 1.0 / std::sqrt(static_cast<double>(k)));
    c.bias = r({n}, 1.0);
    c.norm = r({n}, 0.5) + 1;
    c.w2 = r({n2, n}, 1.0 / std::sqrt(static_cast<double>(n)));
    return c;
}

// the two launches the pair replaces: the first GEMV (its SwiGLU fused or none), then the
// second with its RMSNorm fused
mo::linear_pair two_launches(const pair_case& c, const workloads::call_context& ctx) {
    mo::linear_pair r;
    r.y = c.swiglu ? mo::native_linear_swiglu(c.x, c.w, c.bias, ctx)
                   : mo::linear(c.x, c.w, c.bias, mo::op_path::native, &ctx);
    r.z = mo::native_linear_rms_normed(r.y, c.norm, 1e-5, c.w2, ctx);
    return r;
}

mo::linear_pair one_launch(const pair_case& c, const workloads::call_context& ctx) {
    return mo::native_linear_pair(c.x, c.w, c.bias, c.swiglu, c.norm, 1e-5, c.w2, ctx);
}

void expect_same_bits(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
    ASSERT_TRUE(a.defined() && b.defined()) << what;
    EXPECT_TRUE(at::equal(a.cpu(), b.cpu()))
        << what << ": max |diff| " << (a.cpu().to(at::kDouble) - b.cpu().to(at::kDouble)).abs().max().item<double>();
}

} // namespace

TEST(gemv_pair_cuda, both_outputs_are_the_bits_of_the_two_launches) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const workloads::call_context ctx(*dev);
    // the balanced path's least rows (one token's wave of blocks); its rows are 2 KB or more,
    // so the second GEMV's K (the first's N) is 1024 bf16 elements at least
    const std::int64_t wave = 4 * dev->caps().compute_units;
    const std::int64_t n0 = std::max<std::int64_t>(1024, (wave + 7) / 8 * 8);
    for (const auto t : types())
        for (const bool swiglu : {false, true})
            for (const auto& [n, k, n2] : std::vector<std::array<std::int64_t, 3>>{
                     {n0, 1024, wave},                // the least of each
                     {2 * n0 + 8, 2048, 3 * wave + 5}, // rows cut unevenly over the blocks
                     {4096, 4096, 6144}}) {           // llama3-8b's o then q/k/v widths
                const auto kk = t == at::kFloat ? k / 2 : k; // 2 KB rows at least
                const auto c = make_case(t, n, kk, n2, swiglu, *dev, 11 + n + kk);
                const auto want = two_launches(c, ctx);
                const auto got = one_launch(c, ctx);
                const auto what = std::string(c10::toString(t)) + (swiglu ? " swiglu " : " ") +
                                  std::to_string(n) + "x" + std::to_string(kk) + " then " +
                                  std::to_string(n2) + "x" + std::to_string(n);
                ASSERT_TRUE(got.y.defined()) << what << ": the pair's plan refused";
                expect_same_bits(got.y, want.y, what + " (first)");
                expect_same_bits(got.z, want.z, what + " (second)");
            }
#endif
}

TEST(gemv_pair_cuda, its_barrier_holds_over_launches_and_graph_replays) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const workloads::call_context ctx(*dev);
    const std::int64_t wave = 4 * dev->caps().compute_units;
    // a chain: each pair's second output is the next pair's x, so a barrier that let a block
    // through early would leave a stale or half-written row somewhere down the chain
    auto c = make_case(at::kBFloat16, std::max<std::int64_t>(1032, wave), 1024, 1024, false,
                       *dev, 5);
    const auto chain = [&](const auto& run) {
        auto x = c.x;
        at::Tensor last;
        for (int i = 0; i < 6; ++i) {
            pair_case step = c;
            step.x = x;
            const auto r = run(step);
            x = r.z;
            last = r.z;
        }
        return last;
    };
    const auto want = chain([&](const pair_case& s) { return two_launches(s, ctx); });
    for (int round = 0; round < 3; ++round)
        expect_same_bits(chain([&](const pair_case& s) { return one_launch(s, ctx); }), want,
                         "eager chain, round " + std::to_string(round));
    at::Tensor captured;
    auto graph = dev->capture(
        [&] { captured = chain([&](const pair_case& s) { return one_launch(s, ctx); }); });
    for (int replay = 0; replay < 5; ++replay) {
        graph->replay();
        dev->synchronize();
        expect_same_bits(captured, want, "graph replay " + std::to_string(replay));
    }
#endif
}

TEST(gemv_pair_cuda, the_plan_refuses_what_one_launch_cannot_do) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const workloads::call_context ctx(*dev);
    const std::int64_t wave = 4 * dev->caps().compute_units;
    const auto limits = workloads::native::limits(ctx);
    const std::int64_t n = std::max<std::int64_t>(1024, (wave + 7) / 8 * 8);
    const auto c = make_case(at::kBFloat16, n, 1024, wave, false, *dev, 3);
    auto y = at::empty({1, n}, c.x.options()), z = at::empty({1, wave}, c.x.options());
    kernels::gemv_pair_args a;
    a.first.x = c.x.data_ptr();
    a.first.w = c.w.data_ptr();
    a.first.y = y.data_ptr();
    a.first.n = n;
    a.first.k = 1024;
    a.first.ld_x = 1024;
    a.first.ld_w = 1024;
    a.first.ld_y = n;
    a.second = a.first;
    a.second.x = y.data_ptr();
    a.second.w = c.w2.data_ptr();
    a.second.y = z.data_ptr();
    a.second.n = wave;
    a.second.k = n;
    a.second.ld_x = a.second.ld_w = n;
    a.second.ld_y = wave;
    a.second.norm_weight = c.norm.data_ptr();
    EXPECT_TRUE(kernels::plan_gemv_pair(a, limits).valid.empty())
        << kernels::plan_gemv_pair(a, limits).valid;
    auto refused = [&](kernels::gemv_pair_args b, const char* why) {
        const auto p = kernels::plan_gemv_pair(b, limits);
        EXPECT_NE(p.valid.find(why), std::string::npos) << why << ": " << p.valid;
    };
    auto b = a;
    b.second.norm_weight = nullptr;
    refused(b, "fuses an RMSNorm into its second");
    b = a;
    b.second.x = c.x.data_ptr();
    refused(b, "reads the first GEMV's output");
    b = a;
    b.second.y = y.data_ptr(); // writes over the x every block reads
    refused(b, "apart from the first's output");
    b = a;
    b.first.tokens = b.second.tokens = 2;
    refused(b, "one token");
    b = a;
    b.first.n = b.second.k = 512; // too few rows for the balanced path
    b.second.ld_x = 512;
    refused(b, "balanced path");
    // and model_ops says so with two undefined tensors, for the caller's two launches
    const auto small = make_case(at::kBFloat16, 512, 1024, wave, false, *dev, 4);
    EXPECT_FALSE(one_launch(small, ctx).y.defined());
#endif
}

TEST(gemv_pair_cuda, the_pair_and_the_two_launches_it_replaces_are_timed_and_printed) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const workloads::call_context ctx(*dev);
    struct shape {
        const char* what;
        std::int64_t n, k, n2;
        bool swiglu;
    };
    // llama3-8b: o (+ residual) then the normed gate/up; down (SwiGLU, + residual) then the
    // next layer's normed q/k/v. Four weight sets in turn, so a replay reads DRAM (4 x 290 MB).
    for (const auto& s : {shape{"o, then gate/up", 4096, 4096, 28672, false},
                          shape{"down, then q/k/v", 4096, 14336, 6144, true}}) {
        std::vector<pair_case> sets;
        for (int i = 0; i < 4; ++i)
            sets.push_back(make_case(at::kBFloat16, s.n, s.k, s.n2, s.swiglu, *dev, 20 + i));
        const int calls = 40;
        int i = 0;
        const double two = fourfold::testing::graph_us_per_call(
            *dev, calls, [&] { two_launches(sets[i++ % 4], ctx); });
        i = 0;
        const double one = fourfold::testing::graph_us_per_call(
            *dev, calls, [&] { one_launch(sets[i++ % 4], ctx); });
        const double mb =
            static_cast<double>(s.n * s.k + s.n2 * s.n) * 2 / 1e6; // the weights read
        std::cout << "gemv pair, llama3-8b " << s.what << " (" << mb
                  << " MB of weights): two launches " << two << " us, one launch " << one
                  << " us a call (best of 10 x " << calls << " replays)\n";
        EXPECT_GT(one, 0);
    }
#endif
}
