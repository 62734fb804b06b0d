// GPU tests (label gpu) of kernels/rmsnorm.cu against the float64 composite it replaces
// (Hugging Face's RMSNorm, the residual add before it, the embedding lookup by index_select):
// edge widths, several rows (Qwen3's per-head norm), in place, the gather from a device index,
// and a plan that refuses a row too wide for its registers.
#include "decoder_kernels_cuda.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/rmsnorm.hpp"
#endif

using namespace fourfold;
using namespace fourfold::testing::decoder_kernels;

namespace {

#if FOURFOLD_WITH_KERNELS
at::Tensor reference(const at::Tensor& x, const at::Tensor& r, const at::Tensor& w, double eps,
                     at::ScalarType t) {
    auto v = x.to(at::kCPU).to(at::kDouble);
    if (r.defined())
        v = rounded(v + r.to(at::kCPU).to(at::kDouble), t);
    const auto inv = at::rsqrt(v.pow(2).mean({-1}, true) + eps);
    return v * inv * w.to(at::kCPU).to(at::kDouble);
}

void launch(backend::device& dev, kernels::rmsnorm_args& a) {
    workloads::call_context ctx(dev);
    const auto p = kernels::plan_rmsnorm(a, workloads::native::limits(ctx));
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    workloads::native::check(kernels::launch_rmsnorm(p, a, workloads::native::stream(ctx)),
                             "rmsnorm");
}
#endif

} // namespace

TEST(rmsnorm_cuda, matches_the_float64_composite_with_and_without_the_residual_add) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    struct shape {
        std::int64_t rows, cols;
    };
    for (const auto t : types())
        for (const auto s : std::vector<shape>{{1, 1},
                                               {1, 7},
                                               {1, 64},
                                               {3, 100},
                                               {1, 2048},
                                               {1, 4096},
                                               {2, 5120},
                                               {32, 128},
                                               {1, 16384}})
            for (const bool residual : {false, true}) {
                const auto o = at::TensorOptions().dtype(t).device(dev->torch_device());
                const auto x = at::randn({s.rows, s.cols}, o) * 3;
                const auto r = residual ? at::randn({s.rows, s.cols}, o) : at::Tensor();
                const auto w = at::rand({s.cols}, o) + 0.5;
                auto out = at::empty_like(x), normed = at::empty_like(x);
                kernels::rmsnorm_args a;
                a.x = x.data_ptr();
                a.residual = residual ? r.data_ptr() : nullptr;
                a.weight = w.data_ptr();
                a.out = out.data_ptr();
                a.normed = normed.data_ptr();
                a.rows = s.rows;
                a.cols = s.cols;
                a.ld_x = a.ld_residual = a.ld_out = a.ld_normed = s.cols;
                a.eps = 1e-5;
                a.type = workloads::native::elem_of(t);
                launch(*dev, a);
                const auto ref = reference(x, r, w, 1e-5, t);
                const auto label = ::testing::Message() << c10::toString(t) << " " << s.rows << "x"
                                                        << s.cols << " residual " << residual;
                EXPECT_LT(scaled_error(normed, ref), tolerance(t)) << label;
                const auto sum =
                    residual ? x.to(at::kDouble) + r.to(at::kDouble) : x.to(at::kDouble);
                EXPECT_EQ(scaled_error(out, rounded(sum.cpu(), t)), 0) << label;
            }
#endif
}

TEST(rmsnorm_cuda, in_place_residual_add_and_the_gather_from_a_device_index) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const auto t = at::kBFloat16;
    const auto o = at::TensorOptions().dtype(t).device(dev->torch_device());
    const std::int64_t vocab = 300, cols = 4096;
    const auto table = at::randn({vocab, cols}, o);
    const auto w = at::rand({cols}, o) + 0.5;
    // tokens[pos] = 217: the row a decode step at position 5 embeds
    auto tokens = at::zeros({8}, o.dtype(at::kLong));
    tokens[5] = 217;
    const auto pos = at::full({1}, 5, o.dtype(at::kLong));
    auto x = at::empty({1, cols}, o), h = at::empty({1, cols}, o);
    kernels::rmsnorm_args a;
    a.x = table.data_ptr();
    a.weight = w.data_ptr();
    a.out = x.data_ptr();
    a.normed = h.data_ptr();
    a.index = tokens.data_ptr<std::int64_t>();
    a.at = pos.data_ptr<std::int64_t>();
    a.gather_rows = vocab;
    a.rows = 1;
    a.cols = cols;
    a.ld_x = cols;
    a.ld_out = a.ld_normed = cols;
    a.eps = 1e-6;
    a.type = workloads::native::elem_of(t);
    launch(*dev, a);
    const auto row = table.narrow(0, 217, 1);
    EXPECT_EQ(scaled_error(x, row.to(at::kDouble).cpu()), 0);
    EXPECT_LT(scaled_error(h, reference(row, at::Tensor(), w, 1e-6, t)), tolerance(t));

    // in place: x += r, normalised
    const auto r = at::randn({1, cols}, o);
    const auto before = x.clone();
    kernels::rmsnorm_args b;
    b.x = x.data_ptr();
    b.residual = r.data_ptr();
    b.weight = w.data_ptr();
    b.out = x.data_ptr();
    b.normed = h.data_ptr();
    b.rows = 1;
    b.cols = cols;
    b.ld_x = b.ld_residual = b.ld_out = b.ld_normed = cols;
    b.eps = 1e-6;
    b.type = a.type;
    launch(*dev, b);
    EXPECT_LT(scaled_error(h, reference(before, r, w, 1e-6, t)), tolerance(t));
    EXPECT_EQ(scaled_error(x, rounded((before.to(at::kDouble) + r.to(at::kDouble)).cpu(), t)), 0);

    // an index outside the table reads nothing: zeros out, zeros normalised
    tokens[5] = vocab + 3;
    launch(*dev, a);
    EXPECT_EQ(x.abs().max().item<double>(), 0);
    EXPECT_EQ(h.abs().max().item<double>(), 0);
#endif
}

TEST(rmsnorm_cuda, a_row_too_wide_is_refused_by_the_plan_and_the_launch) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    kernels::rmsnorm_args a;
    a.rows = 1;
    a.cols = 16385;
    workloads::call_context ctx(*dev);
    const auto p = kernels::plan_rmsnorm(a, workloads::native::limits(ctx));
    EXPECT_FALSE(p.valid.empty());
    EXPECT_FALSE(kernels::launch_rmsnorm(p, a, workloads::native::stream(ctx)).ok());
#endif
}
