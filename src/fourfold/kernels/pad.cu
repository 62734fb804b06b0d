// Constant pad kernel (see pad.hpp): one warp per output row, index arithmetic once per row,
// 32-bit with multiply-high division (the output has fewer than 2^31 elements).
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/pad.hpp"

#include <cstdint>
#include <type_traits>

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
        while ((std::uint64_t{1} << s) < d)
            ++s;
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

template <typename T, int VE> struct store_of;
template <typename T> struct store_of<T, 1> { using type = T; };
template <typename T> struct store_of<T, 2> {
    using type = std::conditional_t<sizeof(T) == 2, unsigned, uint2>;
};
template <typename T> struct store_of<T, 4> {
    using type = std::conditional_t<sizeof(T) == 2, uint2, uint4>;
};
template <typename T> struct store_of<T, 8> { using type = uint4; }; // 2-byte elements only

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

// A warp per k_rows_per_warp output rows (the last dimension): where each row comes from is
// decided once, by the whole warp alike (no divergence); then each lane writes VE consecutive
// elements of every one of those rows per step (one 2-, 4-, 8- or 16-byte store: rows start at
// that alignment), the input elements of all the rows loaded first, so a lane has
// k_rows_per_warp x VE loads in flight; an input row may start at any element alignment, so they
// are loaded one by one. Whole pad rows are the constant alone, with no load.
constexpr int k_rows_per_warp = 4;

template <typename T, int VE>
__global__ void __launch_bounds__(256) pad_rows(const T* __restrict__ x, T* __restrict__ y,
                                                pad_params p, T value, std::uint32_t rows) {
    using store_t = typename store_of<T, VE>::type;
    constexpr int RW = k_rows_per_warp;
    const int lane = threadIdx.x % 32;
    const int width = static_cast<int>(p.od[4]), in_width = p.id[4], before = p.pb[4];
    const std::int64_t in_step = p.is[4];
    const std::uint32_t warps = gridDim.x * (blockDim.x / 32);
    for (std::uint32_t first = (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * RW;
         first < rows; first += warps * RW) {
        const T* src[RW];
        bool mapped[RW];
#pragma unroll
        for (int r = 0; r < RW; ++r) {
            src[r] = x;
            mapped[r] = first + r < rows && locate(p, x, first + r, src[r]);
        }
        for (int c = lane * VE; c < width; c += 32 * VE) {
            T v[RW][VE];
#pragma unroll
            for (int r = 0; r < RW; ++r)
#pragma unroll
                for (int j = 0; j < VE; ++j) {
                    const int ci = c + j - before;
                    v[r][j] =
                        mapped[r] && static_cast<unsigned>(ci) < static_cast<unsigned>(in_width)
                            ? src[r][ci * in_step]
                            : value;
                }
#pragma unroll
            for (int r = 0; r < RW; ++r) {
                if (first + r >= rows)
                    break;
                store_t out;
                T* e = reinterpret_cast<T*>(&out);
#pragma unroll
                for (int j = 0; j < VE; ++j)
                    e[j] = v[r][j];
                *reinterpret_cast<store_t*>(y + static_cast<std::size_t>(first + r) * width + c) =
                    out;
            }
        }
    }
}

template <typename T> T constant_of(double v) {
    if constexpr (sizeof(T) == 4)
        return static_cast<float>(v);
    else if constexpr (element<T>::tag == elem::f16)
        return __float2half_rn(static_cast<float>(v));
    else
        return __float2bfloat16_rn(static_cast<float>(v));
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
    const auto rows = static_cast<std::uint32_t>(plan.out_elements / p.od[4]);
    switch (plan.vec) {
    case 8:
        if constexpr (sizeof(T) == 2) {
            pad_rows<T, 8><<<grid, plan.threads, 0, stream>>>(x, y, p, value, rows);
            break;
        }
        [[fallthrough]];
    case 4:
        pad_rows<T, 4><<<grid, plan.threads, 0, stream>>>(x, y, p, value, rows);
        break;
    case 2:
        pad_rows<T, 2><<<grid, plan.threads, 0, stream>>>(x, y, p, value, rows);
        break;
    default:
        pad_rows<T, 1><<<grid, plan.threads, 0, stream>>>(x, y, p, value, rows);
        break;
    }
    return status_of(cudaGetLastError());
}

} // namespace

launch_status launch_pad(const pad_plan& p, const pad_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return by_element(a.type, [&](auto t) { return launch_typed<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
