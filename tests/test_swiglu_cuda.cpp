// GPU tests (label gpu) of kernels/swiglu.cu against silu(gate) * up in float64: widths that
// do and do not fill a 16-byte packet, several tokens, and an offset view (the scalar path).
#include "decoder_kernels_cuda.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/swiglu.hpp"
#endif

using namespace fourfold;
using namespace fourfold::testing::decoder_kernels;

namespace {

#if FOURFOLD_WITH_KERNELS
kernels::swiglu_plan run(backend::device& dev, const at::Tensor& gu, at::Tensor& out) {
    kernels::swiglu_args a;
    a.gate_up = gu.data_ptr();
    a.out = out.data_ptr();
    a.tokens = gu.size(0);
    a.width = out.size(1);
    a.ld_in = gu.stride(0);
    a.ld_out = out.stride(0);
    a.type = workloads::native::elem_of(gu.scalar_type());
    workloads::call_context ctx(dev);
    const auto p = kernels::plan_swiglu(a, workloads::native::limits(ctx));
    EXPECT_TRUE(p.valid.empty()) << p.valid;
    workloads::native::check(kernels::launch_swiglu(p, a, workloads::native::stream(ctx)),
                             "swiglu");
    return p;
}

at::Tensor reference(const at::Tensor& gu) {
    const auto x = gu.cpu().to(at::kDouble);
    const auto w = x.size(1) / 2;
    const auto g = x.narrow(1, 0, w);
    return g * at::sigmoid(g) * x.narrow(1, w, w);
}
#endif

} // namespace

TEST(swiglu_cuda, matches_silu_gate_times_up_in_float64) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    for (const auto t : types())
        for (const std::int64_t tokens : {1, 3})
            for (const std::int64_t w : {1, 7, 8, 768, 12288, 14336}) {
                const auto o = at::TensorOptions().dtype(t).device(dev->torch_device());
                const auto gu = at::randn({tokens, 2 * w}, o) * 4;
                auto out = at::empty({tokens, w}, o);
                const auto p = run(*dev, gu, out);
                EXPECT_LT(scaled_error(out, reference(gu)), tolerance(t))
                    << c10::toString(t) << " " << tokens << "x" << w << " " << p.describe();
                if (w % 8 == 0) {
                    EXPECT_GT(p.vec, 1) << p.describe();
                }
            }
#endif
}

TEST(swiglu_cuda, an_offset_view_takes_the_scalar_path_and_agrees) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const auto o = at::TensorOptions().dtype(at::kBFloat16).device(dev->torch_device());
    const std::int64_t w = 1024;
    const auto wide = at::randn({2, 2 * w + 1}, o);
    const auto gu = wide.narrow(1, 1, 2 * w);
    auto out = at::empty({2, w}, o);
    const auto p = run(*dev, gu, out);
    EXPECT_EQ(p.vec, 1);
    EXPECT_FALSE(p.why_scalar.empty());
    EXPECT_LT(scaled_error(out, reference(gu)), tolerance(at::kBFloat16));
#endif
}
