// SwiGLU kernel (see swiglu.hpp): a thread a packet of VEC outputs, grid-stride.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/swiglu.hpp"

namespace fourfold::kernels {
namespace {

using namespace device;

template <typename T, int VEC> __global__ void swiglu_kernel(swiglu_args a) {
    using pk = packet<T, VEC>;
    const std::int64_t per_row = a.width / VEC;
    const std::int64_t units = a.tokens * per_row;
    allow_dependents();
    dependency_wait(); // gate_up is the launch before's
    for (std::int64_t u = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
         u < units; u += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
        const std::int64_t t = u / per_row, c = (u % per_row) * VEC;
        const T* row = static_cast<const T*>(a.gate_up) + t * a.ld_in;
        float g[VEC], up[VEC], o[VEC];
        pk::unpack(pk::load(reinterpret_cast<const typename pk::raw*>(row + c)), g);
        pk::unpack(pk::load(reinterpret_cast<const typename pk::raw*>(row + a.width + c)), up);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            o[j] = silu(g[j]) * up[j];
        *reinterpret_cast<typename pk::raw*>(static_cast<T*>(a.out) + t * a.ld_out + c) =
            pk::pack(o);
    }
}

template <typename T>
launch_status launch_typed(const swiglu_plan& p, const swiglu_args& a, stream_t stream) {
    const dim3 grid(static_cast<unsigned>(p.blocks)), block(static_cast<unsigned>(p.threads));
    constexpr int vw = static_cast<int>(16 / sizeof(T));
    if (p.vec == vw)
        return status_of(launch_serialised_after(swiglu_kernel<T, vw>, grid, block, stream,
                                                 p.dependent_launch, a));
    if (p.vec == 1)
        return status_of(launch_serialised_after(swiglu_kernel<T, 1>, grid, block, stream,
                                                 p.dependent_launch, a));
    return invalid("swiglu: vec must be 1 or 16 bytes of elements");
}

} // namespace

launch_status launch_swiglu(const swiglu_plan& p, const swiglu_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return by_element(a.type, [&](auto t) { return launch_typed<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
