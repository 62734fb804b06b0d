// Decode attention kernels (see decode_attention.hpp).
//
// A block is (kv head, split): 4 warps; a warp is P = 32 / S sub-groups of S = min(32, head_dim)
// lanes, a sub-group one cache position at a time, lane l of it holding elements
// [l E, (l + 1) E) of the position's k and v rows (E = head_dim / S). U = 4 positions a
// sub-group are loaded before the first score, so the loads of a chunk are in flight together.
// Scores are in the log2 domain (q scaled by scale * log2(e) once), the running softmax per
// query head in fp32; the block's parts are merged in shared memory.
#include "fourfold/kernels/decode_attention.hpp"
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/reduce.cuh"

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

template <typename T, int HD>
__global__ void __launch_bounds__(k_attention_threads)
    attention_kernel(decode_attention_args a, std::int64_t chunk, std::int64_t splits) {
    constexpr int S = HD < 32 ? HD : 32;
    constexpr int E = HD / S;
    constexpr int P = 32 / S;
    constexpr int W = k_attention_threads / 32;
    constexpr int PARTS = W * P;
    __shared__ float sm_m[PARTS][k_max_g];
    __shared__ float sm_l[PARTS][k_max_g];
    __shared__ float sm_acc[PARTS][k_max_g][HD];

    const std::int64_t kvh = blockIdx.x / splits, split = blockIdx.x % splits;
    const int groups = static_cast<int>(a.heads / a.kv_heads);
    const std::int64_t len = attended_length(a);
    const std::int64_t start = split * chunk;
    if (start >= len)
        return; // the combine reads only the splits the position reaches
    const std::int64_t end = start + chunk < len ? start + chunk : len;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int sub = lane / S, sl = lane % S;
    const int part = warp * P + sub;
    const float scale =
        static_cast<float>(a.scale > 0 ? a.scale : 1.0 / sqrt(static_cast<double>(HD))) * k_log2e;

    const T* q = static_cast<const T*>(a.q) + kvh * groups * HD + sl * E;
    float qr[k_max_g][E];
#pragma unroll
    for (int g = 0; g < k_max_g; ++g)
#pragma unroll
        for (int e = 0; e < E; ++e)
            qr[g][e] = g < groups ? element<T>::to_float(q[g * HD + e]) * scale : 0.f;
    float m[k_max_g], l[k_max_g], acc[k_max_g][E];
#pragma unroll
    for (int g = 0; g < k_max_g; ++g) {
        m[g] = -CUDART_INF_F;
        l[g] = 0.f;
#pragma unroll
        for (int e = 0; e < E; ++e)
            acc[g][e] = 0.f;
    }
    const T* kc = static_cast<const T*>(a.k_cache) + kvh * a.capacity * HD + sl * E;
    const T* vc = static_cast<const T*>(a.v_cache) + kvh * a.capacity * HD + sl * E;
    // The loop bound is the warp's (jb), never a sub-group's, so every lane of a warp takes the
    // same trips and the shuffles below see all 32 lanes.
    for (std::int64_t jb = start + warp * P; jb < end; jb += PARTS * k_unroll) {
        float kr[k_unroll][E], vr[k_unroll][E];
        bool ok[k_unroll];
#pragma unroll
        for (int u = 0; u < k_unroll; ++u) {
            const std::int64_t j = jb + sub + u * PARTS;
            ok[u] = j < end;
#pragma unroll
            for (int e = 0; e < E; ++e) {
                kr[u][e] = ok[u] ? element<T>::to_float(kc[j * HD + e]) : 0.f;
                vr[u][e] = ok[u] ? element<T>::to_float(vc[j * HD + e]) : 0.f;
            }
        }
#pragma unroll
        for (int u = 0; u < k_unroll; ++u)
#pragma unroll
            for (int g = 0; g < k_max_g; ++g) {
                if (g >= groups)
                    continue; // uniform over the block
                float s = 0.f;
#pragma unroll
                for (int e = 0; e < E; ++e)
                    s = fmaf(qr[g][e], kr[u][e], s);
#pragma unroll
                for (int off = S / 2; off > 0; off /= 2)
                    s += __shfl_xor_sync(0xffffffffu, s, off);
                if (ok[u]) {
                    const float mn = fmaxf(m[g], s);
                    const float c = exp2f(m[g] - mn), pr = exp2f(s - mn);
                    l[g] = l[g] * c + pr;
#pragma unroll
                    for (int e = 0; e < E; ++e)
                        acc[g][e] = fmaf(acc[g][e], c, pr * vr[u][e]);
                    m[g] = mn;
                }
            }
    }
#pragma unroll
    for (int g = 0; g < k_max_g; ++g) {
        if (g >= groups)
            continue;
#pragma unroll
        for (int e = 0; e < E; ++e)
            sm_acc[part][g][sl * E + e] = acc[g][e];
        if (sl == 0) {
            sm_m[part][g] = m[g];
            sm_l[part][g] = l[g];
        }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < groups * HD; idx += blockDim.x) {
        const int g = idx / HD, d = idx % HD;
        float big = -CUDART_INF_F;
#pragma unroll
        for (int p = 0; p < PARTS; ++p)
            big = fmaxf(big, sm_m[p][g]);
        float sum = 0.f, val = 0.f;
#pragma unroll
        for (int p = 0; p < PARTS; ++p) {
            const float w = sm_m[p][g] == -CUDART_INF_F ? 0.f : exp2f(sm_m[p][g] - big);
            sum += sm_l[p][g] * w;
            val += sm_acc[p][g][d] * w;
        }
        const std::int64_t head = kvh * groups + g;
        if (splits > 1) {
            float* ws = a.workspace;
            const std::int64_t hs = a.heads * splits;
            ws[2 * hs + (head * splits + split) * HD + d] = val;
            if (d == 0) {
                ws[head * splits + split] = big;
                ws[hs + head * splits + split] = sum;
            }
        } else {
            static_cast<T*>(a.out)[head * HD + d] = element<T>::from_float(val / sum);
        }
    }
}

// The combine threads of a head: head_dim x CG, the live splits shared out CG ways.
template <int HD> constexpr int combine_groups() {
    return HD >= 128 ? 1024 / HD : 8;
}

// One block a query head. The live splits' maxima and sums are read in parallel (a thread a
// split) and reduced over the block; each split's weight exp2(m - M) goes to shared memory;
// then thread (d, g) sums element d over the splits g, g + CG, ... (independent loads, so a
// long context costs a few load rounds, not one per split) and the CG partial sums are added.
template <typename T, int HD>
__global__ void combine_kernel(decode_attention_args a, std::int64_t chunk, std::int64_t splits) {
    constexpr int CG = combine_groups<HD>();
    __shared__ float weight[k_attention_max_splits];
    __shared__ float scratch[32];
    __shared__ float parts[CG][HD];
    const std::int64_t head = blockIdx.x;
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int warps = blockDim.x / 32;
    const std::int64_t len = attended_length(a);
    const int live = static_cast<int>((len + chunk - 1) / chunk);
    const float* ws = a.workspace;
    const std::int64_t hs = a.heads * splits;
    const float* ms = ws + head * splits;
    const float* ls = ws + hs + head * splits;
    const float* acc = ws + 2 * hs + head * splits * HD;

    float big = -CUDART_INF_F;
    for (int s = tid; s < live; s += blockDim.x)
        big = fmaxf(big, ms[s]);
    big = warp_max(big);
    if (lane == 0)
        scratch[warp] = big;
    __syncthreads();
    big = warp_max(lane < warps ? scratch[lane] : -CUDART_INF_F);
    __syncthreads(); // scratch is reused below

    float sum = 0.f;
    for (int s = tid; s < live; s += blockDim.x) {
        const float w = exp2f(ms[s] - big);
        weight[s] = w;
        sum += ls[s] * w;
    }
    sum = warp_sum(sum);
    if (lane == 0)
        scratch[warp] = sum;
    __syncthreads(); // also publishes weight[]
    sum = warp_sum(lane < warps ? scratch[lane] : 0.f);

    const int d = tid % HD, g = tid / HD;
    float val = 0.f;
#pragma unroll 4
    for (int s = g; s < live; s += CG)
        val += acc[static_cast<std::int64_t>(s) * HD + d] * weight[s];
    parts[g][d] = val;
    __syncthreads();
    if (g == 0) {
#pragma unroll
        for (int j = 1; j < CG; ++j)
            val += parts[j][d];
        static_cast<T*>(a.out)[head * HD + d] = element<T>::from_float(val / sum);
    }
}

template <typename T, int HD>
launch_status launch_hd(const decode_attention_plan& p, const decode_attention_args& a,
                        stream_t stream) {
    attention_kernel<T, HD>
        <<<static_cast<unsigned>(p.blocks), k_attention_threads, 0, stream>>>(a, p.chunk, p.splits);
    if (p.combine) {
        if (const auto e = cudaGetLastError(); e != cudaSuccess)
            return status_of(e);
        constexpr int threads = HD * combine_groups<HD>();
        combine_kernel<T, HD>
            <<<static_cast<unsigned>(a.heads), threads, 0, stream>>>(a, p.chunk, p.splits);
    }
    return status_of(cudaGetLastError());
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
    if (p.combine && !a.workspace)
        return invalid("decode attention: a split plan needs its workspace");
    return by_element(a.type, [&](auto t) { return launch_typed<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
