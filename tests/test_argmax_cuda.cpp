// GPU tests (label gpu) of kernels/argmax.cu against at::argmax: vocabulary sizes from 1 to
// 2^20 (one block and many, the last block's merge), ties (the first index), NaN (the first
// NaN, as at::argmax), the token written at the device-side position + 1 and the position
// advanced, repeated launches (the workspace's counter reset by the kernel), and launches back
// to back without a host synchronisation (dependent launches from sm_90).
#include "decoder_kernels_cuda.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/argmax.hpp"
#endif

#include <limits>

using namespace fourfold;
using namespace fourfold::testing::decoder_kernels;

namespace {

#if FOURFOLD_WITH_KERNELS
// argmax of x into tokens[*pos + 1], *pos += 1; returns the token written.
std::int64_t pick(backend::device& dev, const at::Tensor& x, at::Tensor& tokens, at::Tensor& pos,
                  at::Tensor& ws) {
    kernels::argmax_args a;
    a.x = x.data_ptr();
    a.n = x.numel();
    a.tokens = tokens.data_ptr<std::int64_t>();
    a.at = pos.data_ptr<std::int64_t>();
    a.advance = pos.data_ptr<std::int64_t>();
    a.type = workloads::native::elem_of(x.scalar_type());
    workloads::call_context ctx(dev);
    const auto p = kernels::plan_argmax(a, workloads::native::limits(ctx));
    EXPECT_TRUE(p.valid.empty()) << p.valid;
    if (!ws.defined() || ws.numel() < p.workspace_bytes)
        ws = at::zeros({p.workspace_bytes}, tokens.options().dtype(at::kByte));
    a.workspace = ws.data_ptr();
    const auto before = pos.item<std::int64_t>();
    workloads::native::check(kernels::launch_argmax(p, a, workloads::native::stream(ctx)),
                             "argmax");
    EXPECT_EQ(pos.item<std::int64_t>(), before + 1);
    return tokens[before + 1].item<std::int64_t>();
}
#endif

} // namespace

TEST(argmax_cuda, picks_what_at_argmax_picks_at_every_size) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    at::Tensor ws;
    for (const auto t : types())
        for (const std::int64_t n : {1, 31, 256, 2048, 2049, 4097, 128256, 151936, 1 << 20}) {
            const auto o = at::TensorOptions().dtype(t).device(dev->torch_device());
            auto tokens = at::full({64}, -1, o.dtype(at::kLong));
            auto pos = at::full({1}, 3, o.dtype(at::kLong));
            for (int round = 0; round < 3; ++round) {
                const auto x = at::randn({n}, o);
                const auto expected = x.cpu().to(at::kDouble).argmax().item<std::int64_t>();
                EXPECT_EQ(pick(*dev, x, tokens, pos, ws), expected)
                    << c10::toString(t) << " n " << n << " round " << round;
            }
        }
#endif
}

TEST(argmax_cuda, ties_take_the_first_index_and_nan_wins_as_in_at_argmax) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    at::Tensor ws;
    const auto o = at::TensorOptions().dtype(at::kBFloat16).device(dev->torch_device());
    auto tokens = at::full({8}, -1, o.dtype(at::kLong));
    auto pos = at::zeros({1}, o.dtype(at::kLong));
    const std::int64_t n = 151936;
    auto x = at::ones({n}, o);
    EXPECT_EQ(pick(*dev, x, tokens, pos, ws), 0);
    x[100000] = 2.0;
    x[70000] = 2.0;
    EXPECT_EQ(pick(*dev, x, tokens, pos, ws), 70000);
    x[90000] = std::numeric_limits<float>::quiet_NaN();
    x[120000] = std::numeric_limits<float>::quiet_NaN();
    const auto expected = x.cpu().argmax().item<std::int64_t>();
    EXPECT_EQ(pick(*dev, x, tokens, pos, ws), expected);
    const auto inf = at::full({n}, -std::numeric_limits<float>::infinity(), o);
    EXPECT_EQ(pick(*dev, inf, tokens, pos, ws), 0);
#endif
}

TEST(argmax_cuda, back_to_back_launches_each_read_the_position_the_last_one_advanced) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    // No host synchronisation between the launches: each (a dependent launch from sm_90) must
    // wait for the one before, whose *at it reads and whose counter it shares.
    for (const std::int64_t n : {1000, 128256}) {
        const auto o = at::TensorOptions().dtype(at::kBFloat16).device(dev->torch_device());
        const auto x0 = at::randn({n}, o), x1 = at::randn({n}, o);
        const std::int64_t want[2] = {x0.cpu().to(at::kDouble).argmax().item<std::int64_t>(),
                                      x1.cpu().to(at::kDouble).argmax().item<std::int64_t>()};
        auto tokens = at::full({40}, -1, o.dtype(at::kLong));
        auto pos = at::full({1}, 2, o.dtype(at::kLong));
        kernels::argmax_args a;
        a.n = n;
        a.tokens = tokens.data_ptr<std::int64_t>();
        a.at = pos.data_ptr<std::int64_t>();
        a.advance = pos.data_ptr<std::int64_t>();
        a.type = kernels::elem::bf16;
        workloads::call_context ctx(*dev);
        const auto p = kernels::plan_argmax(a, workloads::native::limits(ctx));
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        const auto ws = at::zeros({p.workspace_bytes}, o.dtype(at::kByte));
        a.workspace = ws.data_ptr();
        const int launches = 32;
        for (int i = 0; i < launches; ++i) {
            a.x = (i % 2 ? x1 : x0).data_ptr();
            workloads::native::check(kernels::launch_argmax(p, a, workloads::native::stream(ctx)),
                                     "argmax");
        }
        EXPECT_EQ(pos.item<std::int64_t>(), 2 + launches) << n << " (" << p.describe() << ")";
        const auto t = tokens.cpu();
        for (int i = 0; i < launches; ++i)
            EXPECT_EQ(t[3 + i].item<std::int64_t>(), want[i % 2]) << n << " launch " << i;
        EXPECT_EQ(t[2].item<std::int64_t>(), -1);
        EXPECT_EQ(ws.cpu().narrow(0, 0, 4).to(at::kInt).sum().item<int>(), 0)
            << "the counter (4 bytes) is reset";
    }
#endif
}
