// rope_kv kernels (see rope_kv.hpp). Block b of token t: heads [0, H) are q, [H, H + KVH) k,
// [H + KVH, H + 2 KVH) v. Thread i holds element i of the head (head_dim <= 1024); the rotation
// reads its partner (i +- head_dim / 2) through shared memory.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/reduce.cuh"
#include "fourfold/kernels/rope_kv.hpp"

namespace fourfold::kernels {
namespace {

using namespace device;

template <typename T> __global__ void rope_kv_kernel(rope_kv_args a) {
    __shared__ float scratch[32];
    __shared__ float head[1024];
    const std::int64_t heads_all = a.heads + 2 * a.kv_heads;
    const std::int64_t t = blockIdx.x / heads_all;
    const std::int64_t h = blockIdx.x % heads_all;
    const int i = threadIdx.x;
    const std::int64_t hd = a.head_dim;
    const bool is_q = h < a.heads, is_k = !is_q && h < a.heads + a.kv_heads;
    const T* norm_w = static_cast<const T*>(is_q ? a.q_norm : a.k_norm);
    allow_dependents();
    if (is_q || is_k) { // hints into L2 while the launch before may still run
        constexpr int line = 128 / sizeof(T);
        // *pos is only a hint here (in an eager chain of dependent launches it may be a step
        // behind); it is read again after the wait
        const std::int64_t early = *a.pos + t;
        if (i < hd && (i % line == 0 || i == hd - 1)) {
            if (norm_w)
                prefetch_l2(norm_w + i);
            if (early >= 0 && early < a.capacity) {
                prefetch_l2(static_cast<const T*>(a.cos) + early * hd + i);
                prefetch_l2(static_cast<const T*>(a.sin) + early * hd + i);
            }
        }
    }
    dependency_wait(); // qkv (and *pos) may be the launches before's
    const std::int64_t p = *a.pos + t;
    const T* src = static_cast<const T*>(a.qkv) + t * a.ld_qkv + h * hd;
    float v = i < hd ? element<T>::to_float(src[i]) : 0.f;
    if (!is_q && !is_k) { // v: copied into the cache as it is
        if (i < hd && p >= 0 && p < a.capacity)
            static_cast<T*>(a.v_cache)[((h - a.heads - a.kv_heads) * a.capacity + p) * hd + i] =
                element<T>::from_float(v);
        return;
    }
    // the norm's weight and the position's cos and sin before the reduction, so that their
    // round trips overlap it (not one after another after it)
    const bool in_cache = i < hd && p >= 0 && p < a.capacity;
    const float nw = norm_w && i < hd ? element<T>::to_float(norm_w[i]) : 1.f;
    const float c = in_cache ? element<T>::to_float(static_cast<const T*>(a.cos)[p * hd + i]) : 0.f;
    const float s = in_cache ? element<T>::to_float(static_cast<const T*>(a.sin)[p * hd + i]) : 0.f;
    if (norm_w) { // every thread of the block takes part in the reduction
        const float ss = block_sum(v * v, scratch);
        const float inv = rsqrtf(ss / static_cast<float>(hd) + static_cast<float>(a.eps));
        if (i < hd)
            v = v * inv * nw;
    }
    if (i < hd)
        head[i] = v;
    __syncthreads();
    if (!in_cache)
        return;
    const std::int64_t half = hd / 2;
    const float rotated = i < half ? -head[i + half] : head[i - half];
    const T out = element<T>::from_float(rope_rotate(v, rotated, c, s));
    if (is_q)
        static_cast<T*>(a.q_out)[(t * a.heads + h) * hd + i] = out;
    else
        static_cast<T*>(a.k_cache)[((h - a.heads) * a.capacity + p) * hd + i] = out;
}

} // namespace

launch_status launch_rope_kv(const rope_kv_plan& p, const rope_kv_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return by_element(a.type, [&](auto t) {
        return status_of(launch_serialised_after(
            rope_kv_kernel<decltype(t)>, dim3(static_cast<unsigned>(p.blocks)),
            dim3(static_cast<unsigned>(p.threads)), stream, p.dependent_launch, a));
    });
}

} // namespace fourfold::kernels
