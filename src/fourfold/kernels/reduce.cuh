#pragma once
// Block-wide reductions shared by the decoder's kernels (rmsnorm, rope_kv, argmax). Only
// included by .cu files.
#include <cuda_runtime.h>

namespace fourfold::kernels::device {

__device__ __forceinline__ float warp_sum_all(float v) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// The sum of v over the block (blockDim.x a multiple of 32, at most 1024), in every thread.
// `scratch` holds 32 floats; the call is a barrier.
__device__ __forceinline__ float block_sum(float v, float* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int warps = (blockDim.x + 31) / 32;
    v = warp_sum_all(v);
    __syncthreads(); // scratch may still be read by a previous call
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    float t = lane < warps ? scratch[lane] : 0.f;
    return warp_sum_all(t);
}

} // namespace fourfold::kernels::device
