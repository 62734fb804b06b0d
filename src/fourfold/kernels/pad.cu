// Constant pad kernels (see pad.hpp): pad_staged, input rows staged through shared memory;
// pad_flat, each warp an even share of the flat output loading into registers; and pad_planes,
// a warp per few output rows of one plane (FOURFOLD_PAD_FLAT=0). Index arithmetic
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
    std::uint32_t od[5]; // output dims
    std::int32_t id[5];  // input dims
    std::int32_t pb[5];  // pads before
    std::int64_t is[5];  // input strides
    divider by_t, by_c;  // by the output's dims 2 and 1
};

// Where output plane `plane` (an index over the output's first three dimensions) lies in the
// input: its element offset there, or not at all (a plane of the pads before or after).
struct input_plane {
    bool ok;
    std::int64_t offset; // 0 where !ok
};
__device__ __forceinline__ input_plane locate_plane(const pad_params& p, std::uint32_t plane) {
    const std::uint32_t q01 = p.by_t.div(plane);
    const std::uint32_t q0 = p.by_c.div(q01);
    const int i2 = static_cast<int>(plane - q01 * p.od[2]) - p.pb[2];
    const int i1 = static_cast<int>(q01 - q0 * p.od[1]) - p.pb[1];
    const int i0 = static_cast<int>(q0) - p.pb[0];
    const bool ok = static_cast<unsigned>(i0) < static_cast<unsigned>(p.id[0]) &&
                    static_cast<unsigned>(i1) < static_cast<unsigned>(p.id[1]) &&
                    static_cast<unsigned>(i2) < static_cast<unsigned>(p.id[2]);
    return {ok, ok ? i0 * p.is[0] + i1 * p.is[1] + i2 * p.is[2] : 0};
}

// The input lines that output rows [oh0, oh0 + rows) of output plane `plane` read, into L2: lane
// t of nt, at most `budget` lines a lane, rows with stride-1 elements only. Issued before the
// dependency wait (the one read allowed there, elements.cuh), so the first DRAM round trip of a
// warp overlaps the end of the launch before it (pad_plan.cpp has its figures). `as_run`
// (pad_flat): where the input rows are contiguous, their lines as one run, no integer division a
// line (pad_planes keeps its line-by-row loop).
template <typename T>
__device__ __forceinline__ void prefetch_rows_l2(const T* x, const pad_params& p,
                                                 std::uint32_t plane, int oh0, int rows, int t,
                                                 int nt, int budget, bool as_run = false) {
    const input_plane in_plane = locate_plane(p, plane);
    const int lo = max(0, oh0 - p.pb[3]);
    const int hi = min(p.id[3], oh0 + rows - p.pb[3]);
    if (!in_plane.ok || hi <= lo)
        return;
    const T* const first = x + in_plane.offset + lo * p.is[3];
    if (as_run && p.is[3] == p.id[4]) {
        const std::int64_t bytes = std::int64_t{hi - lo} * p.id[4] * sizeof(T);
        const int n = min(span_lines(bytes), nt * budget);
        for (int l = t; l < n; l += nt)
            prefetch_span_line_l2(first, bytes, l);
        return;
    }
    const std::int64_t row_bytes = std::int64_t{p.id[4]} * sizeof(T);
    const int per_row = span_lines(row_bytes);
    const int n = (hi - lo) * per_row;
    for (int i = t, k = 0; i < n && k < budget; i += nt, ++k) {
        const int r = i / per_row;
        prefetch_span_line_l2(first + r * p.is[3], row_bytes, i - r * per_row);
    }
}
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
               std::uint32_t chunks, std::uint32_t chunks_per_plane, int prefetch_lines) {
    using store_t = typename store_of<T, VE>::type;
    // (16-byte units: 2 in flight, 16 loads, inside the register budget of 5 blocks an SM)
    constexpr int B = VE >= 8 ? 2 : k_units_in_flight;
    const int lane = threadIdx.x % 32;
    const std::uint32_t warps = gridDim.x * (blockDim.x / 32);
    const std::uint32_t first_chunk = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    allow_dependents();
    if (CONTIGUOUS && first_chunk < chunks) {
        const std::uint32_t plane = first_chunk / chunks_per_plane;
        const int h =
            static_cast<int>(first_chunk - plane * chunks_per_plane) * k_pad_rows_per_warp;
        prefetch_rows_l2(x, p, plane, h, min(k_pad_rows_per_warp, static_cast<int>(p.od[3]) - h),
                         lane, 32, prefetch_lines);
    }
    dependency_wait(); // x is read and y written only below
    const int width = static_cast<int>(p.od[4]);
    const int units_per_row = width / VE;
    // a lane's units are 32 apart: rows and unit columns to step, and where the lane starts
    const int step_r = 32 / units_per_row, step_c = 32 - step_r * units_per_row;
    const int lane_r = lane / units_per_row, lane_c = lane - lane_r * units_per_row;
    for (std::uint32_t chunk = first_chunk; chunk < chunks; chunk += warps) {
        // the plane (warp-uniform): output (q0, q1, q2) -> input (i0, i1, i2)
        const std::uint32_t plane = chunk / chunks_per_plane;
        const std::uint32_t h_begin = (chunk - plane * chunks_per_plane) * k_pad_rows_per_warp;
        const input_plane in_plane = locate_plane(p, plane);
        const bool plane_ok = in_plane.ok;
        const T* plane_src = x + in_plane.offset;
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

// The flat path's per-launch constants, made on the host: the warps' split, and a lane's steps
// (its units are 32 apart, so its row and unit column step by (step_r, step_c) a unit and its
// input row's offset in the plane by step_off; one input row more, carry_off, where the column
// wraps). Offsets within a plane are 32-bit (the plan takes the flat path only where they fit:
// pad_plan.cpp), so a unit's address is one 32-bit add and one wide multiply-add from the plane's
// base, not a 64-bit pointer step and select.
struct flat_params {
    pad_flat_split split;
    divider by_row_units, by_height;
    int row_units, step_r, step_c;
    int step_off, carry_off, row_stride, col_stride;
};

// The flat register path (pad_plan::flat, the default): the output's VE-element units as one flat
// run cut into one even share a warp (pad_flat_split, pad.hpp: shares a unit apart at most), so
// every warp of the one wave moves the same bytes and makes the same round trips. pad_planes'
// chunks of 8 rows did not divide evenly: the 96x5x130x130 bf16 pad's 11424 chunks on 5280 warps
// left 864 warps a third chunk of three loads-then-stores rounds each, while the rest had ended
// (the last 8 units of a chunk's 264 a round of their own). A lane takes units lane, lane + 32, ...
// of its warp's share, B of them loaded before any is stored; its (plane, row, unit column) stepped
// 32 units at a time, the plane looked up again only where the step crosses into another.
template <typename T, int VE, bool CONTIGUOUS, int B>
__global__ void __launch_bounds__(256, k_pad_blocks_per_sm)
    pad_flat(const T* __restrict__ x, T* __restrict__ y, pad_params p, T value, flat_params f,
             int prefetch_lines) {
    using store_t = typename store_of<T, VE>::type;
    const int lane = threadIdx.x % 32;
    const std::uint32_t warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const std::uint32_t begin = f.split.begin(warp), end = f.split.begin(warp + 1);
    const int height = static_cast<int>(p.od[3]);
    allow_dependents();
    if (CONTIGUOUS && prefetch_lines > 0 && begin < end) {
        // the input rows of the warp's first round (one row more for a share that starts mid-row)
        const std::uint32_t row = f.by_row_units.div(begin);
        const std::uint32_t plane = f.by_height.div(row);
        const int h = static_cast<int>(row - plane * height);
        const int first = static_cast<int>(min(end - begin, std::uint32_t{32 * B}));
        const auto rows = static_cast<int>(
            f.by_row_units.div(static_cast<std::uint32_t>(first + f.row_units - 1)));
        prefetch_rows_l2(x, p, plane, h, min(height - h, rows + 1), lane, 32, prefetch_lines, true);
    }
    dependency_wait(); // x is read and y written only below
    // The lane's first unit, begin + lane, as (plane, input row hi = h - pads before, unit column
    // cu); row_lim is the input's height where the plane is one of the input's, else 0, so that
    // one unsigned compare tells an input row; src points at the input row hi (read only then).
    const std::uint32_t first_unit = begin + lane;
    const std::uint32_t row = f.by_row_units.div(first_unit);
    int cu = static_cast<int>(first_unit - row * f.row_units);
    std::uint32_t plane = f.by_height.div(row);
    int hi = static_cast<int>(row - plane * height) - p.pb[3];
    const int hi_end = height - p.pb[3]; // hi of the plane's row past its last
    input_plane in_plane = locate_plane(p, plane);
    unsigned row_lim = in_plane.ok ? static_cast<unsigned>(p.id[3]) : 0U;
    const T* plane_src = x + in_plane.offset;
    int row_off = hi * f.row_stride; // the input row hi's offset in the plane (read only then)
    // one round: B units a lane loaded, then stored; TAIL checks each unit against the share's end
    auto round = [&](std::uint32_t base, auto tail) {
        constexpr bool TAIL = decltype(tail)::value;
        // the elements apart until every load of the round is issued: packed as they load
        // (760e68c), each unit's pack waited for its loads before the next unit's step (a branch)
        // and its loads, one round trip a unit (SASS, s56_b)
        T v[B][VE];
#pragma unroll
        for (int b = 0; b < B; ++b) {
            const bool in_share = !TAIL || base + 32 * b + lane < end;
            const bool row_ok = in_share && static_cast<unsigned>(hi) < row_lim;
            const int c0 = cu * VE - p.pb[4];
            const T* const s = plane_src + (row_off + (CONTIGUOUS ? c0 : c0 * f.col_stride));
#pragma unroll
            for (int j = 0; j < VE; ++j) {
                v[b][j] = value;
                if (row_ok && static_cast<unsigned>(c0 + j) < static_cast<unsigned>(p.id[4]))
                    v[b][j] = s[CONTIGUOUS ? j : j * f.col_stride];
            }
            // the lane's next unit, 32 on
            cu += f.step_c;
            const bool carry = cu >= f.row_units;
            cu -= carry ? f.row_units : 0;
            hi += f.step_r + (carry ? 1 : 0);
            row_off += carry ? f.carry_off : f.step_off;
            if (hi >= hi_end) {
                const auto h = static_cast<std::uint32_t>(hi + p.pb[3]);
                const std::uint32_t q = f.by_height.div(h);
                plane += q;
                hi = static_cast<int>(h - q * height) - p.pb[3];
                in_plane = locate_plane(p, plane);
                row_lim = in_plane.ok ? static_cast<unsigned>(p.id[3]) : 0U;
                plane_src = x + in_plane.offset;
                row_off = hi * f.row_stride;
            }
        }
        // The tail round stores its last unit first: stored first to last, ptxas moved the first
        // 16-byte unit's packs and store above the second unit's last loads (pad_flat<bf16 |
        // half, 8, contiguous, 2>: check_sass_rounds on s56_d's listing), and those loads left a
        // round trip late. (A warp barrier between did not stop it: 4 such waits, not 2.)
        T* const out = y + static_cast<std::size_t>(base + lane) * VE;
#pragma unroll
        for (int i = 0; i < B; ++i) {
            const int b = TAIL ? B - 1 - i : i;
            if (!TAIL || base + 32 * b + lane < end) {
                store_t o;
                T* const e = reinterpret_cast<T*>(&o);
#pragma unroll
                for (int j = 0; j < VE; ++j)
                    e[j] = v[b][j];
                *reinterpret_cast<store_t*>(out + std::size_t{32} * b * VE) = o;
            }
        }
    };
    std::uint32_t base = begin;
    for (; base + 32 * B <= end; base += 32 * B)
        round(base, std::false_type{});
    if (base < end)
        round(base, std::true_type{});
}

// The staged path. Loads into registers held too few bytes in flight (ncu, build e62084f: DRAM
// 28 % busy, 48 registers, 2-4 loads of 2 bytes a lane: input rows shifted by the pad start at
// any 2-byte boundary). cp.async holds them in shared memory instead: a block takes one tile,
// rows [oh0, oh0 + rows_per_tile) of one output plane, copies the input rows they map to into
// shared memory (16-byte copies wherever the source is 16-byte aligned, the few elements before
// and after one by one), waits, then writes the tile's output as one flat run of 16-byte units
// (elements before the first aligned unit and after the last alone), each unit's input bytes
// read from shared memory at any 2-byte offset as two aligned 16-byte reads and a funnel shift.
// 16 blocks an SM of 12 KB tiles hold up to 190 KB in flight where about 32 KB an SM cover the
// DRAM latency; resident blocks overlap one's wait with another's writes, so no double buffer.
// Shared memory: 16 guard bytes, the rows, 48 guard bytes (a unit's window reaches up to 14
// bytes before a row's first element and 46 past its last: read, never used).
constexpr int k_guard_front = 16;

__device__ __forceinline__ void copy16_async(void* smem, const void* global) {
    const auto s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(global) : "memory");
}

// n elements from src to dst_slot (16-byte aligned) + src's address mod 16, so that 16-byte
// aligned source chunks land on 16-byte aligned shared memory; thread t of nt.
template <typename T>
__device__ __forceinline__ void stage_run(const T* src, int n, char* dst_slot, int t, int nt) {
    const auto a = reinterpret_cast<std::uintptr_t>(src);
    T* dst = reinterpret_cast<T*>(dst_slot + (a & 15));
    const std::uintptr_t a16 = (a + 15) & ~std::uintptr_t{15};
    const std::uintptr_t e16 = (a + std::uintptr_t(n) * sizeof(T)) & ~std::uintptr_t{15};
    int head = n, tail = 0; // elements copied one by one, before and after the 16-byte chunks
    if (a16 < e16) {
        head = static_cast<int>((a16 - a) / sizeof(T));
        const int chunks = static_cast<int>((e16 - a16) / 16);
        tail = n - head - chunks * static_cast<int>(16 / sizeof(T));
        const char* g = reinterpret_cast<const char*>(a16);
        char* s = reinterpret_cast<char*>(dst + head);
        for (int i = t; i < chunks; i += nt)
            copy16_async(s + 16 * i, g + 16 * i);
    }
    for (int i = t; i < head + tail; i += nt) {
        const int k = i < head ? i : n - tail + (i - head);
        dst[k] = src[k];
    }
}

// 16 bytes of shared memory at byte offset off (a multiple of 2) from s (16-byte aligned).
__device__ __forceinline__ uint4 window16(const char* s, unsigned off) {
    const auto* p = reinterpret_cast<const uint4*>(s + (off & ~15u));
    const uint4 lo = p[0], hi = p[1];
    const unsigned w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const unsigned q = (off >> 2) & 3, sh = (off & 3) * 8;
    unsigned t[7], u[5];
#pragma unroll
    for (int k = 0; k < 7; ++k)
        t[k] = (q & 1) ? w[k + 1] : w[k];
#pragma unroll
    for (int k = 0; k < 5; ++k)
        u[k] = (q & 2) ? t[k + 2] : t[k];
    return {__funnelshift_r(u[0], u[1], sh), __funnelshift_r(u[1], u[2], sh),
            __funnelshift_r(u[2], u[3], sh), __funnelshift_r(u[3], u[4], sh)};
}

struct tile_params {
    divider by_tiles, by_w; // by tiles_per_plane, by the output row's length
    std::uint32_t tiles;    // tiles_per_plane
    std::uint32_t rows;     // output rows a tile
    std::uint32_t slot;     // shared bytes a staged row takes (rows mode)
    bool flat;              // the tile's input rows are one contiguous run
};

template <typename T>
__global__ void __launch_bounds__(k_pad_tile_threads, k_pad_tile_blocks_per_sm)
    pad_staged(const T* __restrict__ x, T* __restrict__ y, pad_params p, tile_params tp, T value) {
    constexpr int VE = 16 / sizeof(T);
    constexpr unsigned es = sizeof(T);
    extern __shared__ uint4 smem_raw[];
    char* const smem = reinterpret_cast<char*>(smem_raw);
    allow_dependents();
    dependency_wait(); // x is read and y written from the start

    // the tile: output plane (q0, q1, q2) -> input plane (i0, i1, i2), block-uniform
    const std::uint32_t plane = tp.by_tiles.div(blockIdx.x);
    const std::uint32_t oh0 = (blockIdx.x - plane * tp.tiles) * tp.rows;
    const input_plane in_plane = locate_plane(p, plane);
    const bool plane_ok = in_plane.ok;
    const int rows = min(static_cast<int>(tp.rows), static_cast<int>(p.od[3] - oh0));
    // input rows [lo, hi) of the plane; none where the plane or the tile is all constant
    const int lo = max(0, static_cast<int>(oh0) - p.pb[3]);
    const int hi = plane_ok ? min(p.id[3], static_cast<int>(oh0) + rows - p.pb[3]) : 0;
    const int width_in = p.id[4];
    const T* const src = x + in_plane.offset + (hi > lo ? lo * p.is[3] : 0);
    const auto src_addr = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(src));
    const unsigned row_bytes = tp.flat ? width_in * es : tp.slot;
    const auto row_stride_bytes = static_cast<unsigned>(p.is[3] * es); // mod 2^32: only mod 16 used
    if (hi > lo) {
        if (tp.flat) {
            stage_run(src, (hi - lo) * width_in, smem + k_guard_front, threadIdx.x, blockDim.x);
        } else {
            const int warps = blockDim.x / 32, lane = threadIdx.x % 32;
            for (int l = threadIdx.x / 32; l < hi - lo; l += warps)
                stage_run(src + l * p.is[3], width_in, smem + k_guard_front + l * tp.slot, lane,
                          32);
        }
        asm volatile("cp.async.wait_all;" ::: "memory");
        __syncthreads();
    }
    // shared byte offset of input row lo + l's first element
    auto row_at = [&](int l) {
        const unsigned mis = tp.flat ? src_addr : src_addr + l * row_stride_bytes;
        return k_guard_front + l * row_bytes + (mis & 15);
    };
    // output element (r, c) of the tile
    auto element_at = [&](int r, int c) {
        const int ih = static_cast<int>(oh0) + r - p.pb[3], iw = c - p.pb[4];
        const bool ok = ih >= lo && ih < hi && static_cast<unsigned>(iw) < unsigned(width_in);
        return ok ? *reinterpret_cast<const T*>(smem + row_at(ih - lo) + iw * es) : value;
    };

    const int width = static_cast<int>(p.od[4]);
    const int n = rows * width;
    T* const out = y + (static_cast<std::size_t>(plane) * p.od[3] + oh0) * width;
    const auto out_mis = static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(out)) & 15;
    const int head = min(n, static_cast<int>(((16 - out_mis) & 15) / es));
    const int units = (n - head) / VE;
    const int tail = n - head - units * VE;
    for (int u = threadIdx.x; u < units; u += blockDim.x) {
        const int f = head + u * VE;
        const int r = static_cast<int>(tp.by_w.div(static_cast<unsigned>(f)));
        const int c = f - r * width;
        uint4 o;
        T* const e = reinterpret_cast<T*>(&o);
        const int ih = static_cast<int>(oh0) + r - p.pb[3], iw = c - p.pb[4];
        if (c + VE > width) { // the unit crosses into the next row
            int rr = r, cc = c;
#pragma unroll
            for (int j = 0; j < VE; ++j) {
                e[j] = element_at(rr, cc);
                if (++cc == width) {
                    cc = 0;
                    ++rr;
                }
            }
        } else if (ih < lo || ih >= hi || iw >= width_in || iw + VE <= 0) {
#pragma unroll
            for (int j = 0; j < VE; ++j)
                e[j] = value;
        } else {
            o = window16(smem, row_at(ih - lo) + iw * static_cast<int>(es));
            if (iw < 0 || iw + VE > width_in) { // the unit holds pad columns
#pragma unroll
                for (int j = 0; j < VE; ++j)
                    if (static_cast<unsigned>(iw + j) >= unsigned(width_in))
                        e[j] = value;
            }
        }
        *reinterpret_cast<uint4*>(out + f) = o;
    }
    for (int i = threadIdx.x; i < head + tail; i += blockDim.x) {
        const int f = i < head ? i : n - tail + (i - head);
        const int r = static_cast<int>(tp.by_w.div(static_cast<unsigned>(f)));
        out[f] = element_at(r, f - r * width);
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
    if (plan.staged) {
        tile_params tp;
        tp.by_tiles = divider(static_cast<std::uint32_t>(plan.tiles_per_plane));
        tp.by_w = divider(p.od[4]);
        tp.tiles = static_cast<std::uint32_t>(plan.tiles_per_plane);
        tp.rows = static_cast<std::uint32_t>(plan.rows_per_tile);
        tp.slot = static_cast<std::uint32_t>(plan.row_slot_bytes);
        tp.flat = plan.flat_rows;
        return status_of(launch_serialised_after_smem(
            pad_staged<T>, dim3(static_cast<unsigned>(plan.blocks)), dim3(plan.threads),
            static_cast<std::size_t>(plan.shared_bytes), stream, plan.dependent_launch, x, y, p, tp,
            value));
    }
    const auto grid = static_cast<unsigned>(plan.blocks);
    const auto chunks = static_cast<std::uint32_t>(plan.chunks);
    const auto per_plane = static_cast<std::uint32_t>(plan.chunks_per_plane);
    const auto units = static_cast<std::uint32_t>(plan.out_elements / plan.vec);
    const bool contiguous = p.is[4] == 1;
    cudaError_t launched = cudaSuccess;
    auto run = [&](auto ve, auto contig) {
        constexpr int VE = decltype(ve)::value;
        constexpr bool C = decltype(contig)::value;
        if (!plan.flat) {
            launched = launch_serialised_after(pad_planes<T, VE, C>, dim3(grid), dim3(plan.threads),
                                               stream, plan.dependent_launch, x, y, p, value,
                                               chunks, per_plane, plan.prefetch_lines);
            return;
        }
        flat_params f{};
        f.split = pad_flat_split(units, grid * static_cast<unsigned>(plan.threads / 32));
        f.row_units = static_cast<int>(p.od[4]) / VE;
        f.by_row_units = divider(static_cast<std::uint32_t>(f.row_units));
        f.by_height = divider(p.od[3]);
        f.step_r = 32 / f.row_units;
        f.step_c = 32 - f.step_r * f.row_units;
        f.row_stride = static_cast<int>(p.is[3]); // (fits: pad_plan.cpp's flat_offsets_fit)
        f.col_stride = static_cast<int>(p.is[4]);
        f.step_off = f.step_r * f.row_stride;
        f.carry_off = f.step_off + f.row_stride;
        auto flat = [&](auto b) {
            launched = launch_serialised_after(pad_flat<T, VE, C, decltype(b)::value>, dim3(grid),
                                               dim3(plan.threads), stream, plan.dependent_launch, x,
                                               y, p, value, f, plan.prefetch_lines);
        };
        // the plan's units a lane; only the instances that do not spill are compiled (8 for units
        // of up to 8 bytes, 4 bytes for 2-byte elements; 2 for their 16-byte units and those of
        // strided elements; 4 otherwise)
        if constexpr (VE * sizeof(T) <= (sizeof(T) == 2 ? 4 : 8)) {
            if (plan.units_a_lane == 8) {
                flat(std::integral_constant<int, 8>{});
                return;
            }
        }
        if constexpr (VE * sizeof(T) > 8 && (sizeof(T) == 2 || !C))
            flat(std::integral_constant<int, 2>{});
        else
            flat(std::integral_constant<int, 4>{});
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
    return status_of(launched);
}

} // namespace

launch_status launch_pad(const pad_plan& p, const pad_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return by_element(a.type, [&](auto t) { return launch_typed<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
