// The MoE decode step's kernels (see moe.hpp).
//
// Every kernel here runs 8 warps a block on a persistent grid; warp w of the grid takes units w,
// w + W, ... (W warps in the grid). A warp streams a unit's weight rows in 16-byte loads, lane l
// reading vectors l, l + 32, ... so that one load instruction of the warp covers 512 contiguous
// bytes; up to 8 vectors of each row a lane are in flight before the first multiply. The
// activations (x, the intermediate) are a few KB to a few hundred KB, read through L1/L2.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/moe.hpp"
#include "fourfold/kernels/reduce.cuh"

#include <algorithm>
#include <type_traits>

namespace fourfold::kernels {
namespace {

using namespace device;

constexpr int k_warps = k_moe_threads / 32;
constexpr int k_max_pairs = k_moe_max_tokens * k_moe_max_top_k; // 256: one a thread
constexpr int k_logits_per_lane = k_moe_max_experts / 32;       // the routing warp's most
static_assert(k_max_pairs == k_moe_threads, "the grouping takes one pair a thread");
static_assert(k_moe_max_tokens <= k_warps, "the routing takes one token a warp");

// The down counters (moe_plan::down_counters): for each active expert a of a launch, the gate/up
// units of its columns done (a release add after a unit's stores), one 128-byte line apart; two
// sets, the launch's by the parity of the counted launches' sequence (read after the dependency
// wait, the same in every block), block 0 zeroing the other set (the previous counted launch's,
// ended; the next one's, not begun). The last block out of a counted launch moves the sequence on.
constexpr int k_done_stride = 32;
__device__ unsigned g_moe_done[2][k_max_pairs * k_done_stride];
__device__ unsigned g_moe_down_sequence;

// The block's gate/up units counted at once (moe_plan::down_counts_a_block), by thread 0 after a
// block barrier that every warp passed with its units done: a fence (the block's stores, by the
// barrier's cumulativity), then per round of the grid's warps the block's k_warps units, one add
// for each expert they reach. gate_up_units' order: unit u is warp u % (grid's warps)'s.
__device__ __forceinline__ void count_block_units(unsigned* done, int units, int width) {
    __threadfence();
    const int warps = static_cast<int>(gridDim.x) * k_warps;
    for (int u0 = static_cast<int>(blockIdx.x) * k_warps; u0 < units; u0 += warps) {
        const int u1 = u0 + k_warps < units ? u0 + k_warps : units;
        for (int u = u0; u < u1;) {
            const int a = u / width, end = (a + 1) * width < u1 ? (a + 1) * width : u1;
            red_relaxed_add(done + a * k_done_stride, static_cast<unsigned>(end - u));
            u = end;
        }
    }
}

// What a block knows of the routing once route_block returns: the (token, slot) pairs grouped
// by expert (ascending expert id, then pair order), and the active experts' groups.
struct routing_smem {
    int pair_expert[k_max_pairs];
    float pair_weight[k_max_pairs];
    int first[k_max_pairs];
    int active_expert[k_max_pairs];
    int active_begin[k_max_pairs];
    int active_count[k_max_pairs];
    int sorted_token[k_max_pairs];
    float sorted_weight[k_max_pairs];
    int active;
};

// A warp's largest / smallest 32-bit value (redux.sync from sm_80, shuffles before).
__device__ __forceinline__ unsigned warp_max_u32(unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __reduce_max_sync(0xffffffffu, v);
#else
    for (int off = 16; off > 0; off /= 2)
        v = max(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
#endif
}
__device__ __forceinline__ unsigned warp_min_u32(unsigned v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    return __reduce_min_sync(0xffffffffu, v);
#else
    for (int off = 16; off > 0; off /= 2)
        v = min(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
#endif
}

// A logit and its flag in one 64-bit store and load (moe_plan::flagged_logits): a naturally
// aligned scalar of 64 bits is single-copy atomic, so a reader that sees the flag sees the value
// stored with it. Relaxed at gpu scope: the poll needs nothing ordered but that one word.
__device__ __forceinline__ void store_flagged(unsigned long long* p, float v, unsigned flag) {
    const unsigned long long word =
        (static_cast<unsigned long long>(flag) << 32) | __float_as_uint(v);
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(word) : "memory");
}
__device__ __forceinline__ unsigned long long load_flagged(const unsigned long long* p) {
    unsigned long long word;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(word) : "l"(p) : "memory");
    return word;
}
__device__ __forceinline__ bool flag_is(unsigned long long word, unsigned flag) {
    return static_cast<unsigned>(word >> 32) == flag;
}

// Warp t routes token t (route_warp, N logits a lane: route_block takes the least of 4, 8 and
// 16 that holds the experts, so that the selection's rounds run over the experts there are, not
// over k_moe_max_experts: 16 a lane cost about 270 ns a round at 128 experts, session 33):
// softmax over the experts in fp32 (exp(l - max) / sum, as at::softmax), top_k rounds of a warp
// argmax (ties: the lower expert index), the k weights renormalised by their sum when
// `normalise`. Then thread i places pair i: its sorted position is the number of pairs with a
// lower expert plus those of its expert before it (a stable counting sort).
// `stop_after` (the one launch's probe): 7 returns true after the softmax, 8 after the top-k
// rounds (before the block's grouping); false when the routing ran whole.
// `flagged` (the one launch's flagged logits, with `flag`): the row's logits are polled there
// until every one carries this launch's flag, and `row` is not read. `on_logits` (with
// `normalise`; moe_plan::topk_on_logits): the rounds select on the logits themselves (exp is
// monotonic) and only the k selected are exponentiated, exp(l - l_top) / their sum: the same
// weights up to rounding, without the softmax over every expert on the routing's path.
template <int N, typename L>
__device__ __forceinline__ bool
route_warp(const L* __restrict__ row, int experts, int top_k, bool normalise, routing_smem& s,
           bool coherent, int stop_after, int warp, int lane, const unsigned long long* flagged,
           unsigned flag, bool on_logits) {
    float v[N];
    float m = -CUDART_INF_F;
    if (flagged) {
        unsigned long long word[N];
        bool mine;
        do {
            mine = true;
#pragma unroll
            for (int i = 0; i < N; ++i) {
                const int e = lane + 32 * i;
                word[i] = e < experts ? load_flagged(flagged + e) : 0ull;
                mine = mine && (e >= experts || flag_is(word[i], flag));
            }
        } while (!__all_sync(0xffffffffu, mine));
#pragma unroll
        for (int i = 0; i < N; ++i) {
            v[i] = lane + 32 * i < experts ? __uint_as_float(static_cast<unsigned>(word[i]))
                                           : -CUDART_INF_F;
            m = fmaxf(m, v[i]);
        }
    } else {
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const int e = lane + 32 * i;
            // (coherent: the logits were written in this launch, by other blocks: through L2)
            v[i] = e < experts ? element<L>::to_float(coherent ? __ldcg(row + e) : row[e])
                               : -CUDART_INF_F;
            m = fmaxf(m, v[i]);
        }
    }
    // The top_k rounds select on each probability's key: its bits + 1 (non-negative floats
    // order as their bits), 0 for a taken expert, a lane past the experts and a NaN (never
    // chosen). A round: the lane's best key (ascending i: its lower expert wins a tie), the
    // warp's largest key (one redux), the lowest expert holding it (one redux): the order
    // and the ties of the shuffle argmax this replaced (about 3x its latency). The owner
    // lane stores the pair; lane `slot` then reads its weight back in slot order, so the
    // weights' sum (and the normalised weights) keep their bits. On logits (`on_logits`) the
    // key is the float's order as an unsigned (negatives' bits inverted, the sign bit set on
    // the others; -0 as +0), never 0 for a number.
    const bool select_logits = on_logits && normalise;
    unsigned key[N];
    if (select_logits) {
        if (stop_after == 7) { // (no softmax on this path: the logits kept)
            s.pair_weight[warp] = v[0];
            return true;
        }
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const bool valid = lane + 32 * i < experts;
            const unsigned u = __float_as_uint(v[i] + 0.f);
            key[i] = valid && !isnan(v[i]) ? (u & 0x80000000u ? ~u : u | 0x80000000u) : 0u;
        }
    } else {
        m = warp_max(m);
        float sum = 0.f;
#pragma unroll
        for (int i = 0; i < N; ++i) {
            v[i] = lane + 32 * i < experts ? expf(v[i] - m) : 0.f;
            sum += v[i];
        }
        sum = warp_sum(sum);
        if (stop_after == 7) { // (the sum kept: its softmax is not dead code)
            s.pair_weight[warp] = sum;
            return true;
        }
#pragma unroll
        for (int i = 0; i < N; ++i) {
            const bool valid = lane + 32 * i < experts;
            v[i] = valid ? v[i] / sum : 0.f;
            key[i] = valid && !isnan(v[i]) ? __float_as_uint(v[i]) + 1u : 0u;
        }
    }
    for (int slot = 0; slot < top_k; ++slot) {
        unsigned bk = 0u, bi = 0xffffffffu;
#pragma unroll
        for (int i = 0; i < N; ++i)
            if (key[i] > bk) {
                bk = key[i];
                bi = static_cast<unsigned>(lane + 32 * i);
            }
        const unsigned top = warp_max_u32(bk);
        const unsigned be = warp_min_u32(bk == top ? bi : 0xffffffffu);
        if (top == 0u) { // nothing left (NaN probabilities): expert 0, a NaN weight
            if (lane == 0) {
                s.pair_expert[warp * top_k + slot] = 0;
                s.pair_weight[warp * top_k + slot] = CUDART_NAN_F;
            }
            continue;
        }
#pragma unroll
        for (int i = 0; i < N; ++i)
            if (static_cast<unsigned>(lane + 32 * i) == be) {
                key[i] = 0u;
                s.pair_expert[warp * top_k + slot] = static_cast<int>(be);
                s.pair_weight[warp * top_k + slot] = v[i];
            }
    }
    __syncwarp();
    float mine = lane < top_k ? s.pair_weight[warp * top_k + lane] : 0.f;
    if (select_logits) // slot 0 holds the largest logit
        mine = lane < top_k ? expf(mine - s.pair_weight[warp * top_k]) : 0.f;
    const float total = warp_sum(mine);
    __syncwarp(); // (every lane's reads of the weights before they are rewritten: racecheck)
    if (lane < top_k && normalise)
        s.pair_weight[warp * top_k + lane] = mine / total;
    return false;
}

template <typename L>
__device__ bool route_block(const L* __restrict__ logits, std::int64_t ld, int tokens, int experts,
                            int top_k, bool normalise, routing_smem& s, bool coherent = false,
                            int stop_after = 0, const unsigned long long* flagged = nullptr,
                            unsigned flag = 0u, bool on_logits = false) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (warp < tokens) {
        const L* row = logits + warp * ld;
        // (flagged: T x E words, the rows `experts` apart)
        const unsigned long long* frow = flagged ? flagged + warp * experts : nullptr;
        const bool stopped =
            experts <= 128 ? route_warp<4>(row, experts, top_k, normalise, s, coherent, stop_after,
                                           warp, lane, frow, flag, on_logits)
            : experts <= 256
                ? route_warp<8>(row, experts, top_k, normalise, s, coherent, stop_after, warp, lane,
                                frow, flag, on_logits)
                : route_warp<k_logits_per_lane>(row, experts, top_k, normalise, s, coherent,
                                                stop_after, warp, lane, frow, flag, on_logits);
        if (stopped)
            return true;
    }
    if (stop_after == 7 || stop_after == 8)
        return true;
    __syncthreads();
    const int pairs = tokens * top_k, i = threadIdx.x;
    int expert = 0, less = 0, before = 0, same = 0;
    if (i < pairs) {
        expert = s.pair_expert[i];
#pragma unroll 8
        for (int j = 0; j < pairs; ++j) {
            const int ej = s.pair_expert[j];
            less += ej < expert;
            same += ej == expert;
            before += ej == expert && j < i;
        }
        s.first[i] = before == 0;
        const int pos = less + before;
        s.sorted_token[pos] = i / top_k;
        s.sorted_weight[pos] = s.pair_weight[i];
    }
    const int active = __syncthreads_count(i < pairs && before == 0);
    if (i < pairs && before == 0) {
        int a = 0;
#pragma unroll 8
        for (int j = 0; j < pairs; ++j)
            a += s.first[j] && s.pair_expert[j] < expert;
        s.active_expert[a] = expert;
        s.active_begin[a] = less;
        s.active_count[a] = same;
    }
    if (threadIdx.x == 0)
        s.active = active;
    __syncthreads();
    return false;
}

template <typename P> __device__ __forceinline__ P* at_offset(void* base, std::int64_t off) {
    return reinterpret_cast<P*>(static_cast<char*>(base) + off);
}
template <typename P>
__device__ __forceinline__ const P* at_offset(const void* base, std::int64_t off) {
    return reinterpret_cast<const P*>(static_cast<const char*>(base) + off);
}

// Rows w0 and w1 (w1 may be null: zeros) of nv vectors dotted with `cnt` (<= TOK) source rows
// (row src_row[t] of `src`, ld elements apart), into a0 / a1 per source row (per lane: the
// caller reduces over the warp). The rows are 32-bit indices, not pointers: 8 registers fewer.
template <typename T, int TOK, int U>
__device__ __forceinline__ void
dot_two_rows(const uint4* __restrict__ w0, const uint4* __restrict__ w1, const T* __restrict__ src,
             std::int64_t ld, const int (&src_row)[TOK], int cnt, std::int64_t nv, int lane,
             float (&a0)[TOK], float (&a1)[TOK]) {
    constexpr int VEC = 16 / sizeof(T);
    using P = packet<T, VEC>;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (std::int64_t base = lane; base < nv; base += 32 * U) {
        uint4 r0[U], r1[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::int64_t v = base + 32 * u;
            r0[u] = v < nv ? load_streaming(w0 + v) : zero;
            r1[u] = v < nv && w1 ? load_streaming(w1 + v) : zero;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::int64_t v = base + 32 * u;
            if (v >= nv)
                break;
            float f0[VEC], f1[VEC];
            P::unpack(r0[u], f0);
            P::unpack(r1[u], f1);
#pragma unroll
            for (int t = 0; t < TOK; ++t) {
                if (t >= cnt)
                    break; // warp-uniform
                float xf[VEC];
                P::unpack(__ldg(reinterpret_cast<const uint4*>(src + src_row[t] * ld) + v), xf);
#pragma unroll
                for (int j = 0; j < VEC; ++j) {
                    a0[t] = fmaf(f0[j], xf[j], a0[t]);
                    a1[t] = fmaf(f1[j], xf[j], a1[t]);
                }
            }
        }
    }
}

// (active expert a, column j) units over the grid's warps: gate row j and up row W + j of the
// expert against the x rows of its tokens; silu(gate) * up into the intermediate. A warp
// streams its units back to back as the dense GEMV's stream kernel does: a step is U vectors of
// each of the two rows a lane, and the next step's loads (of this unit or the warp's next one)
// are issued before the current step is multiplied, so the warp's loads never drain between
// units (the rows are 4 KB at Qwen3-30B-A3B's hidden 2048: a bubble per unit otherwise).
// With `done` (the down counters) each unit done adds one to its expert's counter.
template <typename T, int TOK>
__device__ __forceinline__ void
gate_up_units(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ inter,
              const routing_smem& s, std::int64_t hidden, std::int64_t width, std::int64_t ld_x,
              bool from_shared = false, unsigned* done = nullptr) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int U = 4;
    using P = packet<T, VEC>;
    const int lane = threadIdx.x % 32;
    const int nv = static_cast<int>(hidden / VEC);
    const int steps = (nv + 32 * U - 1) / (32 * U);
    const int wid = static_cast<int>(width); // units < 2^31: the plan's bound
    const int units = s.active * wid;
    const int warps = static_cast<int>(gridDim.x) * k_warps;
    int u = static_cast<int>(blockIdx.x) * k_warps + static_cast<int>(threadIdx.x / 32);
    if (u >= units)
        return;
    // (At TOK = 8 the unit's first sorted pair and its count share a register, begin | cnt <<
    // 16, as begin < k_max_pairs: with them apart the begin was spilled, and its reload in
    // every step queued behind the step's weight loads (Nsight Compute, session 60: 18 % of the
    // warps' stall samples). Below 8 they stay apart: those instances' code as it was.)
    constexpr bool packed = TOK >= 8;
    static_assert(k_max_pairs <= 0xffff, "a unit's first pair in 16 bits");
    struct unit {
        const uint4 *gate, *up;
        int j, begin, cnt;
    };
    auto unit_of = [&](int k) {
        const int a = k / wid, j = k - a * wid;
        const std::int64_t e = s.active_expert[a];
        const auto* gate = reinterpret_cast<const uint4*>(w + (e * 2 * width + j) * hidden);
        const auto* up = reinterpret_cast<const uint4*>(w + (e * 2 * width + width + j) * hidden);
        if constexpr (packed)
            return unit{gate, up, j, s.active_begin[a] | s.active_count[a] << 16, 0};
        else
            return unit{gate, up, j, s.active_begin[a], s.active_count[a]};
    };
    auto begin_of = [](const unit& un) { return packed ? un.begin & 0xffff : un.begin; };
    auto count_of = [](const unit& un) { return packed ? un.begin >> 16 : un.cnt; };
    auto fetch = [&](uint4(&dst)[U][2], const unit& un, int st) {
#pragma unroll
        for (int i = 0; i < U; ++i) {
            const int v = st * 32 * U + i * 32 + lane;
            dst[i][0] = v < nv ? load_streaming(un.gate + v) : make_uint4(0, 0, 0, 0);
            dst[i][1] = v < nv ? load_streaming(un.up + v) : make_uint4(0, 0, 0, 0);
        }
    };
    float ag[TOK], au[TOK];
#pragma unroll
    for (int t = 0; t < TOK; ++t)
        ag[t] = au[t] = 0.f;
    unit cur_unit = unit_of(u), next_unit = cur_unit;
    uint4 cur[U][2], nxt[U][2];
    int st = 0;
    fetch(cur, cur_unit, 0);
    while (true) {
        int u2 = u, st2 = st + 1;
        if (st2 == steps) {
            st2 = 0;
            u2 = u + warps;
        }
        const bool more = u2 < units;
        if (more) {
            if (u2 != u)
                next_unit = unit_of(u2);
            fetch(nxt, next_unit, st2);
        }
#pragma unroll
        for (int i = 0; i < U; ++i) {
            const int v = st * 32 * U + i * 32 + lane;
            if (v >= nv)
                continue; // (the loads were zero alike)
            float g[VEC], up[VEC];
            P::unpack(cur[i][0], g);
            P::unpack(cur[i][1], up);
#pragma unroll
            for (int t = 0; t < TOK; ++t) {
                if (t >= count_of(cur_unit))
                    break; // warp-uniform; cnt <= tokens <= TOK
                float xf[VEC];
                // (one token: row 0, no shared load and multiply ahead of every vector's h)
                const int row = TOK == 1 ? 0 : s.sorted_token[begin_of(cur_unit) + t];
                const auto* xr = reinterpret_cast<const uint4*>(x + row * ld_x) + v;
                // (from_shared: the fused prologue's h, in this block's shared memory)
                P::unpack(from_shared ? load_shared_16(xr) : __ldg(xr), xf);
#pragma unroll
                for (int k = 0; k < VEC; ++k) {
                    ag[t] = fmaf(g[k], xf[k], ag[t]);
                    au[t] = fmaf(up[k], xf[k], au[t]);
                }
            }
        }
        if (st == steps - 1) {
#pragma unroll
            for (int t = 0; t < TOK; ++t) {
                if (t >= count_of(cur_unit))
                    break; // warp-uniform
                const float gs = warp_sum(ag[t]), us = warp_sum(au[t]);
                if (lane == 0)
                    inter[(begin_of(cur_unit) + t) * width + cur_unit.j] =
                        element<T>::from_float(silu(gs) * us);
                ag[t] = au[t] = 0.f;
            }
            // (done: the unit counted on its expert's counter, after lane 0's stores above)
            if (done && lane == 0)
                red_release_add(done + (u / wid) * k_done_stride, 1u);
        }
        if (!more)
            break;
#pragma unroll
        for (int i = 0; i < U; ++i) {
            cur[i][0] = nxt[i][0];
            cur[i][1] = nxt[i][1];
        }
        cur_unit = next_unit;
        u = u2;
        st = st2;
    }
}

// Kernel 1 of two: route, write the routing to the workspace (block 0), the gate/up units.
template <typename T, typename L, int TOK>
__global__ void __launch_bounds__(k_moe_threads, k_moe_blocks_per_sm)
    moe_route_gate_up(const T* __restrict__ x, const L* __restrict__ logits,
                      const T* __restrict__ w, const T* __restrict__ w_down, void* __restrict__ ws,
                      int tokens, int experts, int top_k, bool normalise, std::int64_t hidden,
                      std::int64_t width, std::int64_t ld_x, std::int64_t ld_logits,
                      std::int64_t prefetch_budget) {
    __shared__ routing_smem s;
    route_block<L>(logits, ld_logits, tokens, experts, top_k, normalise, s);
    const int pairs = tokens * top_k;
    const auto lay = moe_layout(pairs, width, sizeof(T));
    if (blockIdx.x == 0) {
        const int i = threadIdx.x;
        if (i < pairs) {
            at_offset<int>(ws, lay.sorted_token)[i] = s.sorted_token[i];
            at_offset<float>(ws, lay.sorted_weight)[i] = s.sorted_weight[i];
        }
        if (i < s.active) {
            at_offset<int>(ws, lay.active_expert)[i] = s.active_expert[i];
            at_offset<int>(ws, lay.active_begin)[i] = s.active_begin[i];
            at_offset<int>(ws, lay.active_count)[i] = s.active_count[i];
        }
        if (i == 0)
            at_offset<int>(ws, lay.header)[0] = s.active;
    }
    gate_up_units<T, TOK>(x, w, at_offset<T>(ws, lay.inter), s, hidden, width, ld_x);
    // A thread whose units are done asks L2 for its share of the active experts' down matrices
    // (128-byte lines, evict_last), where they fit the budget: the DRAM keeps streaming through
    // this kernel's tail and the launch of the next, which then reads them from L2.
    const std::int64_t down_bytes = hidden * width * static_cast<std::int64_t>(sizeof(T));
    if (static_cast<std::int64_t>(s.active) * down_bytes <= prefetch_budget) {
        const std::int64_t lines = (down_bytes + 127) / 128;
        const std::int64_t total = lines * s.active;
        const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
        for (std::int64_t l = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
             l < total; l += threads) {
            const std::int64_t a = l / lines;
            const char* p = reinterpret_cast<const char*>(w_down) +
                            static_cast<std::int64_t>(s.active_expert[a]) * down_bytes +
                            (l - a * lines) * 128;
            asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p));
        }
    }
}

// Kernel 2: output column n of H: row n of every active expert's down matrix, G experts' rows
// in flight at once, dotted with the intermediate rows of the expert's pairs; weight x dot
// summed per token in a fixed order, one rounding of y.
template <typename T, int TOK>
__global__ void __launch_bounds__(k_moe_threads, k_moe_blocks_per_sm)
    moe_down_combine(const T* __restrict__ w, const void* __restrict__ ws, T* __restrict__ y,
                     int tokens, int top_k, std::int64_t hidden, std::int64_t width,
                     std::int64_t ld_y) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int G = 4, V = 4;
    using P = packet<T, VEC>;
    __shared__ int act_e[k_max_pairs], act_b[k_max_pairs], act_c[k_max_pairs];
    __shared__ int s_tok[k_max_pairs];
    __shared__ float s_w[k_max_pairs];
    const int pairs = tokens * top_k;
    const auto lay = moe_layout(pairs, width, sizeof(T));
    const int active = at_offset<int>(ws, lay.header)[0];
    {
        const int i = threadIdx.x;
        if (i < pairs) {
            s_tok[i] = at_offset<int>(ws, lay.sorted_token)[i];
            s_w[i] = at_offset<float>(ws, lay.sorted_weight)[i];
        }
        if (i < active) {
            act_e[i] = at_offset<int>(ws, lay.active_expert)[i];
            act_b[i] = at_offset<int>(ws, lay.active_begin)[i];
            act_c[i] = at_offset<int>(ws, lay.active_count)[i];
        }
    }
    __syncthreads();
    const T* inter = at_offset<T>(ws, lay.inter);
    const int lane = threadIdx.x % 32;
    const std::int64_t nv = width / VEC;
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * k_warps;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    for (std::int64_t n = static_cast<std::int64_t>(blockIdx.x) * k_warps + threadIdx.x / 32;
         n < hidden; n += warps) {
        float acc[TOK];
#pragma unroll
        for (int t = 0; t < TOK; ++t)
            acc[t] = 0.f;
        for (int a0 = 0; a0 < active; a0 += G) {
            for (std::int64_t base = lane; base < nv; base += 32 * V) {
                uint4 wv[G][V];
#pragma unroll
                for (int g = 0; g < G; ++g) {
                    const bool ok = a0 + g < active; // warp-uniform
                    const auto* row = reinterpret_cast<const uint4*>(
                        w +
                        ((ok ? static_cast<std::int64_t>(act_e[a0 + g]) : 0) * hidden + n) * width);
#pragma unroll
                    for (int i = 0; i < V; ++i) {
                        const std::int64_t v = base + 32 * i;
                        wv[g][i] = ok && v < nv ? load_streaming(row + v) : zero;
                    }
                }
#pragma unroll
                for (int g = 0; g < G; ++g) {
                    if (a0 + g >= active)
                        break; // warp-uniform
                    float wf[V][VEC];
#pragma unroll
                    for (int i = 0; i < V; ++i)
                        P::unpack(wv[g][i], wf[i]);
                    const int b = act_b[a0 + g], c = act_c[a0 + g];
                    for (int p = b; p < b + c; ++p) {
                        const auto* hr = reinterpret_cast<const uint4*>(inter + p * width);
                        float d = 0.f;
#pragma unroll
                        for (int i = 0; i < V; ++i) {
                            const std::int64_t v = base + 32 * i;
                            if (v >= nv)
                                break;
                            float hf[VEC];
                            P::unpack(__ldg(hr + v), hf);
#pragma unroll
                            for (int j = 0; j < VEC; ++j)
                                d = fmaf(wf[i][j], hf[j], d);
                        }
                        const int tok = s_tok[p];
                        const float wt = s_w[p];
#pragma unroll
                        for (int t = 0; t < TOK; ++t)
                            if (t == tok)
                                acc[t] = fmaf(wt, d, acc[t]);
                    }
                }
            }
        }
#pragma unroll
        for (int t = 0; t < TOK; ++t) {
            if (t >= tokens)
                break;
            const float sum = warp_sum(acc[t]);
            if (lane == 0)
                y[t * ld_y + n] = element<T>::from_float(sum);
        }
    }
}

// The one launch (moe.hpp). Its barrier's counters (reduce.cuh's grid_barrier): the one
// launch's calls are ordered on a stream, each waits for the kernel before it.
__device__ unsigned g_moe_arrived[2];
__device__ unsigned g_moe_generation;
// The blocks out of a probe's launch that stopped before the down phase's barrier, with the
// flagged logits (moe_plan::flagged_logits): the last one out advances the generation as that
// barrier would have, so that the next launch's flag is not this one's (every block read the
// generation before it counts itself out). Thread 0 of each block. With the down counters
// (moe_plan::down_counters) every launch's blocks count in here, where the down barrier was.
__device__ unsigned g_moe_probe_exits;
// (With the down counters the sequence moves on too, and their launches count every block out
// there, the step's after its first down copies are issued: moe_one_launch.)
__device__ __forceinline__ void moe_advance(bool sequence) {
    store_relaxed(&g_moe_probe_exits, 0u);
    if (sequence)
        red_release_add(&g_moe_down_sequence, 1u);
    red_release_add(&g_moe_generation, 1u);
}
__device__ __forceinline__ void probe_exit_advance(int blocks, bool sequence) {
    if (atomic_add_acq_rel(&g_moe_probe_exits, 1u) == static_cast<unsigned>(blocks) - 1)
        moe_advance(sequence);
}

constexpr int k_stage_vectors = k_moe_stage_bytes / 16;  // 16-byte vectors a warp stages
constexpr int k_columns = k_moe_down_columns;            // output columns a block's group
constexpr int k_piece_max = k_stage_vectors / k_columns; // vectors of a row a stage holds
constexpr int k_piece_lanes = (k_piece_max + 31) / 32;   // of them, a lane's
static_assert(k_columns == 8, "down_item_dot's sums over the warp: warp_sum_8");

// Phase 2's unit of work: the output columns [n0, n0 + k_columns) of a block's group, and of
// those, a warp's item (active expert a, piece [v0, v0 + len) of its down rows' vectors).
struct down_item {
    std::int64_t n0;
    int a, v0, len;
};

// The item's k_columns rows x len vectors into the warp's stage (row c at c * k_piece_max):
// lane l copies vectors l, l + 32, ... of each row, and reads only those it copied.
template <typename T>
__device__ __forceinline__ void stage_item(const T* __restrict__ w_down, const routing_smem& s,
                                           const down_item& it, std::int64_t hidden,
                                           std::int64_t width, uint4* stage, int lane) {
    const std::int64_t e = s.active_expert[it.a];
    const auto* row = reinterpret_cast<const uint4*>(w_down + (e * hidden + it.n0) * width) + it.v0;
    const std::int64_t row_vectors = width * static_cast<std::int64_t>(sizeof(T)) / 16;
    // (a loop, not unrolled: the 8 rows' copies unrolled were about 500 instructions, run once a
    // warp at T = 1 and missing the instruction cache: Nsight Compute, session 61)
#pragma unroll 1
    for (int c = 0; c < k_columns; ++c, row += row_vectors) {
        if (it.n0 + c >= hidden)
            break; // warp-uniform
#pragma unroll
        for (int j = 0; j < k_piece_lanes; ++j) {
            const int k = lane + 32 * j;
            if (k < it.len)
                copy_async_16(stage + c * k_piece_max + k, row + k);
        }
    }
}

// The staged item against the intermediate rows of its expert's pairs (the lane's vectors of
// each, in registers): weight x dot per (token, column), summed over the warp into lanes 4 c
// to 4 c + 3's acc[token] for column c. Fixed orders throughout: the result is the same bits every
// run. The item's copies are waited for after the first row's loads are issued. With `ready` (the
// down counters: its expert's, no grid barrier before) the rows are read once it counts `units`.
template <typename T, int TOK>
__device__ __forceinline__ void down_item_dot(const uint4* stage, const T* inter,
                                              const routing_smem& s, const down_item& it,
                                              std::int64_t width, int lane, float (&acc)[TOK],
                                              const unsigned* ready = nullptr, unsigned units = 0) {
    constexpr int VEC = 16 / sizeof(T);
    using P = packet<T, VEC>;
    if (ready)
        while (load_acquire(ready) < units) {
        }
    const int b = s.active_begin[it.a], cnt = s.active_count[it.a];
    for (int p = b; p < b + cnt; ++p) {
        float h[k_piece_lanes][VEC];
        const auto* hr = reinterpret_cast<const uint4*>(inter + p * width) + it.v0;
#pragma unroll
        for (int j = 0; j < k_piece_lanes; ++j) {
            const int k = lane + 32 * j;
            // written by other blocks before the barrier: through L2, never a stale L1 line
            P::unpack(k < it.len ? __ldcg(hr + k) : make_uint4(0, 0, 0, 0), h[j]);
        }
        copy_async_wait_all(); // (the lane's own copies: it reads only those)
        float d[k_columns];    // the lane's part of each column's dot
#pragma unroll
        for (int c = 0; c < k_columns; ++c) {
            d[c] = 0.f;
#pragma unroll
            for (int j = 0; j < k_piece_lanes; ++j) {
                const int k = lane + 32 * j;
                if (k >= it.len)
                    break;
                float wf[VEC];
                P::unpack(load_shared_16(stage + c * k_piece_max + k), wf);
#pragma unroll
                for (int i = 0; i < VEC; ++i)
                    d[c] = fmaf(wf[i], h[j][i], d[c]);
            }
        }
        // column lane / 4's dot, the sum over the warp in warp_sum's order (the same bits as 8
        // warp_sums) in 9 shuffles, not 40
        const float mine = warp_sum_8(d);
        const int tok = TOK == 1 ? 0 : s.sorted_token[p];
        const float wt = s.sorted_weight[p];
#pragma unroll
        for (int t = 0; t < TOK; ++t)
            if (t == tok)
                acc[t] = fmaf(wt, mine, acc[t]);
    }
}

// The fused prologue of the one launch (moe_args::router): x is the residual stream.
// k_prologue_vectors: 16-byte vectors a thread holds of the norm's weight and of its block's
// first router row, loaded before the dependency wait (they are the layer's weights: no kernel
// before this one writes them), so their DRAM round trip overlaps the previous kernel's tail.
// One pass covers hidden <= 2 x 256 x VEC (4,096 bf16, 2,048 fp32); wider rows loop on.
constexpr int k_prologue_vectors = 2;

struct prologue_prefetch {
    uint4 norm_weight[k_prologue_vectors];
    uint4 router[k_prologue_vectors]; // row blockIdx.x (when blockIdx.x < experts)
};

template <typename T>
__device__ __forceinline__ void prologue_load(prologue_prefetch& pf, const T* __restrict__ nw,
                                              const T* __restrict__ router, int experts,
                                              std::int64_t hidden) {
    constexpr int VEC = 16 / sizeof(T);
    const int nv = static_cast<int>(hidden / VEC); // the plan checks hidden % VEC == 0
    const auto* rv =
        reinterpret_cast<const uint4*>(router + static_cast<std::int64_t>(blockIdx.x) * hidden);
#pragma unroll
    for (int r = 0; r < k_prologue_vectors; ++r) {
        const int v = static_cast<int>(threadIdx.x) + r * static_cast<int>(blockDim.x);
        if (v < nv) {
            // (a weight, before the wait: L1::no_allocate, which scripts/check_sass_waits.py
            // tells from a dependent input's load hoisted there)
            pf.norm_weight[r] = load_streaming_l1_only(reinterpret_cast<const uint4*>(nw) + v);
            if (static_cast<int>(blockIdx.x) < experts)
                pf.router[r] = load_streaming(rv + v);
        }
    }
}

// Every block computes h = round_T(x * rsqrt(mean(x^2) + eps) * norm_weight) for each token
// (kernels/rmsnorm.cu's value and rounding; the sum of squares in the block's fixed order, the
// same in every block, so every block's h has the same bits) into `hs` (shared memory, T x H:
// the gate/up units read it there after the barrier). A thread takes the vectors v = threadIdx.x +
// i x blockDim.x of a row, in the norm and in the router alike, so it reads back only the h it
// wrote (no barrier between). Then block e takes expert e (e += gridDim.x): each thread's vectors
// of the router row against each token's h, the per-warp sums added in warp order, rounded to T
// as the GEMV rounds logits, into the workspace's `logits` (T x E). The caller's grid barrier
// publishes the logits; with `flagged` (moe_plan::flagged_logits) each goes there instead, as a
// 64-bit word with `flag`, and the routing polls for them (no barrier).
template <typename T>
__device__ __forceinline__ void
norm_and_router(const T* __restrict__ x, std::int64_t ld_x, const prologue_prefetch& pf,
                const T* __restrict__ norm_weight, float eps, const T* __restrict__ router,
                int tokens, int experts, std::int64_t hidden, uint4* hs, T* lg,
                unsigned long long* flagged, unsigned flag, float* scratch,
                float (*part)[k_moe_max_tokens][k_columns]) {
    constexpr int VEC = 16 / sizeof(T);
    using P = packet<T, VEC>;
    const int nv = static_cast<int>(hidden / VEC);
    const int step = static_cast<int>(blockDim.x);
    const int first = static_cast<int>(threadIdx.x);
    const int tail = first + k_prologue_vectors * step; // the vectors past the prefetched ones
    const auto* nwv = reinterpret_cast<const uint4*>(norm_weight);
    for (int t = 0; t < tokens; ++t) {
        const auto* xv = reinterpret_cast<const uint4*>(x + t * ld_x);
        uint4 xr[k_prologue_vectors];
        float ss = 0.f;
#pragma unroll
        for (int r = 0; r < k_prologue_vectors; ++r) {
            const int v = first + r * step;
            if (v < nv)
                xr[r] = __ldg(xv + v);
        }
#pragma unroll
        for (int r = 0; r < k_prologue_vectors; ++r) {
            if (first + r * step < nv) {
                float f[VEC];
                P::unpack(xr[r], f);
#pragma unroll
                for (int j = 0; j < VEC; ++j)
                    ss = fmaf(f[j], f[j], ss);
            }
        }
        for (int v = tail; v < nv; v += step) {
            float f[VEC];
            P::unpack(__ldg(xv + v), f);
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                ss = fmaf(f[j], f[j], ss);
        }
        ss = block_sum(ss, scratch);
        const float inv = rsqrtf(ss / static_cast<float>(hidden) + eps);
#pragma unroll
        for (int r = 0; r < k_prologue_vectors; ++r) {
            const int v = first + r * step;
            if (v < nv) {
                const uint4 packed = rms_scaled<T>(xr[r], pf.norm_weight[r], inv);
                hs[t * nv + v] = packed;
            }
        }
        for (int v = tail; v < nv; v += step) {
            const uint4 packed = rms_scaled<T>(__ldg(xv + v), __ldg(nwv + v), inv);
            hs[t * nv + v] = packed;
        }
    }
    const int warp = first / 32, lane = first % 32;
    for (int e = static_cast<int>(blockIdx.x); e < experts; e += static_cast<int>(gridDim.x)) {
        const auto* rv =
            reinterpret_cast<const uint4*>(router + static_cast<std::int64_t>(e) * hidden);
        const bool prefetched = e == static_cast<int>(blockIdx.x);
        float acc[k_moe_max_tokens];
#pragma unroll
        for (int t = 0; t < k_moe_max_tokens; ++t)
            acc[t] = 0.f;
        auto dot = [&](const uint4 wq, int v) {
            float wf[VEC];
            P::unpack(wq, wf);
#pragma unroll
            for (int t = 0; t < k_moe_max_tokens; ++t) {
                if (t >= tokens)
                    break; // block-uniform
                float hf[VEC];
                P::unpack(load_shared_16(hs + t * nv + v), hf);
#pragma unroll
                for (int j = 0; j < VEC; ++j)
                    acc[t] = fmaf(wf[j], hf[j], acc[t]);
            }
        };
#pragma unroll
        for (int r = 0; r < k_prologue_vectors; ++r) {
            const int v = first + r * step;
            if (v < nv)
                dot(prefetched ? pf.router[r] : load_streaming(rv + v), v);
        }
        for (int v = tail; v < nv; v += step)
            dot(load_streaming(rv + v), v);
#pragma unroll
        for (int t = 0; t < k_moe_max_tokens; ++t) {
            if (t >= tokens)
                break;
            const float sum = warp_sum(acc[t]);
            if (lane == 0)
                part[warp][t][0] = sum;
        }
        __syncthreads();
        if (first < tokens) {
            float sum = 0.f;
            for (int w = 0; w < k_warps; ++w)
                sum += part[w][first][0];
            const T rounded = element<T>::from_float(sum);
            if (flagged) // the rounded value as fp32 (exact), with this launch's flag
                store_flagged(flagged + first * experts + e, element<T>::to_float(rounded), flag);
            else
                lg[first * experts + e] = rounded;
        }
        __syncthreads(); // part is free for the next expert (and for the down sums)
    }
}

// The whole step in one launch: route, gate/up units, the first item's down rows staged, grid
// barrier, then per group of k_columns output columns: the warps' items, their per-warp sums
// added across the warps in shared memory in warp order, y rounded once. Every block must be
// resident at once (the launch bounds the grid by the occupancy it asked the runtime for).
// `stop_after` (a probe of the phases' times, its y invalid): 1 returns after the routing, 2
// after the gate/up units, 3 after the barrier, 4 before the block's sums are added, and in the
// fused prologue 5 after the norm and the router's dots, 6 after its grid barrier (7, 8: inside the
// routing, route_block); 0 runs the step. With `router` (the fused prologue, above) x is the
// residual stream and `logits` unused: the norm and the router's logits come first, then a first
// grid barrier; `residual` (x, or nullptr) is added to y before its one rounding.
// MODE: k_general, every path an argument; k_fused_defaults (moe_plan::compiled_defaults): the
// fused prologue, the flagged logits, the top-k on the logits and the down counters a block's at
// once, known to the compiler, whatever the flags say; k_unfused (moe_plan::compiled_unfused): no
// prologue, no flags, no residual and the top-k on the logits known (the counters an argument).
// The other paths' code is left out of the instance.
constexpr int k_general = 0, k_fused_defaults = 1, k_unfused = 2;
template <typename T, typename L, int TOK, int MODE>
__global__ void __launch_bounds__(k_moe_threads, k_moe_blocks_per_sm)
    moe_one_launch(const T* __restrict__ x, const L* __restrict__ logits, const T* __restrict__ w,
                   const T* __restrict__ w_down, void* __restrict__ ws, T* __restrict__ y,
                   int tokens, int experts, int top_k, bool normalise, std::int64_t hidden,
                   std::int64_t width, std::int64_t ld_x, std::int64_t ld_logits, std::int64_t ld_y,
                   int stop_after, const T* __restrict__ norm_weight, const T* __restrict__ router,
                   float norm_eps, const T* __restrict__ residual, bool flagged,
                   bool topk_on_logits, bool down_counters, bool count_blocks) {
    constexpr int VEC = 16 / sizeof(T);
    extern __shared__ uint4 stages[]; // k_warps x k_stage_vectors
    __shared__ routing_smem s;
    __shared__ float part[k_warps][k_moe_max_tokens][k_columns];
    __shared__ float scratch[32];
    constexpr bool defaults = MODE == k_fused_defaults;
    if (defaults)
        flagged = topk_on_logits = down_counters = count_blocks = true;
    if (MODE == k_unfused) { // (no prologue: no flags either, `flags` below)
        topk_on_logits = true;
        router = norm_weight = residual = nullptr;
    }
    const bool fused = defaults || router != nullptr;
    prologue_prefetch pf;
    if (fused)
        prologue_load<T>(pf, norm_weight, router, experts, hidden);
    dependency_wait(); // the logits and x are the previous kernel's
    // the barriers' generation, read now: its round trip overlaps the routing (thread 0's; every
    // thread's with flagged logits, whose flag it makes). Every block reads the same: the
    // kernels before have ended (the wait), and this launch's first barrier needs every block.
    const bool flags = fused && flagged;
    unsigned generation = threadIdx.x == 0 || flags ? grid_generation(&g_moe_generation) : 0u;
    // the down counters (with the flagged logits, or without the fused prologue: no barrier
    // moves the generation then): this launch's set, the other zeroed
    const bool counters = (flags || !fused) && down_counters;
    const unsigned sequence = counters ? grid_generation(&g_moe_down_sequence) : 0u;
    unsigned* done = counters ? g_moe_done[sequence & 1u] : nullptr;
    if (counters && blockIdx.x == 0)
        for (int i = static_cast<int>(threadIdx.x); i < k_max_pairs; i += k_moe_threads)
            store_relaxed(g_moe_done[(sequence + 1u) & 1u] + i * k_done_stride, 0u);
    // with the counters there is no down barrier: thread 0 counts its block in once every thread
    // has read the launch's generation and sequence (below, after a block barrier, a release) and
    // reads the count on its way out; the last block in moves both on (no block of the launch
    // reads them after it is in). A probe's stop before that counts in on its way out.
    unsigned arrival = 0u;
    auto leave = [&] {
        if (counters && threadIdx.x == 0 && arrival == gridDim.x - 1u)
            moe_advance(true);
    };
    const auto lay = moe_layout(tokens * top_k, width, sizeof(T));
    const T* xin = x; // h after the fused prologue
    std::int64_t ldx = ld_x;
    const L* lgin = logits;
    std::int64_t ldl = ld_logits;
    // a probe's stop before the down barrier (1, 2, 5-8): with flags or the counters, the
    // generation (and the counters' sequence) advanced
    auto probe_return = [&] {
        if ((flags || counters) && threadIdx.x == 0)
            probe_exit_advance(static_cast<int>(gridDim.x), counters);
    };
    unsigned long long* flagged_logits = nullptr;
    // (~: the first launches flag 0xffffffff, 0xfffffffe, ...: a zeroed workspace holds none of
    // them until the generation has counted 2^32 barriers)
    const unsigned flag = ~generation;
    if (fused) {
        const auto fl = moe_fused_layout(lay, tokens, experts, sizeof(T), flags);
        T* lg = at_offset<T>(ws, fl.logits);
        if (flags)
            flagged_logits = at_offset<unsigned long long>(ws, fl.flagged);
        norm_and_router<T>(x, ld_x, pf, norm_weight, norm_eps, router, tokens, experts, hidden,
                           stages, lg, flagged_logits, flag, scratch, part);
        if (stop_after == 5) {
            probe_return();
            return;
        }
        if (!flags) {
            __syncthreads(); // the block's stores are made before its arrival
            if (threadIdx.x == 0)
                grid_barrier_at(g_moe_arrived, &g_moe_generation, static_cast<int>(gridDim.x),
                                generation++);
            __syncthreads();
        } else if (stop_after == 6 && threadIdx.x / 32 < tokens) {
            // the probe's stop: the token's logits all seen (what the routing polls for)
            const int lane = threadIdx.x % 32;
            const unsigned long long* row = flagged_logits + (threadIdx.x / 32) * experts;
            bool mine;
            do {
                mine = true;
                for (int e = lane; e < experts; e += 32)
                    mine = mine && flag_is(load_flagged(row + e), flag);
            } while (!__all_sync(0xffffffffu, mine));
        }
        if (stop_after == 6) {
            probe_return();
            return;
        }
        xin = reinterpret_cast<const T*>(stages); // h, this block's own (the same bits in all)
        ldx = hidden;
        // L == T (the plan checks): the logits in the activations' dtype, as the GEMV writes them
        lgin = reinterpret_cast<const L*>(lg);
        ldl = experts;
    }
    if (route_block<L>(lgin, ldl, tokens, experts, top_k, normalise, s, fused, stop_after,
                       flagged_logits, flag, topk_on_logits)) {
        probe_return(); // (stops 7 and 8)
        return;
    }
    allow_dependents(); // every block is resident by now: the next kernel may launch (and wait)
    if (stop_after == 1) {
        probe_return();
        return;
    }
    T* inter = at_offset<T>(ws, lay.inter);
    gate_up_units<T, TOK>(xin, w, inter, s, hidden, width, ldx, fused,
                          count_blocks ? nullptr : done);
    if (stop_after == 2) {
        probe_return();
        return;
    }
    // h (in the stage area) is read by every warp before a stage is written; a block's count
    // follows every warp's units
    if (fused || (counters && count_blocks))
        __syncthreads();
    if (counters && count_blocks && threadIdx.x == 0)
        count_block_units(done, s.active * static_cast<int>(width), static_cast<int>(width));

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    uint4* stage = stages + warp * k_stage_vectors;
    const int nv = static_cast<int>(width / VEC);
    const int piece = nv < k_piece_max ? nv : k_piece_max;
    const int pieces = (nv + piece - 1) / piece;
    const int items = s.active * pieces;
    const std::int64_t groups = (hidden + k_columns - 1) / k_columns;
    auto item_of = [&](std::int64_t g, int i) {
        const int a = i / pieces, v0 = (i - a * pieces) * piece;
        return down_item{g * k_columns, a, v0, nv - v0 < piece ? nv - v0 : piece};
    };
    // the first item's rows stream in while the grid finishes its gate/up units
    if (blockIdx.x < groups && warp < items)
        stage_item(w_down, s, item_of(blockIdx.x, warp), hidden, width, stage, lane);
    // (the counters: every thread past the block barrier above, fused; the result read at exit)
    if (counters && threadIdx.x == 0)
        arrival = atomic_add_release(&g_moe_probe_exits, 1u);
    // a thread's token and column in a group's sums; the first group's residual, loaded
    // before the barrier (x is the previous kernel's)
    const int own_t = threadIdx.x / k_columns, own_c = threadIdx.x % k_columns;
    const std::int64_t first_n = static_cast<std::int64_t>(blockIdx.x) * k_columns + own_c;
    const float first_residual =
        residual && blockIdx.x < groups && own_t < tokens && first_n < hidden
            ? element<T>::to_float(residual[own_t * ld_x + first_n])
            : 0.f;
    // the counters: each item waits for its expert's units (down_item_dot), no grid barrier
    const unsigned units = static_cast<unsigned>(width);
    auto ready_of = [&](const down_item& it) -> const unsigned* {
        return counters ? done + it.a * k_done_stride : nullptr;
    };
    if (!counters) {
        __syncthreads(); // the block's intermediate values are stored
        if (threadIdx.x == 0)
            grid_barrier_at(g_moe_arrived, &g_moe_generation, static_cast<int>(gridDim.x),
                            generation);
        __syncthreads();
    }
    if (stop_after == 3) {
        // (the counters: the warp's first item's expert counted, as its dots would wait)
        if (counters && blockIdx.x < groups && warp < items)
            while (load_acquire(ready_of(item_of(blockIdx.x, warp))) < units) {
            }
        copy_async_wait_all();
        leave();
        return;
    }
    for (std::int64_t g = blockIdx.x; g < groups; g += gridDim.x) {
        float acc[TOK];
#pragma unroll
        for (int t = 0; t < TOK; ++t)
            acc[t] = 0.f;
        for (int i = warp; i < items; i += k_warps) {
            const auto it = item_of(g, i);
            if (g != blockIdx.x || i != warp)
                stage_item(w_down, s, it, hidden, width, stage, lane);
            down_item_dot<T, TOK>(stage, inter, s, it, width, lane, acc, ready_of(it), units);
        }
        if (stop_after == 4) {
            leave();
            return;
        }
        if (lane % 4 == 0) // (lane 4 c: column c, down_item_dot)
#pragma unroll
            for (int t = 0; t < TOK; ++t)
                part[warp][t][lane / 4] = acc[t];
        __syncthreads();
        const std::int64_t n = g * k_columns + own_c;
        if (own_t < tokens && n < hidden) {
            float sum = 0.f;
            for (int v = 0; v < k_warps; ++v)
                sum += part[v][own_t][own_c];
            if (residual)
                sum += g == blockIdx.x ? first_residual
                                       : element<T>::to_float(residual[own_t * ld_x + n]);
            y[own_t * ld_y + n] = element<T>::from_float(sum);
        }
        __syncthreads(); // part is read before the next group writes it
    }
    leave();
}

// The grouped GEMV: the active groups compacted from the offsets (a block-wide count over the
// experts), then (active expert, row pair) units, TOK rows of the group per read of the weights.
template <typename T, int TOK>
__global__ void __launch_bounds__(k_moe_threads, k_moe_blocks_per_sm)
    grouped_gemv(const T* __restrict__ rows, const T* __restrict__ w,
                 const std::int32_t* __restrict__ offsets, T* __restrict__ y, int experts,
                 std::int64_t rows_count, std::int64_t n, std::int64_t k, std::int64_t ld_rows,
                 std::int64_t ld_y) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int U = 8;
    __shared__ int act_e[k_moe_max_experts], act_b[k_moe_max_experts], act_c[k_moe_max_experts];
    __shared__ int warp_total[k_warps];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int active = 0;
    for (int c0 = 0; c0 < experts; c0 += k_moe_threads) {
        const int e = c0 + static_cast<int>(threadIdx.x);
        std::int64_t start = 0, end = 0;
        if (e < experts) {
            start = e == 0 ? 0 : offsets[e - 1];
            end = offsets[e];
            start = start < 0 ? 0 : start > rows_count ? rows_count : start;
            end = end > rows_count ? rows_count : end;
        }
        const bool flag = e < experts && end > start;
        const unsigned ballot = __ballot_sync(0xffffffffu, flag);
        if (lane == 0)
            warp_total[warp] = __popc(ballot);
        __syncthreads();
        int before = 0, total = 0;
        for (int i = 0; i < k_warps; ++i) {
            before += i < warp ? warp_total[i] : 0;
            total += warp_total[i];
        }
        if (flag) {
            const int idx = active + before + __popc(ballot & ((1u << lane) - 1u));
            act_e[idx] = e;
            act_b[idx] = static_cast<int>(start);
            act_c[idx] = static_cast<int>(end - start);
        }
        active += total;
        __syncthreads();
    }
    const std::int64_t nv = k / VEC, row_pairs = (n + 1) / 2;
    const std::int64_t units = static_cast<std::int64_t>(active) * row_pairs;
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * k_warps;
    for (std::int64_t u = static_cast<std::int64_t>(blockIdx.x) * k_warps + warp; u < units;
         u += warps) {
        const int a = static_cast<int>(u / row_pairs);
        const std::int64_t r0 = 2 * (u - a * row_pairs), r1 = r0 + 1;
        const std::int64_t e = act_e[a];
        const auto* w0 = reinterpret_cast<const uint4*>(w + (e * n + r0) * k);
        const auto* w1 = r1 < n ? reinterpret_cast<const uint4*>(w + (e * n + r1) * k) : nullptr;
        for (int c0 = 0; c0 < act_c[a]; c0 += TOK) {
            const int first = act_b[a] + c0;
            const int cnt = act_c[a] - c0 < TOK ? act_c[a] - c0 : TOK;
            int src_row[TOK];
#pragma unroll
            for (int t = 0; t < TOK; ++t)
                src_row[t] = first + (t < cnt ? t : 0);
            float a0[TOK], a1[TOK];
#pragma unroll
            for (int t = 0; t < TOK; ++t)
                a0[t] = a1[t] = 0.f;
            dot_two_rows<T, TOK, U>(w0, w1, rows, ld_rows, src_row, cnt, nv, lane, a0, a1);
#pragma unroll
            for (int t = 0; t < TOK; ++t) {
                if (t >= cnt)
                    break;
                const float s0 = warp_sum(a0[t]), s1 = warp_sum(a1[t]);
                if (lane == 0) {
                    T* out = y + static_cast<std::int64_t>(first + t) * ld_y;
                    out[r0] = element<T>::from_float(s0);
                    if (r1 < n)
                        out[r1] = element<T>::from_float(s1);
                }
            }
        }
    }
}

// The one launch's blocks an SM, asked of the runtime once per kernel (its shared memory raised
// to the stages and the carveout to the most shared memory): the grid never exceeds what can be
// resident at once, or its barrier would wait for a block that cannot start.
template <typename T, typename L, int TOK, int MODE> int one_launch_residency() {
    static const int resident = [] {
        auto* k = moe_one_launch<T, L, TOK, MODE>;
        const auto smem = static_cast<int>(k_moe_one_launch_dynamic_smem);
        if (cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) !=
                cudaSuccess ||
            cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout,
                                 cudaSharedmemCarveoutMaxShared) != cudaSuccess)
            return 0;
        int blocks = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, k_moe_threads, smem) !=
            cudaSuccess)
            return 0;
        return blocks;
    }();
    return resident;
}

template <typename T, typename L, int TOK, int MODE>
launch_status launch_one(const moe_plan& p, const moe_args& a, stream_t stream) {
    const int resident = one_launch_residency<T, L, TOK, MODE>();
    if (resident < 1)
        return invalid("the one-launch MoE kernel cannot be resident on this device (its "
                       "shared memory); plan it with one_launch = false");
    const std::int64_t blocks =
        std::min<std::int64_t>(p.one_launch_blocks, std::int64_t{resident} * p.sm_count);
    return status_of(launch_serialised_after_smem(
        moe_one_launch<T, L, TOK, MODE>, dim3(static_cast<unsigned>(blocks)), dim3(p.threads),
        static_cast<std::size_t>(p.smem_bytes), stream, p.dependent_launch,
        static_cast<const T*>(a.x), static_cast<const L*>(a.logits),
        static_cast<const T*>(a.w_gate_up), static_cast<const T*>(a.w_down), a.workspace,
        static_cast<T*>(a.y), static_cast<int>(a.tokens), static_cast<int>(a.experts),
        static_cast<int>(a.top_k), a.normalise, a.hidden, a.width, a.ld_x, a.ld_logits, a.ld_y,
        a.probe_stop_after, static_cast<const T*>(a.norm_weight), static_cast<const T*>(a.router),
        static_cast<float>(a.norm_eps), p.add_residual ? static_cast<const T*>(a.x) : nullptr,
        p.flagged_logits, p.topk_on_logits, p.down_counters, p.down_counts_a_block));
}

// The plan's compiled defaults take the fused prologue, whose logits are the activations' type;
// its compiled unfused launch, fp32 logits with bf16 or fp16 activations (moe_ffn's).
template <typename T, typename L> constexpr bool defaults_compiled_for = std::is_same_v<T, L>;
template <typename T, typename L>
constexpr bool unfused_compiled_for = std::is_same_v<L, float> && !std::is_same_v<T, float>;

// f(std::integral_constant<int, MODE>{}) for the instance the plan takes.
template <typename T, typename L, class F> auto with_mode(const moe_plan& p, F&& f) {
    if constexpr (defaults_compiled_for<T, L>)
        if (p.compiled_defaults)
            return f(std::integral_constant<int, k_fused_defaults>{});
    if constexpr (unfused_compiled_for<T, L>)
        if (p.compiled_unfused)
            return f(std::integral_constant<int, k_unfused>{});
    return f(std::integral_constant<int, k_general>{});
}

template <typename T, typename L, int TOK>
launch_status launch_moe_typed(const moe_plan& p, const moe_args& a, stream_t stream) {
    if (p.kernels == 1)
        return with_mode<T, L>(p, [&](auto mode) {
            return launch_one<T, L, TOK, decltype(mode)::value>(p, a, stream);
        });
    moe_route_gate_up<T, L, TOK><<<static_cast<unsigned>(p.gate_up_blocks), p.threads, 0, stream>>>(
        static_cast<const T*>(a.x), static_cast<const L*>(a.logits),
        static_cast<const T*>(a.w_gate_up), static_cast<const T*>(a.w_down), a.workspace,
        static_cast<int>(a.tokens), static_cast<int>(a.experts), static_cast<int>(a.top_k),
        a.normalise, a.hidden, a.width, a.ld_x, a.ld_logits, p.l2_prefetch_budget);
    if (auto s = status_of(cudaGetLastError()); !s.ok())
        return s;
    moe_down_combine<T, TOK><<<static_cast<unsigned>(p.down_blocks), p.threads, 0, stream>>>(
        static_cast<const T*>(a.w_down), a.workspace, static_cast<T*>(a.y),
        static_cast<int>(a.tokens), static_cast<int>(a.top_k), a.hidden, a.width, a.ld_y);
    return status_of(cudaGetLastError());
}

// f(T{}, L{}, std::integral_constant<int, TILE>{}) for the element type, the router logits' type
// and the plan's token tile: the one switch from the tags to the kernels' templates (the launch
// and the residency query take the same instance).
template <class F> auto with_instance(const moe_plan& p, const moe_args& a, F&& f) {
    auto tiles = [&](auto t, auto l) {
        switch (p.token_tile) {
        case 1:
            return f(t, l, std::integral_constant<int, 1>{});
        case 2:
            return f(t, l, std::integral_constant<int, 2>{});
        case 4:
            return f(t, l, std::integral_constant<int, 4>{});
        default:
            return f(t, l, std::integral_constant<int, 8>{});
        }
    };
    switch (a.type) {
    case elem::f32:
        return tiles(float{}, float{});
    case elem::f16:
        return a.logits_type == elem::f32 ? tiles(__half{}, float{}) : tiles(__half{}, __half{});
    case elem::bf16:
        break;
    }
    return a.logits_type == elem::f32 ? tiles(__nv_bfloat16{}, float{})
                                      : tiles(__nv_bfloat16{}, __nv_bfloat16{});
}

} // namespace

launch_status launch_moe(const moe_plan& p, const moe_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return with_instance(p, a, [&](auto t, auto l, auto tile) {
        return launch_moe_typed<decltype(t), decltype(l), decltype(tile)::value>(p, a, stream);
    });
}

int moe_one_launch_residency(const moe_plan& p, const moe_args& a) {
    if (!p.valid.empty() || p.kernels != 1)
        return 0;
    return with_instance(p, a, [&p](auto t, auto l, auto tile) {
        using T = decltype(t);
        using L = decltype(l);
        return with_mode<T, L>(p, [](auto mode) {
            return one_launch_residency<T, L, decltype(tile)::value, decltype(mode)::value>();
        });
    });
}

launch_status launch_grouped_gemv(const grouped_gemv_plan& p, const grouped_gemv_args& a,
                                  stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    if (p.blocks == 0)
        return {};
    return by_element(a.type, [&](auto t) {
        using T = decltype(t);
        grouped_gemv<T, 8><<<static_cast<unsigned>(p.blocks), p.threads, 0, stream>>>(
            static_cast<const T*>(a.rows), static_cast<const T*>(a.w), a.offsets,
            static_cast<T*>(a.y), static_cast<int>(a.experts), a.rows_count, a.n, a.k, a.ld_rows,
            a.ld_y);
        return status_of(cudaGetLastError());
    });
}

} // namespace fourfold::kernels
