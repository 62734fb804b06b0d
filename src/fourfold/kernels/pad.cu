// Constant pad kernel (see pad.hpp). Output-driven: a thread owns V consecutive output elements
// (16 bytes, one store). Where they fall inside one output row and inside the input row it maps
// to (the common case), the V input elements are fetched with at most two aligned 16-byte loads
// and a funnel shift, whatever the input's element alignment; elsewhere (the pad borders, a
// chunk that spans two rows) each element is decided alone. Index arithmetic is 32-bit with
// multiply-high division (the output has fewer than 2^31 elements).
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/pad.hpp"

#include <cstdint>

namespace fourfold::kernels {
namespace {

using namespace device;

// n / d for n < 2^31 by a multiply-high and a shift (Granlund-Montgomery, as PyTorch's
// IntDivider); built on the host.
struct divider {
    std::uint32_t d = 1, m = 1, s = 0;
    divider() = default;
    explicit divider(std::uint32_t divisor) : d(divisor) {
        s = 0;
        while ((std::uint64_t{1} << s) < d) ++s;
        const std::uint64_t one = 1;
        m = static_cast<std::uint32_t>(((one << 32) * ((one << s) - d)) / d + 1);
    }
    __device__ __forceinline__ std::uint32_t div(std::uint32_t n) const {
        return (__umulhi(n, m) + n) >> s;
    }
};

struct pad_params {
    std::uint32_t total;
    std::uint32_t od[5]; // output dims
    std::int32_t id[5];  // input dims
    std::int32_t pb[5];  // pads before
    std::int64_t is[5];  // input strides
    divider by_w, by_h, by_t, by_c;
};

// Where output row `row` (an index over the first four output dims) comes from: false for a
// row of padding, else its input row.
template <typename T>
__device__ __forceinline__ bool locate(const pad_params& p, const T* x, std::uint32_t row,
                                       const T*& src) {
    const std::uint32_t q3 = p.by_h.div(row);
    const std::uint32_t q2 = p.by_t.div(q3);
    const std::uint32_t q1 = p.by_c.div(q2);
    const int i3 = static_cast<int>(row - q3 * p.od[3]) - p.pb[3];
    const int i2 = static_cast<int>(q3 - q2 * p.od[2]) - p.pb[2];
    const int i1 = static_cast<int>(q2 - q1 * p.od[1]) - p.pb[1];
    const int i0 = static_cast<int>(q1) - p.pb[0];
    if (static_cast<unsigned>(i0) >= static_cast<unsigned>(p.id[0]) ||
        static_cast<unsigned>(i1) >= static_cast<unsigned>(p.id[1]) ||
        static_cast<unsigned>(i2) >= static_cast<unsigned>(p.id[2]) ||
        static_cast<unsigned>(i3) >= static_cast<unsigned>(p.id[3]))
        return false;
    src = x + i0 * p.is[0] + i1 * p.is[1] + i2 * p.is[2] + i3 * p.is[3];
    return true;
}

// 16 bytes starting at any element-aligned address, from the (at most two) aligned 16-byte
// blocks that hold them; each block holds at least one of the wanted bytes, so neither read
// leaves the allocation.
__device__ __forceinline__ uint4 load16_any(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    const auto* q = reinterpret_cast<const uint4*>(a & ~std::uintptr_t{15});
    const unsigned sh = static_cast<unsigned>(a & 15);
    const uint4 lo = __ldg(q);
    if (sh == 0) return lo;
    const uint4 hi = __ldg(q + 1);
    const unsigned r = (sh & 3) * 8;
    const unsigned w0 = lo.x, w1 = lo.y, w2 = lo.z, w3 = lo.w, w4 = hi.x, w5 = hi.y, w6 = hi.z, w7 = hi.w;
    switch (sh >> 2) {
    case 0: return make_uint4(__funnelshift_r(w0, w1, r), __funnelshift_r(w1, w2, r), __funnelshift_r(w2, w3, r), __funnelshift_r(w3, w4, r));
    case 1: return make_uint4(__funnelshift_r(w1, w2, r), __funnelshift_r(w2, w3, r), __funnelshift_r(w3, w4, r), __funnelshift_r(w4, w5, r));
    case 2: return make_uint4(__funnelshift_r(w2, w3, r), __funnelshift_r(w3, w4, r), __funnelshift_r(w4, w5, r), __funnelshift_r(w5, w6, r));
    default: return make_uint4(__funnelshift_r(w3, w4, r), __funnelshift_r(w4, w5, r), __funnelshift_r(w5, w6, r), __funnelshift_r(w6, w7, r));
    }
}

template <typename T>
__device__ __forceinline__ T element_at(const pad_params& p, const T* x, std::uint32_t o, T value) {
    const std::uint32_t row = p.by_w.div(o);
    const int c = static_cast<int>(o - row * p.od[4]) - p.pb[4];
    const T* src = nullptr;
    if (!locate(p, x, row, src) || static_cast<unsigned>(c) >= static_cast<unsigned>(p.id[4]))
        return value;
    return src[c * p.is[4]];
}

template <typename T, int V>
__global__ void __launch_bounds__(256)
    pad_kernel(const T* __restrict__ x, T* __restrict__ y, pad_params p, T value) {
    const std::uint32_t chunks = (p.total + V - 1) / V;
    for (std::uint32_t ch = blockIdx.x * blockDim.x + threadIdx.x; ch < chunks;
         ch += gridDim.x * blockDim.x) {
        const std::uint32_t o = ch * V;
        if constexpr (V > 1) {
            const std::uint32_t row = p.by_w.div(o);
            const std::uint32_t col = o - row * p.od[4];
            if (col + V <= p.od[4]) { // the chunk lies in one output row (so below total)
                const T* src = nullptr;
                const bool mapped = locate(p, x, row, src);
                const int c0 = static_cast<int>(col) - p.pb[4];
                uint4 out;
                if (mapped && p.is[4] == 1 && c0 >= 0 && c0 + V <= p.id[4]) {
                    out = load16_any(src + c0);
                } else {
                    T* e = reinterpret_cast<T*>(&out);
#pragma unroll
                    for (int j = 0; j < V; ++j) {
                        const int c = c0 + j;
                        e[j] = mapped && static_cast<unsigned>(c) < static_cast<unsigned>(p.id[4])
                                   ? src[c * p.is[4]]
                                   : value;
                    }
                }
                *reinterpret_cast<uint4*>(y + o) = out;
                continue;
            }
        }
        // a chunk across two rows, the ragged end, or the scalar path: element by element
#pragma unroll
        for (int j = 0; j < V; ++j)
            if (o + j < p.total) y[o + j] = element_at(p, x, o + j, value);
    }
}

template <typename T> T constant_of(double v) {
    if constexpr (sizeof(T) == 4) return static_cast<float>(v);
    else if constexpr (element<T>::tag == elem::f16) return __float2half_rn(static_cast<float>(v));
    else return __float2bfloat16_rn(static_cast<float>(v));
}

template <typename T>
launch_status launch_typed(const pad_plan& plan, const pad_args& a, stream_t stream) {
    // right-align to 5 dimensions: leading dimensions of size 1, no pad
    pad_params p{};
    const int lead = k_pad_max_dims - a.dims;
    for (int i = 0; i < k_pad_max_dims; ++i) {
        const int s = i - lead;
        const std::int64_t in = s >= 0 ? a.in_shape[s] : 1;
        const std::int64_t b = s >= 0 ? a.before[s] : 0;
        const std::int64_t e = s >= 0 ? a.after[s] : 0;
        p.id[i] = static_cast<std::int32_t>(in);
        p.pb[i] = static_cast<std::int32_t>(b);
        p.od[i] = static_cast<std::uint32_t>(in + b + e);
        p.is[i] = s >= 0 ? a.in_stride[s] : 0;
    }
    p.total = static_cast<std::uint32_t>(plan.out_elements);
    p.by_w = divider(p.od[4]);
    p.by_h = divider(p.od[3]);
    p.by_t = divider(p.od[2]);
    p.by_c = divider(p.od[1]);
    const auto* x = static_cast<const T*>(a.x);
    auto* y = static_cast<T*>(a.y);
    const T value = constant_of<T>(a.value);
    const auto grid = static_cast<unsigned>(plan.blocks);
    constexpr int vw = 16 / sizeof(T);
    if (plan.vec == vw) pad_kernel<T, vw><<<grid, plan.threads, 0, stream>>>(x, y, p, value);
    else pad_kernel<T, 1><<<grid, plan.threads, 0, stream>>>(x, y, p, value);
    return status_of(cudaGetLastError());
}

} // namespace

launch_status launch_pad(const pad_plan& p, const pad_args& a, stream_t stream) {
    if (!p.valid.empty()) return {static_cast<int>(cudaErrorInvalidValue), p.valid};
    switch (a.type) {
    case elem::f32: return launch_typed<float>(p, a, stream);
    case elem::f16: return launch_typed<__half>(p, a, stream);
    case elem::bf16: return launch_typed<__nv_bfloat16>(p, a, stream);
    }
    return {static_cast<int>(cudaErrorInvalidValue), "unknown element type"};
}

} // namespace fourfold::kernels
