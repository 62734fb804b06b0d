#pragma once
// Device-side element helpers shared by the kernels: 16-byte packets of any element type seen as
// floats, and conversions. Only included by .cu files.
#include "fourfold/kernels/kernel_api.hpp"

#include <cstddef>
#include <cstring>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math_constants.h>
#include <string>
#include <utility>

namespace fourfold::kernels::device {

template <typename T> struct element;
template <> struct element<float> {
    static constexpr elem tag = elem::f32;
    __device__ static float to_float(float v) { return v; }
    __device__ static float from_float(float v) { return v; }
};
template <> struct element<__half> {
    static constexpr elem tag = elem::f16;
    __device__ static float to_float(__half v) { return __half2float(v); }
    __device__ static __half from_float(float v) { return __float2half_rn(v); }
};
template <> struct element<__nv_bfloat16> {
    static constexpr elem tag = elem::bf16;
    __device__ static float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
    __device__ static __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
};

// What the kernel before may have written (a dependent launch's input, after dependency_wait()
// below): a coherent ld.global, volatile and with a memory clobber, so that neither the compiler
// nor ptxas moves it above the wait. Never __ldg (ld.global.nc) for such data: .nc promises the
// data read-only for the kernel's whole life, and ptxas does hoist such loads above
// griddepcontrol.wait (ACQBULK in the SASS). Seen in nvcc 13.0's sm_90a code: the column-
// stationary SwiGLU's first [gate | up] vectors (llama3-8b fp8's relative L2 0.27 in session 41,
// where every test of the kernel alone passed), the softmax's first vectors of a row, the
// column-stationary GEMV's x. scripts/check_sass_waits.py checks every kernel's SASS for such a
// load (ctest kernels.sass_waits where cuobjdump is found). 2, 4, 8 or 16 bytes.
template <typename R> __device__ __forceinline__ R load_after_wait(const R* p) {
    static_assert(sizeof(R) == 2 || sizeof(R) == 4 || sizeof(R) == 8 || sizeof(R) == 16,
                  "a dependent input is read in units of 2, 4, 8 or 16 bytes");
    R out;
    if constexpr (sizeof(R) == 16) {
        uint4 v;
        asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p)
                     : "memory");
        memcpy(&out, &v, sizeof out);
    } else if constexpr (sizeof(R) == 8) {
        uint2 v;
        asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p) : "memory");
        memcpy(&out, &v, sizeof out);
    } else if constexpr (sizeof(R) == 4) {
        unsigned v;
        asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
        memcpy(&out, &v, sizeof out);
    } else {
        unsigned short v;
        asm volatile("ld.global.u16 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
        memcpy(&out, &v, sizeof out);
    }
    return out;
}

// VEC elements moved as one unit: a 16-byte uint4 for VEC * sizeof(T) == 16, else one T.
template <typename T, int VEC> struct packet {
    static_assert(VEC * sizeof(T) == 16, "a packet is 16 bytes or one element");
    using raw = uint4;
    __device__ static void unpack(const raw& r, float (&f)[VEC]) {
        const T* e = reinterpret_cast<const T*>(&r);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            f[j] = element<T>::to_float(e[j]);
    }
    __device__ static raw pack(const float (&f)[VEC]) {
        raw r;
        T* e = reinterpret_cast<T*>(&r);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            e[j] = element<T>::from_float(f[j]);
        return r;
    }
    // (the softmax's and swiglu's input: the kernel before's output)
    __device__ static raw load(const raw* p) {
        return load_after_wait(p);
    }
};
template <typename T> struct packet<T, 1> {
    using raw = T;
    __device__ static void unpack(const raw& r, float (&f)[1]) { f[0] = element<T>::to_float(r); }
    __device__ static raw pack(const float (&f)[1]) { return element<T>::from_float(f[0]); }
    __device__ static raw load(const raw* p) { return load_after_wait(p); }
};

// RMSNorm's last step on a packed vector: x times inv times the norm's weight, packed again (the
// order and the one rounding kernels/rmsnorm.cu has): the GEMVs' norm prologue and the fused MoE
// block's alike.
template <typename T>
__device__ __forceinline__ uint4 rms_scaled(const uint4 xq, const uint4 nwq, float inv) {
    constexpr int VEC = 16 / sizeof(T);
    using P = packet<T, VEC>;
    float f[VEC], nw[VEC];
    P::unpack(xq, f);
    P::unpack(nwq, nw);
#pragma unroll
    for (int j = 0; j < VEC; ++j)
        f[j] = f[j] * inv * nw[j];
    return P::pack(f);
}

template <elem E> struct type_of;
template <> struct type_of<elem::f32> { using type = float; };
template <> struct type_of<elem::f16> { using type = __half; };
template <> struct type_of<elem::bf16> { using type = __nv_bfloat16; };

// SwiGLU's activation: one definition, so the swiglu kernel, the GEMV's SwiGLU prologue and the
// MoE step compute the same bits. The hardware exponential and an approximate division (about
// 1e-6 relative, far under a bf16 or fp16 rounding; within the fp32 tests' 2e-5): every block of
// the down projection's GEMV computes all of its K activations (14,336 for llama3-8b, 4 blocks
// an SM), where expf and an IEEE division cost about 15 instructions an element (s29_c: +3.2 µs
// over no prologue). Large negative g gives -0 (the exact value underflows there anyway).
__device__ __forceinline__ float silu(float g) {
    return __fdividef(g, 1.f + __expf(-g));
}

// RoPE's rotation of element i of a head: v cos + rotated sin, rotated = -v[i + half] below the
// half, v[i - half] above. One definition (one contraction into an FMA), so rope_kv and the rope
// fused into decode attention write the same bits.
__device__ __forceinline__ float rope_rotate(float v, float rotated, float c, float s) {
    return fmaf(v, c, rotated * s);
}

// Programmatic dependent launch (sm_90 on; nothing on older devices, where a launch is serial
// anyway). A kernel launched with launch_serialised_after(..., true) may start while the kernel
// before it on the stream is still running: it must call dependency_wait() before it reads
// anything that kernel may have written (x, never the weights of a model, but the op benchmark
// makes no exception: only L2 prefetches, which read through the one coherent L2, go before the
// wait) and before it writes anything. Such inputs are read by load_after_wait (above) where
// ptxas would otherwise move a __ldg above the wait; the GEMVs' and the MoE's x loads inside
// their loops are still __ldg, kept below the wait by ptxas today, which ctest
// kernels.sass_waits (scripts/check_sass_waits.py) checks on every build that has cuobjdump.
// allow_dependents() lets the next kernel launch once every block of this one has run it.
__device__ __forceinline__ void dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// A hint: the 128-byte line holding p into L2 (no register written, nothing to go stale).
__device__ __forceinline__ void prefetch_l2(const void* p) {
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
}
// The 128-byte lines a span of `bytes` touches: at most this many (one more where it straddles a
// line boundary), and line l of them into L2 where the span reaches it.
__device__ __forceinline__ int span_lines(std::int64_t bytes) {
    return static_cast<int>((bytes + 127) / 128) + 1;
}
__device__ __forceinline__ void prefetch_span_line_l2(const void* first, std::int64_t bytes,
                                                      int l) {
    const auto a = reinterpret_cast<std::uintptr_t>(first);
    const auto line = (a & ~std::uintptr_t{127}) + static_cast<std::uintptr_t>(l) * 128;
    if (line < a + static_cast<std::uintptr_t>(bytes))
        prefetch_l2(reinterpret_cast<const void*>(line));
}

} // namespace fourfold::kernels::device

namespace fourfold::kernels {

// The launch's outcome from the runtime's last error (a launch never synchronises).
inline launch_status status_of(cudaError_t e) {
    if (e == cudaSuccess)
        return {};
    return {static_cast<int>(e), cudaGetErrorString(e)};
}

inline launch_status invalid(std::string why) {
    return {static_cast<int>(cudaErrorInvalidValue), std::move(why)};
}

// Calls launch(T{}) with T the device type of `e` (float, __half, __nv_bfloat16): the one
// switch from the kernels' element tag to their templates.
template <class Launch> launch_status by_element(elem e, Launch&& launch) {
    switch (e) {
    case elem::f32:
        return launch(float{});
    case elem::f16:
        return launch(__half{});
    case elem::bf16:
        return launch(__nv_bfloat16{});
    }
    return invalid("unknown element type");
}

// Launches `kernel` on `stream`; with `dependent` (a device of compute capability 9 or more:
// the plan decides) as a programmatic dependent launch, which may overlap the previous kernel's
// last blocks (the kernel then calls dependency_wait(), see above). Graph capture keeps the
// edge programmatic.
// (with `smem` bytes of dynamic shared memory: at most 48 KiB unless the kernel's attribute
// cudaFuncAttributeMaxDynamicSharedMemorySize was raised first)
template <typename... Params, typename... Args>
cudaError_t launch_serialised_after_smem(void (*kernel)(Params...), dim3 grid, dim3 block,
                                         std::size_t smem, stream_t stream, bool dependent,
                                         Args&&... args) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = dependent ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}
// A cluster launch (clusters of `cluster` blocks along x, sm_90 on), dependent as above.
template <typename... Params, typename... Args>
cudaError_t launch_cluster_after(void (*kernel)(Params...), dim3 grid, dim3 block, int cluster,
                                 stream_t stream, bool dependent, Args&&... args) {
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.stream = stream;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(cluster);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = dependent ? 2 : 1;
    return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}
template <typename... Params, typename... Args>
cudaError_t launch_serialised_after(void (*kernel)(Params...), dim3 grid, dim3 block,
                                    stream_t stream, bool dependent, Args&&... args) {
    return launch_serialised_after_smem(kernel, grid, block, 0, stream, dependent,
                                        std::forward<Args>(args)...);
}

} // namespace fourfold::kernels
