// GPU tests (ctest label gpu): a kernel launched as a programmatic dependent launch reads what the
// launch before it wrote only after it has waited for that launch (griddepcontrol.wait). ptxas
// moves a non-coherent load (__ldg) above the wait: nvcc 13.0 did so for the softmax's first
// vectors, the one-token column-stationary GEMV's x and (session 41) the FP8 GEMV's per-warp
// SwiGLU, whose decode failed where every test of the kernel alone passed. Such inputs are now
// read by load_after_wait (kernels/elements.cuh) and scripts/check_sass_waits.py checks the SASS
// (ctest kernels.sass_waits). Here the launch before is a GEMV streaming 256 MiB of weights into
// an output that is NaN before every run; the kernel after reads that output: the softmax (the
// paths its shapes take), swiglu, and the one-token GEMV (its column-stationary trial on and
// off). Eagerly, then captured and replayed 3 times: the output within the type's tolerance of
// float64 computed from the GEMV's own output, and the same bits on every replay. Calls the
// kernels directly (no runner), so the sanitizer stage can run it whole.
#include "decoder_kernels_cuda.hpp"
#include "env_switch.hpp"
#include "fourfold/workloads/model_ops/pad.hpp"
#include "replays_cuda.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/kernels/softmax.hpp"
#include "fourfold/kernels/swiglu.hpp"
#endif

#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <functional>
#include <limits>
#include <string>
#include <vector>

using namespace fourfold;
using namespace fourfold::testing;
using namespace fourfold::testing::decoder_kernels;

#if FOURFOLD_WITH_KERNELS
namespace {

constexpr std::int64_t k_producer_rows = 32768; // the GEMV's N: what the kernel after reads
constexpr std::int64_t k_producer_bytes = std::int64_t{256} << 20;

// y = x Wᵀ, one token, N = k_producer_rows, K so that W is 256 MiB (about 60 µs on the H200):
// the dependent launch after it starts while it still streams.
struct producer {
    at::Tensor x, w, y;
    kernels::gemv_args a;
    kernels::gemv_plan plan;

    producer(const workloads::call_context& ctx, at::ScalarType t) {
        const auto o = at::TensorOptions().dtype(t).device(ctx.device().torch_device());
        const std::int64_t k = k_producer_bytes / (k_producer_rows * c10::elementSize(t));
        x = at::randn({1, k}, o);
        w = at::randn({k_producer_rows, k}, o).div(std::sqrt(static_cast<double>(k)));
        y = at::empty({1, k_producer_rows}, o);
        a = one_token(x.data_ptr(), w.data_ptr(), y.data_ptr(), k_producer_rows, k, k, t);
        plan = kernels::plan_gemv(a, workloads::native::limits(ctx));
    }
    void launch(const workloads::call_context& ctx) const {
        workloads::native::check(kernels::launch_gemv(plan, a, workloads::native::stream(ctx)),
                                 "gemv (the launch before)");
    }
};

// The producer, then `after` (which writes `out`), on the call context's stream: eagerly (the
// producer's output and `out` NaN first), `out` within `tol` of reference(the producer's output
// in float64), scaled as decoder_kernels::scaled_error; then 3 graph replays of both launches,
// NaN again before each, every one the eager run's bits.
void expect_reads_after_the_producer(backend::device& dev, const workloads::call_context& ctx,
                                     const producer& p, const at::Tensor& out,
                                     const std::function<void()>& after,
                                     const std::function<at::Tensor(const at::Tensor&)>& reference,
                                     double tol, const std::string& what) {
    ASSERT_TRUE(p.plan.valid.empty()) << p.plan.valid;
    const auto poison = [&] {
        p.y.fill_(std::numeric_limits<float>::quiet_NaN());
        out.fill_(std::numeric_limits<float>::quiet_NaN());
    };
    const auto run = [&] {
        p.launch(ctx);
        after();
    };
    poison();
    run();
    dev.synchronize();
    const auto y = p.y.cpu(), eager = out.cpu();
    ASSERT_FALSE(at::isnan(y).any().item<bool>()) << what << ": the producer left NaN";
    EXPECT_FALSE(at::isnan(eager).any().item<bool>())
        << what << ": NaN read from the producer's output before it was written";
    EXPECT_LE(scaled_error(eager, reference(y.to(at::kDouble))), tol) << what;
    expect_replays_give(
        dev, run, poison,
        [&] {
            return std::vector<at::Tensor>{p.y.cpu(), out.cpu()};
        },
        {y, eager},
        [&](std::size_t i) { return what + (i == 0 ? ", the producer" : ", the kernel after"); });
}

} // namespace
#endif

TEST(dependent_launch_cuda, the_softmax_reads_the_launch_before_s_output_after_it) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const workloads::call_context ctx(*dev);
    const auto& limits = workloads::native::limits(ctx);
    at::manual_seed(42);
    for (const auto t : {at::kFloat, at::kBFloat16}) {
        const producer p(ctx, t);
        // one long row (a cluster a row), rows of 4096 and 512 (a warp a row), 128-column rows
        for (const std::int64_t cols :
             {k_producer_rows, std::int64_t{4096}, std::int64_t{512}, std::int64_t{128}}) {
            const std::int64_t rows = k_producer_rows / cols;
            const auto out = at::empty({rows, cols}, p.y.options());
            kernels::softmax_args a;
            a.x = p.y.data_ptr();
            a.y = out.data_ptr();
            a.rows = rows;
            a.cols = cols;
            a.ld_x = cols;
            a.ld_y = cols;
            a.type = workloads::native::elem_of(t);
            const auto plan = kernels::plan_softmax(a, limits);
            ASSERT_TRUE(plan.valid.empty()) << plan.valid;
            const auto what =
                fmt::format("softmax {} x {} {}, {} path, dependent {}", rows, cols,
                            c10::toString(t), static_cast<int>(plan.kind), plan.dependent);
            expect_reads_after_the_producer(
                *dev, ctx, p, out,
                [&] {
                    workloads::native::check(
                        kernels::launch_softmax(plan, a, workloads::native::stream(ctx)),
                        "softmax");
                },
                [&](const at::Tensor& y) {
                    return at::softmax(y.view({rows, cols}), -1);
                },
                tolerance(t), what);
        }
    }
#endif
}

TEST(dependent_launch_cuda, swiglu_reads_the_launch_before_s_output_after_it) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const workloads::call_context ctx(*dev);
    at::manual_seed(43);
    for (const auto t : {at::kFloat, at::kBFloat16}) {
        const producer p(ctx, t);
        const std::int64_t width = k_producer_rows / 2;
        const auto out = at::empty({1, width}, p.y.options());
        kernels::swiglu_args a;
        a.gate_up = p.y.data_ptr();
        a.out = out.data_ptr();
        a.tokens = 1;
        a.width = width;
        a.ld_in = k_producer_rows;
        a.ld_out = width;
        a.type = workloads::native::elem_of(t);
        const auto plan = kernels::plan_swiglu(a, workloads::native::limits(ctx));
        expect_reads_after_the_producer(
            *dev, ctx, p, out,
            [&] {
                workloads::native::check(
                    kernels::launch_swiglu(plan, a, workloads::native::stream(ctx)), "swiglu");
            },
            [&](const at::Tensor& y) {
                const auto g = y.narrow(1, 0, width), u = y.narrow(1, width, width);
                return g * at::sigmoid(g) * u;
            },
            tolerance(t), fmt::format("swiglu {} wide, {}", width, c10::toString(t)));
    }
#endif
}

TEST(dependent_launch_cuda, the_one_token_gemv_reads_the_launch_before_s_output_after_it) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const env_switch cs("FOURFOLD_GEMV_CS");
    const workloads::call_context ctx(*dev);
    const auto& limits = workloads::native::limits(ctx);
    at::manual_seed(44);
    for (const auto t : {at::kFloat, at::kBFloat16}) {
        const producer p(ctx, t);
        const std::int64_t k = 4096; // x: the first 4096 of the producer's outputs
        // (512 rows: split K; 2048 rows column-stationary in bf16 unless FOURFOLD_GEMV_CS=0)
        for (const std::int64_t n : {std::int64_t{4096}, std::int64_t{2048}, std::int64_t{512}}) {
            const auto o = p.y.options();
            const auto w = at::randn({n, k}, o).div(std::sqrt(static_cast<double>(k)));
            const auto out = at::empty({1, n}, o);
            for (const bool trial : {false, true}) {
                if (trial && t == at::kFloat)
                    continue; // the column-stationary trial is for 2-byte elements
                cs.set(trial ? "1" : "0");
                const auto a = one_token(p.y.data_ptr(), w.data_ptr(), out.data_ptr(), n, k,
                                         k_producer_rows, t);
                const auto plan = kernels::plan_gemv(a, limits);
                ASSERT_TRUE(plan.valid.empty()) << plan.valid;
                if (n != 512) {
                    EXPECT_EQ(plan.column_stationary, trial) << plan.describe();
                }
                const auto wd = w.cpu().to(at::kDouble);
                expect_reads_after_the_producer(
                    *dev, ctx, p, out,
                    [&] {
                        workloads::native::check(
                            kernels::launch_gemv(plan, a, workloads::native::stream(ctx)),
                            "gemv (the launch after)");
                    },
                    [&](const at::Tensor& y) { return at::matmul(y.narrow(1, 0, k), wd.t()); },
                    tolerance(t),
                    fmt::format("gemv {} x {} {}: {}", n, k, c10::toString(t), plan.describe()));
            }
        }
    }
#endif
}

TEST(dependent_launch_cuda, the_pad_reads_the_launch_before_s_output_after_it) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const workloads::call_context ctx(*dev);
    const auto& limits = workloads::native::limits(ctx);
    at::manual_seed(45);
    struct form {
        std::vector<std::int64_t> shape, pads; // pads in constant_pad_nd's order, last dim first
    };
    // the producer's 32768 outputs: 2 x 4 x 64 x 64 padded as the VAE pads (2 frames in front,
    // one on each side of a plane; 66-wide rows, 4-byte stores in bf16), and 8 x 32 x 128 with
    // rows widened by 3 and 5 (136-wide, 16-byte stores in bf16); fp32 each way: on the register
    // path (its default at this size: one round of loads a warp) and staged
    // (FOURFOLD_PAD_STAGED=1)
    const std::vector<form> forms{{{2, 4, 64, 64}, {1, 1, 1, 1, 2, 0}},
                                  {{8, 32, 128}, {3, 5, 0, 2, 1, 0}}};
    const double value = 0.5;
    struct pass {
        at::ScalarType t;
        bool staged;
    };
    for (const auto [t, staged] :
         {pass{at::kFloat, false}, pass{at::kFloat, true}, pass{at::kBFloat16, false}}) {
        const fourfold::testing::env_switch stage("FOURFOLD_PAD_STAGED", staged ? "1" : "0");
        const producer p(ctx, t);
        for (const auto& f : forms) {
            // the arguments the native pad path launches with (model_ops::native_pad_args)
            const auto out =
                at::empty(workloads::model_ops::padded_shape(f.shape, f.pads), p.y.options());
            const auto a =
                workloads::model_ops::native_pad_args(p.y.view(f.shape), f.pads, value, out);
            const auto plan = kernels::plan_pad(a, limits);
            ASSERT_TRUE(plan.valid.empty()) << plan.valid;
            EXPECT_EQ(plan.staged, staged) << plan.describe();
            expect_reads_after_the_producer(
                *dev, ctx, p, out,
                [&] {
                    workloads::native::check(
                        kernels::launch_pad(plan, a, workloads::native::stream(ctx)), "pad");
                },
                [&](const at::Tensor& y) {
                    return at::constant_pad_nd(y.view(f.shape), f.pads, value);
                },
                0.0, // every output element a copy of an input element or the constant
                fmt::format("pad {} {}: {}", fmt::join(f.shape, "x"), c10::toString(t),
                            plan.describe()));
        }
    }
#endif
}
