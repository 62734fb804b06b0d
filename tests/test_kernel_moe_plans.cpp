// The host half of the MoE decode kernels (kernels/moe.hpp): validity, token tiles, one launch or
// two, the persistent grids and the workspace, from the shape, the alignment and the device's
// limits alone (CPU, CI).
#include "env_switch.hpp"
#include "fourfold/kernels/moe.hpp"

#include <gtest/gtest.h>

using namespace fourfold::kernels;

namespace {

void* addr(std::uintptr_t a) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a stand-in address the plan only inspects
    return reinterpret_cast<void*>(a);
}
constexpr std::uintptr_t k_aligned = 1 << 20;

// Qwen3-30B-A3B's MoE block: hidden 2048, expert width 768, 128 experts, top 8.
moe_args qwen3_moe(std::int64_t tokens, elem t = elem::bf16) {
    moe_args a;
    a.x = addr(k_aligned);
    a.logits = addr(k_aligned * 2);
    a.w_gate_up = addr(k_aligned * 4);
    a.w_down = addr(k_aligned * 8);
    a.y = addr(k_aligned * 16);
    a.workspace = addr(k_aligned * 32);
    a.tokens = tokens;
    a.experts = 128;
    a.top_k = 8;
    a.hidden = 2048;
    a.width = 768;
    a.ld_x = a.ld_y = 2048;
    a.ld_logits = 128;
    a.type = t;
    return a;
}

} // namespace

TEST(kernel_moe_plans, qwen3_moe_one_token_is_one_launch_on_one_wave) {
    const auto p = plan_moe(qwen3_moe(1), device_limits{});
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.kernels, 1);
    EXPECT_TRUE(p.dependent_launch); // sm_90: behind the router's GEMV
    EXPECT_EQ(p.token_tile, 1);
    EXPECT_EQ(p.pairs, 8);
    EXPECT_EQ(p.max_active, 8);
    EXPECT_EQ(p.gate_up_units, 8 * 768);
    // 6144 (expert, column) units fill the 132 x 2 blocks of 8 warps: one wave, persistent
    EXPECT_EQ(p.one_launch_blocks, 132 * k_moe_blocks_per_sm);
    EXPECT_EQ(p.sm_count, 132);
    // a warp's stage holds one output column's 8 down rows of 768 bf16
    EXPECT_EQ(8 * 768 * 2, k_moe_stage_bytes);
    EXPECT_EQ(p.smem_bytes, k_moe_stage_bytes * k_moe_threads / 32);
    // two blocks an SM with their routing fit the H100/H200's 228 KB
    EXPECT_LE(k_moe_blocks_per_sm * (k_moe_one_launch_dynamic_smem + k_moe_one_launch_static_smem),
              228 * 1024);
    // an expert: gate/up 2 x 768 x 2048 and down 2048 x 768, bf16
    EXPECT_EQ(p.expert_bytes, 3ll * 768 * 2048 * 2);
    EXPECT_NE(p.describe().find("1 kernel"), std::string::npos);
    EXPECT_NE(p.describe().find("dependent launch"), std::string::npos);
}

TEST(kernel_moe_plans, two_kernels_when_asked_or_where_the_shared_memory_is_short) {
    auto a = qwen3_moe(1);
    a.one_launch = false;
    auto p = plan_moe(a, device_limits{});
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.kernels, 2);
    // 2048 output columns, a warp each: 256 blocks; kernel 1 on the full wave
    EXPECT_EQ(p.gate_up_blocks, 132 * k_moe_blocks_per_sm);
    EXPECT_EQ(p.down_units, 2048);
    EXPECT_EQ(p.down_blocks, 256);
    EXPECT_NE(p.describe().find("2 kernels"), std::string::npos);
    device_limits small; // an A100-like 164 KB an SM holds one block of the one launch, not two
    small.max_smem_per_sm = 164 * 1024;
    small.max_smem_per_block = 163 * 1024;
    EXPECT_EQ(plan_moe(qwen3_moe(1), small).kernels, 2);
    device_limits turing; // no cp.async
    turing.cc_major = 7;
    turing.max_smem_per_block = 64 * 1024;
    turing.max_smem_per_sm = 64 * 1024;
    EXPECT_EQ(plan_moe(qwen3_moe(1), turing).kernels, 2);
}

TEST(kernel_moe_plans, tokens_take_the_smallest_tile_that_holds_them) {
    const int expect[] = {0, 1, 2, 4, 4, 8, 8, 8, 8};
    for (int t = 1; t <= 8; ++t) {
        const auto p = plan_moe(qwen3_moe(t), device_limits{});
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_EQ(p.token_tile, expect[t]) << t;
        EXPECT_EQ(p.pairs, 8 * t);
        EXPECT_EQ(p.max_active, std::min<std::int64_t>(128, std::int64_t{8} * t));
    }
}

TEST(kernel_moe_plans, the_workspace_holds_the_routing_and_the_intermediate) {
    const auto p = plan_moe(qwen3_moe(8), device_limits{});
    const auto l = moe_layout(64, 768, 2);
    EXPECT_EQ(p.workspace_bytes, l.bytes);
    // five int32/float arrays of 64 pairs after a 16-byte header, then 64 x 768 bf16
    EXPECT_EQ(l.inter, 16 + 5 * 256);
    EXPECT_EQ(l.bytes, l.inter + std::int64_t{64} * 768 * 2);
    for (auto off : {l.active_expert, l.active_begin, l.active_count, l.sorted_token,
                     l.sorted_weight, l.inter})
        EXPECT_EQ(off % 16, 0);
    // fp32: the intermediate doubles
    EXPECT_EQ(plan_moe(qwen3_moe(8, elem::f32), device_limits{}).workspace_bytes,
              moe_layout(64, 768, 4).bytes);
}

TEST(kernel_moe_plans, a_small_block_gets_a_small_grid) {
    // the tiny-qwen3-moe preset: 8 experts, top 2, hidden 64, width 32
    auto a = qwen3_moe(1);
    a.experts = 8;
    a.top_k = 2;
    a.hidden = 64;
    a.width = 32;
    a.ld_x = a.ld_y = 64;
    a.ld_logits = 8;
    const auto p = plan_moe(a, device_limits{});
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.gate_up_blocks, 8);    // 2 experts x 32 columns / 8 warps
    EXPECT_EQ(p.down_blocks, 8);       // 64 columns / 8 warps
    EXPECT_EQ(p.one_launch_blocks, 8); // the larger of the two
}

TEST(kernel_moe_plans, refuses_what_the_kernels_cannot_take) {
    auto check = [](moe_args a, const std::string& needle) {
        const auto p = plan_moe(a, device_limits{});
        EXPECT_NE(p.valid.find(needle), std::string::npos) << "'" << p.valid << "'";
    };
    auto a = qwen3_moe(9);
    check(a, "tokens");
    a = qwen3_moe(1);
    a.experts = 513;
    check(a, "experts");
    a = qwen3_moe(1);
    a.top_k = 33;
    check(a, "top_k");
    a = qwen3_moe(1);
    a.experts = 4;
    a.top_k = 5;
    check(a, "top_k");
    a = qwen3_moe(1);
    a.hidden = 2047;
    a.ld_x = a.ld_y = 2047;
    check(a, "16 bytes");
    a = qwen3_moe(1);
    a.width = 767;
    check(a, "w_down");
    a = qwen3_moe(1);
    a.x = addr(k_aligned + 2);
    check(a, "x is not 16-byte aligned");
    a = qwen3_moe(1);
    a.workspace = addr(k_aligned + 8);
    check(a, "workspace");
    a = qwen3_moe(1);
    a.logits_type = elem::f16; // neither fp32 nor the input's bf16
    check(a, "router logits");
    a = qwen3_moe(1);
    a.width = std::int64_t{1} << 28; // 8 experts x 2^28 columns: the kernels' 32-bit unit index
    check(a, "2^31");
    a = qwen3_moe(1);
    a.logits_type = elem::bf16;
    EXPECT_TRUE(plan_moe(a, device_limits{}).valid.empty());
}

TEST(kernel_moe_plans, grouped_gemv_takes_pairs_of_rows_of_each_active_expert) {
    grouped_gemv_args a;
    a.rows = addr(k_aligned);
    a.w = addr(k_aligned * 2);
    a.y = addr(k_aligned * 4);
    a.rows_count = 64;
    a.experts = 128;
    a.n = 1536;
    a.k = 2048;
    a.ld_rows = 2048;
    a.ld_y = 1536;
    auto p = plan_grouped_gemv(a, device_limits{});
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.max_active, 64);
    EXPECT_EQ(p.units, 64 * 768);
    EXPECT_EQ(p.blocks, 264);
    a.rows_count = 0; // nothing to do: no launch
    EXPECT_EQ(plan_grouped_gemv(a, device_limits{}).blocks, 0);
    a.rows_count = 64;
    a.k = 2044;
    a.ld_rows = 2044;
    EXPECT_NE(plan_grouped_gemv(a, device_limits{}).valid.find("16 bytes"), std::string::npos);
    a.k = 2048;
    a.ld_rows = 2048;
    a.experts = 1024;
    EXPECT_NE(plan_grouped_gemv(a, device_limits{}).valid.find("experts"), std::string::npos);
}

TEST(kernel_moe_plans, the_l2_prefetch_budget_is_the_callers_and_never_negative) {
    auto a = qwen3_moe(1);
    EXPECT_EQ(plan_moe(a, device_limits{}).l2_prefetch_budget, k_moe_default_l2_prefetch);
    // one token's 8 experts' down matrices (24 MiB in bf16) fit the default budget
    EXPECT_LE(8ll * 2048 * 768 * 2, k_moe_default_l2_prefetch);
    a.l2_prefetch_bytes = 0;
    EXPECT_EQ(plan_moe(a, device_limits{}).l2_prefetch_budget, 0);
    a.l2_prefetch_bytes = -5;
    EXPECT_EQ(plan_moe(a, device_limits{}).l2_prefetch_budget, 0);
}

TEST(kernel_moe_plans, the_fused_norm_and_router_need_the_one_launch_and_add_the_logits) {
    auto a = qwen3_moe(8);
    const auto unfused_args = a;
    const auto unfused = plan_moe(a, device_limits{});
    a.norm_weight = addr(k_aligned * 64);
    a.router = addr(k_aligned * 128);
    a.logits = nullptr;
    a.logits_type = elem::bf16;
    auto p = plan_moe(a, device_limits{});
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.fused_prologue);
    EXPECT_EQ(p.kernels, 1);
    // the logits (8 x 128 bf16) after the routing and the intermediate (h stays in shared memory),
    // then their flagged words (8 x 128 x 8 bytes, 16-byte aligned: the default flagged logits)
    EXPECT_TRUE(p.flagged_logits);
    EXPECT_EQ(p.workspace_bytes,
              unfused.workspace_bytes + std::int64_t{8} * 128 * 2 + std::int64_t{8} * 128 * 8);
    EXPECT_NE(p.describe().find("router's GEMV fused"), std::string::npos) << p.describe();
    EXPECT_FALSE(p.add_residual);
    auto r = a;
    r.add_residual = true;
    EXPECT_TRUE(plan_moe(r, device_limits{}).add_residual);
    EXPECT_NE(plan_moe(r, device_limits{}).describe().find("residual added"), std::string::npos);
    auto refused = [](moe_args b, const std::string& needle) {
        const auto q = plan_moe(b, device_limits{});
        EXPECT_NE(q.valid.find(needle), std::string::npos) << q.valid;
    };
    auto b = a;
    b.one_launch = false;
    refused(b, "one launch");
    b = a;
    b.logits_type = elem::f32;
    refused(b, "logits_type must be type");
    b = a;
    b.router = nullptr;
    refused(b, "together");
    b = unfused_args;
    b.add_residual = true; // the residual add is the fused prologue's
    refused(b, "add_residual needs the fused prologue");
    b = a;
    b.norm_eps = 0;
    refused(b, "norm_eps");
    b = a;
    b.router = addr(k_aligned * 128 + 8);
    refused(b, "router is not 16-byte aligned");
    b = a;
    b.hidden = 8192; // 8 x 8192 bf16 = 128 KB: more than the stage area
    b.ld_x = b.ld_y = 8192;
    refused(b, "stage area");
    b.tokens = 4; // 64 KB: fits
    EXPECT_TRUE(plan_moe(b, device_limits{}).valid.empty()) << plan_moe(b, device_limits{}).valid;
}

// The flagged logits (the default since session 50; FOURFOLD_MOE_FLAGGED_LOGITS=0, the barrier):
// the fused prologue's logits as 64-bit words (value and flag) after the logits, T x E x 8 bytes
// more workspace; never without the fused prologue.
TEST(kernel_moe_plans, flagged_logits_are_a_switch_of_the_fused_prologue_with_their_words) {
    const fourfold::testing::env_switch trial("FOURFOLD_MOE_FLAGGED_LOGITS");
    for (const std::int64_t tokens : {1, 8}) {
        auto a = qwen3_moe(tokens);
        const auto unfused_args = a;
        a.norm_weight = addr(k_aligned * 64);
        a.router = addr(k_aligned * 128);
        a.logits = nullptr;
        a.logits_type = elem::bf16;
        trial.set("0");
        const auto barrier = plan_moe(a, device_limits{});
        ASSERT_TRUE(barrier.valid.empty()) << barrier.valid;
        EXPECT_FALSE(barrier.flagged_logits);
        EXPECT_NE(barrier.describe().find("a first grid barrier"), std::string::npos);
        trial.unset(); // the default
        const auto flagged = plan_moe(a, device_limits{});
        ASSERT_TRUE(flagged.valid.empty()) << flagged.valid;
        EXPECT_TRUE(flagged.flagged_logits);
        EXPECT_EQ(flagged.workspace_bytes, barrier.workspace_bytes + tokens * 128 * 8);
        EXPECT_NE(flagged.describe().find("flag word"), std::string::npos) << flagged.describe();
        // the words' offset: past the logits, 16-byte aligned, inside the workspace
        const auto es = std::size_t{2};
        const auto fl = moe_fused_layout(moe_layout(tokens * 8, 768, es), tokens, 128, es, true);
        EXPECT_EQ(fl.flagged % 16, 0);
        EXPECT_GE(fl.flagged, fl.logits + tokens * 128 * 2);
        EXPECT_EQ(fl.bytes, flagged.workspace_bytes);
        // the logits given (no fused prologue): nothing to flag
        EXPECT_FALSE(plan_moe(unfused_args, device_limits{}).flagged_logits);
        trial.set("1");
        EXPECT_TRUE(plan_moe(a, device_limits{}).flagged_logits);
    }
}

// Top-k on the logits (the default since session 50; FOURFOLD_MOE_TOPK_LOGITS=0, the softmax
// first): the one launch's, where the weights are renormalised (normalise) and only there; never
// for the two kernels.
TEST(kernel_moe_plans, top_k_on_the_logits_is_a_switch_of_the_one_launch_with_normalise) {
    const fourfold::testing::env_switch trial("FOURFOLD_MOE_TOPK_LOGITS");
    const auto a = qwen3_moe(1);
    trial.set("0");
    const auto off = plan_moe(a, device_limits{});
    EXPECT_FALSE(off.topk_on_logits);
    trial.unset(); // the default
    const auto p = plan_moe(a, device_limits{});
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    ASSERT_EQ(p.kernels, 1);
    EXPECT_TRUE(p.topk_on_logits);
    EXPECT_NE(p.describe().find("top-k on the logits"), std::string::npos) << p.describe();
    EXPECT_EQ(p.workspace_bytes, off.workspace_bytes); // nothing more to keep
    auto b = a;
    b.normalise = false; // the weights are the softmax over every expert: it stays
    EXPECT_FALSE(plan_moe(b, device_limits{}).topk_on_logits);
    b = a;
    b.one_launch = false;
    EXPECT_FALSE(plan_moe(b, device_limits{}).topk_on_logits);
}

// The defaults compiled into the one launch's instance (the default since session 53;
// FOURFOLD_MOE_COMPILED_DEFAULTS=0, the general instance): only where the fused prologue, the
// flagged logits, the top-k on the logits and a block's down count are all on; the same workspace;
// said in the description.
TEST(kernel_moe_plans, the_compiled_defaults_come_only_with_every_default_on) {
    const fourfold::testing::env_switch compiled("FOURFOLD_MOE_COMPILED_DEFAULTS");
    const fourfold::testing::env_switch flagged("FOURFOLD_MOE_FLAGGED_LOGITS");
    const fourfold::testing::env_switch topk("FOURFOLD_MOE_TOPK_LOGITS");
    const fourfold::testing::env_switch counters("FOURFOLD_MOE_DOWN_COUNTERS");
    const fourfold::testing::env_switch count("FOURFOLD_MOE_DOWN_COUNT");
    for (const std::int64_t tokens : {1, 8}) {
        auto a = qwen3_moe(tokens);
        EXPECT_FALSE(plan_moe(a, device_limits{}).compiled_defaults); // no fused prologue
        a.norm_weight = addr(k_aligned * 64);
        a.router = addr(k_aligned * 128);
        a.logits = nullptr;
        a.logits_type = elem::bf16;
        const auto on = plan_moe(a, device_limits{}); // the defaults
        ASSERT_TRUE(on.valid.empty()) << on.valid;
        EXPECT_TRUE(on.compiled_defaults);
        EXPECT_NE(on.describe().find("defaults compiled into"), std::string::npos) << on.describe();
        compiled.set("1"); // only "0" turns it off
        EXPECT_TRUE(plan_moe(a, device_limits{}).compiled_defaults);
        compiled.set("0");
        const auto off = plan_moe(a, device_limits{});
        ASSERT_TRUE(off.valid.empty()) << off.valid;
        EXPECT_FALSE(off.compiled_defaults);
        EXPECT_TRUE(off.down_counts_a_block); // the rest of the defaults stay
        EXPECT_EQ(off.describe().find("defaults compiled into"), std::string::npos);
        EXPECT_EQ(off.workspace_bytes, on.workspace_bytes);
        compiled.unset();
        // any of the four off: the general instance
        for (const auto* sw : {&flagged, &topk, &counters}) {
            sw->set("0");
            EXPECT_FALSE(plan_moe(a, device_limits{}).compiled_defaults);
            sw->unset();
        }
        count.set("unit");
        EXPECT_FALSE(plan_moe(a, device_limits{}).compiled_defaults);
        count.unset();
        a.normalise = false; // the top-k on the logits needs the normalised weights
        EXPECT_FALSE(plan_moe(a, device_limits{}).compiled_defaults);
    }
}

// The down counters, a block's count, in the one launch without the fused prologue (moe_ffn's,
// its logits the kernel before's): the default from a token tile of 2 (session 60), the down
// barrier at 1; FOURFOLD_MOE_UNFUSED_COUNTERS=1 takes them at every tile, =0 at none, any other
// value as unset; not the two kernels; the fused prologue's plan and every workspace as before.
TEST(kernel_moe_plans, the_unfused_one_launch_counts_from_two_tokens_and_the_switch_sets_it) {
    const fourfold::testing::env_switch unfused("FOURFOLD_MOE_UNFUSED_COUNTERS");
    for (const elem logits : {elem::f32, elem::bf16})
        for (const std::int64_t tokens : {1, 2, 3, 8}) {
            auto a = qwen3_moe(tokens);
            a.logits_type = logits;
            const bool by_default = tokens >= 2;
            const auto base = plan_moe(a, device_limits{});
            ASSERT_TRUE(base.valid.empty()) << base.valid;
            ASSERT_EQ(base.kernels, 1);
            EXPECT_EQ(base.down_counters, by_default) << tokens;
            EXPECT_EQ(base.describe().find("behind a grid barrier") != std::string::npos,
                      !by_default)
                << base.describe();
            for (const char* value : {"yes", "2", ""}) {
                unfused.set(value);
                EXPECT_EQ(plan_moe(a, device_limits{}).down_counters, by_default) << value;
            }
            unfused.set("0");
            const auto off = plan_moe(a, device_limits{});
            EXPECT_FALSE(off.down_counters);
            EXPECT_NE(off.describe().find("behind a grid barrier"), std::string::npos);
            unfused.set("1");
            const auto p = plan_moe(a, device_limits{});
            ASSERT_TRUE(p.valid.empty()) << p.valid;
            EXPECT_TRUE(p.down_counters);
            EXPECT_TRUE(p.down_counts_a_block);
            EXPECT_FALSE(p.flagged_logits);
            EXPECT_FALSE(p.compiled_defaults); // the general instance runs it
            EXPECT_EQ(p.workspace_bytes, off.workspace_bytes);
            EXPECT_NE(p.describe().find("a block's at once"), std::string::npos) << p.describe();
            auto two = a;
            two.one_launch = false;
            EXPECT_FALSE(plan_moe(two, device_limits{}).down_counters); // two kernels: no
            auto fused = a;
            fused.norm_weight = addr(k_aligned * 64);
            fused.router = addr(k_aligned * 128);
            fused.logits = nullptr;
            fused.logits_type = elem::bf16;
            const auto with = plan_moe(fused, device_limits{});
            unfused.set("0");
            const auto without = plan_moe(fused, device_limits{});
            unfused.unset();
            const auto unset = plan_moe(fused, device_limits{});
            for (const auto* q : {&without, &unset}) {
                EXPECT_EQ(with.down_counters, q->down_counters);
                EXPECT_EQ(with.compiled_defaults, q->compiled_defaults);
                EXPECT_EQ(with.workspace_bytes, q->workspace_bytes);
            }
        }
}

// FOURFOLD_MOE_COMPILED_UNFUSED (moe_plan::compiled_unfused, the default since session 62): the
// one launch without the fused prologue in its own instance, only for fp32 logits with bf16 or
// fp16 activations and the top-k on the logits (normalise); =0 alone takes the general instance;
// never with two kernels or the fused prologue; the counters as the unfused rule sets them; the
// same workspace; said in the description.
TEST(kernel_moe_plans, the_compiled_unfused_instance_is_the_default_for_fp32_logits_alone) {
    const fourfold::testing::env_switch compiled("FOURFOLD_MOE_COMPILED_UNFUSED");
    for (const elem type : {elem::bf16, elem::f16})
        for (const std::int64_t tokens : {1, 2, 8}) {
            auto a = qwen3_moe(tokens, type);
            a.logits_type = elem::f32;
            compiled.set("0");
            const auto base = plan_moe(a, device_limits{});
            ASSERT_TRUE(base.valid.empty()) << base.valid;
            EXPECT_FALSE(base.compiled_unfused);
            for (const char* value : {"1", "yes", ""}) {
                compiled.set(value);
                EXPECT_TRUE(plan_moe(a, device_limits{}).compiled_unfused) << value;
            }
            compiled.unset();
            const auto on = plan_moe(a, device_limits{});
            ASSERT_TRUE(on.valid.empty()) << on.valid;
            EXPECT_TRUE(on.compiled_unfused);
            EXPECT_FALSE(on.compiled_defaults);
            EXPECT_EQ(on.down_counters, base.down_counters);
            EXPECT_EQ(on.workspace_bytes, base.workspace_bytes);
            EXPECT_NE(on.describe().find("no prologue, compiled into"), std::string::npos)
                << on.describe();
            EXPECT_EQ(base.describe().find("no prologue, compiled into"), std::string::npos);
            auto bf16_logits = a;
            bf16_logits.logits_type = type;
            EXPECT_FALSE(plan_moe(bf16_logits, device_limits{}).compiled_unfused);
            auto unnormalised = a; // no top-k on the logits
            unnormalised.normalise = false;
            EXPECT_FALSE(plan_moe(unnormalised, device_limits{}).compiled_unfused);
            auto two = a;
            two.one_launch = false;
            EXPECT_FALSE(plan_moe(two, device_limits{}).compiled_unfused);
            auto fp32 = qwen3_moe(tokens, elem::f32);
            EXPECT_FALSE(plan_moe(fp32, device_limits{}).compiled_unfused);
            auto fused = a;
            fused.norm_weight = addr(k_aligned * 64);
            fused.router = addr(k_aligned * 128);
            fused.logits = nullptr;
            fused.logits_type = type;
            const auto f = plan_moe(fused, device_limits{});
            ASSERT_TRUE(f.valid.empty()) << f.valid;
            EXPECT_FALSE(f.compiled_unfused);
            EXPECT_TRUE(f.compiled_defaults);
            compiled.unset();
        }
}

// The down counters (the default with the flagged logits since session 51;
// FOURFOLD_MOE_DOWN_COUNTERS=0, the down barrier), counting a block's units at once (the default
// since session 52; FOURFOLD_MOE_DOWN_COUNT=unit, each unit's own add): the fused prologue's with
// the flagged logits only, no more workspace (the counters are the kernel's own), and said in the
// plan's description.
TEST(kernel_moe_plans, down_counters_come_with_the_flagged_logits_and_count_a_block_unless_asked) {
    const fourfold::testing::env_switch flagged("FOURFOLD_MOE_FLAGGED_LOGITS");
    const fourfold::testing::env_switch counters("FOURFOLD_MOE_DOWN_COUNTERS");
    const fourfold::testing::env_switch count("FOURFOLD_MOE_DOWN_COUNT");
    for (const std::int64_t tokens : {1, 8}) {
        auto a = qwen3_moe(tokens);
        // no fused prologue: the unfused one launch's own rule (above), from 2 tokens
        EXPECT_EQ(plan_moe(a, device_limits{}).down_counters, tokens >= 2);
        a.norm_weight = addr(k_aligned * 64);
        a.router = addr(k_aligned * 128);
        a.logits = nullptr;
        a.logits_type = elem::bf16;
        const auto p = plan_moe(a, device_limits{}); // the defaults
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_TRUE(p.down_counters);
        EXPECT_TRUE(p.down_counts_a_block);
        EXPECT_NE(p.describe().find("a block's at once"), std::string::npos) << p.describe();
        counters.set("0");
        const auto off = plan_moe(a, device_limits{});
        EXPECT_FALSE(off.down_counters);
        EXPECT_FALSE(off.down_counts_a_block); // a block's count needs the counters
        EXPECT_EQ(off.workspace_bytes, p.workspace_bytes);
        EXPECT_NE(off.describe().find("behind a grid barrier"), std::string::npos)
            << off.describe();
        counters.unset();
        count.set("unit");
        const auto units = plan_moe(a, device_limits{});
        EXPECT_TRUE(units.down_counters);
        EXPECT_FALSE(units.down_counts_a_block);
        EXPECT_EQ(units.workspace_bytes, p.workspace_bytes);
        EXPECT_NE(units.describe().find("counted done (no grid barrier"), std::string::npos)
            << units.describe();
        count.set("block"); // any other value: the default
        EXPECT_TRUE(plan_moe(a, device_limits{}).down_counts_a_block);
        flagged.set("0"); // the counters come with the flagged logits
        EXPECT_FALSE(plan_moe(a, device_limits{}).down_counters);
        EXPECT_FALSE(plan_moe(a, device_limits{}).down_counts_a_block);
        flagged.unset();
        count.unset();
    }
}
