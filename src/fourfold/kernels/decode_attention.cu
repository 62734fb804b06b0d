// Decode attention kernels (see decode_attention.hpp).
//
// A block is (kv head, split): 8 warps (4 at head_dim 256); a warp is P = 32 / S sub-groups of S =
// min(32, head_dim) lanes, a sub-group one cache position at a time, lane l of it holding elements
// [l E, (l + 1) E) of the position's k and v rows (E = head_dim / S). U = 4 positions a
// sub-group are loaded before the first score, so the loads of a chunk are in flight together,
// and their 32 (position, head) scores are reduced together (attend). With the plan's
// block_heads 4 (where the plan takes it) a block is (kv head, half of its query heads, split): 4
// warps, 8 positions a sub-group a round against 4 heads. Scores are in the log2 domain (q scaled
// by scale * log2(e) once), the running softmax per query head in fp32; the block's parts are
// merged in shared memory; with several splits either the last block of a kv head to count in
// merges the splits (merge_splits) or, with many splits, the kv head's splits meet at a barrier in
// the workspace and each merges a share of the head's outputs over all of them (merge_share).
#include "fourfold/kernels/decode_attention.hpp"
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/reduce.cuh"

#include <type_traits>

namespace fourfold::kernels {
namespace {

using namespace device;

constexpr int k_max_g = k_attention_max_group;
constexpr int k_unroll = 4;
constexpr float k_log2e = 1.4426950408889634f;

__device__ __forceinline__ std::int64_t attended_length(const decode_attention_args& a) {
    std::int64_t len = *a.pos + 1;
    return len < 0 ? 0 : len > a.capacity ? a.capacity : len;
}

// The workspace (floats): per query head and split the head_dim weighted values (first, so that
// their rows are 16-byte aligned), then the maxima, then the sums; the kv heads' barriers follow
// at the plan's counter_offset.
struct partials {
    float* acc;
    float* m;
    float* l;
    __device__ partials(float* ws, std::int64_t heads, std::int64_t splits, int hd)
        : acc(ws), m(ws + heads * splits * hd), l(ws + heads * splits * (hd + 1)) {}
};

constexpr int k_merge_tile = 32; // splits whose weights the merge holds in shared memory at once

// The merge of a kv head's live splits by the last of its blocks to finish. Each thread first
// loads its output units' weighted values of the first U splits (16-byte loads through L2: other
// blocks wrote them), so that their round trip overlaps the one of the maxima and sums. Per query
// head (a warp a head, lanes over the splits) the maximum M of the splits' maxima and the sum of
// l_s exp2(m_s - M), reduced by the same shuffle tree whatever block runs it; then each output
// element sum_s acc_s exp2(m_s - M) over s = 0, 1, ... in order (the weights of 32 splits at a
// time in shared memory), divided by the sum. Deterministic: the partials are each block's own
// work and every sum has a fixed order.
template <typename T, int HD, int G>
__device__ __forceinline__ void merge_splits(const decode_attention_args& a, std::int64_t head0,
                                             int groups, std::int64_t splits, int live) {
    constexpr int N = k_attention_block_threads(HD, G);
    constexpr int W = N / 32;
    constexpr int Q = HD / 4; // float4 units of a head
    constexpr int OUT = (G * Q + N - 1) / N;
    // splits a thread loads before it adds: at one unit a thread 20, so that the 17 splits of
    // 513-544 positions (a decode at ctx 512) come in one round trip (16 took two)
    constexpr int U = OUT >= 4 ? 4 : OUT >= 2 ? 8 : 20;
    static_assert(k_merge_tile == 32 && U <= k_merge_tile, "tile 0's weights are a warp's lanes");
    __shared__ float sm_sum[G];
    __shared__ float sm_big[G];
    __shared__ float sm_w[G][k_merge_tile];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const partials ws(a.workspace, a.heads, splits, HD);
    const float4* acc = reinterpret_cast<const float4*>(ws.acc + head0 * splits * HD);
    float4 x[U][OUT];
    // the values of splits [s, s + U) of tile s0 (n live in it) into x
    const auto load = [&](int s0, int s, int n) {
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int o = 0; o < OUT; ++o) {
                const int idx = static_cast<int>(threadIdx.x) + o * N;
                const int g = idx / Q, d = idx % Q;
                x[u][o] = s + u < n && idx < groups * Q
                              ? __ldcg(acc + (g * splits + s0 + s + u) * Q + d)
                              : make_float4(0.f, 0.f, 0.f, 0.f);
            }
    };
    load(0, 0, live < k_merge_tile ? live : k_merge_tile);
    for (int g = warp; g < groups; g += W) {
        const float* ms = ws.m + (head0 + g) * splits;
        const float* ls = ws.l + (head0 + g) * splits;
        const float m0 = lane < live ? __ldcg(ms + lane) : -CUDART_INF_F;
        const float l0 = lane < live ? __ldcg(ls + lane) : 0.f;
        float big = m0;
        for (int s = lane + 32; s < live; s += 32)
            big = fmaxf(big, __ldcg(ms + s));
        big = warp_max(big);
        const float w0 = lane < live ? exp2f(m0 - big) : 0.f;
        float sum = l0 * w0;
        for (int s = lane + 32; s < live; s += 32)
            sum += __ldcg(ls + s) * exp2f(__ldcg(ms + s) - big);
        sum = warp_sum(sum);
        sm_w[g][lane] = w0; // the first tile's weights
        if (lane == 0) {
            sm_big[g] = big;
            sm_sum[g] = sum;
        }
    }
    __syncthreads();
    // (probe 5: the first values in registers and the weights in shared memory; the values'
    // sum, written, keeps their loads)
    if (a.probe_stop_after == 5) {
        float keep = sm_sum[0];
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int o = 0; o < OUT; ++o)
                keep += x[u][o].x;
        static_cast<T*>(a.out)[head0 * HD + threadIdx.x % HD] = element<T>::from_float(keep);
        return;
    }
    float4 val[OUT];
#pragma unroll
    for (int o = 0; o < OUT; ++o)
        val[o] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int s0 = 0; s0 < live; s0 += k_merge_tile) {
        const int n = live - s0 < k_merge_tile ? live - s0 : k_merge_tile;
        if (s0 > 0) {
            __syncthreads(); // the last tile's weights are read
            for (int i = threadIdx.x; i < groups * k_merge_tile; i += blockDim.x) {
                const int g = i / k_merge_tile, s = i % k_merge_tile;
                sm_w[g][s] =
                    s < n ? exp2f(__ldcg(ws.m + (head0 + g) * splits + s0 + s) - sm_big[g]) : 0.f;
            }
            __syncthreads();
        }
        for (int s = 0; s < n; s += U) {
            if (s0 > 0 || s > 0) // (tile 0's first U are loaded above)
                load(s0, s, n);
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int o = 0; o < OUT; ++o) {
                    const int idx = static_cast<int>(threadIdx.x) + o * N;
                    if (s + u < n && idx < groups * Q) {
                        const float w = sm_w[idx / Q][s + u];
                        val[o].x = fmaf(x[u][o].x, w, val[o].x);
                        val[o].y = fmaf(x[u][o].y, w, val[o].y);
                        val[o].z = fmaf(x[u][o].z, w, val[o].z);
                        val[o].w = fmaf(x[u][o].w, w, val[o].w);
                    }
                }
        }
    }
    if (a.probe_stop_after == 6) { // (probe 6: every split added; one value written)
        static_cast<T*>(a.out)[head0 * HD + threadIdx.x % HD] = element<T>::from_float(val[0].x);
        return;
    }
#pragma unroll
    for (int o = 0; o < OUT; ++o) {
        const int idx = static_cast<int>(threadIdx.x) + o * N;
        if (idx < groups * Q) {
            const int g = idx / Q, d = idx % Q;
            const float sum = sm_sum[g];
            T* out = static_cast<T*>(a.out) + (head0 + g) * HD + d * 4;
            out[0] = element<T>::from_float(val[o].x / sum);
            out[1] = element<T>::from_float(val[o].y / sum);
            out[2] = element<T>::from_float(val[o].z / sum);
            out[3] = element<T>::from_float(val[o].w / sum);
        }
    }
}

// A kv head's barrier in the workspace: reduce.cuh's grid_barrier over the head's splits (two
// arrival counts, zeroed once with the workspace, and a generation), 16 bytes a kv head.
struct split_barrier {
    unsigned arrived[2];
    unsigned generation;
    unsigned unused;
};

// (max, sum, weighted values) of two parts merged: the larger max, the other part rescaled to
// it. A part at -inf (no positions, or every score -inf) weighs 0; two of them stay at -inf.
struct merged {
    float big, sum;
    float4 val;
    __device__ __forceinline__ void add(float m, float l, float4 v) {
        const float nb = fmaxf(big, m);
        const float c = big == -CUDART_INF_F ? 0.f : exp2f(big - nb);
        const float w = m == -CUDART_INF_F ? 0.f : exp2f(m - nb);
        big = nb;
        sum = fmaf(sum, c, l * w);
        val.x = fmaf(val.x, c, v.x * w);
        val.y = fmaf(val.y, c, v.y * w);
        val.z = fmaf(val.z, c, v.z * w);
        val.w = fmaf(val.w, c, v.w * w);
    }
};

// After the kv head's barrier, block `split` of the kv head merges its share of the head's
// groups x HD/4 float4 output units, [split n / splits, (split + 1) n / splits), over the live
// splits' partials: `per` lanes a unit (a power of two up to 32 that fits the units in the
// block), each lane its splits k, k + per, ... by a running log-sum-exp merge, then the lanes'
// parts by an xor tree. Every unit belongs to one block and every sum has a fixed order, so the
// bits do not depend on which block arrives last. The partials are other blocks' stores, read
// through L2 (__ldcg). Blocks past the position merge their share too.
template <typename T, int HD, int G>
__device__ __forceinline__ void merge_share(const decode_attention_args& a, std::int64_t head0,
                                            int groups, std::int64_t splits, std::int64_t split,
                                            int live) {
    constexpr int N = k_attention_block_threads(HD, G);
    constexpr int Q = HD / 4; // float4 units of a head
    const partials ws(a.workspace, a.heads, splits, HD);
    const int units = groups * Q;
    const int lo = static_cast<int>(split * units / splits);
    const int hi = static_cast<int>((split + 1) * units / splits);
    int per = 32;
    while (per > 1 && per * (hi - lo) > N)
        per /= 2;
    const int k = static_cast<int>(threadIdx.x) % per;
    for (int u0 = lo; u0 < hi; u0 += N / per) { // block-uniform trips
        const int u = u0 + static_cast<int>(threadIdx.x) / per;
        const bool on = u < hi;
        const int g = on ? u / Q : 0, d = u % Q;
        const std::int64_t row = (head0 + g) * splits;
        const float4* acc = reinterpret_cast<const float4*>(ws.acc) + row * Q + d;
        merged part{-CUDART_INF_F, 0.f, make_float4(0.f, 0.f, 0.f, 0.f)};
#pragma unroll 4
        for (int s = k; s < (on ? live : 0); s += per)
            part.add(__ldcg(ws.m + row + s), __ldcg(ws.l + row + s), __ldcg(acc + s * Q));
        for (int off = per / 2; off > 0; off /= 2) {
            const float m = __shfl_xor_sync(0xffffffffu, part.big, off);
            const float l = __shfl_xor_sync(0xffffffffu, part.sum, off);
            float4 v;
            v.x = __shfl_xor_sync(0xffffffffu, part.val.x, off);
            v.y = __shfl_xor_sync(0xffffffffu, part.val.y, off);
            v.z = __shfl_xor_sync(0xffffffffu, part.val.z, off);
            v.w = __shfl_xor_sync(0xffffffffu, part.val.w, off);
            // the lower lane's part first, so both lanes hold the same bits
            if ((k & off) == 0) {
                part.add(m, l, v);
            } else {
                merged lower{m, l, v};
                lower.add(part.big, part.sum, part.val);
                part = lower;
            }
        }
        if (on && k == 0) {
            T* out = static_cast<T*>(a.out) + (head0 + g) * HD + d * 4;
            out[0] = element<T>::from_float(part.val.x / part.sum);
            out[1] = element<T>::from_float(part.val.y / part.sum);
            out[2] = element<T>::from_float(part.val.z / part.sum);
            out[3] = element<T>::from_float(part.val.w / part.sum);
        }
    }
}

// E consecutive elements from p as floats: 16-, 8- or 4-byte loads where VEC (p then aligned to
// E * sizeof(T), which the cluster path's plan checks of the cache and q bases), else one
// element at a time.
template <typename T, int E, bool VEC>
__device__ __forceinline__ void load_elements(const T* __restrict__ p, float (&f)[E]) {
    constexpr int B = E * static_cast<int>(sizeof(T));
    if constexpr (VEC && B % 16 == 0) {
#pragma unroll
        for (int i = 0; i < B / 16; ++i) {
            const uint4 r =
                *reinterpret_cast<const uint4*>(reinterpret_cast<const char*>(p) + 16 * i);
            const T* e = reinterpret_cast<const T*>(&r);
#pragma unroll
            for (int j = 0; j < 16 / static_cast<int>(sizeof(T)); ++j)
                f[i * (16 / static_cast<int>(sizeof(T))) + j] = element<T>::to_float(e[j]);
        }
    } else if constexpr (VEC && (B == 8 || B == 4)) {
        using raw = std::conditional_t<B == 8, uint2, unsigned>;
        const raw r = *reinterpret_cast<const raw*>(p);
        const T* e = reinterpret_cast<const T*>(&r);
#pragma unroll
        for (int j = 0; j < E; ++j)
            f[j] = element<T>::to_float(e[j]);
    } else {
#pragma unroll
        for (int j = 0; j < E; ++j)
            f[j] = element<T>::to_float(p[j]);
    }
}

// The parts a block of W warps keeps: per part (a warp's sub-group of S lanes) and query head of
// the block's G (8, or 4 with the plan's block_heads) the running max, sum and weighted values. A
// round is KU positions a part, KU x G = 32 (position, head) pairs.
template <int HD, int W, int G = k_max_g> struct attention_parts {
    static constexpr int S = HD < 32 ? HD : 32; // lanes a cache position
    static constexpr int E = HD / S;            // elements of a row a lane
    static constexpr int P = 32 / S;            // positions a warp takes at once
    static constexpr int PARTS = W * P;
    static constexpr int KU = 32 / G;    // positions a round a part
    static constexpr int PAIRS = KU * G; // a round's scores a part: (position, head)
    static_assert(PAIRS == 32, "a round's pairs are a warp's lanes");
    alignas(16) float m[PARTS][G];
    alignas(16) float l[PARTS][G];
    alignas(16) float acc[PARTS][G][HD];
    alignas(16) float q[G][HD];        // the block's query rows, scaled, as floats
    alignas(16) float p[PARTS][PAIRS]; // a round's weights, by position u and head g: u G + g
    alignas(16) float c[PARTS][G];     // a round's rescale of the running values, by head
    // the block merge's: each part's weight by head, the block's maximum and sum by head
    alignas(16) float w[PARTS][G];
    alignas(16) float big[G];
    alignas(16) float sum[G];
};

// The transposed butterfly over a part's lanes (offsets OFF, OFF / 2, ..., 1): at the level of
// offset OFF a lane keeps the HALF values whose index bit HALF matches its lane bit OFF, adding
// its partner's copy of them; in the end lane sl holds the sums of values sl R .. sl R + R - 1.
template <int OFF, int HALF, int N>
__device__ __forceinline__ void butterfly(float (&v)[N], int sl) {
    const bool upper = (sl & OFF) != 0;
#pragma unroll
    for (int j = 0; j < HALF; ++j) {
        const float send = upper ? v[j] : v[j + HALF];
        const float keep = upper ? v[j + HALF] : v[j];
        v[j] = keep + __shfl_xor_sync(0xffffffffu, send, OFF);
    }
    if constexpr (OFF > 1)
        butterfly<OFF / 2, HALF / 2>(v, sl);
}

// A sub-group's round: KU cache positions' k and v elements (a lane's E of each row) as floats, and
// which of them lie below the chunk's end (bit u).
template <int E, int KU = k_unroll> struct round_rows {
    float k[KU][E];
    float v[KU][E];
    unsigned ok;
};

// The sub-group's round from the warp's first position jb: positions jb + sub + u PARTS below
// end, but for `skip` (the row at *pos the fused rope writes in this launch: taken later from its
// shared memory; -1 none), loaded; zeros elsewhere. kl, vl: the lane's first element of row 0.
template <typename T, int HD, int W, bool VEC, int G>
__device__ __forceinline__ void
load_round(const T* kl, const T* vl, std::int64_t jb, int sub, std::int64_t end, std::int64_t skip,
           round_rows<attention_parts<HD, W, G>::E, attention_parts<HD, W, G>::KU>& r) {
    using parts = attention_parts<HD, W, G>;
    constexpr int E = parts::E, PARTS = parts::PARTS, KU = parts::KU;
    r.ok = 0;
#pragma unroll
    for (int u = 0; u < KU; ++u) {
        const std::int64_t j = jb + sub + u * PARTS;
        if (j < end)
            r.ok |= 1u << u;
        if (j < end && j != skip) {
            load_elements<T, E, VEC>(kl + j * HD, r.k[u]);
            load_elements<T, E, VEC>(vl + j * HD, r.v[u]);
        } else {
#pragma unroll
            for (int e = 0; e < E; ++e)
                r.k[u][e] = r.v[u][e] = 0.f;
        }
    }
}

// Cache positions [start, end) of kv head kvh (kc, vc: its rows) against its `groups` query
// heads: each part's running softmax into sm, then a block barrier. Every thread of the block
// calls it (start < end).
//
// A round is a part's KU positions (their k and v rows loaded together) against the block's G
// heads (KU x G = 32): each lane's partial dot products of the 32 (position, head) pairs are
// reduced over the part's S lanes by a transposed butterfly (at each level a lane keeps half of its
// values and adds its partner's copy of that half: S - 1 + ... shuffles in all where 32 separate
// reductions took 32 log2(S)), leaving lane sl the whole scores of pairs sl R .. sl R + R - 1 (R =
// 32 / S). The lanes holding one head's scores (lane bits G / R and up) take the round's maximum
// and sum of weights by xor shuffles (two at G = 8, three at G = 4); the weights and each head's
// rescale go through the part's shared memory to every lane of the part, which updates its values
// once per round (was: one dependent softmax update a position and head, session 30 and before).
//
// With `preloaded`, `first` is the sub-group's first round, loaded by the caller before it made the
// query rows (load_round from start + warp P), so that their round trips overlap. The row at `late`
// (the fused rope's, -1 none) is never loaded: every round takes it from `late_rows` (shared
// memory: its k then v elements, HD each; made by this block's fused rope before the query rows'
// barrier), so a block whose rope did not write the cache row (the second half of a kv head's
// query heads, block_heads 4) reads the same values as the one that did.
template <typename T, int HD, int W, bool VEC, int G = k_max_g>
__device__ __forceinline__ void
attend(const decode_attention_args& a, const T* qg, int groups, const T* kc, const T* vc,
       std::int64_t start, std::int64_t end, attention_parts<HD, W, G>& sm,
       const round_rows<attention_parts<HD, W, G>::E, attention_parts<HD, W, G>::KU>& first,
       bool preloaded, std::int64_t late, const T* late_rows) {
    using parts = attention_parts<HD, W, G>;
    constexpr int S = parts::S, E = parts::E, P = parts::P, PARTS = parts::PARTS, KU = parts::KU;
    constexpr int PAIRS = parts::PAIRS;
    static_assert(PAIRS == 32 && S >= 16, "a round's pairs are a warp's lanes, 1 or 2 a lane");
    constexpr int R = PAIRS / S;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int sub = lane / S, sl = lane % S;
    const int part = warp * P + sub;
    const float scale =
        static_cast<float>(a.scale > 0 ? a.scale : 1.0 / sqrt(static_cast<double>(HD))) * k_log2e;

    // the block's query rows (global memory, or the fused rope's), scaled, into shared memory
    for (int i = threadIdx.x; i < G * HD; i += blockDim.x) {
        const int g = i / HD;
        sm.q[g][i % HD] = g < groups ? element<T>::to_float(qg[i]) * scale : 0.f;
    }
    __syncthreads();
    float m[R], l[R], acc[G][E];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        m[r] = -CUDART_INF_F;
        l[r] = 0.f;
    }
#pragma unroll
    for (int g = 0; g < G; ++g)
#pragma unroll
        for (int e = 0; e < E; ++e)
            acc[g][e] = 0.f;
    const T* kl = kc + sl * E;
    const T* vl = vc + sl * E;
    // A round's scores and values from its rows (every lane of the warp: the shuffles below see
    // all 32 lanes).
    const auto round = [&](const round_rows<E, KU>& rr) {
        const auto& kr = rr.k;
        const auto& vr = rr.v;
        const unsigned ok = rr.ok;
        float v[PAIRS];
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (g >= groups) { // (uniform over the block) no head: a zero score, never used
#pragma unroll
                for (int u = 0; u < KU; ++u)
                    v[u * G + g] = 0.f;
                continue;
            }
            float qf[E];
#pragma unroll
            for (int e = 0; e < E; ++e)
                qf[e] = sm.q[g][sl * E + e];
#pragma unroll
            for (int u = 0; u < KU; ++u) {
                float d = 0.f;
#pragma unroll
                for (int e = 0; e < E; ++e)
                    d = fmaf(qf[e], kr[u][e], d);
                v[u * G + g] = d;
            }
        }
        butterfly<S / 2, PAIRS / 2>(v, sl);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const int i = sl * R + r, u = i / G;
            const float s = (ok >> u) & 1u ? v[r] : -CUDART_INF_F;
            float big = s;
#pragma unroll
            for (int off = G / R; off < S; off *= 2)
                big = fmaxf(big, __shfl_xor_sync(0xffffffffu, big, off));
            const float mn = fmaxf(m[r], big);
            const float c = mn == -CUDART_INF_F ? 1.f : exp2f(m[r] - mn);
            const float pr = s == -CUDART_INF_F ? 0.f : exp2f(s - mn);
            float sum = pr;
#pragma unroll
            for (int off = G / R; off < S; off *= 2)
                sum += __shfl_xor_sync(0xffffffffu, sum, off);
            l[r] = fmaf(l[r], c, sum);
            m[r] = mn;
            sm.p[part][i] = pr;
            if (u == 0)
                sm.c[part][i] = c;
        }
        __syncwarp();
#pragma unroll
        for (int g = 0; g < G; ++g) {
            if (g >= groups)
                continue; // uniform over the block
            const float cg = sm.c[part][g];
#pragma unroll
            for (int e = 0; e < E; ++e)
                acc[g][e] *= cg;
#pragma unroll
            for (int u = 0; u < KU; ++u) {
                const float pu = sm.p[part][u * G + g];
#pragma unroll
                for (int e = 0; e < E; ++e)
                    acc[g][e] = fmaf(pu, vr[u][e], acc[g][e]);
            }
        }
        __syncwarp(); // the round's weights are read before the next round's are stored
    };
    // the row at `late`, if it is one of the round's (below end: the position attended last)
    const auto take_late = [&](round_rows<E, KU>& rr, std::int64_t jb) {
#pragma unroll
        for (int u = 0; u < KU; ++u)
            if (jb + sub + u * PARTS == late)
#pragma unroll
                for (int e = 0; e < E; ++e) {
                    rr.k[u][e] = element<T>::to_float(late_rows[sl * E + e]);
                    rr.v[u][e] = element<T>::to_float(late_rows[HD + sl * E + e]);
                }
    };
    // The loop bound is the warp's (jb), never a sub-group's, so every lane of a warp takes
    // the same trips. The preloaded first round is its own trip (one branch in the loop's body
    // spilled at head_dim 128).
    std::int64_t jb = start + warp * P;
    if (preloaded && jb < end) {
        round_rows<E, KU> rr = first;
        take_late(rr, jb);
        round(rr);
        jb += PARTS * KU;
    }
    for (; jb < end; jb += PARTS * KU) {
        round_rows<E, KU> rr;
        load_round<T, HD, W, VEC, G>(kl, vl, jb, sub, end, late, rr);
        take_late(rr, jb);
        round(rr);
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
        if (g >= groups)
            continue;
#pragma unroll
        for (int e = 0; e < E; ++e)
            sm.acc[part][g][sl * E + e] = acc[g][e];
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
        const int i = sl * R + r; // u = 0: head i
        if (i < groups) {
            sm.m[part][i] = m[r];
            sm.l[part][i] = l[r];
        }
    }
    __syncthreads();
}

// The block merge's weights: per query head (one thread a head) the block's maximum over the
// parts, each part's weight exp2(m_p - max) and the sum of l_p w_p in part order, into sm. A
// block barrier follows; every thread of the block calls it.
template <int HD, int W, int G>
__device__ __forceinline__ void weigh_parts(attention_parts<HD, W, G>& sm, int groups) {
    constexpr int PARTS = attention_parts<HD, W, G>::PARTS;
    const int g = static_cast<int>(threadIdx.x);
    if (g < groups) {
        float big = -CUDART_INF_F;
#pragma unroll
        for (int p = 0; p < PARTS; ++p)
            big = fmaxf(big, sm.m[p][g]);
        float sum = 0.f;
#pragma unroll
        for (int p = 0; p < PARTS; ++p) {
            const float w = sm.m[p][g] == -CUDART_INF_F ? 0.f : exp2f(sm.m[p][g] - big);
            sm.w[p][g] = w;
            sum += sm.l[p][g] * w;
        }
        sm.big[g] = big;
        sm.sum[g] = sum;
    }
    __syncthreads();
}

// Element d of query head g merged over the block's parts (after weigh_parts): the block's max,
// sum and weighted values (relative to that max).
template <int HD, int W, int G>
__device__ __forceinline__ void merge_parts(const attention_parts<HD, W, G>& sm, int g, int d,
                                            float& big, float& sum, float& val) {
    constexpr int PARTS = attention_parts<HD, W, G>::PARTS;
    big = sm.big[g];
    sum = sm.sum[g];
    val = 0.f;
#pragma unroll
    for (int p = 0; p < PARTS; ++p)
        val += sm.acc[p][g][d] * sm.w[p][g];
}

template <typename T, int HD>
__device__ __forceinline__ void prefetch_chunk(const decode_attention_args& a, const T* kc,
                                               const T* vc, std::int64_t start,
                                               std::int64_t chunk) {
    // While the launch before (rope_kv) may still run: the chunk's cache rows below the
    // position into L2. *pos here is a hint only (in an eager chain of dependent launches it
    // may still be a step behind); everything below reads it again after the wait.
    std::int64_t early = *a.pos;
    early = early < start ? start : early > a.capacity ? a.capacity : early;
    const std::int64_t stop = start + chunk < early ? start + chunk : early;
    const auto* kb = reinterpret_cast<const char*>(kc + start * HD);
    const auto* vb = reinterpret_cast<const char*>(vc + start * HD);
    const std::int64_t bytes = (stop - start) * HD * static_cast<std::int64_t>(sizeof(T));
    for (std::int64_t off = threadIdx.x * std::int64_t{128}; off < bytes;
         off += std::int64_t{128} * blockDim.x) {
        prefetch_l2(kb + off);
        prefetch_l2(vb + off);
    }
}

// rope_kv inside the launch (decode_attention_rope): warp w takes row w of [the block's query
// heads from head0, then (with `owner`: the block's split holds the position, in the cache) the
// kv head's k and v, into late_rows, and into the caches where `write_kv`]; lane l holds
// elements l + 32 j of the head. rope_kv's arithmetic: the norm's sum of squares as its
// block_sum adds it (a warp sum over each 32 elements, then a warp sum of those sums in order),
// x * inv * w unrounded, the rotation's partner from the unrounded values (rope_rotate), one
// rounding to T. The query rows go to `qs` (shared memory); k and v to the caches' row at *pos.
// A block barrier follows. Outside the cache (*pos past it) nothing is written and qs is zero.
// Each row's loads (the row, its norm's weight, the position's cos and sin) are issued together,
// before any of them is used: one round trip a row. In nvcc 13.0's code the norm's weight was
// loaded after the sum of squares and cos / sin after the norm (three round trips a row), and the
// v row's copy alternated loads and stores (four in series: the cache row may alias the qkv row
// for all the compiler knows); SASS read in session 42.
// FOURFOLD_ATTENTION_ROPE_LOADS=0 (read by the plan, `rope_loads_first`) keeps the old order for
// A/B runs: the same arithmetic, the same bits either way.
template <typename T, int HD, int W>
__device__ __forceinline__ void fused_rope(const decode_attention_args& a, std::int64_t kvh,
                                           std::int64_t head0, int groups, T* qs, T* late_rows,
                                           bool owner, bool write_kv, bool loads_first) {
    constexpr int E = HD / 32;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const auto& r = a.rope;
    const std::int64_t p = *a.pos;
    const bool in_cache = p >= 0 && p < a.capacity;
    const int rows = groups + (owner ? 2 : 0);
    const T* src_row = static_cast<const T*>(r.qkv);
    // the position's cos and sin rows (only read in the cache)
    const T* cs = static_cast<const T*>(r.cos) + (in_cache ? p * HD : 0);
    const T* sc = static_cast<const T*>(r.sin) + (in_cache ? p * HD : 0);
    for (int w = warp; w < rows; w += W) {
        const bool is_q = w < groups, is_k = w == groups;
        const std::int64_t h = is_q ? head0 + w : is_k ? a.heads + kvh : a.heads + a.kv_heads + kvh;
        const T* src = src_row + h * HD;
        if (!is_q && !is_k) { // v: copied into the cache as it is
            T* vrow =
                const_cast<T*>(static_cast<const T*>(a.v_cache)) + (kvh * a.capacity + p) * HD;
            if (loads_first) {
                T e[E];
#pragma unroll
                for (int j = 0; j < E; ++j)
                    e[j] = src[lane + 32 * j];
#pragma unroll
                for (int j = 0; j < E; ++j) {
                    if (write_kv)
                        vrow[lane + 32 * j] = e[j];
                    late_rows[HD + lane + 32 * j] = e[j];
                }
            } else {
#pragma unroll
                for (int j = 0; j < E; ++j) {
                    const T e = src[lane + 32 * j];
                    if (write_kv)
                        vrow[lane + 32 * j] = e;
                    late_rows[HD + lane + 32 * j] = e;
                }
            }
            continue;
        }
        const T* nw = static_cast<const T*>(is_q ? r.q_norm : r.k_norm);
        float v[E], wn[E], c[E], sn[E];
        if (loads_first) {
#pragma unroll
            for (int j = 0; j < E; ++j) {
                const int i = lane + 32 * j;
                v[j] = element<T>::to_float(src[i]);
                wn[j] = nw ? element<T>::to_float(nw[i]) : 0.f;
                c[j] = in_cache ? element<T>::to_float(cs[i]) : 0.f;
                sn[j] = in_cache ? element<T>::to_float(sc[i]) : 0.f;
            }
        } else {
#pragma unroll
            for (int j = 0; j < E; ++j)
                v[j] = element<T>::to_float(src[lane + 32 * j]);
        }
        if (nw) {
            float t = 0.f;
#pragma unroll
            for (int j = 0; j < E; ++j) {
                const float part = warp_sum(v[j] * v[j]);
                t = lane == j ? part : t;
            }
            const float ss = warp_sum(t);
            const float inv = rsqrtf(ss / static_cast<float>(HD) + static_cast<float>(r.eps));
#pragma unroll
            for (int j = 0; j < E; ++j)
                v[j] = v[j] * inv * (loads_first ? wn[j] : element<T>::to_float(nw[lane + 32 * j]));
        }
        float out[E];
#pragma unroll
        for (int j = 0; j < E; ++j) {
            const int i = lane + 32 * j;
            float rotated;
            if constexpr (E == 1) {
                const float other = __shfl_xor_sync(0xffffffffu, v[0], 16);
                rotated = lane < 16 ? -other : other;
            } else {
                rotated = j < E / 2 ? -v[j + E / 2] : v[j - E / 2];
            }
            if (!loads_first) {
                c[j] = in_cache ? element<T>::to_float(cs[i]) : 0.f;
                sn[j] = in_cache ? element<T>::to_float(sc[i]) : 0.f;
            }
            out[j] = rope_rotate(v[j], rotated, c[j], sn[j]);
        }
        if (is_q) {
#pragma unroll
            for (int j = 0; j < E; ++j)
                qs[w * HD + lane + 32 * j] = element<T>::from_float(out[j]);
        } else {
            T* krow =
                const_cast<T*>(static_cast<const T*>(a.k_cache)) + (kvh * a.capacity + p) * HD;
#pragma unroll
            for (int j = 0; j < E; ++j) {
                const T e = element<T>::from_float(out[j]);
                if (write_kv)
                    krow[lane + 32 * j] = e;
                late_rows[lane + 32 * j] = e;
            }
        }
    }
    __syncthreads(); // qs and late_rows (the block's own cache row at *pos) for every warp
}

// G: the query heads a block takes (the plan's block_heads): 8, the whole GQA group of up to 8; or
// 4, a group's heads in halves of 4 (kv head h's halves are units 2h and 2h + 1 of `halves` a kv
// head), each half's blocks merging their splits apart on their own count. Blocks are (unit,
// split), unit = kv head x halves + half.
template <typename T, int HD, bool VEC, int G>
__global__ void __launch_bounds__(k_attention_block_threads(HD, G),
                                  HD >= 256 ? 1 : k_attention_blocks_per_sm)
    attention_kernel(decode_attention_args a, std::int64_t chunk, std::int64_t splits,
                     split_barrier* barriers, bool shared_merge, bool rope_loads_first,
                     bool preload) {
    constexpr int W = k_attention_block_threads(HD, G) / 32;
    using parts = attention_parts<HD, W, G>;
    __shared__ parts sm;
    __shared__ bool last;
    constexpr bool ROPE = HD >= 32 && HD <= 128;
    __shared__ T qs[ROPE ? G * HD : 1];        // the fused rope's query rows
    __shared__ T late_rows[ROPE ? 2 * HD : 1]; // and its k and v rows at *pos (the owner's)

    const std::int64_t unit = blockIdx.x / splits, split = blockIdx.x % splits;
    const int group = static_cast<int>(a.heads / a.kv_heads); // the kv head's query heads
    const int halves = (group + G - 1) / G;
    const std::int64_t kvh = unit / halves;
    const int half = static_cast<int>(unit % halves);
    const int groups = group - half * G < G ? group - half * G : G; // this block's query heads
    const std::int64_t head0 = kvh * group + half * G;              // the first of them
    const std::int64_t start = split * chunk;
    const T* kc = static_cast<const T*>(a.k_cache) + kvh * a.capacity * HD;
    const T* vc = static_cast<const T*>(a.v_cache) + kvh * a.capacity * HD;
    allow_dependents();
    prefetch_chunk<T, HD>(a, kc, vc, start, chunk);
    dependency_wait(); // q and the row at *pos are rope_kv's; every block waits, also the idle
    // the shared merge's barrier generation, read now: its round trip overlaps the attention
    const unsigned generation = shared_merge && splits > 1 && threadIdx.x == 0
                                    ? grid_generation(&barriers[unit].generation)
                                    : 0u;
    const std::int64_t len = attended_length(a);
    const std::int64_t end = start + chunk < len ? start + chunk : len;
    const T* qg = static_cast<const T*>(a.q) + head0 * HD;
    // with `preload` the first round's cache rows are loaded before the query rows are made (the
    // fused rope's loads, or q's, then in flight with them), all but the row at *pos this block's
    // fused rope writes (`late`: attend takes it from late_rows)
    std::int64_t late = -1;
    if constexpr (ROPE) {
        const std::int64_t p = *a.pos;
        if (a.rope.qkv && p >= 0 && p < a.capacity && p >= start && p < start + chunk)
            late = p;
    }
    round_rows<parts::E, parts::KU> first;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (preload && start < len)
        load_round<T, HD, W, VEC, G>(kc + lane % parts::S * parts::E,
                                     vc + lane % parts::S * parts::E, start + warp * parts::P,
                                     lane / parts::S, end, late, first);
    if constexpr (ROPE) {
        if (a.rope.qkv) { // (block-uniform) this block's q rows, and the row at *pos if it is ours
            if (start < len)
                fused_rope<T, HD, W>(a, kvh, head0, groups, qs, late_rows, late >= 0, half == 0,
                                     rope_loads_first);
            qg = qs;
        }
    }
    if (a.probe_stop_after == 1)
        return;
    if (start < len) {
        attend<T, HD, W, VEC, G>(a, qg, groups, kc, vc, start, end, sm, first, preload, late,
                                 late_rows);
        if (a.probe_stop_after == 2)
            return;
        weigh_parts<HD, W>(sm, groups);
        for (int idx = threadIdx.x; idx < groups * HD; idx += blockDim.x) {
            const int g = idx / HD, d = idx % HD;
            float big, sum, val;
            merge_parts<HD, W>(sm, g, d, big, sum, val);
            const std::int64_t head = head0 + g;
            if (splits > 1) {
                const partials ws(a.workspace, a.heads, splits, HD);
                ws.acc[(head * splits + split) * HD + d] = val;
                if (d == 0) {
                    ws.m[head * splits + split] = big;
                    ws.l[head * splits + split] = sum;
                }
            } else {
                static_cast<T*>(a.out)[head * HD + d] = element<T>::from_float(val / sum);
            }
        }
    }
    if (splits == 1 || (a.probe_stop_after >= 1 && a.probe_stop_after <= 3))
        return;
    if (!shared_merge) {
        // Count in: one acquire-release add by thread 0 after the block barrier (the block's
        // partial is released with it; the last to count in acquires every block's, and its
        // barrier passes them on to its threads). The last block of the kv head merges every
        // output and resets the count for the next launch.
        __syncthreads();
        unsigned* count = &barriers[unit].arrived[0];
        if (threadIdx.x == 0)
            last = atomic_add_acq_rel(count, 1u) == static_cast<unsigned>(splits - 1);
        __syncthreads();
        if (!last)
            return;
        if (a.probe_stop_after == 4) { // (the probe: the count reset, no merge)
            if (threadIdx.x == 0)
                *count = 0;
            return;
        }
        merge_splits<T, HD, G>(a, head0, groups, splits,
                               static_cast<int>((len + chunk - 1) / chunk));
        if (threadIdx.x == 0)
            *count = 0; // every block of the kv head has counted in
        return;
    }
    // The kv head's splits meet (every block is resident: the plan keeps the grid to one wave,
    // and a dependent launch waits for every block's allow_dependents above), then each merges
    // its share of the outputs.
    __syncthreads(); // the block's partial is stored before its arrival
    if (threadIdx.x == 0) {
        split_barrier& b = barriers[unit];
        grid_barrier_at(b.arrived, &b.generation, static_cast<int>(splits), generation);
    }
    __syncthreads();
    if (a.probe_stop_after == 4)
        return;
    merge_share<T, HD, G>(a, head0, groups, splits, split,
                          static_cast<int>((len + chunk - 1) / chunk));
}

// The cluster path: the blocks of a cluster are the splits of one kv head (block rank = split).
// Each merges its parts, then, after a cluster barrier, block r merges elements
// [r n / C, (r + 1) n / C) of the kv head's groups x HD outputs over the cluster's blocks in rank
// order (their pairs and values read from the blocks' shared memory) and writes them. A second
// barrier keeps every block's shared memory alive until the last reader is done. Deterministic:
// fixed orders throughout.
template <typename T, int HD, int W>
__global__ void __launch_bounds__(W * 32, 1)
    attention_cluster_kernel(decode_attention_args a, std::int64_t chunk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ attention_parts<HD, W> sm;
    __shared__ float blk_m[k_max_g], blk_l[k_max_g];
    __shared__ float blk_acc[k_max_g][HD];
    const int splits = static_cast<int>(__clusterSizeInBlocks());
    const int split = static_cast<int>(__clusterRelativeBlockRank());
    const std::int64_t kvh = blockIdx.x / splits;
    const int groups = static_cast<int>(a.heads / a.kv_heads);
    const std::int64_t start = split * chunk;
    const T* kc = static_cast<const T*>(a.k_cache) + kvh * a.capacity * HD;
    const T* vc = static_cast<const T*>(a.v_cache) + kvh * a.capacity * HD;
    allow_dependents();
    prefetch_chunk<T, HD>(a, kc, vc, start, chunk);
    dependency_wait(); // q and the row at *pos are rope_kv's
    const std::int64_t len = attended_length(a);
    if (a.probe_stop_after == 1)
        return; // (every block of the cluster returns alike: no barrier is left waiting)
    const bool live = start < len;
    const round_rows<attention_parts<HD, W>::E> none{}; // (no preloaded round on this path)
    if (live)
        attend<T, HD, W, true>(a, static_cast<const T*>(a.q) + kvh * groups * HD, groups, kc, vc,
                               start, start + chunk < len ? start + chunk : len, sm, none, false,
                               -1, static_cast<const T*>(nullptr));
    if (a.probe_stop_after == 2)
        return;
    if (live)
        weigh_parts<HD, W>(sm, groups);
    for (int idx = threadIdx.x; idx < groups * HD; idx += blockDim.x) {
        const int g = idx / HD, d = idx % HD;
        float big = -CUDART_INF_F, sum = 0.f, val = 0.f;
        if (live)
            merge_parts<HD, W>(sm, g, d, big, sum, val);
        blk_acc[g][d] = val;
        if (d == 0) {
            blk_m[g] = big;
            blk_l[g] = sum;
        }
    }
    if (a.probe_stop_after == 3)
        return;
    // every block's merged parts are in its shared memory (arrive releases, wait acquires)
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
    const int n = groups * HD;
    const int lo = split * n / splits, hi = (split + 1) * n / splits;
    for (int idx = lo + static_cast<int>(threadIdx.x); idx < hi; idx += blockDim.x) {
        const int g = idx / HD, d = idx % HD;
        float big = -CUDART_INF_F;
        for (int r = 0; r < splits; ++r)
            big = fmaxf(big, *static_cast<const float*>(__cluster_map_shared_rank(&blk_m[g], r)));
        float sum = 0.f, val = 0.f;
        for (int r = 0; r < splits; ++r) {
            const float mr = *static_cast<const float*>(__cluster_map_shared_rank(&blk_m[g], r));
            const float w = mr == -CUDART_INF_F ? 0.f : exp2f(mr - big);
            sum += *static_cast<const float*>(__cluster_map_shared_rank(&blk_l[g], r)) * w;
            val += *static_cast<const float*>(__cluster_map_shared_rank(&blk_acc[g][d], r)) * w;
        }
        static_cast<T*>(a.out)[(kvh * groups + g) * HD + d] = element<T>::from_float(val / sum);
    }
    // no block leaves while another still reads its shared memory
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
#else
    static_cast<void>(a);
    static_cast<void>(chunk);
#endif
}

template <typename T, int HD>
launch_status launch_cluster(const decode_attention_plan& p, const decode_attention_args& a,
                             stream_t stream) {
    constexpr int W = k_attention_cluster_threads(HD) / 32;
    return status_of(launch_cluster_after(attention_cluster_kernel<T, HD, W>,
                                          dim3(static_cast<unsigned>(p.blocks)), dim3(W * 32),
                                          p.cluster, stream, p.dependent_launch, a, p.chunk));
}

template <typename T, int HD>
launch_status launch_hd(const decode_attention_plan& p, const decode_attention_args& a,
                        stream_t stream) {
    if (p.cluster > 0)
        return launch_cluster<T, HD>(p, a, stream);
    split_barrier* barriers = p.fused_combine
                                  ? reinterpret_cast<split_barrier*>(
                                        reinterpret_cast<char*>(a.workspace) + p.counter_offset)
                                  : nullptr;
    // the instance for G query heads a block, with vector loads where the plan took them
    const auto launch_heads = [&](auto heads) {
        constexpr int G = decltype(heads)::value;
        const auto run = [&](auto kernel) {
            return status_of(launch_serialised_after(
                kernel, dim3(static_cast<unsigned>(p.blocks)),
                dim3(k_attention_block_threads(HD, G)), stream, p.dependent_launch, a, p.chunk,
                p.splits, barriers, p.shared_merge, p.rope_loads_first, p.preload_round));
        };
        if constexpr (attention_vector_bytes(HD, sizeof(T)) > 0)
            if (p.vector_loads)
                return run(attention_kernel<T, HD, true, G>);
        return run(attention_kernel<T, HD, false, G>);
    };
    if constexpr (HD == 64 || HD == 128)
        if (p.block_heads == 4)
            return launch_heads(std::integral_constant<int, 4>{});
    if (p.block_heads != k_attention_max_group)
        return invalid("decode attention: block_heads 4 takes head_dim 64 or 128 (plan it)");
    return launch_heads(std::integral_constant<int, k_attention_max_group>{});
}

template <typename T>
launch_status launch_typed(const decode_attention_plan& p, const decode_attention_args& a,
                           stream_t stream) {
    switch (a.head_dim) {
    case 16:
        return launch_hd<T, 16>(p, a, stream);
    case 32:
        return launch_hd<T, 32>(p, a, stream);
    case 64:
        return launch_hd<T, 64>(p, a, stream);
    case 128:
        return launch_hd<T, 128>(p, a, stream);
    case 256:
        return launch_hd<T, 256>(p, a, stream);
    default:
        return invalid("decode attention: head_dim must be 16, 32, 64, 128 or 256");
    }
}

} // namespace

launch_status launch_decode_attention(const decode_attention_plan& p,
                                      const decode_attention_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    if (p.combine)
        return invalid("decode attention: a plan with a second combine launch (none is made now)");
    if (p.fused_combine && !a.workspace)
        return invalid("decode attention: a split plan needs its workspace (zeroed once)");
    if (p.fused_combine && alignment_of(a.workspace) < 16)
        return invalid("decode attention: the workspace must be 16-byte aligned");
    if (p.vector_loads) {
        const int vb = attention_vector_bytes(a.head_dim, static_cast<int>(elem_bytes(a.type)));
        if (vb == 0 || alignment_of(a.k_cache) < vb || alignment_of(a.v_cache) < vb)
            return invalid("decode attention: vector loads need the caches aligned to " +
                           std::to_string(vb) + " bytes (plan with the launch's pointers)");
    }
    if (p.cluster > 0 &&
        (alignment_of(a.q) < 16 || alignment_of(a.k_cache) < 16 || alignment_of(a.v_cache) < 16))
        return invalid("decode attention: the cluster path needs q and the caches 16-byte "
                       "aligned (plan with the launch's pointers)");
    return by_element(a.type, [&](auto t) { return launch_typed<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
