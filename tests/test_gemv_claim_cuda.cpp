// GPU tests (label gpu) of kernels/gemv.cu's one-token GEMV whose 2 KB steps are claimed at run
// time by the 32 warps of an SM's block (gemv_claim, gemv_plan::claimed): against float64 with no
// prologue, the RMSNorm and the SwiGLU prologues, with and without the bias, rows past whole
// steps and a row count no block count divides; and the same bits on every run, whichever warp
// took a step. Calls model_ops directly (no runner), so the sanitizer stage runs it whole.
#include "decoder_kernels_cuda.hpp"
#include "fourfold/workloads/model_ops/linear.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/gemv.hpp"
#endif

#include <ATen/CPUGeneratorImpl.h>
#include <cmath>
#include <string>

using namespace fourfold;
using namespace fourfold::testing::decoder_kernels;
namespace mo = fourfold::workloads::model_ops;

TEST(gemv_claim_cuda, claimed_steps_match_float64_and_repeat_their_bits) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const workloads::call_context ctx(*dev);
    // 4 rows a block of the one-token wave and 13 more: the balanced path, rows no block count
    // divides; K 16 bytes past whole 2 KB steps, rows of 8 KB or more (claimed)
    const std::int64_t n = 16 * dev->caps().compute_units + 13;
    const double eps = 1e-5;
    auto gen = at::detail::createCPUGenerator(17);
    for (const auto t : types()) {
        const std::int64_t k = t == at::kFloat ? 2052 : 4104;
        const auto o = at::TensorOptions().dtype(t).device(dev->torch_device());
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
                kernels::gemv_args ga;
                ga.x = xg.data_ptr();
                ga.w = wg.data_ptr();
                ga.tokens = 1;
                ga.n = n;
                ga.k = k;
                ga.ld_x = xg.stride(0);
                ga.ld_w = k;
                ga.ld_y = n;
                ga.type = workloads::native::elem_of(t);
                ga.norm_weight = std::string(pro) == "rms_norm" ? wg.data_ptr() : nullptr;
                ga.swiglu_x = std::string(pro) == "swiglu";
                const auto plan = kernels::plan_gemv(ga, workloads::native::limits(ctx));
                const auto what = std::string(c10::toString(t)) + " " + pro +
                                  (bias ? " + bias" : "") + ": " + plan.describe();
                EXPECT_TRUE(plan.claimed) << what;
                const auto y = run();
                ASSERT_TRUE(y.defined()) << what;
                EXPECT_LT(scaled_error(y, ref), tolerance(t)) << what;
                for (int again = 0; again < 3; ++again)
                    EXPECT_TRUE(at::equal(run().cpu(), y.cpu())) << what << ", run " << again;
            }
    }
#endif
}
