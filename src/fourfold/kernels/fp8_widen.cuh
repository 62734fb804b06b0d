#pragma once
// The FP8 GEMV's widening of its operands to floats (kernels/gemv_fp8.cu; bench/gpu/gemv_probe.cu
// times copies of its kernel with these same functions). Only included by .cu files.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace fourfold::kernels::device {

// Two e4m3 values (the low and high byte of `pair`) as two floats, exactly: cvt.rn.f16x2.e4m3x2
// (sm_89 on; e4m3 is a subset of fp16), then fp16 to fp32.
__device__ __forceinline__ float2 e4m3x2_to_float2(unsigned short pair) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
    return __half22float2(__half2(h));
}

// 8 e4m3 values (two 32-bit words of a 16-byte vector) as floats.
__device__ __forceinline__ void unpack_e4m3(unsigned w0, unsigned w1, float (&f)[8]) {
    const unsigned words[2] = {w0, w1};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const float2 lo = e4m3x2_to_float2(static_cast<unsigned short>(words[i] & 0xffffu));
        const float2 hi = e4m3x2_to_float2(static_cast<unsigned short>(words[i] >> 16));
        f[4 * i] = lo.x;
        f[4 * i + 1] = lo.y;
        f[4 * i + 2] = hi.x;
        f[4 * i + 3] = hi.y;
    }
}

// 8 bf16 values of one 16-byte vector as floats: a bf16 is the high half of its float, placed
// there by a byte permute (PRMT, the integer pipe). Written as shifts and masks, the compiler
// made them IMAD.U32 by 0x10000 (and PRMT + IMAD for the high halves) on the FMA pipe the
// conversions and FMAs use: bench/gpu/gemv_probe.cu's copy of the balanced FP8 kernel went
// 34.2 -> 33.1-33.3 µs over 117 MB and 136.8 -> 131.5 over the LM head's 525 MB with the same
// bits (H200, session 39); the product itself did not move beyond its run-to-run spread (28672 x
// 4096 35.2 -> 35.7 µs, llama3-8b fp8 353.3 -> 351.1 tokens/s, the unchanged bf16 GEMV's figures
// 0.6-3 % up on that machine too; session 40).
__device__ __forceinline__ void unpack_bf16(const uint4& v, float* f) {
    const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(__byte_perm(words[i], 0u, 0x1044));     // low half << 16
        f[2 * i + 1] = __uint_as_float(__byte_perm(words[i], 0u, 0x3244)); // high half, low 0
    }
}

} // namespace fourfold::kernels::device
