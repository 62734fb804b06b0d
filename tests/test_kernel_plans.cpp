// The host half of fourfold's native kernels: the plans a call would take, decided from the
// shape, the alignment and the device's limits alone (no GPU needed, so CI checks them).
#include "env_switch.hpp"
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/kernels/pad.hpp"
#include "fourfold/kernels/softmax.hpp"

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
// the same, by a name that does not meet ATen's namespace `at` in a test's body (the
// precompiled header brings ATen in)
void* address(std::uintptr_t a) {
    return at(a);
}
constexpr std::uintptr_t k_aligned = 1 << 20;

device_limits h200() {
    return device_limits{};
} // 132 SMs, sm_90

softmax_args softmax_of(std::int64_t rows, std::int64_t cols, elem t,
                        std::uintptr_t x = k_aligned) {
    return {at(x), at(k_aligned * 64), rows, cols, cols, cols, t};
}

} // namespace

namespace {
// A device without cooperative launch (the cluster path is what the rows of 9 or more take too).
device_limits without_cooperative_launch() {
    device_limits d;
    d.cooperative_launch = false;
    return d;
}
} // namespace

TEST(kernel_plans, softmax_a_row_too_long_for_a_cluster_spreads_over_the_device_as_a_grid) {
    // 2^20 columns: more than 8 blocks of 512 x 8 vectors hold; 132 blocks hold it, no re-read
    const auto p = plan_softmax(softmax_of(1, 1 << 20, elem::f32), h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.kind, softmax_plan::path::grid_per_row);
    EXPECT_EQ(p.cluster, 132); // a block on every SM
    EXPECT_EQ(p.vec, 4);
    EXPECT_EQ(p.threads, 256);
    EXPECT_EQ(p.cache, 8);
    EXPECT_FALSE(p.rereads) << p.describe();
    EXPECT_FALSE(p.dependent) << "a cooperative grid is not a dependent launch";
    EXPECT_GE(p.chunk_vectors * p.cluster, (1 << 20) / 4);
    EXPECT_NE(p.describe().find("cooperative grid"), std::string::npos) << p.describe();
    // two such rows share the device out: 66 blocks a row
    EXPECT_EQ(plan_softmax(softmax_of(2, 1 << 20, elem::f32), h200()).cluster, 66);
    // a row a cluster holds in registers stays on a cluster (the grid's barrier bought nothing
    // there), a dependent launch on sm_90
    const auto held = plan_softmax(softmax_of(1, 128256, elem::f32), h200());
    EXPECT_EQ(held.kind, softmax_plan::path::cluster_per_row);
    EXPECT_TRUE(held.dependent);
    EXPECT_NE(held.describe().find("dependent launch"), std::string::npos) << held.describe();
    device_limits sixteen;
    sixteen.max_cluster_blocks = 16;
    EXPECT_EQ(plan_softmax(softmax_of(1, 262144, elem::f32), sixteen).kind,
              softmax_plan::path::cluster_per_row);
    EXPECT_EQ(plan_softmax(softmax_of(1, 1 << 20, elem::f32), sixteen).kind,
              softmax_plan::path::grid_per_row);
    // more rows than the grid path's barriers: clusters
    EXPECT_EQ(
        plan_softmax(softmax_of(k_softmax_grid_max_rows + 1, 1 << 20, elem::f32), h200()).kind,
        softmax_plan::path::cluster_per_row);
    // no cooperative launch: clusters, the rest of the row read again
    EXPECT_EQ(plan_softmax(softmax_of(1, 1 << 20, elem::f32), without_cooperative_launch()).kind,
              softmax_plan::path::cluster_per_row);
    // before sm_90 nothing is a dependent launch
    device_limits ampere;
    ampere.cc_major = 8;
    EXPECT_FALSE(plan_softmax(softmax_of(64, 1000, elem::f32), ampere).dependent);
}

TEST(kernel_plans, softmax_one_long_row_spreads_over_a_cluster_and_stays_in_registers) {
    const auto p = plan_softmax(softmax_of(1, 128256, elem::f32), without_cooperative_launch());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_EQ(p.kind, softmax_plan::path::cluster_per_row);
    EXPECT_EQ(p.vec, 4);
    EXPECT_EQ(p.cluster, 8);
    EXPECT_EQ(p.threads, 512);
    EXPECT_FALSE(p.rereads) << p.describe();
    EXPECT_GE(static_cast<std::int64_t>(p.cache) * p.threads, p.chunk_vectors);
    EXPECT_EQ(p.chunk_vectors * p.cluster * p.vec, 128256);
}

TEST(kernel_plans, softmax_rows_enough_to_fill_the_device_get_one_block_each) {
    const auto p = plan_softmax(softmax_of(512, 32000, elem::bf16), h200());
    EXPECT_EQ(p.kind, softmax_plan::path::cluster_per_row);
    EXPECT_EQ(p.cluster, 1);
    EXPECT_EQ(p.vec, 8);
}

TEST(kernel_plans, softmax_short_rows_take_a_warp_each) {
    const auto p = plan_softmax(softmax_of(64, 1000, elem::f32), h200());
    EXPECT_EQ(p.kind, softmax_plan::path::warp_per_row);
    EXPECT_EQ(p.cache, 8); // 250 vectors over 32 lanes
}

TEST(kernel_plans, softmax_a_row_longer_than_the_registers_is_read_again) {
    const auto p = plan_softmax(softmax_of(1, 1 << 20, elem::f32), without_cooperative_launch());
    EXPECT_TRUE(p.rereads) << p.describe();
    EXPECT_EQ(p.cluster, 8);
}

TEST(kernel_plans, softmax_names_why_it_takes_the_scalar_path) {
    auto ragged = softmax_of(2, 1001, elem::f32);
    ragged.ld_x = ragged.ld_y = 1004; // rows 16-byte aligned, the width alone is ragged
    auto odd = plan_softmax(ragged, h200());
    EXPECT_EQ(odd.vec, 1);
    EXPECT_NE(odd.why_scalar.find("multiple of 4"), std::string::npos) << odd.why_scalar;
    auto misaligned = plan_softmax(softmax_of(1, 4096, elem::bf16, k_aligned + 2), h200());
    EXPECT_EQ(misaligned.vec, 1);
    EXPECT_NE(misaligned.why_scalar.find("aligned"), std::string::npos) << misaligned.why_scalar;
    EXPECT_NE(misaligned.describe().find("scalar"), std::string::npos);
}

TEST(kernel_plans, softmax_refuses_what_it_cannot_compute) {
    EXPECT_FALSE(plan_softmax(softmax_of(0, 10, elem::f32), h200()).valid.empty());
    auto a = softmax_of(2, 10, elem::f32);
    a.ld_x = 5;
    EXPECT_FALSE(plan_softmax(a, h200()).valid.empty());
}

namespace {

gemv_args gemv_of(std::int64_t t, std::int64_t n, std::int64_t k, std::uintptr_t w = k_aligned) {
    gemv_args a;
    a.x = at(k_aligned);
    a.w = at(w);
    a.y = at(k_aligned * 2);
    a.tokens = t;
    a.n = n;
    a.k = k;
    a.ld_x = k;
    a.ld_w = k;
    a.ld_y = n;
    a.type = elem::bf16;
    return a;
}

// a with an RMSNorm weight (at address `where`) fused in front
gemv_args with_norm(gemv_args a, std::uintptr_t where = k_aligned * 3) {
    a.norm_weight = at(where);
    a.norm_eps = 1e-5;
    return a;
}

} // namespace

TEST(kernel_plans, gemv_small_n_splits_k_over_the_warps_of_a_block) {
    // the split-K, balanced and claimed paths (bf16 rows of 8 KB or more are column-stationary
    // by default: gemv_column_stationary_for_one_token_of_8_kb_rows)
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "0");
    const auto small = plan_gemv(gemv_of(1, 768, 2048), h200());
    ASSERT_TRUE(small.valid.empty()) << small.valid;
    EXPECT_TRUE(small.vectorised);
    EXPECT_GT(small.k_split, 1) << small.describe();
    EXPECT_FALSE(small.streamed);
    const auto big = plan_gemv(gemv_of(1, 128256, 4096), h200());
    EXPECT_EQ(big.k_split, 1) << big.describe();
    EXPECT_EQ(big.rows_per_warp, 1);
    // unsplit: rows balanced over one wave of resident blocks (8 KB rows at one token: one
    // block an SM, its steps claimed)
    EXPECT_TRUE(big.balanced) << big.describe();
    EXPECT_EQ(big.blocks, 132);
    EXPECT_EQ(plan_gemv(gemv_of(1, 128256, 2048), h200()).blocks, 4 * 132);
}

TEST(kernel_plans, gemv_streams_short_rows_several_to_a_warp) {
    // K = 640 bf16: 80 vectors a row, 4 rows a step keep 8 vectors a lane in flight
    const auto short_rows = plan_gemv(gemv_of(1, 262144, 640), h200());
    EXPECT_TRUE(short_rows.streamed) << short_rows.describe();
    EXPECT_FALSE(short_rows.balanced);
    EXPECT_EQ(short_rows.rows_per_warp, 4);
    EXPECT_EQ(short_rows.unroll, 2);
    // 2 or more row groups a resident warp (4224 on the H200): persistent, one wave
    EXPECT_TRUE(short_rows.persistent);
    EXPECT_EQ(short_rows.blocks, 4 * 132);
    // fewer: one block per 8 row groups
    const auto few = plan_gemv(gemv_of(1, 8192, 640), h200());
    EXPECT_FALSE(few.persistent) << few.describe();
    EXPECT_EQ(few.blocks, 2048 / 8);
    // the tensor-core path (several tokens, bf16) is not streamed
    EXPECT_FALSE(plan_gemv(gemv_of(8, 4096, 4096), h200()).streamed);
}

TEST(kernel_plans, gemv_splits_k_only_below_half_a_wave_of_resident_blocks) {
    // 768 rows: 96 blocks; split until half a wave (264) is reached: 4 warps a row
    EXPECT_EQ(plan_gemv(gemv_of(1, 768, 2048), h200()).k_split, 4);
    EXPECT_FALSE(plan_gemv(gemv_of(1, 768, 2048), h200()).balanced);
    // 4096, 14336 and 262144 rows fill waves unsplit
    EXPECT_EQ(plan_gemv(gemv_of(1, 4096, 4096), h200()).k_split, 1);
    EXPECT_EQ(plan_gemv(gemv_of(1, 14336, 4096), h200()).k_split, 1);
    EXPECT_EQ(plan_gemv(gemv_of(1, 262144, 1152), h200()).k_split, 1);
}

// One token on the balanced path with rows of 8 KB or more: one block of 1024 an SM whose warps
// claim the steps, with a float a step of its rows in shared memory
TEST(kernel_plans, gemv_claims_steps_for_one_token_where_its_slots_fit) {
    // the split-K, balanced and claimed paths (bf16 rows of 8 KB or more are column-stationary
    // by default: gemv_column_stationary_for_one_token_of_8_kb_rows)
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "0");
    const auto gate_up = plan_gemv(with_norm(gemv_of(1, 28672, 4096)), h200());
    ASSERT_TRUE(gate_up.valid.empty()) << gate_up.valid;
    EXPECT_TRUE(gate_up.claimed) << gate_up.describe();
    EXPECT_NE(gate_up.describe().find("claimed"), std::string::npos) << gate_up.describe();
    EXPECT_EQ(gate_up.blocks, 132);
    EXPECT_EQ(gate_up.threads, 1024);
    // the normalised x (8 KB), then 218 rows x 4 steps of floats
    EXPECT_EQ(gate_up.shared_bytes, 4096 * 2 + 218 * 4 * 4);
    EXPECT_TRUE(plan_gemv(with_norm(gemv_of(1, 128256, 4096)), h200()).claimed); // 15.6 KB
    EXPECT_FALSE(plan_gemv(gemv_of(2, 28672, 4096), h200()).claimed);
    // rows of 4 KB keep the static partition (qwen3-30b-a3b's K = 2048)
    const auto short_rows = plan_gemv(with_norm(gemv_of(1, 5120, 2048)), h200());
    EXPECT_TRUE(short_rows.balanced);
    EXPECT_FALSE(short_rows.claimed);
    EXPECT_EQ(short_rows.blocks, 4 * 132);
    auto fp32 = gemv_of(1, 4096, 2048);
    fp32.type = elem::f32;
    EXPECT_TRUE(plan_gemv(fp32, h200()).claimed); // 8 KB rows
    // slots past 48 KiB: 1,000,000 rows / 132 x 4 steps x 4 bytes
    EXPECT_FALSE(plan_gemv(gemv_of(1, 1000000, 4096), h200()).claimed);
    // the trial FOURFOLD_GEMV_CLAIM_ROW_CAP=1: blocks of more than 1,024 rows keep the static
    // partition (262,208 x 5376 and 151,936 x 5120: 1,987 and 1,151 rows a block), 972 claim
    const fourfold::testing::env_switch cap("FOURFOLD_GEMV_CLAIM_ROW_CAP");
    for (const auto& [n, k] :
         {std::pair<std::int64_t, std::int64_t>{262208, 5376}, {151936, 5120}}) {
        EXPECT_TRUE(plan_gemv(gemv_of(1, n, k), h200()).claimed) << n << " x " << k;
        cap.set("1");
        const auto p = plan_gemv(gemv_of(1, n, k), h200());
        EXPECT_FALSE(p.claimed) << n << " x " << k;
        EXPECT_TRUE(p.balanced && p.streamed) << p.describe();
        EXPECT_EQ(p.blocks, 4 * 132);
        cap.unset();
    }
    cap.set("1");
    EXPECT_TRUE(plan_gemv(gemv_of(1, 128256, 8192), h200()).claimed); // 972 rows a block
}

// The column-stationary kernel: one token of 2-byte elements with rows of 8 KB or more (session
// 43: llama3-8b +3.8 %, qwen3-30b-a3b's 4 KB rows -3.5 %), K at most 16 slices of 512 elements,
// a float a row of each warp's run beside the prologue's x (none for the SwiGLU, made by each
// warp). FOURFOLD_GEMV_CS=0: never; =1: rows of any length.
TEST(kernel_plans, gemv_column_stationary_for_one_token_of_8_kb_rows) {
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS");
    const auto qwen3_qkv = with_norm(gemv_of(1, 5120, 2048)); // 4 KB rows
    EXPECT_FALSE(plan_gemv(qwen3_qkv, h200()).column_stationary);
    EXPECT_TRUE(plan_gemv(qwen3_qkv, h200()).balanced);
    EXPECT_FALSE(
        plan_gemv(with_norm(gemv_of(1, 151936, 2048)), h200()).column_stationary); // LM head
    cs.set("0");
    EXPECT_FALSE(plan_gemv(gemv_of(1, 4096, 4096), h200()).column_stationary);
    EXPECT_TRUE(plan_gemv(gemv_of(1, 4096, 4096), h200()).claimed);
    cs.set("1");
    EXPECT_TRUE(plan_gemv(qwen3_qkv, h200()).column_stationary);
    cs.unset();
    const auto o = plan_gemv(gemv_of(1, 4096, 4096), h200());
    ASSERT_TRUE(o.valid.empty()) << o.valid;
    EXPECT_TRUE(o.column_stationary && !o.balanced && !o.claimed) << o.describe();
    EXPECT_NE(o.describe().find("1 KB slice"), std::string::npos) << o.describe();
    EXPECT_EQ(o.slices, 8); // 2 runs a block, 264 runs
    EXPECT_EQ(o.slice_rows, 16);
    EXPECT_EQ(o.blocks, 132);
    EXPECT_EQ(o.threads, 512);
    EXPECT_EQ(o.shared_bytes, 16 * 16 * 4);
    const auto qkv = plan_gemv(with_norm(gemv_of(1, 6144, 4096)), h200());
    EXPECT_TRUE(qkv.column_stationary && qkv.fused_norm) << qkv.describe();
    EXPECT_EQ(qkv.shared_bytes, 4096 * 2 + 16 * 24 * 4);
    const auto head = plan_gemv(with_norm(gemv_of(1, 128256, 4096)), h200());
    EXPECT_TRUE(head.column_stationary) << head.describe();
    EXPECT_EQ(head.shared_bytes, 4096 * 2 + 16 * 486 * 4);
    auto swiglu = gemv_of(1, 4096, 4096);
    swiglu.swiglu_x = true;
    swiglu.ld_x = 8192;
    const auto sw = plan_gemv(swiglu, h200());
    EXPECT_TRUE(sw.column_stationary && sw.fused_swiglu && sw.swiglu_slices) << sw.describe();
    EXPECT_EQ(sw.shared_bytes, 16 * 16 * 4); // no x
    auto down = gemv_of(1, 4096, 14336);     // 28 slices: claimed as before
    down.swiglu_x = true;
    down.ld_x = std::int64_t{2} * 14336;
    EXPECT_TRUE(plan_gemv(down, h200()).claimed);
    EXPECT_FALSE(plan_gemv(down, h200()).column_stationary);
    EXPECT_FALSE(plan_gemv(gemv_of(2, 4096, 4096), h200()).column_stationary); // two tokens
    auto fp32 = gemv_of(1, 4096, 2048);
    fp32.type = elem::f32;
    EXPECT_FALSE(plan_gemv(fp32, h200()).column_stationary);
    EXPECT_FALSE(plan_gemv(gemv_of(1, 1000, 4096), h200()).column_stationary); // not balanced
}

// The trial FOURFOLD_GEMV_CS_BIG=1: rows of 4 KB or more column-stationary where the weights are
// 64 MB or more (qwen3-30b-a3b's LM head), not below (its qkv GEMVs), nor rows under 4 KB.
TEST(kernel_plans, gemv_column_stationary_for_big_weights_of_4_kb_rows_on_trial) {
    const fourfold::testing::env_switch big("FOURFOLD_GEMV_CS_BIG");
    const auto head = with_norm(gemv_of(1, 151936, 2048)); // 622 MB of 4 KB rows
    const auto qkv = with_norm(gemv_of(1, 5120, 2048));    // 21 MB
    EXPECT_FALSE(plan_gemv(head, h200()).column_stationary);
    big.set("1");
    const auto p = plan_gemv(head, h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.column_stationary && p.fused_norm) << p.describe();
    EXPECT_EQ(p.slices, 4); // 4 runs a block, 528 runs of 288 rows at most
    EXPECT_EQ(p.slice_rows, 288);
    EXPECT_EQ(p.shared_bytes, 2048 * 2 + 16 * 288 * 4);
    EXPECT_FALSE(plan_gemv(qkv, h200()).column_stationary);
    EXPECT_TRUE(plan_gemv(qkv, h200()).balanced);
    // 3.3 KB rows with the norm (plain, they are column-stationary: rows of 3 KB, session 50)
    EXPECT_FALSE(plan_gemv(with_norm(gemv_of(1, 262144, 1664)), h200()).column_stationary);
    EXPECT_TRUE(plan_gemv(gemv_of(1, 262208, 2560), h200()).column_stationary);
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "0"); // never, whatever the trial
    EXPECT_FALSE(plan_gemv(head, h200()).column_stationary);
}

// The column-stationary kernel with the norm fused loads its first rows' weights before the
// prologue (session 47: with every K = 2048 GEMV column-stationary, 4096 x 2048 + norm 8.41 ->
// 7.59 µs on an H100); without a norm there is no prologue to overlap; the SwiGLU keeps its order.
// FOURFOLD_GEMV_CS_FETCH_FIRST=0: after the prologue, as before (A/B runs).
TEST(kernel_plans, gemv_column_stationary_loads_its_first_weights_before_the_norm) {
    const fourfold::testing::env_switch first("FOURFOLD_GEMV_CS_FETCH_FIRST");
    const auto qkv = plan_gemv(with_norm(gemv_of(1, 6144, 4096)), h200());
    ASSERT_TRUE(qkv.valid.empty()) << qkv.valid;
    EXPECT_TRUE(qkv.column_stationary && qkv.fused_norm && qkv.cs_fetch_first) << qkv.describe();
    EXPECT_NE(qkv.describe().find("loaded before the norm"), std::string::npos) << qkv.describe();
    const auto o = plan_gemv(gemv_of(1, 4096, 4096), h200());
    EXPECT_TRUE(o.column_stationary && !o.cs_fetch_first) << o.describe();
    EXPECT_EQ(o.describe().find("loaded before the norm"), std::string::npos) << o.describe();
    auto swiglu = gemv_of(1, 4096, 4096);
    swiglu.swiglu_x = true;
    swiglu.ld_x = 8192;
    EXPECT_FALSE(plan_gemv(swiglu, h200()).cs_fetch_first);
    // not column-stationary: the balanced kernel's own order (gemv_balanced), no flag
    EXPECT_FALSE(plan_gemv(with_norm(gemv_of(1, 5120, 2048)), h200()).cs_fetch_first);
    first.set("0");
    const auto after = plan_gemv(with_norm(gemv_of(1, 6144, 4096)), h200());
    EXPECT_TRUE(after.column_stationary && !after.cs_fetch_first) << after.describe();
    // the same plan otherwise
    EXPECT_EQ(after.shared_bytes, qkv.shared_bytes);
    EXPECT_EQ(after.slices, qkv.slices);
}

// Column-stationary where the static partition's last 2 KB step of a row is under half full
// (K = 1152 bf16: 2304-byte rows; session 48's default), at 4 rows a block of the wave or more and
// below it; rows whose last step is half full or more keep their path, as do 8-byte elements'
// rows and two tokens; FOURFOLD_GEMV_CS_TAIL=0: the static partition.
TEST(kernel_plans, gemv_column_stationary_where_a_rows_last_step_is_under_half_full) {
    // (262,144 x 1152 is 604 MB of 2 KB rows: session 50's plain short rule takes it too)
    const fourfold::testing::env_switch shorter("FOURFOLD_GEMV_CS_PLAIN_SHORT", "0");
    const fourfold::testing::env_switch tail("FOURFOLD_GEMV_CS_TAIL", "0");
    const auto big = gemv_of(1, 262144, 1152), mid = gemv_of(1, 6912, 1152);
    EXPECT_TRUE(plan_gemv(big, h200()).balanced);
    EXPECT_FALSE(plan_gemv(big, h200()).column_stationary);
    tail.unset();
    const auto p = plan_gemv(big, h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.column_stationary && !p.balanced) << p.describe();
    EXPECT_EQ(p.slices, 3);       // 144 vectors: 64, 64 and 16
    EXPECT_EQ(p.slice_rows, 398); // 5 runs a block, 660 runs
    EXPECT_TRUE(plan_gemv(mid, h200()).column_stationary) << plan_gemv(mid, h200()).describe();
    // (with the norm fused: without a prologue, rows of 4 KB or more are column-stationary)
    EXPECT_FALSE(plan_gemv(with_norm(gemv_of(1, 262208, 2560)), h200()).column_stationary); // half
    EXPECT_FALSE(plan_gemv(with_norm(gemv_of(1, 151936, 2048)), h200()).column_stationary); // whole
    EXPECT_FALSE(plan_gemv(gemv_of(2, 262144, 1152), h200()).column_stationary);
    auto fp32 = gemv_of(1, 262144, 576); // 2304-byte rows of 4-byte elements
    fp32.type = elem::f32;
    EXPECT_FALSE(plan_gemv(fp32, h200()).column_stationary);
}

// Rows of 4 KB to 8 KB without a fused prologue are column-stationary (session 48; the article's
// 8192 x 2048 11.7 -> 9.23 µs on the H200), with the norm or the SwiGLU fused they keep the
// static partition (qwen3-30b-a3b's qkv and LM head, whose decode lost with it);
// FOURFOLD_GEMV_CS_PLAIN=0: the static partition. Rows under 4 KB keep theirs.
TEST(kernel_plans, gemv_column_stationary_for_rows_of_4_kb_without_a_prologue) {
    const fourfold::testing::env_switch plain("FOURFOLD_GEMV_CS_PLAIN");
    for (const auto& a : {gemv_of(1, 8192, 2048), gemv_of(1, 4096, 2560), gemv_of(1, 8192, 3072),
                          gemv_of(1, 5760, 2880)}) {
        const auto p = plan_gemv(a, h200());
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_TRUE(p.column_stationary && !p.balanced) << p.describe();
        EXPECT_EQ(p.threads, 512);
        EXPECT_EQ(p.blocks, 132);
    }
    auto with_bias = gemv_of(1, 8192, 2048);
    with_bias.bias = gemv_of(1, 1, 1, k_aligned * 3).w; // a stand-in address, 16-byte aligned
    EXPECT_TRUE(plan_gemv(with_bias, h200()).column_stationary);
    auto swiglu = gemv_of(1, 8192, 2048);
    swiglu.swiglu_x = true;
    swiglu.ld_x = 4096;
    EXPECT_FALSE(plan_gemv(swiglu, h200()).column_stationary)
        << plan_gemv(swiglu, h200()).describe();
    EXPECT_FALSE(plan_gemv(with_norm(gemv_of(1, 8192, 2048)), h200()).column_stationary);
    plain.set("0");
    EXPECT_TRUE(plan_gemv(gemv_of(1, 8192, 2048), h200()).balanced);
}

// Column-stationary for rows of 3 KB without a prologue, and of 2 KB where the weights are 64 MB
// or more (session 50's default; FOURFOLD_GEMV_CS_PLAIN_SHORT=0 or FOURFOLD_GEMV_CS_PLAIN=0: the
// static partition); never with a prologue, never short rows of small weights.
TEST(kernel_plans, gemv_column_stationary_for_shorter_plain_rows) {
    const fourfold::testing::env_switch shorter("FOURFOLD_GEMV_CS_PLAIN_SHORT");
    const auto k1536 = gemv_of(1, 4096, 1536), big_k1024 = gemv_of(1, 32768, 1024),
               lm_head = gemv_of(1, 151936, 1024), small_k1024 = gemv_of(1, 4096, 1024);
    for (const auto& a : {k1536, big_k1024, lm_head}) {
        const auto p = plan_gemv(a, h200());
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_TRUE(p.column_stationary && !p.balanced) << p.describe();
    }
    EXPECT_FALSE(plan_gemv(small_k1024, h200()).column_stationary);            // 8 MB: static
    EXPECT_FALSE(plan_gemv(gemv_of(1, 32768, 768), h200()).column_stationary); // 1.5 KB rows
    EXPECT_FALSE(plan_gemv(with_norm(gemv_of(1, 4096, 1536)), h200()).column_stationary);
    for (const char* off : {"FOURFOLD_GEMV_CS_PLAIN_SHORT", "FOURFOLD_GEMV_CS_PLAIN"}) {
        const fourfold::testing::env_switch s(off, "0");
        for (const auto& a : {k1536, big_k1024, lm_head})
            EXPECT_FALSE(plan_gemv(a, h200()).column_stationary) << off;
    }
}

// The trial FOURFOLD_GEMV_CS_HALF=1: the column-stationary kernel in two blocks of 8 warps an SM
// where a row's slices divide 8, with the same runs (so the same rows a run, and the same sums);
// not where they do not (K = 1152: 3 slices; K = 6144: 12).
TEST(kernel_plans, gemv_column_stationary_in_two_blocks_an_sm_on_trial) {
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "1");
    const fourfold::testing::env_switch half("FOURFOLD_GEMV_CS_HALF");
    const auto qkv = with_norm(gemv_of(1, 5120, 2048)),
               gate_up = with_norm(gemv_of(1, 28672, 4096));
    const auto tail = gemv_of(1, 262144, 1152), wide = gemv_of(1, 4096, 6144);
    const auto whole = plan_gemv(qkv, h200()), whole_up = plan_gemv(gate_up, h200());
    ASSERT_TRUE(whole.column_stationary && whole_up.column_stationary) << whole.describe();
    EXPECT_EQ(whole.threads, 512);
    EXPECT_EQ(whole.blocks, 132);
    half.set("1");
    for (const auto& [args, before] : {std::pair{qkv, whole}, std::pair{gate_up, whole_up}}) {
        const auto p = plan_gemv(args, h200());
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_TRUE(p.column_stationary) << p.describe();
        EXPECT_EQ(p.threads, 256);
        EXPECT_EQ(p.blocks, 264);
        EXPECT_EQ(p.slices, before.slices);
        EXPECT_EQ(p.slice_rows, before.slice_rows); // the same runs
        EXPECT_EQ(p.cs_fetch_first, before.cs_fetch_first);
        EXPECT_LE(p.shared_bytes, before.shared_bytes); // half the warps' sums
    }
    EXPECT_EQ(plan_gemv(tail, h200()).threads, 512) << plan_gemv(tail, h200()).describe();
    EXPECT_EQ(plan_gemv(wide, h200()).threads, 512) << plan_gemv(wide, h200()).describe();
}

// gemv_cs asks L2 for the ring's 4 rows of each warp's slice before its dependency wait;
// FOURFOLD_GEMV_CS_L2_RUN=0 for none.
TEST(kernel_plans, gemv_column_stationary_asks_l2_for_its_first_rows) {
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "1");
    const fourfold::testing::env_switch run("FOURFOLD_GEMV_CS_L2_RUN");
    const auto qkv = with_norm(gemv_of(1, 5120, 2048)), head = gemv_of(1, 151936, 2048);
    const auto few = gemv_of(1, 1100, 4096); // 4-5 rows a run
    EXPECT_EQ(plan_gemv(qkv, h200()).cs_l2_rows, 4);
    EXPECT_EQ(plan_gemv(head, h200()).cs_l2_rows, 4);
    EXPECT_EQ(plan_gemv(few, h200()).cs_l2_rows, 4);
    run.set("0"); // none
    EXPECT_EQ(plan_gemv(qkv, h200()).cs_l2_rows, 0);
}

// Column-stationary below the balanced path's 4 rows a block of the wave too, with 4 rows a run or
// more (qwen3-30b-a3b's o GEMV, 2048 x 4096), a fused prologue with it; not where runs would hold
// fewer rows (1024 x 4096: 3 a run, measured slower), nor rows under 8 KB;
// FOURFOLD_GEMV_CS_FEW=0: K split as before.
TEST(kernel_plans, gemv_column_stationary_for_few_rows) {
    const fourfold::testing::env_switch few("FOURFOLD_GEMV_CS_FEW", "0");
    const auto o = gemv_of(1, 2048, 4096);
    EXPECT_FALSE(plan_gemv(o, h200()).column_stationary);
    EXPECT_EQ(plan_gemv(o, h200()).k_split, 2);
    few.unset();
    const auto p = plan_gemv(o, h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.column_stationary && !p.balanced && !p.streamed) << p.describe();
    EXPECT_EQ(p.k_split, 1);
    EXPECT_EQ(p.slices, 8); // 2 runs a block, 264 runs of 8 rows at most
    EXPECT_EQ(p.slice_rows, 8);
    EXPECT_EQ(p.blocks, 132);
    const auto normed = plan_gemv(with_norm(gemv_of(1, 1536, 4096)), h200());
    ASSERT_TRUE(normed.valid.empty()) << normed.valid;
    EXPECT_TRUE(normed.column_stationary && normed.fused_norm) << normed.describe();
    EXPECT_EQ(normed.shared_bytes, 4096 * 2 + 16 * 6 * 4);
    const auto wide = plan_gemv(gemv_of(1, 1152, 6912), h200()); // 14 slices: one run a block
    EXPECT_TRUE(wide.column_stationary) << wide.describe();
    EXPECT_EQ(wide.slice_rows, 9);
    const auto three = plan_gemv(gemv_of(1, 1024, 4096), h200()); // 3.9 rows a run
    EXPECT_FALSE(three.column_stationary) << three.describe();
    EXPECT_GT(three.k_split, 1) << three.describe();
    EXPECT_FALSE(plan_gemv(gemv_of(1, 512, 4096), h200()).column_stationary);  // 1.9 a run
    EXPECT_FALSE(plan_gemv(gemv_of(1, 2048, 2048), h200()).column_stationary); // 4 KB rows
    // a prologue where the kernel does not fit: refused as before (the caller runs it alone)
    EXPECT_FALSE(plan_gemv(with_norm(gemv_of(1, 512, 4096)), h200()).valid.empty());
    // the balanced path's shapes are as without it
    EXPECT_TRUE(plan_gemv(gemv_of(1, 4096, 4096), h200()).column_stationary);
    EXPECT_TRUE(plan_gemv(with_norm(gemv_of(1, 5120, 2048)), h200()).balanced);
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "0"); // never column-stationary
    EXPECT_FALSE(plan_gemv(o, h200()).column_stationary);
}

TEST(kernel_plans, gemv_dependent_launch_can_be_switched_off_for_an_a_b_run) {
    const fourfold::testing::env_switch dep("FOURFOLD_GEMV_DEPENDENT_LAUNCH");
    EXPECT_TRUE(plan_gemv(gemv_of(1, 4096, 4096), h200()).dependent_launch);
    dep.set("0");
    const auto p = plan_gemv(gemv_of(1, 4096, 4096), h200());
    EXPECT_FALSE(p.dependent_launch) << p.describe();
    EXPECT_TRUE(p.column_stationary) << p.describe(); // the same kernel
    EXPECT_FALSE(plan_gemv(gemv_of(1, 5120, 2048), h200()).dependent_launch);
}

TEST(kernel_plans, gemv_fuses_an_rms_norm_on_the_balanced_path_only) {
    // the split-K, balanced and claimed paths (bf16 rows of 8 KB or more are column-stationary
    // by default: gemv_column_stationary_for_one_token_of_8_kb_rows)
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "0");
    const auto qkv = plan_gemv(with_norm(gemv_of(1, 6144, 4096)), h200());
    EXPECT_TRUE(qkv.valid.empty()) << qkv.valid;
    EXPECT_TRUE(qkv.balanced);
    EXPECT_TRUE(qkv.fused_norm);
    EXPECT_NE(qkv.describe().find("RMSNorm fused"), std::string::npos) << qkv.describe();
    // the normalised x, one token, and a float a step of its rows (claimed: 47 rows of 4)
    EXPECT_EQ(qkv.shared_bytes, 4096 * 2 + 47 * 4 * 4);
    EXPECT_EQ(plan_gemv(gemv_of(1, 6144, 4096), h200()).shared_bytes, 47 * 4 * 4);
    EXPECT_EQ(plan_gemv(gemv_of(1, 6144, 2048), h200()).shared_bytes, 0); // static partition
    // rows whose normalised copy would not fit 47 KiB of shared memory (48 KiB less the kernels'
    // static arrays): the norm goes alone; 4 fp32 tokens of 3072 take exactly 48 KiB, which a
    // launch refuses beside the static arrays
    auto full_args = with_norm(gemv_of(4, 4096, 3072));
    full_args.type = elem::f32;
    const auto full = plan_gemv(full_args, h200());
    EXPECT_FALSE(full.fused_norm);
    EXPECT_NE(full.valid.find("at most 48128 bytes"), std::string::npos) << full.valid;
    full_args.k = 3008; // 47 KiB
    full_args.ld_x = 3008;
    full_args.ld_w = 3008;
    EXPECT_TRUE(plan_gemv(full_args, h200()).fused_norm) << plan_gemv(full_args, h200()).valid;
    const auto wide = plan_gemv(with_norm(gemv_of(1, 4096, 32768)), h200());
    EXPECT_TRUE(wide.balanced);
    EXPECT_NE(wide.valid.find("shared memory"), std::string::npos) << wide.valid;
    EXPECT_FALSE(plan_gemv(gemv_of(1, 6144, 4096), h200()).fused_norm);
    // off the balanced path the plan refuses, and says where the norm must go
    const auto small = plan_gemv(with_norm(gemv_of(1, 768, 2048)), h200());
    EXPECT_FALSE(small.fused_norm);
    EXPECT_NE(small.valid.find("run it on its own"), std::string::npos) << small.valid;
    EXPECT_FALSE(plan_gemv(with_norm(gemv_of(4, 4096, 4096)), h200()).valid.empty()); // MMAs
    const auto odd = with_norm(gemv_of(1, 6144, 4096), k_aligned * 3 + 2);
    EXPECT_NE(plan_gemv(odd, h200()).valid.find("16-byte aligned"), std::string::npos);
    auto bad_eps = with_norm(gemv_of(1, 6144, 4096));
    bad_eps.norm_eps = -1;
    EXPECT_FALSE(plan_gemv(bad_eps, h200()).valid.empty());
}

TEST(kernel_plans, gemv_balances_rows_over_each_blocks_warps_from_four_rows_a_block) {
    // the split-K, balanced and claimed paths (bf16 rows of 8 KB or more are column-stationary
    // by default: gemv_column_stationary_for_one_token_of_8_kb_rows)
    const fourfold::testing::env_switch cs("FOURFOLD_GEMV_CS", "0");
    // 4 rows a block of the wave (2112 rows for 528 blocks) and rows of 2 KB (128 vectors) on
    for (const auto& [n, k] : std::vector<std::pair<std::int64_t, std::int64_t>>{{5120, 25600},
                                                                                 {5120, 5120},
                                                                                 {14336, 4096},
                                                                                 {4096, 4096},
                                                                                 {2112, 1024},
                                                                                 {6144, 4096},
                                                                                 {4096, 14336},
                                                                                 {128256, 4096}}) {
        const auto p = plan_gemv(gemv_of(1, n, k), h200());
        EXPECT_TRUE(p.balanced) << n << "x" << k << ": " << p.describe();
        EXPECT_EQ(p.k_split, 1);
        // rows of 8 KB or more: one block an SM, its steps claimed (gemv_claim)
        EXPECT_EQ(p.claimed, k >= 4096);
        EXPECT_EQ(p.blocks, p.claimed ? 132 : 4 * 132);
        EXPECT_NE(p.describe().find(p.claimed ? "claimed" : "evenly"), std::string::npos);
    }
    EXPECT_FALSE(plan_gemv(gemv_of(1, 2111, 4096), h200()).balanced);  // 3.998 rows a block
    EXPECT_FALSE(plan_gemv(gemv_of(1, 65536, 1016), h200()).balanced); // 127 vectors a row
    // several fp32 tokens take the FMA path at 2 blocks an SM: 1056 rows are 4 a block
    auto f32 = gemv_of(4, 1056, 4096);
    f32.type = elem::f32;
    const auto p = plan_gemv(f32, h200());
    EXPECT_TRUE(p.balanced) << p.describe();
    EXPECT_EQ(p.blocks, 2 * 132);
    EXPECT_FALSE(plan_gemv(gemv_of(8, 14336, 4096), h200()).balanced); // tensor cores
}

TEST(kernel_plans, gemv_of_several_tokens_takes_the_tensor_cores_in_16_row_tiles) {
    const auto p = plan_gemv(gemv_of(8, 4096, 4096), h200());
    EXPECT_TRUE(p.tensor_cores) << p.describe();
    EXPECT_EQ(p.rows_per_warp, 16);
    const auto tiles_per_block = 8 / p.k_split;
    EXPECT_GE(p.blocks * tiles_per_block * 16, 4096);
    EXPECT_FALSE(plan_gemv(gemv_of(1, 4096, 4096), h200()).tensor_cores); // one token: FMA
    auto f32 = gemv_of(4, 4096, 4096);
    f32.type = elem::f32;
    EXPECT_FALSE(plan_gemv(f32, h200()).tensor_cores);                  // fp32 stays exact: no tf32
    EXPECT_FALSE(plan_gemv(gemv_of(4, 64, 4008), h200()).tensor_cores); // K % 32 != 0
}

// In rounds (FOURFOLD_GEMV_MMA_ROUNDS=1: at any size): one wave of blocks of ks warps, every block
// the same rounds.
TEST(kernel_plans, gemv_in_rounds_keeps_every_block_resident_with_equal_rounds) {
    const fourfold::testing::env_switch rounds("FOURFOLD_GEMV_MMA_ROUNDS", "1");
    struct shape {
        std::int64_t n, k;
    };
    for (const shape s : {shape{128256, 4096}, shape{25600, 5120}, shape{8192, 8192},
                          shape{4096, 4096}, shape{768, 2048}, shape{16, 32}, shape{1000, 1024}}) {
        const auto p = plan_gemv(gemv_of(4, s.n, s.k), h200());
        ASSERT_TRUE(p.valid.empty()) << p.valid;
        EXPECT_TRUE(p.tensor_cores) << p.describe();
        ASSERT_GE(p.mma_rounds, 1) << p.describe();
        const std::int64_t tiles = (s.n + 15) / 16;
        const int ks = p.k_split;
        EXPECT_GE(ks, 1);
        EXPECT_LE(ks, 8);
        EXPECT_LE(ks, s.k / 32); // no warp without a unit of K
        EXPECT_EQ(p.threads, 32 * ks);
        EXPECT_EQ(p.shared_bytes, ks > 1 ? 2 * ks * 32 * 16 : 0);
        // every tile taken, no block idle, the rounds differ by one at most (b, b + B, ...)
        EXPECT_GE(p.blocks * p.mma_rounds, tiles) << p.describe();
        EXPECT_LT((p.blocks) * (p.mma_rounds - 1), tiles) << p.describe();
        EXPECT_LE(p.blocks, tiles);
        // all resident at once under the kernel's register bound
        const std::int64_t per_sm = std::min(32, 8 * k_gemv_mma_blocks_per_sm / ks);
        EXPECT_LE(p.blocks, 132 * per_sm) << p.describe();
    }
    // the LM head: 8016 tiles in 21 rounds of 382 blocks of 8 warps (3056 of the 3168 warps)
    const auto head = plan_gemv(gemv_of(2, 128256, 4096), h200());
    EXPECT_EQ(head.k_split, 8);
    EXPECT_EQ(head.mma_rounds, 21);
    EXPECT_EQ(head.blocks, 382);
    // 8192 x 8192: 512 tiles over 528 blocks of 6 warps, one round
    const auto square = plan_gemv(gemv_of(8, 8192, 8192), h200());
    EXPECT_EQ(square.k_split, 6);
    EXPECT_EQ(square.mma_rounds, 1);
    EXPECT_EQ(square.blocks, 512);
    // serial, like gemv_mma (launched dependent it lost: gemv_plan.cpp)
    EXPECT_FALSE(head.dependent_launch);
    // by default from 64 MiB of weights on: the LM head in rounds, 4096 x 4096 (32 MiB) and
    // 5120 x 5120 (50 MiB) gemv_mma's tile groups; FOURFOLD_GEMV_MMA_ROUNDS=0: never
    rounds.unset();
    EXPECT_EQ(plan_gemv(gemv_of(2, 128256, 4096), h200()).mma_rounds, 21);
    EXPECT_GE(plan_gemv(gemv_of(8, 8192, 8192), h200()).mma_rounds, 1); // exactly 64 MiB
    EXPECT_EQ(plan_gemv(gemv_of(8, 4096, 4096), h200()).mma_rounds, 0);
    EXPECT_EQ(plan_gemv(gemv_of(8, 5120, 5120), h200()).mma_rounds, 0);
    rounds.set("0");
    EXPECT_EQ(plan_gemv(gemv_of(2, 128256, 4096), h200()).mma_rounds, 0);
}

TEST(kernel_plans, gemv_never_splits_k_below_one_vector_per_lane) {
    const auto p = plan_gemv(gemv_of(1, 8, 512), h200()); // 64 vectors per row
    EXPECT_LE(p.k_split, 2) << p.describe();
}

TEST(kernel_plans, gemv_ragged_k_and_offset_views_take_the_named_scalar_path) {
    const auto ragged = plan_gemv(gemv_of(2, 64, 4095), h200());
    EXPECT_FALSE(ragged.vectorised);
    EXPECT_NE(ragged.why_scalar.find("4095"), std::string::npos) << ragged.why_scalar;
    const auto offset = plan_gemv(gemv_of(1, 64, 4096, k_aligned + 2), h200());
    EXPECT_FALSE(offset.vectorised);
    EXPECT_NE(offset.why_scalar.find("offset"), std::string::npos) << offset.why_scalar;
    auto strided = gemv_of(1, 64, 4096);
    strided.inc_w = 2;
    EXPECT_FALSE(plan_gemv(strided, h200()).vectorised);
}

TEST(kernel_plans, gemv_takes_one_to_eight_tokens) {
    EXPECT_TRUE(plan_gemv(gemv_of(8, 64, 64), h200()).valid.empty());
    EXPECT_FALSE(plan_gemv(gemv_of(9, 64, 64), h200()).valid.empty());
    EXPECT_FALSE(plan_gemv(gemv_of(0, 64, 64), h200()).valid.empty());
}

namespace {

pad_args pad_of(std::uintptr_t y = k_aligned, elem t = elem::bf16) {
    pad_args a;
    a.type = t;
    a.x = at(k_aligned);
    a.y = at(y);
    a.dims = 5;
    const std::int64_t shape[5] = {1, 96, 5, 130, 130};
    std::int64_t stride = 1;
    for (int i = 4; i >= 0; --i) {
        a.in_shape[i] = shape[i];
        a.in_stride[i] = stride;
        stride *= shape[i];
    }
    a.before[2] = 2;
    a.before[3] = a.after[3] = a.before[4] = a.after[4] = 1;
    return a;
}

} // namespace

TEST(kernel_plans, pad_stages_contiguous_rows_in_tiles_of_a_plane) {
    const auto p = plan_pad(pad_of(k_aligned, elem::f32), h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_TRUE(p.staged) << p.describe();
    EXPECT_TRUE(p.flat_rows);
    // 132 output rows of 528 bytes cut in 6 tiles of 22 (about 12 KB each)
    EXPECT_EQ(p.tiles_per_plane, 6);
    EXPECT_EQ(p.rows_per_tile, 22);
    EXPECT_EQ(p.blocks, 96ll * 7 * 6);
    EXPECT_EQ(p.threads, k_pad_tile_threads);
    // 16 + 15 + 22 rows of 520 bytes + 48, to 16 bytes
    EXPECT_EQ(p.shared_bytes, 11520);
    EXPECT_EQ(p.vec, 4);
    EXPECT_TRUE(p.dependent_launch);
    EXPECT_EQ(p.prefetch_lines, 0); // no prefetch before the wait (not measured to gain)
    EXPECT_EQ(p.out_elements, 96ll * 7 * 132 * 132);
    EXPECT_NE(p.describe().find("shared memory"), std::string::npos) << p.describe();
    // an output at any element alignment: its first elements are stored alone
    EXPECT_TRUE(plan_pad(pad_of(k_aligned + 4, elem::f32), h200()).staged);
    // 2-byte elements load into registers (they staged slower), and the record says why
    const auto half = plan_pad(pad_of(), h200());
    EXPECT_FALSE(half.staged);
    EXPECT_NE(half.describe().find("2-byte elements"), std::string::npos) << half.describe();
    EXPECT_TRUE(half.dependent_launch);
    EXPECT_EQ(half.prefetch_lines, 4); // a warp's first rows into L2 before the wait
    EXPECT_NE(half.describe().find("prefetched"), std::string::npos) << half.describe();
    {
        const fourfold::testing::env_switch off("FOURFOLD_PAD_PREFETCH", "0");
        EXPECT_EQ(plan_pad(pad_of(), h200()).prefetch_lines, 0);
    }
    // a small 4-byte pad takes the register path (one round of loads a warp here), and says so
    auto small = pad_of(k_aligned, elem::f32);
    small.in_shape[3] = small.in_shape[4] = 32;
    small.in_stride[3] = 32;
    small.in_stride[2] = std::int64_t{32} * 32;
    small.in_stride[1] = std::int64_t{32} * 32 * 5;
    small.in_stride[0] = std::int64_t{32} * 32 * 5 * 96;
    const auto r = plan_pad(small, h200());
    EXPECT_FALSE(r.staged);
    EXPECT_TRUE(r.flat);
    EXPECT_NE(r.describe().find("takes it in 1 round(s)"), std::string::npos) << r.describe();
    // staged where asked: a small plane is one tile
    const fourfold::testing::env_switch staged("FOURFOLD_PAD_STAGED", "1");
    const auto s = plan_pad(small, h200());
    ASSERT_TRUE(s.staged);
    EXPECT_EQ(s.tiles_per_plane, 1);
    EXPECT_EQ(s.rows_per_tile, 34);
}

TEST(kernel_plans, pad_stages_4_byte_pads_past_4_rounds_of_the_register_path) {
    // fp32 article pads (s55_c): 128x3x64x64 3 rounds, 192x3x64x64 4 take registers;
    // 96x5x130x130 5 rounds of 16-byte units is staged (the test above)
    for (const std::int64_t c : {128, 192}) {
        auto a = pad_of(k_aligned, elem::f32);
        a.in_shape[1] = c;
        a.in_shape[2] = 3;
        a.in_shape[3] = a.in_shape[4] = 64;
        const auto p = plan_pad(a, h200());
        EXPECT_FALSE(p.staged) << c << ": " << p.describe();
        EXPECT_EQ(p.vec, 2); // rows of 66
        EXPECT_EQ(p.units_a_lane, 4);
        EXPECT_NE(p.describe().find(c == 128 ? "in 3 round(s)" : "in 4 round(s)"),
                  std::string::npos)
            << p.describe();
    }
}

TEST(kernel_plans, pad_copies_rows_alone_where_they_are_not_contiguous) {
    auto a = pad_of(k_aligned, elem::f32);
    a.in_stride[3] = 132; // a view of a wider tensor: rows 528 bytes apart, 520 long
    const auto p = plan_pad(a, h200());
    ASSERT_TRUE(p.staged);
    EXPECT_FALSE(p.flat_rows);
    EXPECT_EQ(p.row_slot_bytes, 544); // 520 + 15 of misalignment, to 16 bytes
    EXPECT_EQ(p.rows_per_tile, 22);   // 12 KB / 544 = 22 rows: 6 tiles of 22
    EXPECT_EQ(p.shared_bytes, 16 + 22 * 544 + 48);
    EXPECT_NE(p.describe().find("one copy a row"), std::string::npos) << p.describe();
}

TEST(kernel_plans, pad_loads_into_registers_where_rows_are_strided_or_huge) {
    auto strided = pad_of();
    strided.in_stride[4] = 2;
    const auto p = plan_pad(strided, h200());
    ASSERT_TRUE(p.valid.empty()) << p.valid;
    EXPECT_FALSE(p.staged);
    EXPECT_FALSE(p.contiguous_rows);
    EXPECT_NE(p.describe().find("strided"), std::string::npos) << p.describe();
    EXPECT_EQ(p.vec, 4); // rows of 132 bf16 (264 bytes) take 8-byte stores
    // one wave of 5 blocks an SM, each warp an even share of the flat output's 8-byte units,
    // 4 a lane in flight (554 a warp: more than one round of 8)
    EXPECT_TRUE(p.flat);
    EXPECT_EQ(p.units_a_lane, 4);
    EXPECT_EQ(p.blocks, 5 * 132);
    EXPECT_NE(p.describe().find("even share"), std::string::npos) << p.describe();
    {
        // 8-byte units of strided 2-byte elements stay at 4 where 8 are asked for (8 would
        // spill: no such instance)
        const fourfold::testing::env_switch eight("FOURFOLD_PAD_UNITS_A_LANE", "8");
        EXPECT_EQ(plan_pad(strided, h200()).units_a_lane, 4);
        auto f32 = pad_of(k_aligned, elem::f32);
        f32.in_stride[4] = 2;
        f32.in_shape[4] = 128;                   // rows of 130
        EXPECT_EQ(plan_pad(f32, h200()).vec, 2); // 8-byte units of strided fp32 take 8
        EXPECT_EQ(plan_pad(f32, h200()).units_a_lane, 8);
    }
    {
        // 8 where the wave takes the pad in one round of 8: 384 x 3 x 32 x 32 bf16 (34 x 34
        // planes, 4-byte units) is 210 units a warp
        auto small = strided;
        small.in_shape[1] = 384;
        small.in_shape[2] = 3;
        small.in_shape[3] = small.in_shape[4] = 32;
        const auto s8 = plan_pad(small, h200());
        EXPECT_EQ(s8.vec, 2);
        EXPECT_EQ(s8.units_a_lane, 8);
        EXPECT_EQ(s8.blocks, 542); // 1109760 units: 4335 rounds of 256, a warp each
        const fourfold::testing::env_switch four("FOURFOLD_PAD_UNITS_A_LANE", "4");
        EXPECT_EQ(plan_pad(small, h200()).units_a_lane, 4);
    }
    {
        // the flat path's offsets in a plane are 32-bit: a row stride that would pass 2^31 within
        // the plane's 132 rows and their step goes to the chunks of rows
        auto wide = strided;
        wide.in_stride[3] = (std::int64_t{1} << 31) / 166; // (132 + 34) rows: one past 2^31
        EXPECT_FALSE(plan_pad(wide, h200()).flat);
        wide.in_stride[3] = (std::int64_t{1} << 31) / 166 - 64;
        EXPECT_TRUE(plan_pad(wide, h200()).flat);
    }
    {
        // the chunks of rows before it: a warp per 8 rows of one 132 x 132 plane, 17 a plane
        const fourfold::testing::env_switch chunks("FOURFOLD_PAD_FLAT", "0");
        const auto c = plan_pad(strided, h200());
        EXPECT_FALSE(c.flat);
        EXPECT_EQ(c.chunks_per_plane, 17);
        EXPECT_EQ(c.chunks, 96ll * 7 * 17);
        EXPECT_EQ(c.blocks, 5 * 132);
        EXPECT_NE(c.describe().find("warp per 8 output rows"), std::string::npos) << c.describe();
    }
    // 16-byte units of strided elements take 2 a lane (4 spilled once the split was made on the
    // host); a small pad takes a warp a round of units
    auto wide = pad_of(k_aligned, elem::f32);
    wide.in_stride[4] = 2; // strided: the register path
    wide.in_shape[3] = wide.in_shape[4] = 6;
    wide.in_stride[3] = 12;
    wide.in_stride[2] = 72;
    wide.in_stride[1] = std::int64_t{72} * 5;
    wide.in_stride[0] = std::int64_t{72} * 5 * 96;
    const auto w = plan_pad(wide, h200());
    EXPECT_FALSE(w.staged);
    EXPECT_EQ(w.vec, 4); // rows of 8 fp32
    EXPECT_EQ(w.units_a_lane, 2);
    // 96 x 7 planes of 8 x 8: 10752 units of 4, 168 rounds of 64, 21 blocks of 8 warps
    EXPECT_EQ(w.blocks, 21);
    // launched dependent on the launch before, as the staged path; strided rows not prefetched
    EXPECT_TRUE(p.dependent_launch);
    EXPECT_NE(p.describe().find("dependent launch"), std::string::npos) << p.describe();
    EXPECT_EQ(p.prefetch_lines, 0);
    strided.y = address(k_aligned + 2);
    EXPECT_EQ(plan_pad(strided, h200()).vec, 1);
    pad_args huge;
    huge.x = address(k_aligned);
    huge.y = address(k_aligned);
    huge.dims = 1;
    huge.type = elem::f32;
    huge.in_shape[0] = 20000; // 80 KB, over a tile's row
    huge.in_stride[0] = 1;
    const auto h = plan_pad(huge, h200());
    EXPECT_FALSE(h.staged);
    EXPECT_NE(h.describe().find("not staged"), std::string::npos) << h.describe();
    EXPECT_NE(h.describe().find("is over"), std::string::npos) << h.describe();
}

TEST(kernel_plans, pad_refuses_cropping_and_outputs_past_two_to_the_31) {
    auto neg = pad_of();
    neg.before[4] = -1;
    EXPECT_FALSE(plan_pad(neg, h200()).valid.empty());
    auto huge = pad_of();
    huge.in_shape[0] = 1000;
    EXPECT_NE(plan_pad(huge, h200()).valid.find("2^31"), std::string::npos);
}

TEST(kernel_plans, gemv_launches_dependent_on_hopper_and_serial_before_it) {
    const auto p = plan_gemv(gemv_of(1, 4096, 4096), h200());
    EXPECT_TRUE(p.dependent_launch);
    EXPECT_NE(p.describe().find("dependent launch"), std::string::npos) << p.describe();
    auto ampere = h200();
    ampere.cc_major = 8;
    EXPECT_FALSE(plan_gemv(gemv_of(1, 4096, 4096), ampere).dependent_launch);
    EXPECT_FALSE(plan_gemv(gemv_of(8, 4096, 4096), h200()).dependent_launch); // measured: slower
}

// FOURFOLD_DEPENDENT_LAUNCH=0 (a diagnostic for A/B runs): no plan launches its kernel as a
// programmatic dependent launch; the kernels and their splits are the same.
TEST(kernel_plans, the_dependent_launch_can_be_switched_off_for_every_kernel) {
    const fourfold::testing::env_switch dep("FOURFOLD_DEPENDENT_LAUNCH");
    const auto gemv = plan_gemv(gemv_of(1, 4096, 4096), h200());
    const auto softmax = plan_softmax(softmax_of(1, 128256, elem::f32), h200());
    const auto pad = plan_pad(pad_of(k_aligned, elem::f32), h200());
    EXPECT_TRUE(gemv.dependent_launch && softmax.dependent && pad.dependent_launch);
    dep.set("0");
    const auto gemv_off = plan_gemv(gemv_of(1, 4096, 4096), h200());
    EXPECT_FALSE(gemv_off.dependent_launch);
    EXPECT_EQ(gemv_off.column_stationary, gemv.column_stationary);
    EXPECT_EQ(gemv_off.blocks, gemv.blocks);
    const auto softmax_off = plan_softmax(softmax_of(1, 128256, elem::f32), h200());
    EXPECT_FALSE(softmax_off.dependent);
    EXPECT_EQ(softmax_off.cluster, softmax.cluster);
    EXPECT_FALSE(plan_pad(pad_of(k_aligned, elem::f32), h200()).dependent_launch);
    dep.set("1"); // anything but 0: on
    EXPECT_TRUE(plan_gemv(gemv_of(1, 4096, 4096), h200()).dependent_launch);
}

TEST(kernel_plans, pad_flat_split_gives_every_warp_its_share_in_order) {
    // the flat path's split (made on the host, read by each warp): contiguous, in order, the
    // whole output, shares a unit apart at most; fewer units than warps leaves warps empty
    struct c {
        std::uint32_t units, warps;
    };
    for (const auto [units, warps] : {c{1, 1}, c{7, 5280}, c{5280, 5280}, c{1389960, 5280},
                                      c{4056000, 5280}, c{1109760, 4336}, c{2147483647, 8448}}) {
        const fourfold::kernels::pad_flat_split s(units, warps);
        EXPECT_EQ(s.begin(0), 0U);
        EXPECT_EQ(s.begin(warps), units) << units << " / " << warps;
        std::uint32_t least = units, most = 0;
        for (std::uint32_t w = 0; w < warps; ++w) {
            ASSERT_LE(s.begin(w), s.begin(w + 1)) << w;
            least = std::min(least, s.begin(w + 1) - s.begin(w));
            most = std::max(most, s.begin(w + 1) - s.begin(w));
        }
        EXPECT_LE(most - least, 1U) << units << " / " << warps;
    }
}
