// GPU tests (label gpu) of kernels/rope_kv.cu against the float64 ops it replaces: Qwen3's
// per-head RMSNorm of q and k, Hugging Face's rotate_half RoPE, and the KV-cache append
// (index_copy_ at the position) — at the position read from the device, for one and two
// tokens, a position at the cache's end (nothing written past it), with and without the norm.
#include "decoder_kernels_cuda.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/rope_kv.hpp"
#endif

using namespace fourfold;
using namespace fourfold::testing::decoder_kernels;

namespace {

// x [T, heads, hd] float64; cos, sin [T, hd]
at::Tensor rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
    const auto half = x.size(-1) / 2;
    const auto rot = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
    return x * cos.unsqueeze(1) + rot * sin.unsqueeze(1);
}

at::Tensor head_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
    return x * at::rsqrt(x.pow(2).mean({-1}, true) + eps) * w;
}

} // namespace

TEST(rope_kv_cuda, matches_norm_rope_and_the_cache_append_in_float64) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    struct shape {
        std::int64_t heads, kv_heads, hd;
    };
    for (const auto t : types())
        for (const auto s :
             std::vector<shape>{{4, 2, 16}, {4, 2, 32}, {32, 8, 128}, {32, 4, 128}, {2, 1, 256}})
            for (const bool qk_norm : {false, true})
                for (const std::int64_t tokens : {1, 2}) {
                    const std::int64_t cap = 40, p0 = tokens == 1 ? 17 : cap - 1;
                    const auto o = at::TensorOptions().dtype(t).device(dev->torch_device());
                    const auto width = (s.heads + 2 * s.kv_heads) * s.hd;
                    const auto qkv = at::randn({tokens, width}, o) * 2;
                    const auto qn = at::rand({s.hd}, o) + 0.5, kn = at::rand({s.hd}, o) + 0.5;
                    const auto inv = at::pow(10000.0, -at::arange(0, s.hd, 2, at::kDouble) /
                                                          static_cast<double>(s.hd));
                    const auto ang = at::outer(at::arange(cap, at::kDouble), inv);
                    const auto emb = at::cat({ang, ang}, -1);
                    const auto cos = emb.cos().to(o.dtype(t)), sin = emb.sin().to(o.dtype(t));
                    auto q = at::zeros({tokens, s.heads, s.hd}, o);
                    auto kc = at::zeros({s.kv_heads, cap, s.hd}, o), vc = at::zeros_like(kc);
                    const auto pos = at::full({1}, p0, o.dtype(at::kLong));
                    kernels::rope_kv_args a;
                    a.qkv = qkv.data_ptr();
                    a.ld_qkv = width;
                    a.q_norm = qk_norm ? qn.data_ptr() : nullptr;
                    a.k_norm = qk_norm ? kn.data_ptr() : nullptr;
                    a.eps = 1e-6;
                    a.cos = cos.data_ptr();
                    a.sin = sin.data_ptr();
                    a.pos = pos.data_ptr<std::int64_t>();
                    a.q_out = q.data_ptr();
                    a.k_cache = kc.data_ptr();
                    a.v_cache = vc.data_ptr();
                    a.tokens = tokens;
                    a.heads = s.heads;
                    a.kv_heads = s.kv_heads;
                    a.head_dim = s.hd;
                    a.capacity = cap;
                    a.type = workloads::native::elem_of(t);
                    workloads::call_context ctx(*dev);
                    const auto p = kernels::plan_rope_kv(a, workloads::native::limits(ctx));
                    ASSERT_TRUE(p.valid.empty()) << p.valid;
                    workloads::native::check(
                        kernels::launch_rope_kv(p, a, workloads::native::stream(ctx)), "rope_kv");

                    const auto x = qkv.cpu().to(at::kDouble);
                    auto rq = x.narrow(1, 0, s.heads * s.hd).reshape({tokens, s.heads, s.hd});
                    auto rk = x.narrow(1, s.heads * s.hd, s.kv_heads * s.hd)
                                  .reshape({tokens, s.kv_heads, s.hd});
                    const auto rv = x.narrow(1, (s.heads + s.kv_heads) * s.hd, s.kv_heads * s.hd)
                                        .reshape({tokens, s.kv_heads, s.hd});
                    if (qk_norm) {
                        rq = head_norm(rq, qn.cpu().to(at::kDouble), 1e-6);
                        rk = head_norm(rk, kn.cpu().to(at::kDouble), 1e-6);
                    }
                    const auto live = std::min(tokens, cap - p0); // positions inside the cache
                    const auto c64 = cos.cpu().to(at::kDouble).narrow(0, p0, live);
                    const auto s64 = sin.cpu().to(at::kDouble).narrow(0, p0, live);
                    const auto label = ::testing::Message()
                                       << c10::toString(t) << " " << s.heads << "/" << s.kv_heads
                                       << "x" << s.hd << " norm " << qk_norm << " T " << tokens;
                    EXPECT_LT(
                        scaled_error(q.narrow(0, 0, live), rope(rq.narrow(0, 0, live), c64, s64)),
                        tolerance(t))
                        << label;
                    const auto k_ref = rope(rk.narrow(0, 0, live), c64, s64).transpose(0, 1);
                    EXPECT_LT(scaled_error(kc.narrow(1, p0, live), k_ref), tolerance(t)) << label;
                    EXPECT_EQ(
                        scaled_error(vc.narrow(1, p0, live), rv.narrow(0, 0, live).transpose(0, 1)),
                        0)
                        << label;
                    // nothing else in the cache was written
                    const auto kcpu = kc.cpu(), vcpu = vc.cpu();
                    kcpu.narrow(1, p0, live).zero_();
                    vcpu.narrow(1, p0, live).zero_();
                    EXPECT_EQ(kcpu.abs().max().item<double>(), 0) << label;
                    EXPECT_EQ(vcpu.abs().max().item<double>(), 0) << label;
                }
#endif
}

TEST(rope_kv_cuda, the_plan_refuses_what_the_kernel_cannot_do) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    kernels::rope_kv_args a;
    a.heads = 4;
    a.kv_heads = 3;
    a.head_dim = 16;
    a.capacity = 8;
    a.ld_qkv = 160;
    const std::int64_t dummy = 0; // the plan only checks that a position pointer is given: it
    a.pos = &dummy;               // never launches, so a host address stands in for the device one
    workloads::call_context ctx(*dev);
    EXPECT_FALSE(kernels::plan_rope_kv(a, workloads::native::limits(ctx)).valid.empty());
#endif
}
