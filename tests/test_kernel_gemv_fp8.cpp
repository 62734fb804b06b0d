// The host half of the FP8 weight-only GEMV (kernels/gemv_fp8.hpp): the path, rows per warp,
// split-K and grid a call would take, decided from the shape, the alignment and the device's
// limits alone (no GPU needed, so CI checks them).
#include "env_switch.hpp"
#include "fourfold/kernels/gemv_fp8.hpp"

#include <cstdlib>
#include <gtest/gtest.h>
#include <utility>
#include <vector>

using namespace fourfold::kernels;

namespace {

// Plans look only at addresses: aligned and misaligned stand-ins for device pointers.
void* at(std::uintptr_t a) {
    // NOLINTNEXTLINE(performance-no-int-to-ptr): a stand-in address the plan only inspects
    return reinterpret_cast<void*>(a);
}
constexpr std::uintptr_t k_aligned = 1 << 20;
// NOLINTNEXTLINE(performance-no-int-to-ptr): a stand-in address the plan only inspects
const float* k_scale = reinterpret_cast<const float*>(k_aligned * 4);

// a norm weight's stand-in address, 16-byte aligned and not
const void* k_norm = at(k_aligned * 8);
const void* k_norm_misaligned = at(k_aligned * 8 + 2);

device_limits h200() {
    return device_limits{}; // 132 SMs, sm_90
}

gemv_fp8_args fp8_of(std::int64_t t, std::int64_t n, std::int64_t k, std::uintptr_t w = k_aligned) {
    gemv_fp8_args a;
    a.x = at(k_aligned);
    a.w = at(w);
    a.scale = k_scale;
    a.y = at(k_aligned * 2);
    a.tokens = t;
    a.n = n;
    a.k = k;
    a.ld_x = k;
    a.ld_w = k;
    a.ld_y = n;
    return a;
}

} // namespace

TEST(kernel_plans_fp8, the_target_shapes_split_their_rows_evenly_over_one_wave) {
    // one token, from 4 rows a block of a wave of 4 x 132 on (2112), rows of 2 KB or more: each
    // block a contiguous run of rows, its warps equal runs of 2 KB steps (claimed steps only
    // with a prologue: below)
    for (const auto& [n, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{
             {4096, 4096}, {4096, 8192}, {14336, 4096}, {4096, 14336}, {128256, 4096}}) {
        const auto p = plan_gemv_fp8(fp8_of(1, n, k), h200());
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_TRUE(p.vectorised) << n << "x" << k;
        EXPECT_TRUE(p.balanced) << n << "x" << k;
        EXPECT_FALSE(p.claimed) << n << "x" << k;
        EXPECT_EQ(p.rows_per_warp, 1) << n << "x" << k;
        EXPECT_EQ(p.k_split, 1) << n << "x" << k;
        EXPECT_EQ(p.unroll, 4) << n << "x" << k;
        EXPECT_EQ(p.blocks, 4 * 132) << n << "x" << k;
        EXPECT_EQ(p.threads, 256) << n << "x" << k;
        EXPECT_EQ(p.row_blocks, p.blocks) << n << "x" << k;
        EXPECT_EQ(p.shared_bytes, 0) << n << "x" << k;
        EXPECT_NE(p.describe().find("16 e4m3"), std::string::npos) << p.describe();
        EXPECT_NE(p.describe().find("split evenly"), std::string::npos) << p.describe();
    }
}

TEST(kernel_plans_fp8, the_claimed_path_fuses_an_rms_norm_or_a_swiglu_in_front) {
    auto qkv = fp8_of(1, 6144, 4096);
    qkv.norm_weight = k_norm;
    const auto p = plan_gemv_fp8(qkv, h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.claimed && p.fused_norm && !p.fused_swiglu) << p.describe();
    EXPECT_NE(p.describe().find("claimed"), std::string::npos) << p.describe();
    EXPECT_NE(p.describe().find("RMSNorm fused"), std::string::npos) << p.describe();
    EXPECT_EQ(p.blocks, 132);
    EXPECT_EQ(p.threads, 1024);
    // the normalised x (K bf16 values), then 47 rows x 2 steps of floats
    EXPECT_EQ(p.shared_bytes, 4096 * 2 + 47 * 2 * 4);
    // the LM head: 972 rows a block of 2 steps
    auto head = fp8_of(1, 128256, 4096);
    head.norm_weight = k_norm;
    EXPECT_EQ(plan_gemv_fp8(head, h200()).shared_bytes, 4096 * 2 + 972 * 2 * 4);
    auto down = fp8_of(1, 4096, 14336);
    down.swiglu_x = true;
    down.ld_x = std::int64_t{2} * 14336;
    const auto q = plan_gemv_fp8(down, h200());
    ASSERT_TRUE(q.valid.empty()) << q.valid;
    EXPECT_TRUE(q.claimed && q.fused_swiglu && !q.fused_norm) << q.describe();
    EXPECT_NE(q.describe().find("SwiGLU fused"), std::string::npos) << q.describe();
    EXPECT_EQ(q.shared_bytes, 14336 * 2 + 32 * 7 * 4);
    // refusals: off the claimed path, both at once, [gate | up] narrower than 2K, a misaligned
    // norm weight, a negative eps, an x that does not fit
    auto two = qkv;
    two.tokens = 2;
    EXPECT_NE(plan_gemv_fp8(two, h200()).valid.find("claimed path only"), std::string::npos);
    auto few = qkv;
    few.n = 768;
    EXPECT_NE(plan_gemv_fp8(few, h200()).valid.find("run it on its own"), std::string::npos);
    auto both = down;
    both.norm_weight = k_norm;
    EXPECT_NE(plan_gemv_fp8(both, h200()).valid.find("one prologue"), std::string::npos);
    auto narrow = down;
    narrow.ld_x = 14336;
    EXPECT_NE(plan_gemv_fp8(narrow, h200()).valid.find("2K"), std::string::npos);
    auto odd = qkv;
    odd.norm_weight = k_norm_misaligned;
    EXPECT_NE(plan_gemv_fp8(odd, h200()).valid.find("aligned"), std::string::npos);
    auto negative = qkv;
    negative.norm_eps = -1;
    EXPECT_NE(plan_gemv_fp8(negative, h200()).valid.find("eps"), std::string::npos);
    auto wide = fp8_of(1, 4096, 32768);
    wide.norm_weight = k_norm;
    EXPECT_NE(plan_gemv_fp8(wide, h200()).valid.find("shared memory"), std::string::npos);
}

TEST(kernel_plans_fp8, the_balanced_split_needs_one_token_4_rows_a_block_and_2_kb_rows) {
    EXPECT_TRUE(plan_gemv_fp8(fp8_of(1, 2112, 2048), h200()).balanced);
    // 2111 rows: under 4 a block; rows of 2032 bytes: under one 2 KB step
    const auto few = plan_gemv_fp8(fp8_of(1, 2111, 4096), h200());
    EXPECT_FALSE(few.balanced);
    EXPECT_EQ(few.describe().find("split evenly"), std::string::npos) << few.describe();
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 4096, 2032), h200()).balanced);
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(2, 4096, 4096), h200()).balanced);
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 4096, 4100), h200()).balanced); // the scalar path
}

TEST(kernel_plans_fp8, every_path_launches_dependent_from_sm_90_and_serial_before_it) {
    device_limits ampere;
    ampere.sm_count = 108;
    ampere.cc_major = 8;
    for (const auto& a : {fp8_of(1, 4096, 4096), fp8_of(1, 768, 2048), fp8_of(4, 4096, 4096),
                          fp8_of(1, 300, 1001)}) {
        const auto p = plan_gemv_fp8(a, h200());
        EXPECT_TRUE(p.dependent_launch) << p.describe();
        EXPECT_NE(p.describe().find("dependent launch"), std::string::npos) << p.describe();
        const auto q = plan_gemv_fp8(a, ampere);
        EXPECT_FALSE(q.dependent_launch) << q.describe();
        EXPECT_EQ(q.describe().find("dependent launch"), std::string::npos) << q.describe();
    }
}

TEST(kernel_plans_fp8, small_n_splits_k_over_the_warps_of_a_block) {
    // 768 rows of 2048 bytes: 2 rows a warp (128 vectors), 48 blocks unsplit; split until half
    // a wave (264 blocks) or 2 vectors a lane per split
    const auto p = plan_gemv_fp8(fp8_of(1, 768, 2048), h200());
    EXPECT_EQ(p.rows_per_warp, 2);
    EXPECT_EQ(p.k_split, 4);
    EXPECT_EQ(p.blocks, 384 / 2);
    // never below one vector a lane: 8 rows of 512 bytes stay whole
    const auto tiny = plan_gemv_fp8(fp8_of(1, 8, 512), h200());
    EXPECT_EQ(tiny.k_split, 1);
    EXPECT_EQ(tiny.rows_per_warp, 4);
    EXPECT_EQ(tiny.blocks, 1);
}

TEST(kernel_plans_fp8, the_last_round_of_rows_is_split_where_the_halves_are_5_kb) {
    // 2 tokens: 2200 row groups of 2 x 5 KB over 2112 resident warps: two group times unsplit,
    // 1.65 in 5 KB halves
    const auto p = plan_gemv_fp8(fp8_of(2, 4400, 5120), h200());
    EXPECT_FALSE(p.balanced);
    EXPECT_EQ(p.k_split, 2);
    EXPECT_EQ(p.blocks, 2200 / 4);
    // groups of 2 x 2 KB: halves of 2 KB are not split
    EXPECT_EQ(plan_gemv_fp8(fp8_of(2, 4400, 2048), h200()).k_split, 1);
}

TEST(kernel_plans_fp8, several_tokens_take_two_rows_a_warp) {
    for (const std::int64_t t : {2, 5, 8}) {
        const auto p = plan_gemv_fp8(fp8_of(t, 4096, 4096), h200());
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_EQ(p.rows_per_warp, 2) << t;
        EXPECT_EQ(p.unroll, 2) << t;
        // 2048 row groups, 256 blocks: just under one wave of 2 x 132, unsplit, not persistent
        EXPECT_EQ(p.k_split, 1) << t;
        EXPECT_EQ(p.blocks, 256) << t;
    }
}

TEST(kernel_plans_fp8, names_why_it_takes_the_scalar_path) {
    const auto odd = plan_gemv_fp8(fp8_of(1, 300, 1001), h200());
    EXPECT_FALSE(odd.vectorised);
    EXPECT_NE(odd.why_scalar.find("multiple of 16"), std::string::npos) << odd.why_scalar;
    EXPECT_NE(odd.describe().find("scalar"), std::string::npos);
    const auto k8 = plan_gemv_fp8(fp8_of(1, 300, 4104), h200()); // a multiple of 8, not 16
    EXPECT_FALSE(k8.vectorised);
    const auto offset = plan_gemv_fp8(fp8_of(1, 300, 4096, k_aligned + 1), h200());
    EXPECT_NE(offset.why_scalar.find("aligned"), std::string::npos) << offset.why_scalar;
    auto strided = fp8_of(1, 300, 4096);
    strided.inc_w = 300; // W stored transposed
    EXPECT_NE(plan_gemv_fp8(strided, h200()).why_scalar.find("contiguous"), std::string::npos);
    auto row_stride = fp8_of(2, 300, 4096);
    row_stride.ld_w = 4100;
    EXPECT_NE(plan_gemv_fp8(row_stride, h200()).why_scalar.find("row stride"), std::string::npos);
    // the scalar grid: split K as the vector path does (38 blocks unsplit, 31 elements a lane:
    // split 8 ways, a block a row), every row block, at most 8 waves of blocks
    EXPECT_EQ(odd.k_split, 8);
    EXPECT_EQ(odd.row_blocks, 300);
    EXPECT_EQ(odd.blocks, odd.row_blocks);
    const auto big = plan_gemv_fp8(fp8_of(1, 1 << 20, 1001), h200());
    EXPECT_EQ(big.blocks, 8 * 4 * 132);
    EXPECT_EQ(big.row_blocks, (1 << 20) / 8);
}

TEST(kernel_plans_fp8, refuses_what_it_cannot_compute) {
    EXPECT_NE(plan_gemv_fp8(fp8_of(9, 64, 64), h200()).valid.find("1..8"), std::string::npos);
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 0, 64), h200()).valid.empty());
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 64, 0), h200()).valid.empty());
    auto no_scale = fp8_of(1, 64, 64);
    no_scale.scale = nullptr;
    EXPECT_NE(plan_gemv_fp8(no_scale, h200()).valid.find("scale"), std::string::npos);
    EXPECT_STREQ(to_string(fp8_scaling::per_row), "per_row");
    EXPECT_STREQ(to_string(fp8_scaling::per_tensor), "per_tensor");
}

// Session 40's trial of the column-stationary kernel (FOURFOLD_GEMV_FP8_CS=1): only where asked,
// one token on the balanced or claimed path's shapes, with or without a prologue; a warp a 1 KB
// slice of K (S = ceil(K / 1024) slices, at most 16), 16 / S runs of rows a block of 16 warps an
// SM; shared memory: the prologue's x, then a float a row of each warp's run.
TEST(kernel_plans_fp8, the_column_stationary_kernel_only_where_asked_and_k_is_16_slices_at_most) {
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_FP8_CS");
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 28672, 4096), h200()).column_stationary);
    cs.set("1");
    const auto p = plan_gemv_fp8(fp8_of(1, 28672, 4096), h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.column_stationary) << p.describe();
    EXPECT_FALSE(p.balanced || p.claimed);
    EXPECT_EQ(p.slices, 4);
    EXPECT_EQ(p.blocks, 132);
    EXPECT_EQ(p.threads, 512);
    EXPECT_EQ(p.slice_rows, 55); // 28672 rows over 132 x 4 runs
    EXPECT_EQ(p.shared_bytes, 16 * 55 * 4);
    EXPECT_NE(p.describe().find("1 KB slice"), std::string::npos) << p.describe();
    // with a prologue: its x first
    auto head = fp8_of(1, 128256, 4096);
    head.norm_weight = k_norm;
    const auto h = plan_gemv_fp8(head, h200());
    EXPECT_TRUE(h.column_stationary && h.fused_norm) << h.describe();
    EXPECT_EQ(h.slice_rows, 243);
    EXPECT_EQ(h.shared_bytes, 4096 * 2 + 16 * 243 * 4);
    auto down = fp8_of(1, 4096, 14336);
    down.swiglu_x = true;
    down.ld_x = std::int64_t{2} * 14336;
    const auto q = plan_gemv_fp8(down, h200());
    EXPECT_TRUE(q.column_stationary && q.fused_swiglu) << q.describe();
    EXPECT_EQ(q.slices, 14); // one run a block, 2 warps idle
    EXPECT_EQ(q.slice_rows, 32);
    EXPECT_EQ(q.shared_bytes, 14336 * 2 + 16 * 32 * 4);
    EXPECT_EQ(plan_gemv_fp8(fp8_of(1, 28672, 4112), h200()).slices, 5); // a partial slice
    EXPECT_TRUE(plan_gemv_fp8(fp8_of(1, 4096, 16384), h200()).column_stationary);
    // 17 slices: the balanced kernel; other paths keep theirs
    const auto wide = plan_gemv_fp8(fp8_of(1, 4096, 16400), h200());
    EXPECT_FALSE(wide.column_stationary);
    EXPECT_TRUE(wide.balanced);
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 1024, 4096), h200()).column_stationary);  // streamed
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(2, 28672, 4096), h200()).column_stationary); // two tokens
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 28672, 4100), h200()).column_stationary); // scalar
}
