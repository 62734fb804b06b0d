// How fast can one SM stream global memory through the copy engine (cp.async.bulk into a ring of
// shared-memory slots), by piece size, pieces a slot and slots, against 16-byte loads from many
// warps? A standalone probe (no fourfold code): the bulk-copy GEMV of 0120403 streamed at about
// 20 GB/s an SM where the balanced kernel's loads reach 34 (H200, session 24).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a bench/gpu/bulk_probe.cu -o probe
//   ./probe            (prints one line a configuration: GB/s over a 1 GiB buffer, cold in L2)
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

namespace {

__device__ __forceinline__ std::uint32_t smem(const void* p) {
    return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void wait(std::uint64_t* bar, unsigned parity) {
    std::uint32_t done = 0;
    do {
        asm volatile(
            "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
            "selp.u32 %0, 1, 0, p;\n\t}"
            : "=r"(done)
            : "r"(smem(bar)), "r"(parity)
            : "memory");
    } while (!done);
}

constexpr int k_max_slots = 96;

// One block an SM: warp 8 copies `copies` pieces of `piece` bytes a slot (contiguous), 8 warps
// read each slot; the block's share of the buffer is contiguous.
__global__ void __launch_bounds__(288, 1)
    bulk_stream(const char* src, std::int64_t bytes, int piece, int copies, int slots, int hint,
                unsigned* sink, int consumer = 0, const uint4* x = nullptr) {
    __shared__ std::uint64_t full[k_max_slots], empty[k_max_slots];
    extern __shared__ uint4 ring[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::int64_t slot_bytes = std::int64_t{piece} * copies;
    const std::int64_t per_block = bytes / gridDim.x / slot_bytes * slot_bytes;
    const char* base = src + blockIdx.x * per_block;
    const int count = static_cast<int>(per_block / slot_bytes);
    if (threadIdx.x == 0) {
        for (int s = 0; s < slots; ++s) {
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&full[s])));
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 8;" ::"r"(smem(&empty[s])));
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (warp == 8) {
        std::uint64_t pol = 0;
        asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
        for (int q = 0; q < count; ++q) {
            const int s = q % slots;
            if (q >= slots)
                wait(&empty[s], (q / slots - 1) & 1);
            if (lane == 0)
                asm volatile(
                    "mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&full[s])),
                    "r"(static_cast<unsigned>(slot_bytes))
                    : "memory");
            __syncwarp();
            for (int c = lane; c < copies; c += 32) {
                const char* g = base + q * slot_bytes + std::int64_t{c} * piece;
                const char* d =
                    reinterpret_cast<const char*>(ring) + s * slot_bytes + std::int64_t{c} * piece;
                if (hint)
                    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::"
                                 "bytes.L2::cache_hint "
                                 "[%0], [%1], %2, [%3], %4;" ::"r"(smem(d)),
                                 "l"(g), "r"(piece), "r"(smem(&full[s])), "l"(pol)
                                 : "memory");
                else
                    asm volatile(
                        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                        "[%0], [%1], %2, [%3];" ::"r"(smem(d)),
                        "l"(g), "r"(piece), "r"(smem(&full[s]))
                        : "memory");
            }
        }
        return;
    }
    unsigned acc = 0;
    float facc[4] = {0.f, 0.f, 0.f, 0.f};
    const int vecs = static_cast<int>(slot_bytes / 16);
    const int pv = piece / 16; // vectors a piece: consumer 1 and 2 take piece `warp` (copies 8)
    for (int q = 0; q < count; ++q) {
        const int s = q % slots;
        wait(&full[s], (q / slots) & 1);
        const uint4* p = ring + std::int64_t{s} * vecs;
        if (consumer == 0) {
            for (int v = threadIdx.x; v < vecs; v += 256)
                acc ^= p[v].x ^ p[v].w;
        } else {
            // the GEMV's work: bf16 weights by bf16 x (x read through L1), fp32 FMAs; 1: one
            // accumulator, 2: four
            const uint4* pc = p + warp * pv;
            for (int v = lane; v < pv; v += 32) {
                const uint4 wv = pc[v], xv = __ldg(x + v);
                const unsigned wr[4] = {wv.x, wv.y, wv.z, wv.w}, xr[4] = {xv.x, xv.y, xv.z, xv.w};
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const float w0 = __uint_as_float(wr[j] << 16),
                                w1 = __uint_as_float(wr[j] & 0xffff0000u);
                    const float x0 = __uint_as_float(xr[j] << 16),
                                x1 = __uint_as_float(xr[j] & 0xffff0000u);
                    const int a = consumer == 2 ? j : 0;
                    facc[a] = fmaf(w0, x0, facc[a]);
                    facc[a] = fmaf(w1, x1, facc[a]);
                }
            }
        }
        __syncwarp();
        if (lane == 0)
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem(&empty[s]))
                         : "memory");
    }
    if (acc == 0x12345678u || facc[0] + facc[1] + facc[2] + facc[3] == 1.2345f)
        *sink = acc;
}

// 16-byte loads: each warp streams its contiguous run, `unroll` loads a lane in flight.
template <int UNROLL>
__global__ void __launch_bounds__(256, 4)
    ldg_stream(const uint4* src, std::int64_t vecs, unsigned* sink) {
    const std::int64_t warps = std::int64_t{gridDim.x} * 8;
    const std::int64_t w = std::int64_t{blockIdx.x} * 8 + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const std::int64_t per = vecs / warps / (32 * UNROLL) * (32 * UNROLL);
    const uint4* p = src + w * per;
    unsigned acc = 0;
    for (std::int64_t i = 0; i < per; i += 32 * UNROLL) {
        uint4 r[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(r[u].x), "=r"(r[u].y), "=r"(r[u].z), "=r"(r[u].w)
                         : "l"(p + i + u * 32 + lane));
#pragma unroll
        for (int u = 0; u < UNROLL; ++u)
            acc ^= r[u].x ^ r[u].w;
    }
    if (acc == 0x12345678u)
        *sink = acc;
}

template <class Launch> double gbps(Launch&& launch, std::int64_t bytes) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    launch();
    cudaEventRecord(a);
    const int reps = 10;
    for (int i = 0; i < reps; ++i)
        launch();
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) {
        std::printf("  error: %s\n", cudaGetErrorString(e));
        return 0;
    }
    return static_cast<double>(bytes) * reps / (ms * 1e-3) / 1e9;
}

} // namespace

int main() {
    const std::int64_t bytes = std::int64_t{1} << 30;
    char* buf = nullptr;
    unsigned* sink = nullptr;
    cudaMalloc(&buf, bytes);
    cudaMalloc(&sink, 4);
    cudaMemset(buf, 1, bytes);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    cudaFuncSetAttribute(bulk_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024);
    std::printf(
        "copy (cudaMemcpy D2D 512 MiB each way): %.0f GB/s\n",
        gbps([&] { cudaMemcpyAsync(buf, buf + bytes / 2, bytes / 2, cudaMemcpyDeviceToDevice); },
             bytes));
    std::printf("ldg 4x256 threads an SM, unroll 4: %.0f GB/s\n",
                gbps(
                    [&] {
                        ldg_stream<4>
                            <<<sms * 4, 256>>>(reinterpret_cast<uint4*>(buf), bytes / 16, sink);
                    },
                    bytes));
    std::printf("ldg 4x256 threads an SM, unroll 8: %.0f GB/s\n",
                gbps(
                    [&] {
                        ldg_stream<8>
                            <<<sms * 4, 256>>>(reinterpret_cast<uint4*>(buf), bytes / 16, sink);
                    },
                    bytes));
    // the GEMV's consumer (a warp a row piece, x through L1) on the two layouts of gemv_bulk
    for (int consumer : {0, 1, 2})
        for (const auto [piece, slots] : {std::pair{2048, 12}, std::pair{8192, 3}}) {
            const double r = gbps(
                [&] {
                    bulk_stream<<<sms, 288, slots * piece * 8>>>(buf, bytes, piece, 8, slots, 1,
                                                                 sink, consumer,
                                                                 reinterpret_cast<uint4*>(buf));
                },
                bytes);
            std::printf("consumer %d (0 xor, 1 GEMV one accumulator, 2 GEMV four), piece %d B x 8, "
                        "%d slots: "
                        "%.0f GB/s\n",
                        consumer, piece, slots, r);
        }
    const int pieces[] = {2048, 8192};
    for (int grid_mult : {1})
        for (int piece : pieces)
            for (int copies : {1, 8})
                for (int ring_kb : {64, 192})
                    for (int hint : {0, 1}) {
                        const std::int64_t slot = std::int64_t{piece} * copies;
                        const int ring = ring_kb * 1024 / grid_mult;
                        const int slots = static_cast<int>(ring / slot);
                        if (slots < 2 || slots > k_max_slots)
                            continue;
                        const double r = gbps(
                            [&] {
                                bulk_stream<<<sms * grid_mult, 288, slots * slot>>>(
                                    buf, bytes, piece, copies, slots, hint, sink);
                            },
                            bytes);
                        std::printf("bulk %d block(s) an SM, piece %5d B x %d a slot, %2d slots "
                                    "(%3d KB), hint %d: "
                                    "%.0f GB/s\n",
                                    grid_mult, piece, copies, slots,
                                    static_cast<int>(slots * slot / 1024), hint, r);
                    }
    return 0;
}
