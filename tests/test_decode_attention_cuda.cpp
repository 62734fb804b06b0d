// GPU tests (label gpu) of kernels/decode_attention.cu against float64 attention over the
// cache positions 0..pos (what the stock step's masked scaled_dot_product_attention computes):
// GQA groups 1..8, head dims 16..256, one split and many (the log-sum-exp combine fused into the
// launch: the last block of a kv head merges), positions at the edges of a split; a graph
// captured once and replayed at later positions (the position is read on the device) with the
// workspace's counters back at 0 after every replay; the merged result bitwise the same launch
// after launch; rope_kv and attention launched back to back (dependent launches from sm_90:
// attention waits for the q and the cache row rope_kv writes), eagerly and from a graph; the
// plan of llama3-8b's shape. Each on both paths where the device has clusters: the cluster
// path (a kv head's splits merged in distributed shared memory) and the grid path.
#include "decoder_kernels_cuda.hpp"
#include "env_switch.hpp"
#include "fourfold/workloads/models/captured_step.hpp"
#include "graph_timing.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/decode_attention.hpp"
#include "fourfold/kernels/rope_kv.hpp"
#endif

#include <cmath>
#include <cstring>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

using namespace fourfold;
using namespace fourfold::testing::decoder_kernels;

namespace {

// q [H, hd], k/v [KVH, cap, hd]: float64 attention of each head over positions 0..pos.
at::Tensor reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                     std::int64_t pos) {
    const auto heads = q.size(0), kvh = k.size(0), hd = q.size(1);
    const auto q64 = q.cpu().to(at::kDouble);
    const auto k64 = k.cpu().to(at::kDouble).narrow(1, 0, pos + 1);
    const auto v64 = v.cpu().to(at::kDouble).narrow(1, 0, pos + 1);
    const auto kk = k64.repeat_interleave(heads / kvh, 0); // [H, L, hd]
    const auto vv = v64.repeat_interleave(heads / kvh, 0);
    const auto s = at::bmm(kk, q64.unsqueeze(2)).squeeze(2) / std::sqrt(static_cast<double>(hd));
    const auto p = at::softmax(s, -1);
    return at::bmm(p.unsqueeze(1), vv).squeeze(1);
}

#if FOURFOLD_WITH_KERNELS
// A test shape: query heads, kv heads, head_dim, cache positions.
struct cache_shape {
    std::int64_t heads, kv_heads, hd, cap;
};

struct attention_case {
    at::Tensor q, k, v, pos, out, ws;
    kernels::decode_attention_args args;
    kernels::decode_attention_plan plan;
};

// cluster false: the grid path (true: the cluster path where the device takes it); min_chunk:
// the plan's least chunk (0: its default)
attention_case make(backend::device& dev, at::ScalarType t, std::int64_t heads,
                    std::int64_t kv_heads, std::int64_t hd, std::int64_t cap, bool cluster,
                    std::int64_t min_chunk = 0) {
    attention_case c;
    const auto o = at::TensorOptions().dtype(t).device(dev.torch_device());
    c.q = at::randn({heads, hd}, o);
    c.k = at::randn({kv_heads, cap, hd}, o);
    c.v = at::randn({kv_heads, cap, hd}, o);
    c.pos = at::zeros({1}, o.dtype(at::kLong));
    c.out = at::empty({heads, hd}, o);
    auto& a = c.args;
    a.q = c.q.data_ptr();
    a.k_cache = c.k.data_ptr();
    a.v_cache = c.v.data_ptr();
    a.pos = c.pos.data_ptr<std::int64_t>();
    a.out = c.out.data_ptr();
    a.heads = heads;
    a.kv_heads = kv_heads;
    a.head_dim = hd;
    a.capacity = cap;
    a.type = workloads::native::elem_of(t);
    a.allow_cluster = cluster;
    a.min_chunk = min_chunk;
    workloads::call_context ctx(dev);
    c.plan = kernels::plan_decode_attention(a, workloads::native::limits(ctx));
    // zeroed once, as the kernel's contract asks (the counters start at 0)
    c.ws = at::zeros({std::max<std::int64_t>(1, c.plan.workspace_bytes / 4)}, o.dtype(at::kFloat));
    a.workspace = c.ws.data_ptr<float>();
    return c;
}

void launch(backend::device& dev, const attention_case& c) {
    workloads::call_context ctx(dev);
    ASSERT_TRUE(c.plan.valid.empty()) << c.plan.valid;
    workloads::native::check(
        kernels::launch_decode_attention(c.plan, c.args, workloads::native::stream(ctx)),
        "decode_attention");
}

// The barriers' arrival counts in the workspace (two of the four 32-bit words a unit: a kv head,
// or a half of its query heads with block_heads 4; the third is the generation), read back to the
// host.
std::vector<unsigned> counters(const attention_case& c) {
    const auto host = c.ws.cpu();
    const auto* bytes = static_cast<const unsigned char*>(host.data_ptr());
    const auto units = c.plan.blocks / std::max<std::int64_t>(1, c.plan.splits);
    std::vector<unsigned> words(static_cast<std::size_t>(units) * 4);
    std::memcpy(words.data(), bytes + c.plan.counter_offset, words.size() * sizeof(unsigned));
    std::vector<unsigned> v;
    for (std::size_t h = 0; h < words.size(); h += 4) {
        v.push_back(words[h]);
        v.push_back(words[h + 1]);
    }
    return v;
}

// rope_kv's inputs for the case `unfused` of shape s: a qkv row `extra` elements longer than q, k
// and v, the cos and sin tables, the q/k norms' weights (given where `norms`); its launch (args,
// plan) writes unfused's q and caches.
struct rope_inputs {
    at::Tensor qkv, cos, sin, qn, kn;
    kernels::rope_kv_args args;
    kernels::rope_kv_plan plan;
};

rope_inputs make_rope(const attention_case& unfused, const cache_shape& s, bool norms,
                      std::int64_t extra, const kernels::device_limits& lim) {
    rope_inputs in;
    const auto o = unfused.q.options();
    const auto width = (s.heads + 2 * s.kv_heads) * s.hd;
    in.qkv = at::randn({1, width + extra}, o);
    in.cos = at::rand({s.cap, s.hd}, o) + 0.5;
    in.sin = at::rand({s.cap, s.hd}, o) - 0.5;
    in.qn = at::rand({s.hd}, o) + 0.5;
    in.kn = at::rand({s.hd}, o) + 0.5;
    auto& r = in.args;
    r.qkv = in.qkv.data_ptr();
    r.ld_qkv = width + extra;
    if (norms) {
        r.q_norm = in.qn.data_ptr();
        r.k_norm = in.kn.data_ptr();
    }
    r.cos = in.cos.data_ptr();
    r.sin = in.sin.data_ptr();
    r.pos = unfused.pos.data_ptr<std::int64_t>();
    r.q_out = unfused.q.data_ptr();
    r.k_cache = unfused.k.data_ptr();
    r.v_cache = unfused.v.data_ptr();
    r.heads = s.heads;
    r.kv_heads = s.kv_heads;
    r.head_dim = s.hd;
    r.capacity = s.cap;
    r.type = unfused.args.type;
    in.plan = kernels::plan_rope_kv(r, lim);
    return in;
}

// The case `fused` planned with the same rope inside its launch (q unused).
void fuse_rope(attention_case& fused, const rope_inputs& in, const kernels::device_limits& lim) {
    const auto& r = in.args;
    fused.args.rope = {r.qkv, r.ld_qkv, r.q_norm, r.k_norm, r.eps, r.cos, r.sin};
    fused.args.q = nullptr;
    fused.plan = kernels::plan_decode_attention(fused.args, lim);
}
#endif

} // namespace

TEST(decode_attention_cuda, matches_float64_attention_over_the_filled_prefix) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const std::vector<cache_shape> shapes{{4, 2, 16, 64},    {4, 2, 32, 64},     {4, 4, 64, 33},
                                          {32, 8, 128, 576}, {32, 4, 128, 2112}, {16, 2, 256, 100},
                                          {8, 8, 128, 1},    {8, 1, 128, 4096}};
    for (const bool cluster : {true, false})
        for (const auto t : types())
            for (const auto& s : shapes) {
                const auto c = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, cluster);
                for (const std::int64_t p : std::vector<std::int64_t>{
                         0, std::min<std::int64_t>(31, s.cap - 1),
                         std::min<std::int64_t>(32, s.cap - 1), s.cap / 2, s.cap - 1}) {
                    c.pos.fill_(p);
                    launch(*dev, c);
                    EXPECT_LT(scaled_error(c.out, reference(c.q, c.k, c.v, p)), tolerance(t))
                        << c10::toString(t) << " " << s.heads << "/" << s.kv_heads << "x" << s.hd
                        << " cap " << s.cap << " pos " << p << " (" << c.plan.describe() << ")";
                }
            }
#endif
}

TEST(decode_attention_cuda, a_captured_launch_replays_at_the_position_on_the_device) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    if (!dev->caps().graphs)
        GTEST_SKIP() << "no graph capture on this device";
    for (const bool cluster : {true, false}) {
        const auto c = make(*dev, at::kBFloat16, 32, 8, 128, 2112, cluster);
        ASSERT_TRUE(c.plan.fused_combine || c.plan.cluster > 0) << c.plan.describe();
        workloads::models::captured_step step;
        c.pos.fill_(10);
        step.capture(*dev, [&] { launch(*dev, c); });
        for (const std::int64_t p : {0, 63, 64, 263, 264, 1000, 2111}) {
            c.pos.fill_(p);
            step.run([] { FAIL() << "not captured"; });
            EXPECT_LT(scaled_error(c.out, reference(c.q, c.k, c.v, p)), tolerance(at::kBFloat16))
                << "pos " << p << " (" << c.plan.describe() << ")";
        }
    }
#endif
}

TEST(decode_attention_cuda, the_plan_splits_the_context_for_long_caches) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const auto short_c = make(*dev, at::kBFloat16, 32, 8, 128, 32, false);
    EXPECT_FALSE(short_c.plan.combine) << short_c.plan.describe();
    EXPECT_FALSE(short_c.plan.fused_combine) << short_c.plan.describe();
    const auto long_c = make(*dev, at::kBFloat16, 32, 8, 128, 2112, false);
    EXPECT_GT(long_c.plan.splits, 8) << long_c.plan.describe();
    EXPECT_FALSE(long_c.plan.combine) << long_c.plan.describe(); // no second launch
    EXPECT_TRUE(long_c.plan.fused_combine) << long_c.plan.describe();
    EXPECT_GE(long_c.plan.workspace_bytes, 32 * long_c.plan.splits * 130 * 4 + 8 * 16);
    workloads::call_context ctx(*dev);
    EXPECT_EQ(long_c.plan.dependent_launch, workloads::native::limits(ctx).cc_major >= 9)
        << long_c.plan.describe();
    // where the device has clusters, the default plan of the same cache is one a kv head
    const auto cluster_c = make(*dev, at::kBFloat16, 32, 8, 128, 2112, true);
    EXPECT_EQ(cluster_c.plan.cluster > 0, workloads::native::limits(ctx).clusters())
        << cluster_c.plan.describe();
#endif
}

TEST(decode_attention_cuda, replays_leave_the_split_counters_at_zero) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    if (!dev->caps().graphs)
        GTEST_SKIP() << "no graph capture on this device";
    // llama3-8b at ctx 512 (18 splits of 32: the last block merges) and 2048 (33 splits of 64
    // on 132 SMs: a barrier, merged in shares)
    for (const std::int64_t cap : {576, 2112})
        for (const auto t : types()) {
            const auto c = make(*dev, t, 32, 8, 128, cap, false);
            ASSERT_TRUE(c.plan.fused_combine) << c.plan.describe();
            ASSERT_GT(c.plan.splits, 1);
            workloads::models::captured_step step;
            c.pos.fill_(300);
            step.capture(*dev, [&] { launch(*dev, c); });
            ASSERT_TRUE(step.captured());
            for (const auto v : counters(c))
                ASSERT_EQ(v, 0u) << "after the capture's warm-up launch";
            // one live split (the others count in past the position), a split's edges, all of
            // them, and back down: a count left off zero would merge too early or never
            for (const std::int64_t p :
                 {std::int64_t{0}, c.plan.chunk - 1, c.plan.chunk, cap - 1, std::int64_t{100},
                  std::int64_t{0}, cap - c.plan.chunk - 1, cap - c.plan.chunk, std::int64_t{7}}) {
                c.pos.fill_(p);
                step.run([] { FAIL() << "not captured"; });
                EXPECT_LT(scaled_error(c.out, reference(c.q, c.k, c.v, p)), tolerance(t))
                    << c10::toString(t) << " pos " << p << " " << c.plan.describe();
                for (const auto v : counters(c))
                    EXPECT_EQ(v, 0u)
                        << c10::toString(t) << " pos " << p << " " << c.plan.describe();
            }
            // the probes that stop before or inside the split merge leave the counts at zero too
            auto probe = c;
            for (const int stop : {4, 5, 6}) {
                probe.args.probe_stop_after = stop;
                for (const std::int64_t p : {std::int64_t{5}, cap - 1}) {
                    probe.pos.fill_(p);
                    launch(*dev, probe);
                    for (const auto v : counters(probe))
                        EXPECT_EQ(v, 0u) << c10::toString(t) << " probe " << stop << ", pos " << p
                                         << " " << c.plan.describe();
                }
            }
        }
#endif
}

TEST(decode_attention_cuda, the_fused_merge_is_bitwise_the_same_launch_after_launch) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    struct shape {
        std::int64_t heads, kv_heads, hd, cap, pos;
    };
    for (const bool cluster : {true, false})
        for (const auto t : types())
            for (const auto& s : std::vector<shape>{
                     {32, 8, 128, 2112, 2000}, {16, 2, 256, 100, 99}, {4, 2, 16, 1024, 700}}) {
                const auto c = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, cluster);
                ASSERT_TRUE(c.plan.fused_combine || c.plan.cluster > 1) << c.plan.describe();
                c.pos.fill_(s.pos);
                launch(*dev, c);
                const auto first = c.out.clone();
                EXPECT_LT(scaled_error(first, reference(c.q, c.k, c.v, s.pos)), tolerance(t));
                // which block of a kv head finishes last varies from launch to launch; the bits
                // must not
                for (int i = 0; i < 20; ++i) {
                    c.out.fill_(0);
                    launch(*dev, c);
                    ASSERT_TRUE(at::equal(c.out, first))
                        << c10::toString(t) << " " << s.heads << "/" << s.kv_heads << "x" << s.hd
                        << " launch " << i << ": max diff "
                        << (c.out.to(at::kDouble) - first.to(at::kDouble))
                               .abs()
                               .max()
                               .item<double>();
                }
            }
#endif
}

TEST(decode_attention_cuda, waits_for_the_q_and_cache_row_rope_kv_writes_just_before) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const std::int64_t heads = 32, kv_heads = 8, hd = 128, cap = 576;
    const auto t = at::kBFloat16;
    for (const bool cluster : {true, false}) {
        auto c = make(*dev, t, heads, kv_heads, hd, cap, cluster);
        const auto o = c.q.options();
        const auto width = (heads + 2 * kv_heads) * hd;
        const auto qkv = at::randn({1, width}, o);
        const auto cos = at::rand({cap, hd}, o) + 0.5, sin = at::rand({cap, hd}, o) - 0.5;
        kernels::rope_kv_args r;
        r.qkv = qkv.data_ptr();
        r.ld_qkv = width;
        r.cos = cos.data_ptr();
        r.sin = sin.data_ptr();
        r.pos = c.pos.data_ptr<std::int64_t>();
        r.q_out = c.q.data_ptr(); // attention's q
        r.k_cache = c.k.data_ptr();
        r.v_cache = c.v.data_ptr();
        r.heads = heads;
        r.kv_heads = kv_heads;
        r.head_dim = hd;
        r.capacity = cap;
        r.type = c.args.type;
        workloads::call_context ctx(*dev);
        const auto rp = kernels::plan_rope_kv(r, workloads::native::limits(ctx));
        ASSERT_TRUE(rp.valid.empty()) << rp.valid;
        EXPECT_EQ(rp.dependent_launch, c.plan.dependent_launch);
        auto both = [&] {
            workloads::native::check(kernels::launch_rope_kv(rp, r, workloads::native::stream(ctx)),
                                     "rope_kv");
            launch(*dev, c);
        };
        // The row at pos is written by rope_kv; a stale one (the wait misplaced) would differ: the
        // cache row is first set to a value far from what rope_kv writes.
        auto check = [&](std::int64_t p, const char* how) {
            EXPECT_LT(scaled_error(c.out, reference(c.q, c.k, c.v, p)), tolerance(t))
                << how << " pos " << p << " (" << c.plan.describe() << ")";
        };
        for (const std::int64_t p : {0, 40, 575}) {
            c.pos.fill_(p);
            c.k.select(1, p).fill_(30);
            c.v.select(1, p).fill_(-30);
            c.q.fill_(5);
            both();
            check(p, "eager");
        }
        if (!dev->caps().graphs)
            continue;
        workloads::models::captured_step step;
        c.pos.fill_(1);
        step.capture(*dev, both);
        for (const std::int64_t p : {2, 33, 400}) {
            c.pos.fill_(p);
            c.k.select(1, p).fill_(30);
            c.v.select(1, p).fill_(-30);
            c.q.fill_(5);
            step.run([] { FAIL() << "not captured"; });
            check(p, "replayed");
        }
    }
#endif
}

// rope_kv inside decode attention (decode_attention_rope, the native_fused decoder's path) against
// rope_kv then attention: the output and the caches' rows at the position the same bits, with and
// without the q/k norms, every dtype, head_dim 32..128, GQA groups 1..8, one split and many,
// positions at a split's edges; eager and from a graph replayed at later positions; the fused
// rope's loads issued together (the default) and in the compiler's order
// (FOURFOLD_ATTENTION_ROPE_LOADS=0); the first round's cache rows loaded before the query rows (the
// default) on one side and after them (FOURFOLD_ATTENTION_PRELOAD=0) on the other.
TEST(decode_attention_cuda, rope_fused_into_the_launch_is_bitwise_rope_kv_then_attention) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch order("FOURFOLD_ATTENTION_ROPE_LOADS");
    // the first round's rows loaded before the query's (the default) on one side, after it
    // (FOURFOLD_ATTENTION_PRELOAD=0) on the other, each way round: the fused side's row at *pos
    // then comes from its shared memory, the unfused side's from the cache rope_kv wrote
    const fourfold::testing::env_switch preload("FOURFOLD_ATTENTION_PRELOAD");
    for (const char* loads_first : {"1", "0"})
        for (const auto t : types())
            for (const auto& s : std::vector<cache_shape>{
                     {32, 8, 128, 576}, {32, 4, 128, 544}, {8, 8, 64, 100}, {4, 1, 32, 64}})
                for (const bool norms : {false, true}) {
                    order.set(loads_first);
                    const bool fused_preloads = std::string(loads_first) == "1";
                    preload.set(fused_preloads ? "0" : "1");
                    auto unfused = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, false);
                    ASSERT_EQ(unfused.plan.preload_round, !fused_preloads);
                    preload.set(fused_preloads ? "1" : "0");
                    auto fused = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, false);
                    fused.k.copy_(unfused.k);
                    fused.v.copy_(unfused.v);
                    workloads::call_context ctx(*dev);
                    const auto& lim = workloads::native::limits(ctx);
                    // (a qkv row 8 elements longer than q, k and v)
                    const auto in = make_rope(unfused, s, norms, 8, lim);
                    const auto& r = in.args;
                    const auto& rp = in.plan;
                    ASSERT_TRUE(rp.valid.empty()) << rp.valid;
                    fuse_rope(fused, in, lim);
                    ASSERT_TRUE(fused.plan.valid.empty()) << fused.plan.valid;
                    ASSERT_TRUE(fused.plan.fused_rope) << fused.plan.describe();
                    ASSERT_EQ(fused.plan.rope_loads_first, std::string(loads_first) == "1")
                        << fused.plan.describe();
                    ASSERT_EQ(fused.plan.preload_round, fused_preloads) << fused.plan.describe();
                    preload.unset();
                    auto run_both = [&] {
                        workloads::native::check(
                            kernels::launch_rope_kv(rp, r, workloads::native::stream(ctx)),
                            "rope_kv");
                        launch(*dev, unfused);
                        launch(*dev, fused);
                    };
                    auto same = [&](std::int64_t p, const char* how) {
                        const auto what = std::string(how) + " " + c10::toString(t) + " " +
                                          std::to_string(s.heads) + "/" +
                                          std::to_string(s.kv_heads) + "x" + std::to_string(s.hd) +
                                          (norms ? " normed" : "") + " pos " + std::to_string(p) +
                                          " (" + fused.plan.describe() + ")";
                        EXPECT_TRUE(at::equal(fused.out, unfused.out)) << what;
                        EXPECT_TRUE(at::equal(fused.k, unfused.k)) << "k cache, " << what;
                        EXPECT_TRUE(at::equal(fused.v, unfused.v)) << "v cache, " << what;
                        EXPECT_LT(
                            scaled_error(fused.out, reference(unfused.q, unfused.k, unfused.v, p)),
                            tolerance(t))
                            << what;
                    };
                    for (const std::int64_t p : {std::int64_t{0}, std::int64_t{31},
                                                 std::int64_t{32}, s.cap / 2, s.cap - 1}) {
                        unfused.pos.fill_(p);
                        fused.pos.fill_(p);
                        run_both();
                        same(p, "eager");
                    }
                    if (!dev->caps().graphs)
                        continue;
                    workloads::models::captured_step step;
                    unfused.pos.fill_(1);
                    fused.pos.fill_(1);
                    step.capture(*dev, run_both);
                    for (const std::int64_t p : {std::int64_t{2}, std::int64_t{33}, s.cap - 2}) {
                        unfused.pos.fill_(p);
                        fused.pos.fill_(p);
                        step.run([] { FAIL() << "not captured"; });
                        same(p, "replayed");
                    }
                }
#endif
}

// Vector loads of the cache rows (the default where aligned; FOURFOLD_ATTENTION_VECTOR_LOADS=0 off)
// against the scalar loads: the same bits, every dtype, head_dim 16..256 (vector loads where a
// lane's elements make one), one split, a few and many (the shared merge), positions at a split's
// edges; a launch whose cache lost the plan's alignment is refused. (The fused rope's path: the
// stage runs the rope test with the switch on.)
TEST(decode_attention_cuda, vector_loads_give_the_scalar_loads_bits) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch vector("FOURFOLD_ATTENTION_VECTOR_LOADS");
    for (const auto t : types())
        for (const auto& s : std::vector<cache_shape>{{32, 4, 128, 544},
                                                      {32, 4, 128, 2080},
                                                      {8, 2, 64, 100},
                                                      {8, 1, 256, 80},
                                                      {4, 4, 16, 70},
                                                      {4, 2, 32, 20}}) {
            vector.set("0");
            auto scalar = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, false);
            vector.set("1");
            auto vec = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, false);
            vector.unset();
            const int vb =
                kernels::attention_vector_bytes(s.hd, static_cast<int>(c10::elementSize(t)));
            const auto what = std::string(c10::toString(t)) + " " + std::to_string(s.heads) + "/" +
                              std::to_string(s.kv_heads) + "x" + std::to_string(s.hd) + " cap " +
                              std::to_string(s.cap) + " (" + vec.plan.describe() + ")";
            EXPECT_FALSE(scalar.plan.vector_loads) << what;
            EXPECT_EQ(vec.plan.vector_loads, vb > 0) << what;
            vec.q.copy_(scalar.q);
            vec.k.copy_(scalar.k);
            vec.v.copy_(scalar.v);
            for (const std::int64_t p :
                 {std::int64_t{0}, std::int64_t{31}, std::int64_t{32}, s.cap / 2, s.cap - 1}) {
                if (p >= s.cap)
                    continue; // (a short cache: the float64 reference stops at its end)
                scalar.pos.fill_(p);
                vec.pos.fill_(p);
                launch(*dev, scalar);
                launch(*dev, vec);
                EXPECT_TRUE(at::equal(vec.out, scalar.out)) << what << " pos " << p;
                EXPECT_LT(scaled_error(vec.out, reference(vec.q, vec.k, vec.v, p)), tolerance(t))
                    << what << " pos " << p;
            }
            if (vb > 0) {
                workloads::call_context ctx(*dev);
                auto moved = vec.args;
                moved.k_cache = static_cast<const char*>(moved.k_cache) + 2; // off the alignment
                EXPECT_FALSE(kernels::launch_decode_attention(vec.plan, moved,
                                                              workloads::native::stream(ctx))
                                 .ok())
                    << what;
            }
        }
#endif
}

// 4 query heads a block (forced with FOURFOLD_ATTENTION_BLOCK_HEADS=4): GQA groups of 8 in halves
// (qwen3's shape, the last block merging at ctx 512, the shared merge at 2048), of 4 (llama3-8b's)
// and of 2, head_dim 64 and 128, against float64; the same bits launch after launch; a captured
// launch replayed at other positions leaves every unit's count at zero; and the fused rope's path
// (both halves rope the row at *pos, the first writes it) against rope_kv then attention in
// float64, its caches' rows the same bits as rope_kv's.
TEST(decode_attention_cuda, four_query_heads_a_block_match_float64_and_keep_their_counts) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    const fourfold::testing::env_switch heads4("FOURFOLD_ATTENTION_BLOCK_HEADS", "4");
    for (const auto t : types())
        for (const auto& s : std::vector<cache_shape>{{32, 4, 128, 544},
                                                      {32, 4, 128, 2080},
                                                      {32, 8, 128, 576},
                                                      {8, 4, 64, 100},
                                                      {16, 2, 64, 40}}) {
            auto c = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, false);
            const auto what = std::string(c10::toString(t)) + " " + std::to_string(s.heads) + "/" +
                              std::to_string(s.kv_heads) + "x" + std::to_string(s.hd) + " cap " +
                              std::to_string(s.cap) + " (" + c.plan.describe() + ")";
            ASSERT_EQ(c.plan.block_heads, 4) << what;
            const auto group = s.heads / s.kv_heads;
            EXPECT_EQ(c.plan.blocks, s.kv_heads * ((group + 3) / 4) * c.plan.splits) << what;
            for (const std::int64_t p :
                 {std::int64_t{0}, std::int64_t{31}, std::int64_t{32}, s.cap / 2, s.cap - 1}) {
                if (p >= s.cap)
                    continue;
                c.pos.fill_(p);
                launch(*dev, c);
                const auto first = c.out.clone();
                EXPECT_LT(scaled_error(first, reference(c.q, c.k, c.v, p)), tolerance(t))
                    << what << " pos " << p;
                for (int i = 0; i < 5; ++i) {
                    c.out.fill_(0);
                    launch(*dev, c);
                    EXPECT_TRUE(at::equal(c.out, first)) << what << " pos " << p << " launch " << i;
                }
                for (const auto v : counters(c))
                    EXPECT_EQ(v, 0u) << what << " pos " << p;
            }
            if (!dev->caps().graphs)
                continue;
            workloads::models::captured_step step;
            c.pos.fill_(3);
            step.capture(*dev, [&] { launch(*dev, c); });
            for (const std::int64_t p : {std::int64_t{1}, s.cap - 1, s.cap / 3}) {
                c.pos.fill_(p);
                step.run([] { FAIL() << "not captured"; });
                EXPECT_LT(scaled_error(c.out, reference(c.q, c.k, c.v, p)), tolerance(t))
                    << what << " replayed at " << p;
                for (const auto v : counters(c))
                    EXPECT_EQ(v, 0u) << what << " replayed at " << p;
            }
        }
    // the fused rope: qwen3's shape with its norms, against rope_kv then attention (float64), the
    // caches' rows the same bits (written by the first half only)
    const auto t = at::kBFloat16;
    const cache_shape s{32, 4, 128, 544};
    auto unfused = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, false);
    auto fused = make(*dev, t, s.heads, s.kv_heads, s.hd, s.cap, false);
    fused.k.copy_(unfused.k);
    fused.v.copy_(unfused.v);
    workloads::call_context ctx(*dev);
    const auto& lim = workloads::native::limits(ctx);
    const auto in = make_rope(unfused, s, true, 0, lim);
    const auto& r = in.args;
    const auto& rp = in.plan;
    ASSERT_TRUE(rp.valid.empty()) << rp.valid;
    fuse_rope(fused, in, lim);
    ASSERT_TRUE(fused.plan.valid.empty()) << fused.plan.valid;
    ASSERT_TRUE(fused.plan.fused_rope && fused.plan.block_heads == 4) << fused.plan.describe();
    for (const std::int64_t p :
         {std::int64_t{0}, std::int64_t{31}, std::int64_t{32}, std::int64_t{300}, s.cap - 1}) {
        unfused.pos.fill_(p);
        fused.pos.fill_(p);
        workloads::native::check(kernels::launch_rope_kv(rp, r, workloads::native::stream(ctx)),
                                 "rope_kv");
        launch(*dev, unfused);
        launch(*dev, fused);
        EXPECT_TRUE(at::equal(fused.k, unfused.k)) << "k cache, pos " << p;
        EXPECT_TRUE(at::equal(fused.v, unfused.v)) << "v cache, pos " << p;
        EXPECT_TRUE(at::equal(fused.out, unfused.out)) << "pos " << p; // the same plan's arithmetic
        EXPECT_LT(scaled_error(fused.out, reference(unfused.q, unfused.k, unfused.v, p)),
                  tolerance(t))
            << "pos " << p;
    }
#endif
}

// Not a timed assertion: the µs a launch of each path and of its probe stops (the phases'
// upper bounds), printed for docs/performance.md. Warm: one graph of 20 back-to-back launches (the
// cache in L2), the best of 10 replays; cold: each launch after a 64 MB memset (the cache rows
// evicted, as the layer's weights evict them in a decode step), the memset's own time taken off.
// The whole launches are held against float64.
TEST(decode_attention_cuda, the_paths_and_their_phases_are_timed_and_printed) {
    REQUIRE_NATIVE(dev);
#if FOURFOLD_WITH_KERNELS
    if (!dev->caps().graphs)
        GTEST_SKIP() << "no graph capture on this device";
    struct shape {
        const char* name;
        std::int64_t heads, kv_heads, cap, pos;
    };
    const std::vector<shape> shapes{{"qwen3-30b-a3b ctx 512", 32, 4, 544, 512},
                                    {"qwen3-30b-a3b ctx 2048", 32, 4, 2080, 2048},
                                    {"llama3-8b ctx 512", 32, 8, 576, 512},
                                    {"llama3-8b ctx 2048", 32, 8, 2112, 2048}};
    const auto scratch = at::empty(
        {std::int64_t{64} << 20}, at::TensorOptions().dtype(at::kByte).device(dev->torch_device()));
    constexpr int steps = 20;
    auto best_us = [&](const std::function<void()>& body) {
        return fourfold::testing::graph_us_per_call(*dev, steps, body);
    };
    auto wipe = [&] { scratch.zero_(); };
    const double wipe_us = best_us(wipe);
    std::cout << "attention: a 64 MB memset " << wipe_us << " us\n";
    // "<warm> us, cold <cold> us a launch; <plan>" for c's launch as its args stand
    auto timed = [&](const attention_case& c) {
        const double warm = best_us([&] { launch(*dev, c); });
        const double cold = best_us([&] {
                                wipe();
                                launch(*dev, c);
                            }) -
                            wipe_us;
        return "warm " + std::to_string(warm) + " us, cold " + std::to_string(cold) +
               " us a launch; " + c.plan.describe();
    };
    // the whole launch held against float64
    auto check = [&](attention_case& c, const shape& s) {
        c.args.probe_stop_after = 0;
        c.out.fill_(0);
        launch(*dev, c);
        EXPECT_LT(scaled_error(c.out, reference(c.q, c.k, c.v, s.pos)), tolerance(at::kBFloat16))
            << s.name << " " << c.plan.describe();
    };
    for (const auto& s : shapes)
        for (const bool cluster : {false, true}) {
            auto c = make(*dev, at::kBFloat16, s.heads, s.kv_heads, 128, s.cap, cluster);
            if (cluster && c.plan.cluster == 0)
                continue;
            c.pos.fill_(s.pos);
            for (const int stop : {1, 2, 3, 4, 5, 6, 0}) {
                if (stop >= 4 && stop <= 6 && (cluster || c.plan.splits == 1))
                    continue; // (the grid path's split merge only)
                if (stop >= 5 && stop <= 6 && c.plan.shared_merge)
                    continue; // (inside the last block's merge only)
                c.args.probe_stop_after = stop;
                std::cout << "attention " << s.name << ", " << (cluster ? "cluster" : "grid")
                          << " path ("
                          << (stop == 0 ? std::string("whole launch")
                                        : "stopped after phase " + std::to_string(stop))
                          << "): " << timed(c) << "\n";
            }
            check(c, s);
        }
    // the grid path's whole launch with fewer, longer splits (the plan's least chunk)
    for (const auto& s : shapes)
        for (const std::int64_t least : {64, 96, 128}) {
            auto c = make(*dev, at::kBFloat16, s.heads, s.kv_heads, 128, s.cap, false, least);
            c.pos.fill_(s.pos);
            std::cout << "attention " << s.name << ", grid path, least chunk " << least
                      << " (whole launch): " << timed(c) << "\n";
            check(c, s);
        }
#endif
}
