// Constant pad kernel (see pad.hpp): a warp per few output rows of one plane, index arithmetic
// once per warp, 32-bit with multiply-high division (the output has fewer than 2^31 elements).
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
    std::uint32_t od[5]; // output dims
    std::int32_t id[5];  // input dims
    std::int32_t pb[5];  // pads before
    std::int64_t is[5];  // input strides
    divider by_t, by_c;  // by the output's dims 2 and 1
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

// A warp takes k_pad_rows_per_warp consecutive output rows (the last dimension) of one output
// plane (an index over the first three dimensions): where the plane comes from is decided once,
// by the whole warp alike; a row of it is then one multiply-add away. The chunk's rows are one
// flat run of VE-element units (a 2-, 4-, 8- or 16-byte store each; rows start at that
// alignment), taken by the lanes in turn, so no lane idles at a row's end (a warp per row left
// the lanes past a 130-element row's 128th idle for a whole third step); each lane loads the
// elements of B units before it stores any, B x VE loads in flight. An input element may start
// at any alignment, so it is loaded alone; whole pad rows and planes are the constant alone.
constexpr int k_units_in_flight = 4; // B

template <typename T, int VE, bool CONTIGUOUS>
__global__ void __launch_bounds__(256, k_pad_blocks_per_sm)
    pad_planes(const T* __restrict__ x, T* __restrict__ y, pad_params p, T value,
               std::uint32_t chunks, std::uint32_t chunks_per_plane) {
    using store_t = typename store_of<T, VE>::type;
    // (16-byte units: 2 in flight, 16 loads, inside the register budget of 5 blocks an SM)
    constexpr int B = VE >= 8 ? 2 : k_units_in_flight;
    const int lane = threadIdx.x % 32;
    const std::uint32_t warps = gridDim.x * (blockDim.x / 32);
    const int width = static_cast<int>(p.od[4]);
    const int units_per_row = width / VE;
    // a lane's units are 32 apart: rows and unit columns to step, and where the lane starts
    const int step_r = 32 / units_per_row, step_c = 32 - step_r * units_per_row;
    const int lane_r = lane / units_per_row, lane_c = lane - lane_r * units_per_row;
    for (std::uint32_t chunk = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32; chunk < chunks;
         chunk += warps) {
        // the plane (warp-uniform): output (q0, q1, q2) -> input (i0, i1, i2)
        const std::uint32_t plane = chunk / chunks_per_plane;
        const std::uint32_t h_begin = (chunk - plane * chunks_per_plane) * k_pad_rows_per_warp;
        const std::uint32_t q01 = p.by_t.div(plane);
        const std::uint32_t q0 = p.by_c.div(q01);
        const int i2 = static_cast<int>(plane - q01 * p.od[2]) - p.pb[2];
        const int i1 = static_cast<int>(q01 - q0 * p.od[1]) - p.pb[1];
        const int i0 = static_cast<int>(q0) - p.pb[0];
        const bool plane_ok = static_cast<unsigned>(i0) < static_cast<unsigned>(p.id[0]) &&
                              static_cast<unsigned>(i1) < static_cast<unsigned>(p.id[1]) &&
                              static_cast<unsigned>(i2) < static_cast<unsigned>(p.id[2]);
        const T* plane_src = x + (plane_ok ? i0 * p.is[0] + i1 * p.is[1] + i2 * p.is[2] : 0);
        const int rows = min(k_pad_rows_per_warp, static_cast<int>(p.od[3] - h_begin));
        const int units = rows * units_per_row;
        T* const out = y + (static_cast<std::size_t>(plane) * p.od[3] + h_begin) * width;

        // the lane's first unit, as (row r, unit column cu) of the chunk
        int r = lane_r, cu = lane_c;
        for (int u = lane; u < units; u += 32 * B) {
            T v[B][VE];
            int ur[B], uc[B];
#pragma unroll
            for (int b = 0; b < B; ++b) {
                ur[b] = r;
                uc[b] = cu;
                const int hi = static_cast<int>(h_begin) + r - p.pb[3];
                const bool row_ok = plane_ok && u + 32 * b < units &&
                                    static_cast<unsigned>(hi) < static_cast<unsigned>(p.id[3]);
                const T* src = plane_src + (row_ok ? hi * p.is[3] : 0);
#pragma unroll
                for (int j = 0; j < VE; ++j) {
                    const int wi = cu * VE + j - p.pb[4];
                    const bool ok =
                        row_ok && static_cast<unsigned>(wi) < static_cast<unsigned>(p.id[4]);
                    v[b][j] = ok ? src[CONTIGUOUS ? wi : wi * p.is[4]] : value;
                }
                // the next unit of this lane: 32 units on
                r += step_r;
                cu += step_c;
                if (cu >= units_per_row) {
                    cu -= units_per_row;
                    ++r;
                }
            }
#pragma unroll
            for (int b = 0; b < B; ++b) {
                if (u + 32 * b >= units)
                    break;
                store_t o;
                T* e = reinterpret_cast<T*>(&o);
#pragma unroll
                for (int j = 0; j < VE; ++j)
                    e[j] = v[b][j];
                *reinterpret_cast<store_t*>(out + ur[b] * width + uc[b] * VE) = o;
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
    p.by_t = divider(p.od[2]);
    p.by_c = divider(p.od[1]);
    const auto* x = static_cast<const T*>(a.x);
    auto* y = static_cast<T*>(a.y);
    const T value = constant_of<T>(a.value);
    const auto grid = static_cast<unsigned>(plan.blocks);
    const auto chunks = static_cast<std::uint32_t>(plan.chunks);
    const auto per_plane = static_cast<std::uint32_t>(plan.chunks_per_plane);
    const bool contiguous = p.is[4] == 1;
    auto run = [&](auto ve, auto contig) {
        pad_planes<T, decltype(ve)::value, decltype(contig)::value>
            <<<grid, plan.threads, 0, stream>>>(x, y, p, value, chunks, per_plane);
    };
    auto with_ve = [&](auto ve) {
        if (contiguous)
            run(ve, std::true_type{});
        else
            run(ve, std::false_type{});
    };
    switch (plan.vec) {
    case 8:
        if constexpr (sizeof(T) == 2) {
            with_ve(std::integral_constant<int, 8>{});
            break;
        }
        [[fallthrough]];
    case 4:
        with_ve(std::integral_constant<int, 4>{});
        break;
    case 2:
        with_ve(std::integral_constant<int, 2>{});
        break;
    default:
        with_ve(std::integral_constant<int, 1>{});
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
