#pragma once
// Warp- and block-wide reductions, the streaming weight load, the asynchronous copy to shared
// memory and the grid barrier, shared by the kernels. Only included by .cu files.
#include <cuda_runtime.h>

namespace fourfold::kernels::device {

// An L2 policy that marks the lines a load brings in as the first to go (createpolicy, sm_80
// on). Not volatile: the compiler hoists it out of a kernel's loops.
__device__ __forceinline__ unsigned long long l2_evict_first_policy() {
    unsigned long long pol;
    asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    return pol;
}

// A weight vector is read once and never again in this call (a decode step reads each weight
// once): keep it out of L1, and first out of L2, so that what a step reads again (the KV cache,
// the activations, the small per-layer vectors) is not pushed out by the weights' stream.
__device__ __forceinline__ uint4 load_streaming(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p), "l"(l2_evict_first_policy()));
    return v;
}

// load_streaming without the L2 policy (its 64-bit register spilled gemv_mma's 4 bytes).
__device__ __forceinline__ uint4 load_streaming_l1_only(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// 16 bytes of weights from global to shared memory without a register (cp.async, L2 only: sm_80
// on), read once: first out of L2, as load_streaming's. The copies a thread issued since its last
// wait land by copy_async_wait_all().
__device__ __forceinline__ void copy_async_16(void* smem, const void* gmem) {
    const auto s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(s), "l"(gmem),
                 "l"(l2_evict_first_policy())
                 : "memory");
}
// 4 bytes from global to shared memory without a register (cp.async.ca, sm_80 on), `bytes` of
// them read (4 or 2), the rest zero: a few scattered values a thread, not a stream of weights.
__device__ __forceinline__ void copy_async_4(void* smem, const void* gmem, int bytes) {
    const auto s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(gmem), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void copy_async_wait_all() {
    asm volatile("cp.async.wait_all;" ::: "memory");
}

// One 16-byte shared-memory load into registers. Unpacking a shared uint4 in place compiled to
// eight 2-byte loads, 4-way bank-conflicted across the warp (the GEMV prologues in d6264c7; the
// MoE one launch's staged down rows in f78036d: 8 us of a 36 us step).
__device__ __forceinline__ uint4 load_shared_16(const uint4* p) {
    uint4 v;
    const auto s = static_cast<unsigned>(__cvta_generic_to_shared(p));
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "r"(s));
    return v;
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// A self-resetting barrier over `blocks` blocks that are all resident at once, called by one
// thread of each after a block barrier: two arrival counts and a generation in global memory,
// zero when the module loads. A block reads the generation g, adds its arrival to count g & 1
// (acquire and release: what the block stored before is visible to the last to arrive, and that
// one sees every block's); the last moves the generation on (a release: the waiters, spinning on
// it with acquire loads, see every block's stores) and only then resets its count, which no block
// uses again before generation g + 2, by when the last arriver's own next arrival has released
// the reset. One round trip fewer on the critical path than resetting the count first (session
// 30). Every launch leaves the counts at zero, so the next launch (or a replayed graph) finds
// them as the first did. One set of counters serves one launch at a time: launches that share
// them must be ordered (fourfold's are, on one stream).
__device__ __forceinline__ unsigned atomic_add_acq_rel(unsigned* p, unsigned v) {
    unsigned old;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
                 : "=r"(old)
                 : "l"(p), "r"(v)
                 : "memory");
    return old;
}

// The same add with release only (a fence before it, none after: the old value arrives while
// the thread goes on), and without a result (red), released or relaxed.
__device__ __forceinline__ unsigned atomic_add_release(unsigned* p, unsigned v) {
    unsigned old;
    asm volatile("atom.release.gpu.global.add.u32 %0, [%1], %2;"
                 : "=r"(old)
                 : "l"(p), "r"(v)
                 : "memory");
    return old;
}
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
    asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void red_relaxed_add(unsigned* p, unsigned v) {
    asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ __forceinline__ void store_relaxed(unsigned* p, unsigned v) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// The barrier's generation read ahead, relaxed (through L2, never a stale L1 line): a caller may
// read it as soon as its dependency wait returns, since only the barrier's own rounds in this
// launch move it on, so its L2 round trip overlaps the work before the barrier (session 35).
__device__ __forceinline__ unsigned grid_generation(const unsigned* generation) {
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(generation) : "memory");
    return v;
}

// grid_barrier at a generation g the caller read ahead (grid_generation; after a round it
// passed, g + 1).
__device__ __forceinline__ void grid_barrier_at(unsigned (&arrived)[2], unsigned* generation,
                                                int blocks, unsigned g) {
    unsigned* count = &arrived[g & 1u];
    if (atomic_add_acq_rel(count, 1u) == static_cast<unsigned>(blocks) - 1) {
        red_release_add(generation, 1u);
        store_relaxed(count, 0u);
    } else {
        while (load_acquire(generation) == g) {
        }
    }
}

__device__ __forceinline__ void grid_barrier(unsigned (&arrived)[2], unsigned* generation,
                                             int blocks) {
    grid_barrier_at(arrived, generation, blocks, load_acquire(generation));
}

// The sum (the maximum) of v over the warp, in every lane.
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// The sums over the warp of 8 values a lane (8 rows' partial sums) at once: halves exchanged at
// lane distance 16, 8 and 4, then the last two levels added (9 shuffles where 8 warp_sums take
// 40); lane 4 q returns the sum of acc[q] (lanes 4 q + 1..3 the same), in a fixed order.
__device__ __forceinline__ float warp_sum_8(float (&acc)[8]) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const bool up = lane & 16;
        const float send = up ? acc[i] : acc[i + 4], keep = up ? acc[i + 4] : acc[i];
        acc[i] = keep + __shfl_xor_sync(0xffffffffu, send, 16);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const bool up = lane & 8;
        const float send = up ? acc[i] : acc[i + 2], keep = up ? acc[i + 2] : acc[i];
        acc[i] = keep + __shfl_xor_sync(0xffffffffu, send, 8);
    }
    {
        const bool up = lane & 4;
        const float send = up ? acc[0] : acc[1], keep = up ? acc[1] : acc[0];
        acc[0] = keep + __shfl_xor_sync(0xffffffffu, send, 4);
    }
    acc[0] += __shfl_xor_sync(0xffffffffu, acc[0], 2);
    acc[0] += __shfl_xor_sync(0xffffffffu, acc[0], 1);
    return acc[0];
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), in every thread.
// `scratch` holds 32 floats; the call is a barrier.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int warps = (blockDim.x + 31) / 32;
    v = warp_sum(v);
    __syncthreads(); // scratch may still be read by a previous call
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    float t = lane < warps ? scratch[lane] : 0.f;
    return warp_sum(t);
}

} // namespace fourfold::kernels::device
