// The host half of the FP8 weight-only GEMV (kernels/gemv_fp8.hpp): the path, rows per warp,
// split-K and grid a call would take, decided from the shape, the alignment and the device's
// limits alone (no GPU needed, so CI checks them).
#include "env_switch.hpp"
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/kernels/gemv_fp8.hpp"

#include <cstdlib>
#include <gtest/gtest.h>
#include <tuple>
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

TEST(kernel_plans_fp8, the_target_shapes_hold_x_in_registers_a_warp_a_1_kb_slice_of_k) {
    // one token, from 4 rows a block of a wave of 4 x 132 on (2112), rows of 2 KB to 16 KB: a
    // block of 16 warps an SM, a warp a 1 KB slice of K down a run of rows
    for (const auto& [n, k, slices] :
         std::vector<std::tuple<std::int64_t, std::int64_t, int>>{{4096, 4096, 4},
                                                                  {4096, 8192, 8},
                                                                  {14336, 4096, 4},
                                                                  {4096, 14336, 14},
                                                                  {128256, 4096, 4},
                                                                  {2112, 2048, 2},
                                                                  {4096, 16384, 16}}) {
        const auto p = plan_gemv_fp8(fp8_of(1, n, k), h200());
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_TRUE(p.vectorised) << n << "x" << k;
        EXPECT_TRUE(p.column_stationary) << n << "x" << k;
        EXPECT_FALSE(p.balanced || p.claimed) << n << "x" << k;
        EXPECT_EQ(p.slices, slices) << n << "x" << k;
        EXPECT_EQ(p.blocks, 132) << n << "x" << k;
        EXPECT_EQ(p.threads, 512) << n << "x" << k;
        const std::int64_t runs = std::int64_t{132} * (16 / slices);
        EXPECT_EQ(p.slice_rows, (n + runs - 1) / runs) << n << "x" << k;
        // the sums, then the epilogue's scale (and bias) words fetched at the start
        EXPECT_TRUE(p.epilogue_prefetch) << n << "x" << k;
        EXPECT_EQ(p.shared_bytes, std::int64_t{16} * p.slice_rows * 4 + k_gemv_cs_epilogue_bytes)
            << n << "x" << k;
        EXPECT_NE(p.describe().find("1 KB slice"), std::string::npos) << p.describe();
    }
    // K past 16 slices: the balanced split, each block a contiguous run of rows, its warps equal
    // runs of 2 KB steps
    const auto p = plan_gemv_fp8(fp8_of(1, 4096, 16400), h200());
    EXPECT_TRUE(p.balanced);
    EXPECT_FALSE(p.column_stationary || p.claimed);
    EXPECT_EQ(p.rows_per_warp, 1);
    EXPECT_EQ(p.k_split, 1);
    EXPECT_EQ(p.unroll, 4);
    EXPECT_EQ(p.blocks, 4 * 132);
    EXPECT_EQ(p.threads, 256);
    EXPECT_EQ(p.row_blocks, p.blocks);
    EXPECT_EQ(p.shared_bytes, 0);
    EXPECT_NE(p.describe().find("16 e4m3"), std::string::npos) << p.describe();
    EXPECT_NE(p.describe().find("split evenly"), std::string::npos) << p.describe();
}

TEST(kernel_plans_fp8, the_claimed_path_fuses_an_rms_norm_or_a_swiglu_in_front) {
    // the column-stationary kernel fuses them up to 16 slices of K
    auto qkv = fp8_of(1, 6144, 4096);
    qkv.norm_weight = k_norm;
    const auto c = plan_gemv_fp8(qkv, h200());
    ASSERT_TRUE(c.valid.empty()) << c.valid;
    EXPECT_TRUE(c.column_stationary && c.fused_norm && !c.fused_swiglu) << c.describe();
    EXPECT_NE(c.describe().find("RMSNorm fused"), std::string::npos) << c.describe();
    // the normalised x (K bf16 values), then 16 warps x 12 rows of floats, then the epilogue's
    EXPECT_EQ(c.shared_bytes, 4096 * 2 + 16 * 12 * 4 + k_gemv_cs_epilogue_bytes);
    auto head = fp8_of(1, 128256, 4096);
    head.norm_weight = k_norm;
    const auto h = plan_gemv_fp8(head, h200());
    EXPECT_TRUE(h.column_stationary && h.fused_norm) << h.describe();
    EXPECT_EQ(h.slice_rows, 243);
    EXPECT_EQ(h.shared_bytes, 4096 * 2 + 16 * 243 * 4 + k_gemv_cs_epilogue_bytes);
    auto llama_down = fp8_of(1, 4096, 14336);
    llama_down.swiglu_x = true;
    llama_down.ld_x = std::int64_t{2} * 14336;
    const auto l = plan_gemv_fp8(llama_down, h200());
    EXPECT_TRUE(l.column_stationary && l.fused_swiglu && !l.fused_norm) << l.describe();
    EXPECT_EQ(l.slices, 14); // one run a block, 2 warps idle
    EXPECT_EQ(l.slice_rows, 32);
    // the SwiGLU made by each warp: the sums and the epilogue's words alone
    EXPECT_EQ(l.shared_bytes, std::int64_t{16} * 32 * 4 + k_gemv_cs_epilogue_bytes);
    // past 16 slices, the claimed steps
    auto wide_qkv = fp8_of(1, 6144, 16400);
    wide_qkv.norm_weight = k_norm;
    const auto p = plan_gemv_fp8(wide_qkv, h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.claimed && p.fused_norm && !p.fused_swiglu) << p.describe();
    EXPECT_FALSE(p.column_stationary);
    EXPECT_NE(p.describe().find("claimed"), std::string::npos) << p.describe();
    EXPECT_NE(p.describe().find("RMSNorm fused"), std::string::npos) << p.describe();
    EXPECT_EQ(p.blocks, 132);
    EXPECT_EQ(p.threads, 1024);
    // the normalised x (K bf16 values), then 47 rows x 9 steps of floats, then the epilogue's
    // words (8 KiB: a scale word and a bias word a thread)
    EXPECT_TRUE(p.epilogue_prefetch) << p.describe();
    EXPECT_EQ(p.shared_bytes, 16400 * 2 + 47 * 9 * 4 + k_gemv_claim_epilogue_bytes);
    auto down = fp8_of(1, 4096, 20464);
    down.swiglu_x = true;
    down.ld_x = std::int64_t{2} * 20464;
    const auto q = plan_gemv_fp8(down, h200());
    ASSERT_TRUE(q.valid.empty()) << q.valid;
    EXPECT_TRUE(q.claimed && q.fused_swiglu && !q.fused_norm) << q.describe();
    EXPECT_NE(q.describe().find("SwiGLU fused"), std::string::npos) << q.describe();
    EXPECT_FALSE(q.epilogue_prefetch) << q.describe(); // no room for the epilogue's 8 KiB
    EXPECT_EQ(q.shared_bytes, 20464 * 2 + 32 * 10 * 4);
    // refusals: off the claimed path, both at once, [gate | up] narrower than 2K, a misaligned
    // norm weight, a negative eps, an x that does not fit
    auto two = qkv;
    two.tokens = 2;
    EXPECT_NE(plan_gemv_fp8(two, h200()).valid.find("claimed path only"), std::string::npos);
    EXPECT_NE(plan_gemv_fp8(two, h200()).valid.find("column-stationary"), std::string::npos);
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

// The column-stationary kernel with the norm fused loads its first rows' weights before the
// prologue (session 47: llama3-8b fp8 native_fused 308.9 -> 310.8 tokens/s on an H100);
// FOURFOLD_GEMV_CS_FETCH_FIRST=0: after it (A/B runs). Not without a norm, nor with the SwiGLU.
TEST(kernel_plans_fp8, the_norm_fused_column_stationary_kernel_loads_weights_before_the_norm) {
    const fourfold::testing::env_switch first("FOURFOLD_GEMV_CS_FETCH_FIRST");
    auto qkv = fp8_of(1, 6144, 4096);
    qkv.norm_weight = k_norm;
    const auto c = plan_gemv_fp8(qkv, h200());
    ASSERT_TRUE(c.valid.empty()) << c.valid;
    EXPECT_TRUE(c.column_stationary && c.cs_fetch_first) << c.describe();
    EXPECT_NE(c.describe().find("loaded before the norm"), std::string::npos) << c.describe();
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 6144, 4096), h200()).cs_fetch_first);
    auto down = fp8_of(1, 4096, 14336);
    down.swiglu_x = true;
    down.ld_x = std::int64_t{2} * 14336;
    EXPECT_FALSE(plan_gemv_fp8(down, h200()).cs_fetch_first);
    first.set("0");
    const auto after = plan_gemv_fp8(qkv, h200());
    EXPECT_TRUE(after.column_stationary && !after.cs_fetch_first) << after.describe();
    EXPECT_EQ(after.shared_bytes, c.shared_bytes);
}

TEST(kernel_plans_fp8, one_token_paths_need_4_rows_a_block_and_2_kb_rows) {
    EXPECT_TRUE(plan_gemv_fp8(fp8_of(1, 2112, 2048), h200()).column_stationary);
    EXPECT_TRUE(plan_gemv_fp8(fp8_of(1, 2112, 16400), h200()).balanced);
    // 2111 rows: under 4 a block; rows of 2032 bytes: under one 2 KB step
    for (const auto& a : {fp8_of(1, 2111, 4096), fp8_of(1, 4096, 2032), fp8_of(2, 4096, 4096),
                          fp8_of(1, 4096, 4100) /* the scalar path */}) {
        const auto p = plan_gemv_fp8(a, h200());
        EXPECT_FALSE(p.balanced || p.column_stationary || p.claimed) << p.describe();
        EXPECT_EQ(p.describe().find("split evenly"), std::string::npos) << p.describe();
        EXPECT_EQ(p.describe().find("slice"), std::string::npos) << p.describe();
    }
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

// The column-stationary kernel's partial slices and its limits: 16 slices of 1 KB, 48 KiB of the
// prologue's x and a float a row of each warp's run.
TEST(kernel_plans_fp8, the_column_stationary_kernel_takes_k_up_to_16_slices_in_48_kib) {
    EXPECT_EQ(plan_gemv_fp8(fp8_of(1, 28672, 4112), h200()).slices, 5);      // a partial slice
    EXPECT_EQ(plan_gemv_fp8(fp8_of(1, 28672, 4112), h200()).slice_rows, 73); // 28672 / 396 runs
    EXPECT_TRUE(plan_gemv_fp8(fp8_of(1, 4096, 16384), h200()).column_stationary);
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 4096, 16400), h200()).column_stationary);
    // 1 M rows of 4 KB: 1986 rows a run, 127 KB of sums: the balanced split
    const auto tall = plan_gemv_fp8(fp8_of(1, 1 << 20, 4096), h200());
    EXPECT_FALSE(tall.column_stationary);
    EXPECT_TRUE(tall.balanced);
    // the prologue's x counts: 16384 bf16 values (32 KB) and 16 warps x 2048 rows of floats
    auto x_and_rows = fp8_of(1, std::int64_t{2048} * 132, 16384);
    x_and_rows.norm_weight = k_norm;
    EXPECT_FALSE(plan_gemv_fp8(x_and_rows, h200()).column_stationary);
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(1, 1024, 4096), h200()).column_stationary);  // streamed
    EXPECT_FALSE(plan_gemv_fp8(fp8_of(2, 28672, 4096), h200()).column_stationary); // two tokens
    // 47 KiB of dynamic shared memory at most (48 KiB less the kernels' static arrays): runs of
    // 624 rows with the normed x (8 KB + 16 x 624 floats = 48128 bytes) and not of 630
    auto at_limit = fp8_of(1, std::int64_t{624} * 528, 4096);
    at_limit.norm_weight = k_norm;
    const auto l = plan_gemv_fp8(at_limit, h200());
    EXPECT_TRUE(l.column_stationary) << l.describe();
    EXPECT_EQ(l.shared_bytes, 47 * 1024);
    auto past = fp8_of(1, std::int64_t{630} * 528, 4096);
    past.norm_weight = k_norm;
    const auto c = plan_gemv_fp8(past, h200());
    EXPECT_FALSE(c.column_stationary);
    EXPECT_TRUE(c.claimed) << c.describe(); // 8 KB + 2520 rows x 2 steps of floats
}

// The column-stationary kernel's fused SwiGLU made by each warp for its slice (no x in shared
// memory then), unless FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0; nothing changes for an RMSNorm, no
// prologue or the claimed kernel.
TEST(kernel_plans_fp8, the_column_stationary_swiglu_by_slices_unless_switched_off) {
    const fourfold::testing::env_switch slices("FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES");
    auto down = fp8_of(1, 4096, 14336);
    down.swiglu_x = true;
    down.ld_x = std::int64_t{2} * 14336;
    auto qkv = fp8_of(1, 6144, 4096);
    qkv.norm_weight = k_norm;
    const auto d = plan_gemv_fp8(down, h200());
    EXPECT_TRUE(d.column_stationary && d.fused_swiglu && d.swiglu_slices) << d.describe();
    EXPECT_EQ(d.shared_bytes, std::int64_t{16} * 32 * 4 + k_gemv_cs_epilogue_bytes); // no x
    EXPECT_NE(d.describe().find("each warp"), std::string::npos) << d.describe();
    const auto q = plan_gemv_fp8(qkv, h200());
    EXPECT_TRUE(q.column_stationary && !q.swiglu_slices) << q.describe();
    EXPECT_EQ(q.shared_bytes, 4096 * 2 + 16 * 12 * 4 + k_gemv_cs_epilogue_bytes);
    const auto none = plan_gemv_fp8(fp8_of(1, 4096, 4096), h200());
    EXPECT_TRUE(none.column_stationary && !none.swiglu_slices) << none.describe();
    auto wide = fp8_of(1, 4096, 20464); // the claimed kernel
    wide.swiglu_x = true;
    wide.ld_x = std::int64_t{2} * 20464;
    const auto w = plan_gemv_fp8(wide, h200());
    EXPECT_TRUE(w.claimed && !w.swiglu_slices) << w.describe();
    slices.set("0");
    const auto d0 = plan_gemv_fp8(down, h200());
    EXPECT_TRUE(d0.column_stationary && d0.fused_swiglu && !d0.swiglu_slices) << d0.describe();
    EXPECT_EQ(d0.shared_bytes, 14336 * 2 + 16 * 32 * 4 + k_gemv_cs_epilogue_bytes);
    EXPECT_EQ(d0.describe().find("each warp"), std::string::npos) << d0.describe();
}

// The column-stationary epilogue's scale and bias fetched at the start (cp.async into shared
// memory, k_gemv_cs_epilogue_bytes after the sums) wherever they fit in 47 KiB, unless
// FOURFOLD_GEMV_EPILOGUE_PREFETCH=0; the bf16 / fp16 GEMV's (column-stationary, or claimed) only
// with a bias.
TEST(kernel_plans_fp8, the_column_stationary_epilogue_fetches_its_scale_and_bias_early) {
    const fourfold::testing::env_switch prefetch("FOURFOLD_GEMV_EPILOGUE_PREFETCH");
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "1");
    const auto o = plan_gemv_fp8(fp8_of(1, 4096, 4096), h200());
    EXPECT_TRUE(o.column_stationary && o.epilogue_prefetch) << o.describe();
    EXPECT_NE(o.describe().find("fetched at the start"), std::string::npos) << o.describe();
    // a head of 300,000 rows with its norm: x 8 KB and 16 x 569 floats of sums leave too little
    // room
    auto head = fp8_of(1, 300000, 4096);
    head.norm_weight = k_norm;
    const auto h = plan_gemv_fp8(head, h200());
    EXPECT_TRUE(h.column_stationary && !h.epilogue_prefetch) << h.describe();
    EXPECT_EQ(h.shared_bytes, 4096 * 2 + 16 * h.slice_rows * 4);
    // the bf16 GEMV, column-stationary: with a bias only
    gemv_args b;
    const auto stand_in = fp8_of(1, 4096, 4096); // its aligned stand-in addresses
    b.x = b.w = stand_in.x;
    b.y = stand_in.y;
    b.tokens = 1;
    b.n = b.k = b.ld_x = b.ld_w = b.ld_y = 4096;
    const auto plain = plan_gemv(b, h200());
    EXPECT_TRUE(plain.column_stationary && !plain.epilogue_prefetch) << plain.describe();
    b.bias = b.x;
    const auto biased = plan_gemv(b, h200());
    EXPECT_TRUE(biased.column_stationary && biased.epilogue_prefetch) << biased.describe();
    EXPECT_EQ(biased.shared_bytes, plain.shared_bytes + k_gemv_cs_epilogue_bytes);
    // with FOURFOLD_GEMV_CS=0, the claimed kernel's epilogue (8 KB rows) alike
    cs.set("0");
    const auto claimed = plan_gemv(b, h200());
    EXPECT_TRUE(claimed.claimed && claimed.epilogue_prefetch) << claimed.describe();
    EXPECT_NE(claimed.describe().find("bias fetched at the start"), std::string::npos)
        << claimed.describe();
    // 32 rows x 4 steps of floats, then the epilogue's words
    EXPECT_EQ(claimed.shared_bytes, std::int64_t{32} * 4 * 4 + k_gemv_claim_epilogue_bytes);
    prefetch.set("0");
    const auto o0 = plan_gemv_fp8(fp8_of(1, 4096, 4096), h200());
    EXPECT_TRUE(o0.column_stationary && !o0.epilogue_prefetch) << o0.describe();
    EXPECT_EQ(o0.shared_bytes, o.shared_bytes - k_gemv_cs_epilogue_bytes);
    EXPECT_FALSE(plan_gemv(b, h200()).epilogue_prefetch);
    EXPECT_EQ(plan_gemv(b, h200()).shared_bytes, 32 * 4 * 4);
}

// The trial FOURFOLD_GEMV_CS_HALF=1 (gemv.hpp's cs_half_wanted): two blocks of 8 warps an SM where
// a row's slices divide 8 (llama3-8b's K = 4096 GEMVs: 4 slices), the same runs; the down
// projection's 14 slices keep one block of 16 warps.
TEST(kernel_plans_fp8, column_stationary_in_two_blocks_an_sm_on_trial) {
    const fourfold::testing::env_switch half("FOURFOLD_GEMV_CS_HALF");
    auto qkv = fp8_of(1, 6144, 4096);
    qkv.norm_weight = k_norm;
    auto down = fp8_of(1, 4096, 14336);
    down.swiglu_x = true;
    down.ld_x = std::int64_t{2} * 14336;
    const auto one = plan_gemv_fp8(qkv, h200());
    ASSERT_TRUE(one.column_stationary) << one.describe();
    EXPECT_EQ(one.threads, 512);
    half.set("1");
    const auto two = plan_gemv_fp8(qkv, h200());
    ASSERT_TRUE(two.valid.empty()) << two.valid;
    EXPECT_TRUE(two.column_stationary && two.cs_fetch_first) << two.describe();
    EXPECT_EQ(two.threads, 256);
    EXPECT_EQ(two.blocks, 264);
    EXPECT_EQ(two.slices, one.slices);
    EXPECT_EQ(two.slice_rows, one.slice_rows);
    const auto d = plan_gemv_fp8(down, h200());
    EXPECT_TRUE(d.column_stationary) << d.describe();
    EXPECT_EQ(d.threads, 512);
    EXPECT_EQ(d.slices, 14);
}

// The FP8 plan's column-stationary path asks L2 for the ring's 4 rows of each run too (llama3-8b's
// qkv, 6144 x 4096 e4m3: 528 runs of 12 rows); FOURFOLD_GEMV_CS_L2_RUN=0 for none.
TEST(kernel_plans_fp8, column_stationary_asks_l2_for_its_first_rows) {
    const fourfold::testing::env_switch run("FOURFOLD_GEMV_CS_L2_RUN");
    auto qkv = fp8_of(1, 6144, 4096);
    qkv.norm_weight = k_norm;
    const auto p = plan_gemv_fp8(qkv, h200());
    EXPECT_EQ(p.slice_rows, 12);
    EXPECT_EQ(p.cs_l2_rows, 4) << p.describe();
    run.set("0");
    EXPECT_EQ(plan_gemv_fp8(qkv, h200()).cs_l2_rows, 0);
}
