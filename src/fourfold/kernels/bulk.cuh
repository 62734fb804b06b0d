#pragma once
// Bulk copies from global into shared memory (the copy engine of sm_90, cp.async.bulk: one
// instruction moves a contiguous run of bytes, 16-byte aligned, a multiple of 16 bytes long) and
// the shared-memory barriers (mbarrier) that say when a copy has landed and when a ring slot is
// free again. Only included by .cu files; on devices below sm_90 the functions compile to
// nothing and the plans never choose a kernel that uses them.
#include <cstdint>
#include <cuda_runtime.h>

namespace fourfold::kernels::device {

__device__ __forceinline__ std::uint32_t shared_address(const void* p) {
    return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}

// A barrier of `count` arrivals a phase, in shared memory (8 bytes, 8-byte aligned).
__device__ __forceinline__ void barrier_init(std::uint64_t* bar, unsigned count) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(shared_address(bar)), "r"(count)
                 : "memory");
#endif
}

// Makes the barriers' initialisation visible to the copy engine (then a block barrier).
__device__ __forceinline__ void barrier_init_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
#endif
}

// One arrival that also announces `bytes` still to land in this phase (the copies' size).
__device__ __forceinline__ void barrier_arrive_expect(std::uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(
                     shared_address(bar)),
                 "r"(bytes)
                 : "memory");
#endif
}

__device__ __forceinline__ void barrier_arrive(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(shared_address(bar)) : "memory");
#endif
}

// Waits until the phase of parity `parity` (0 for the first phase, 1 for the second, ...) has
// completed.
__device__ __forceinline__ void barrier_wait(std::uint64_t* bar, unsigned parity) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    const std::uint32_t a = shared_address(bar);
    std::uint32_t done = 0;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(a), "r"(parity)
                     : "memory");
    } while (!done);
#endif
}

// An L2 policy that lets the streamed lines go first (weights read once per call), so what the
// next kernel prefetched and what is read again (x, activations) stays.
__device__ __forceinline__ std::uint64_t evict_first_policy() {
    std::uint64_t pol = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
#endif
    return pol;
}

// `bytes` from global `src` into shared `dst`; `bar`'s phase counts them when they land.
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, unsigned bytes,
                                          std::uint64_t* bar, std::uint64_t policy) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint "
                 "[%0], [%1], %2, [%3], %4;" ::"r"(shared_address(dst)),
                 "l"(src), "r"(bytes), "r"(shared_address(bar)), "l"(policy)
                 : "memory");
#endif
}

// A hint: `bytes` from global `src` into L2 (no register, no shared memory written).
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
#endif
}

} // namespace fourfold::kernels::device
