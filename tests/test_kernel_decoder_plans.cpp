// Host-side tests of the decoder kernels' plans (pure arithmetic, no device): rmsnorm,
// rope_kv, decode_attention, argmax and swiglu; built wherever the kernels are.
#include "env_switch.hpp"
#include "fourfold/kernels/argmax.hpp"
#include "fourfold/kernels/decode_attention.hpp"
#include "fourfold/kernels/rmsnorm.hpp"
#include "fourfold/kernels/rope_kv.hpp"
#include "fourfold/kernels/swiglu.hpp"

#include <gtest/gtest.h>

using namespace fourfold::kernels;

namespace {

const device_limits h200{}; // 132 SMs

device_limits ampere() {
    device_limits d;
    d.sm_count = 108;
    d.cc_major = 8;
    return d;
}

bool says(const std::string& text, const char* what) {
    return text.find(what) != std::string::npos;
}

// llama3-8b's decode attention (32 query heads over 8 kv heads of 128) with 576 cache positions
// (ctx 512 + 64 tokens); the plan only checks that a position pointer is given, so a host
// address stands in for the device one. `cluster` false: the grid path.
decode_attention_args llama3_attention(bool cluster = false) {
    static const std::int64_t pos = 0;
    decode_attention_args a;
    a.allow_cluster = cluster;
    a.heads = 32;
    a.kv_heads = 8;
    a.head_dim = 128;
    a.pos = &pos;
    a.capacity = 576;
    return a;
}

} // namespace

TEST(decoder_kernel_plans, rmsnorm_spreads_a_row_over_at_most_1024_threads) {
    rmsnorm_args a;
    a.rows = 1;
    a.cols = 4096;
    auto p = plan_rmsnorm(a, h200);
    EXPECT_TRUE(p.valid.empty());
    EXPECT_EQ(p.per_thread, 8);
    EXPECT_EQ(p.threads, 512);
    EXPECT_EQ(p.blocks, 1);
    a.cols = 16384;
    p = plan_rmsnorm(a, h200);
    EXPECT_EQ(p.per_thread, 16);
    EXPECT_EQ(p.threads, 1024);
    a.rows = 32;
    a.cols = 128; // Qwen3's per-head norm
    p = plan_rmsnorm(a, h200);
    EXPECT_EQ(p.per_thread, 1);
    EXPECT_EQ(p.threads, 128);
    EXPECT_EQ(p.blocks, 32);
    a.cols = 7;
    p = plan_rmsnorm(a, h200);
    EXPECT_EQ(p.threads, 32);
    for (const std::int64_t cols : {1, 100, 1000, 5000, 10000, 16384}) {
        a.cols = cols;
        p = plan_rmsnorm(a, h200);
        EXPECT_GE(static_cast<std::int64_t>(p.threads) * p.per_thread, cols);
        EXPECT_LE(p.threads, 1024);
    }
    a.cols = 16385;
    EXPECT_NE(plan_rmsnorm(a, h200).valid.find("exceeds"), std::string::npos);
    a.cols = 0;
    EXPECT_FALSE(plan_rmsnorm(a, h200).valid.empty());
    a.cols = 64;
    std::int64_t idx = 0;
    a.index = &idx;
    EXPECT_FALSE(plan_rmsnorm(a, h200).valid.empty()); // gather without its table size
    a.gather_rows = 10;
    EXPECT_TRUE(plan_rmsnorm(a, h200).valid.empty());
}

TEST(decoder_kernel_plans, rope_kv_takes_a_block_a_head_and_checks_its_shape) {
    const std::int64_t pos = 0;
    rope_kv_args a;
    a.heads = 32;
    a.kv_heads = 8;
    a.head_dim = 128;
    a.capacity = 576;
    a.ld_qkv = std::int64_t{32 + 16} * 128;
    a.pos = &pos;
    auto p = plan_rope_kv(a, h200);
    EXPECT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.blocks, 48);
    EXPECT_EQ(p.threads, 128);
    EXPECT_FALSE(p.qk_norm);
    a.head_dim = 16;
    a.ld_qkv = std::int64_t{48} * 16;
    EXPECT_EQ(plan_rope_kv(a, h200).threads, 32);
    int w = 1;
    a.q_norm = &w;
    EXPECT_FALSE(plan_rope_kv(a, h200).valid.empty()); // q norm without k norm
    a.k_norm = &w;
    EXPECT_TRUE(plan_rope_kv(a, h200).qk_norm);
    a.head_dim = 15;
    EXPECT_FALSE(plan_rope_kv(a, h200).valid.empty());
    a.head_dim = 16;
    a.ld_qkv = 10;
    EXPECT_FALSE(plan_rope_kv(a, h200).valid.empty());
    a.ld_qkv = std::int64_t{48} * 16;
    a.pos = nullptr;
    EXPECT_FALSE(plan_rope_kv(a, h200).valid.empty());
}

TEST(decoder_kernel_plans, decode_attention_splits_the_cache_in_chunks_of_32_or_more) {
    auto a = llama3_attention(); // at ctx 512 + 64 tokens
    auto p = plan_decode_attention(a, h200);
    EXPECT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.chunk, 32);
    EXPECT_EQ(p.splits, 18);
    EXPECT_EQ(p.blocks, 144);
    EXPECT_EQ(p.threads, 256); // 8 warps, 4 positions each
    EXPECT_FALSE(p.combine);   // no second launch: a kv head's splits merge after a barrier
    EXPECT_TRUE(p.fused_combine);
    EXPECT_EQ(p.counter_offset, 32 * 18 * 130 * 4); // the partials, then a barrier a kv head
    EXPECT_EQ(p.workspace_bytes, 32 * 18 * 130 * 4 + 8 * 16);
    EXPECT_FALSE(p.shared_merge); // 18 splits: the last block to count in merges alone
    a.capacity = 2112;            // ctx 2048 + 64
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.splits, 33); // capped at one wave of 2 blocks an SM: chunks of 64
    EXPECT_EQ(p.chunk, 64);
    EXPECT_EQ(p.blocks, 264);
    EXPECT_EQ(p.threads, 256);
    EXPECT_TRUE(p.shared_merge);            // 33 splits meet at a barrier and merge in shares
    EXPECT_LE(p.blocks, 2 * h200.sm_count); // one wave: every block resident at once
    a.kv_heads = 4; // qwen3-30b-a3b at 2080: 65 splits of 32 (one wave: 260 blocks)
    a.capacity = 2080;
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.chunk, 32);
    EXPECT_EQ(p.splits, 65);
    EXPECT_TRUE(p.shared_merge);
    a.capacity = 1024; // 32 splits of 32: the last block still merges them alone
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.chunk, 32);
    EXPECT_EQ(p.splits, 32);
    EXPECT_FALSE(p.shared_merge);
    a.kv_heads = 8;
    a.capacity = 40960; // capped: longer chunks
    p = plan_decode_attention(a, h200);
    EXPECT_LE(p.splits, 2 * 132 / 8);
    EXPECT_GE(p.chunk * p.splits, a.capacity);
    EXPECT_LT((p.chunk) * (p.splits - 1), a.capacity);
    EXPECT_EQ(p.chunk % 32, 0);
    a.capacity = 20;
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.splits, 1);
    EXPECT_FALSE(p.combine);
    EXPECT_FALSE(p.fused_combine);
    EXPECT_EQ(p.workspace_bytes, 0);
    EXPECT_TRUE(says(p.describe(), "no combine")) << p.describe();
    for (const std::int64_t cap : {1, 31, 33, 64, 100, 1000, 4097, 65536}) {
        a.capacity = cap;
        p = plan_decode_attention(a, h200);
        EXPECT_GE(p.chunk * p.splits, cap);
        EXPECT_LT(p.chunk * (p.splits - 1), cap) << cap; // no split starts past the cache
    }
    a.head_dim = 96;
    EXPECT_FALSE(plan_decode_attention(a, h200).valid.empty());
    a.head_dim = 128;
    a.heads = 36; // 36 / 8 is not whole
    EXPECT_FALSE(plan_decode_attention(a, h200).valid.empty());
    a.heads = 80;
    a.kv_heads = 8; // 10 a group: more than 8
    EXPECT_FALSE(plan_decode_attention(a, h200).valid.empty());
}

// The fused rope's loads issued together by default (session 42); the compiler's order where
// FOURFOLD_ATTENTION_ROPE_LOADS=0 (A/B runs); nothing to say without the fused rope.
TEST(decoder_kernel_plans, decode_attention_issues_the_fused_rope_s_loads_together) {
    const fourfold::testing::env_switch order("FOURFOLD_ATTENTION_ROPE_LOADS");
    auto a = llama3_attention();
    EXPECT_FALSE(plan_decode_attention(a, h200).rope_loads_first); // no fused rope
    const int table = 0;
    a.rope.qkv = &table;
    a.rope.ld_qkv = (a.heads + 2 * a.kv_heads) * a.head_dim;
    a.rope.cos = &table;
    a.rope.sin = &table;
    auto p = plan_decode_attention(a, h200);
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.fused_rope && p.rope_loads_first) << p.describe();
    EXPECT_FALSE(says(p.describe(), "compiler's order")) << p.describe();
    order.set("0");
    p = plan_decode_attention(a, h200);
    EXPECT_TRUE(p.fused_rope && !p.rope_loads_first) << p.describe();
    EXPECT_TRUE(says(p.describe(), "its loads in the compiler's order")) << p.describe();
}

// The grid path loads its first round's cache rows before the query rows by default (session
// 53); FOURFOLD_ATTENTION_PRELOAD=0 after them (A/B runs); the cluster path never.
TEST(decoder_kernel_plans, decode_attention_loads_the_first_round_before_the_query) {
    const fourfold::testing::env_switch preload("FOURFOLD_ATTENTION_PRELOAD");
    auto a = llama3_attention();
    auto p = plan_decode_attention(a, h200);
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.cluster, 0);
    EXPECT_TRUE(p.preload_round) << p.describe();
    EXPECT_TRUE(says(p.describe(), "first round's cache rows loaded before")) << p.describe();
    preload.set("0");
    p = plan_decode_attention(a, h200);
    EXPECT_FALSE(p.preload_round) << p.describe();
    EXPECT_FALSE(says(p.describe(), "first round's cache rows")) << p.describe();
    preload.unset();
    a = llama3_attention(true); // (h200 has clusters; the cache is short enough)
    p = plan_decode_attention(a, h200);
    ASSERT_GT(p.cluster, 0) << p.describe();
    EXPECT_FALSE(p.preload_round) << p.describe();
}

// Vector loads of the cache rows (the default from session 54; FOURFOLD_ATTENTION_VECTOR_LOADS=0
// turns them off): the grid path only, where a lane's elements make a 4-, 8- or 16-byte load and
// both caches are aligned to it.
TEST(decoder_kernel_plans, decode_attention_takes_vector_loads_where_aligned_unless_turned_off) {
    EXPECT_EQ(attention_vector_bytes(128, 2), 8); // 4 bf16 a lane
    EXPECT_EQ(attention_vector_bytes(256, 2), 16);
    EXPECT_EQ(attention_vector_bytes(64, 2), 4);
    EXPECT_EQ(attention_vector_bytes(32, 2), 0); // one element a lane
    EXPECT_EQ(attention_vector_bytes(128, 4), 16);
    EXPECT_EQ(attention_vector_bytes(256, 4), 16); // two 16-byte loads
    EXPECT_EQ(attention_vector_bytes(16, 4), 4);   // 16 lanes a position
    const fourfold::testing::env_switch vector("FOURFOLD_ATTENTION_VECTOR_LOADS");
    auto a = llama3_attention();
    alignas(16) static const char caches[64] = {};
    a.k_cache = caches;
    a.v_cache = caches + 24; // 8-byte aligned
    auto p = plan_decode_attention(a, h200);
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.vector_loads) << p.describe();
    EXPECT_TRUE(says(p.describe(), "the cache rows in vector loads")) << p.describe();
    vector.set("0");
    EXPECT_FALSE(plan_decode_attention(a, h200).vector_loads);
    vector.set("1");
    EXPECT_TRUE(plan_decode_attention(a, h200).vector_loads);
    vector.unset();
    // not yet with 4 query heads a block (its vector instance not run on a GPU) unless asked
    auto q = a;
    q.kv_heads = 4; // qwen3-30b-a3b's groups of 8 at 544 positions: 4 a block
    q.capacity = 544;
    p = plan_decode_attention(q, h200);
    ASSERT_EQ(p.block_heads, 4) << p.describe();
    EXPECT_FALSE(p.vector_loads) << p.describe();
    vector.set("1");
    EXPECT_TRUE(plan_decode_attention(q, h200).vector_loads);
    vector.unset();
    a.v_cache = caches + 20; // 4-byte aligned: not enough for 8
    EXPECT_FALSE(plan_decode_attention(a, h200).vector_loads);
    a.v_cache = caches + 32;
    a.head_dim = 32; // one bf16 a lane: nothing to widen
    EXPECT_FALSE(plan_decode_attention(a, h200).vector_loads);
    a = llama3_attention(true); // the cluster path has its own 16-byte loads
    ASSERT_GT(plan_decode_attention(a, h200).cluster, 0);
    EXPECT_FALSE(plan_decode_attention(a, h200).vector_loads);
}

// 4 query heads a block (block_heads 4; the grid path, head_dim 64 or 128): a kv head's group in
// sets of 4, each its own unit of splits and count; 4 warps a block. Taken where the group has more
// than 4 heads and the wave keeps block_heads 8's splits (qwen3-30b-a3b at 544 positions, not at
// 2080); FOURFOLD_ATTENTION_BLOCK_HEADS=4 or 8 forces either.
TEST(decoder_kernel_plans, decode_attention_takes_four_query_heads_a_block_where_the_splits_stay) {
    const fourfold::testing::env_switch heads("FOURFOLD_ATTENTION_BLOCK_HEADS");
    auto a = llama3_attention(); // 32 / 8: groups of 4
    a.kv_heads = 4;              // qwen3-30b-a3b: groups of 8, 544 positions
    a.capacity = 544;
    auto p = plan_decode_attention(a, h200);
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.block_heads, 4);
    EXPECT_EQ(p.splits, 17);
    EXPECT_EQ(p.chunk, 32);
    EXPECT_EQ(p.blocks, 4 * 2 * 17); // two halves a kv head
    EXPECT_EQ(p.threads, 128);       // 4 warps, 8 positions a round each
    EXPECT_FALSE(p.shared_merge);
    EXPECT_EQ(p.workspace_bytes, p.counter_offset + std::int64_t{8} * 16); // a count a half
    EXPECT_EQ(p.counter_offset, 32 * 17 * 130 * 4);
    EXPECT_TRUE(says(p.describe(), "4 query heads a block")) << p.describe();
    heads.set("8");
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.block_heads, 8);
    EXPECT_EQ(p.blocks, 4 * 17);
    EXPECT_EQ(p.threads, 256);
    EXPECT_FALSE(says(p.describe(), "query heads a block")) << p.describe();
    heads.unset();
    a.capacity = 2080; // 8 units: one wave of 2 blocks an SM would be 33 splits of 64, not 65 of 32
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.block_heads, 8);
    EXPECT_EQ(p.splits, 65);
    EXPECT_EQ(p.chunk, 32);
    heads.set("4");
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.block_heads, 4);
    EXPECT_EQ(p.splits, 33);
    EXPECT_EQ(p.chunk, 64);
    EXPECT_TRUE(p.shared_merge);
    EXPECT_LE(p.blocks, 2 * h200.sm_count);
    heads.unset();
    a = llama3_attention(); // groups of 4: no more blocks in 4s, so 8 a block by default
    EXPECT_EQ(plan_decode_attention(a, h200).block_heads, 8);
    heads.set("4"); // one unit a kv head, as before, with 4 warps
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.block_heads, 4);
    EXPECT_EQ(p.splits, 18);
    EXPECT_EQ(p.blocks, 144);
    EXPECT_EQ(p.threads, 128);
    a.head_dim = 256; // not taken there, even when asked
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.block_heads, 8);
    EXPECT_FALSE(says(p.describe(), "query heads a block")) << p.describe();
    heads.unset();
    a = llama3_attention();
    a.kv_heads = 4;
    a.capacity = 544;
    a.head_dim = 256;
    EXPECT_EQ(plan_decode_attention(a, h200).block_heads, 8);
}

TEST(decoder_kernel_plans, decode_attention_takes_a_least_chunk_for_fewer_longer_splits) {
    auto a = llama3_attention(); // 576 positions: 18 splits of 32 by default
    a.min_chunk = 64;
    auto p = plan_decode_attention(a, h200);
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.chunk, 64);
    EXPECT_EQ(p.splits, 9);
    EXPECT_EQ(p.blocks, 72);
    EXPECT_EQ(p.workspace_bytes, 32 * 9 * 130 * 4 + 8 * 16);
    a.min_chunk = 128; // 4.5 chunks: 5 splits of 128
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.chunk, 128);
    EXPECT_EQ(p.splits, 5);
    a.min_chunk = 1024; // longer than the cache: one split, no combine
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.splits, 1);
    EXPECT_FALSE(p.fused_combine);
    a.capacity = 40960; // the wave's cap still rules: chunks longer than the least
    a.min_chunk = 64;
    p = plan_decode_attention(a, h200);
    EXPECT_LE(p.splits, 2 * 132 / 8);
    EXPECT_GE(p.chunk, 64);
    EXPECT_EQ(p.chunk % 32, 0);
    for (const std::int64_t bad : {-32, 16, 48}) {
        a.min_chunk = bad;
        p = plan_decode_attention(a, h200);
        EXPECT_TRUE(says(p.valid, "min_chunk must be 0")) << bad << ": " << p.valid;
    }
}

TEST(decoder_kernel_plans, decode_attention_takes_a_cluster_a_kv_head_from_sm_90) {
    auto a = llama3_attention(true); // 576 positions: 8 splits of 72
    auto p = plan_decode_attention(a, h200);
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.cluster, 8);
    EXPECT_EQ(p.splits, 8);
    EXPECT_EQ(p.chunk, 72);
    EXPECT_EQ(p.blocks, 64);
    EXPECT_EQ(p.threads, 256);
    EXPECT_EQ(p.workspace_bytes, 0); // merged in distributed shared memory
    EXPECT_FALSE(p.fused_combine);
    EXPECT_TRUE(p.dependent_launch);
    EXPECT_TRUE(says(p.describe(), "a cluster of 8 block(s) a kv head")) << p.describe();
    a.capacity = 2112; // ctx 2048 + 64: 8 of 264
    p = plan_decode_attention(a, h200);
    EXPECT_EQ(p.cluster, 8);
    EXPECT_EQ(p.chunk, 264);
    for (const std::int64_t cap : {1, 31, 32, 33, 64, 100, 256, 257, 1000, 4095, 4096}) {
        a.capacity = cap;
        p = plan_decode_attention(a, h200);
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_EQ(p.cluster, p.splits) << cap;
        EXPECT_GE(p.cluster, 1);
        EXPECT_LE(p.cluster, k_attention_max_cluster);
        EXPECT_LE(p.chunk, 512);
        EXPECT_GE(p.chunk * p.splits, cap);
        EXPECT_LT(p.chunk * (p.splits - 1), cap) << cap; // no split starts past the cache
    }
    a.capacity = 4097; // past 512 positions a block: the grid path
    EXPECT_EQ(plan_decode_attention(a, h200).cluster, 0);
    a.capacity = 576;
    EXPECT_EQ(plan_decode_attention(a, ampere()).cluster, 0); // no clusters before sm_90
    a.head_dim = 256;
    EXPECT_EQ(plan_decode_attention(a, h200).threads, 128); // its shared memory: 4 warps
    a.head_dim = 128;
    alignas(16) static const char base[64] = {};
    a.q = base + 2; // not 16-byte aligned: the grid path
    EXPECT_EQ(plan_decode_attention(a, h200).cluster, 0);
    a.q = base;
    a.k_cache = base + 8;
    EXPECT_EQ(plan_decode_attention(a, h200).cluster, 0);
    a.k_cache = base;
    EXPECT_EQ(plan_decode_attention(a, h200).cluster, 8);
    a.allow_cluster = false;
    EXPECT_EQ(plan_decode_attention(a, h200).cluster, 0);
}

TEST(decoder_kernel_plans, decode_attention_fuses_its_combine_and_counts_its_workspace) {
    auto a = llama3_attention(); // at ctx 512 + 64 tokens
    auto p = plan_decode_attention(a, h200);
    EXPECT_TRUE(p.dependent_launch);
    EXPECT_TRUE(says(p.describe(), "combine fused")) << p.describe();
    EXPECT_FALSE(says(p.describe(), "second launch")) << p.describe();
    EXPECT_TRUE(says(p.describe(), "dependent launch")) << p.describe();
    p = plan_decode_attention(a, ampere());
    EXPECT_FALSE(p.dependent_launch); // no programmatic dependent launch before sm_90
    EXPECT_TRUE(p.fused_combine);
    EXPECT_FALSE(says(p.describe(), "dependent launch")) << p.describe();
    // the barriers start 16-byte aligned after partials of any size, 16 bytes a unit (a kv head,
    // or each set of its query heads with block_heads 4)
    for (const std::int64_t heads : {1, 2, 3, 8})
        for (const std::int64_t hd : {16, 64, 256})
            for (const std::int64_t cap : {64, 96, 100, 1000, 4096}) {
                a.heads = heads;
                a.kv_heads = 1;
                a.head_dim = hd;
                a.capacity = cap;
                p = plan_decode_attention(a, h200);
                ASSERT_TRUE(p.valid.empty()) << p.valid;
                ASSERT_TRUE(p.fused_combine) << cap;
                const std::int64_t partials = heads * p.splits * (hd + 2) * 4;
                EXPECT_GE(p.counter_offset, partials);
                EXPECT_LT(p.counter_offset, partials + 16);
                EXPECT_EQ(p.counter_offset % 16, 0);
                const std::int64_t units = (heads + p.block_heads - 1) / p.block_heads;
                EXPECT_EQ(p.workspace_bytes, p.counter_offset + 16 * units) << heads << " " << hd;
            }
}

TEST(decoder_kernel_plans, the_small_decode_kernels_launch_dependently_from_sm_90) {
    rmsnorm_args n;
    n.rows = 1;
    n.cols = 4096;
    EXPECT_TRUE(plan_rmsnorm(n, h200).dependent_launch);
    EXPECT_TRUE(says(plan_rmsnorm(n, h200).describe(), "dependent launch"));
    EXPECT_FALSE(plan_rmsnorm(n, ampere()).dependent_launch);
    EXPECT_FALSE(says(plan_rmsnorm(n, ampere()).describe(), "dependent launch"));

    const std::int64_t pos = 0;
    rope_kv_args r;
    r.heads = 32;
    r.kv_heads = 8;
    r.head_dim = 128;
    r.capacity = 64;
    r.ld_qkv = std::int64_t{48} * 128;
    r.pos = &pos;
    ASSERT_TRUE(plan_rope_kv(r, h200).valid.empty()) << plan_rope_kv(r, h200).valid;
    EXPECT_TRUE(plan_rope_kv(r, h200).dependent_launch);
    EXPECT_TRUE(says(plan_rope_kv(r, h200).describe(), "dependent launch"));
    EXPECT_FALSE(plan_rope_kv(r, ampere()).dependent_launch);
    EXPECT_FALSE(says(plan_rope_kv(r, ampere()).describe(), "dependent launch"));

    alignas(16) static std::uint16_t in[2 * 64], out[64];
    swiglu_args s;
    s.gate_up = in;
    s.out = out;
    s.width = 64;
    s.ld_in = 128;
    s.ld_out = 64;
    EXPECT_TRUE(plan_swiglu(s, h200).dependent_launch);
    EXPECT_TRUE(says(plan_swiglu(s, h200).describe(), "dependent launch"));
    EXPECT_FALSE(plan_swiglu(s, ampere()).dependent_launch);
    EXPECT_FALSE(says(plan_swiglu(s, ampere()).describe(), "dependent launch"));

    std::int64_t tokens[2] = {0, 0};
    argmax_args g;
    g.tokens = tokens;
    g.n = 128256;
    EXPECT_TRUE(plan_argmax(g, h200).dependent_launch);
    EXPECT_TRUE(says(plan_argmax(g, h200).describe(), "dependent launch"));
    EXPECT_FALSE(plan_argmax(g, ampere()).dependent_launch);
    EXPECT_FALSE(says(plan_argmax(g, ampere()).describe(), "dependent launch"));
}

TEST(decoder_kernel_plans, argmax_uses_a_block_per_2048_values_up_to_two_a_multiprocessor) {
    std::int64_t tokens[2] = {0, 0};
    argmax_args a;
    a.tokens = tokens;
    a.n = 128256;
    auto p = plan_argmax(a, h200);
    EXPECT_TRUE(p.valid.empty());
    EXPECT_EQ(p.blocks, 63);
    EXPECT_EQ(p.workspace_bytes, 16 + 63 * 8);
    a.n = 1;
    EXPECT_EQ(plan_argmax(a, h200).blocks, 1);
    a.n = 1 << 24;
    EXPECT_EQ(plan_argmax(a, h200).blocks, 264);
    a.n = 0;
    EXPECT_FALSE(plan_argmax(a, h200).valid.empty());
    a.n = 10;
    a.tokens = nullptr;
    EXPECT_FALSE(plan_argmax(a, h200).valid.empty());
}

TEST(decoder_kernel_plans, swiglu_takes_packets_where_alignment_allows) {
    alignas(16) static std::uint16_t in[2 * 2 * 64 + 8], out[2 * 64 + 8];
    swiglu_args a;
    a.gate_up = in;
    a.out = out;
    a.tokens = 2;
    a.width = 64;
    a.ld_in = 128;
    a.ld_out = 64;
    auto p = plan_swiglu(a, h200);
    EXPECT_TRUE(p.valid.empty());
    EXPECT_EQ(p.vec, 8);
    EXPECT_TRUE(p.why_scalar.empty());
    a.gate_up = in + 1; // a view at an odd offset
    p = plan_swiglu(a, h200);
    EXPECT_EQ(p.vec, 1);
    EXPECT_FALSE(p.why_scalar.empty());
    a.gate_up = in;
    a.width = 60;
    a.ld_in = 120;
    a.ld_out = 60;
    EXPECT_EQ(plan_swiglu(a, h200).vec, 1);
    a.ld_in = 100;
    EXPECT_FALSE(plan_swiglu(a, h200).valid.empty());
}
