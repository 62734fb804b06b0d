#pragma once
// fourfold's native CUDA kernels: raw pointers and a stream, no libtorch. Each kernel has a
// host-side plan (pure arithmetic on the shape, the alignment and the device's limits, so the
// configuration a call will take can be recorded before it runs) and a launch that only
// enqueues work: no allocation, no host synchronisation, so a call can be captured in a graph.
// This header needs no CUDA header: the stream is the runtime's own opaque type.
#include <cstddef>
#include <cstdint>
#include <string>

struct CUstream_st; // cudaStream_t is CUstream_st*

namespace fourfold::kernels {

using stream_t = CUstream_st*;

enum class elem { f32, f16, bf16 };
std::size_t elem_bytes(elem e);
const char* to_string(elem e);

// What a plan needs to know of the device (read once per device, not per call).
struct device_limits {
    int sm_count = 132;
    int max_threads_per_sm = 2048;
    int max_smem_per_block = 227 * 1024; // opt-in limit
    int max_smem_per_sm = 228 * 1024;
    int cc_major = 9;
    int cc_minor = 0;
    int max_cluster_blocks = 8; // 16 where the device can schedule the non-portable size
    bool cooperative_launch =
        true; // a grid whose blocks are all resident at once (cudaDevAttrCooperativeLaunch)
    bool clusters() const { return cc_major >= 9; }
};

// The launch's outcome: cudaSuccess (0) or the CUDA error code and its text.
struct launch_status {
    int code = 0;
    std::string message;
    bool ok() const { return code == 0; }
};

// Whether this build compiled the kernels for a device it can run on; false in a build without
// the CUDA toolkit (then every launch reports it).
bool compiled();
// The limits of CUDA device `index` (cudaGetDeviceProperties; a host call, no synchronisation).
device_limits query_device(int index);

// Whether the A/B switch `name` (an environment variable the plans read, FOURFOLD_...) is set to
// `value` exactly ("0" or "1").
bool switch_is(const char* name, const char* value);

// Whether a plan launches its kernel as a programmatic dependent launch (it may start while the
// kernel before it on the stream ends, and waits for it before reading what it wrote): from
// compute capability 9, unless FOURFOLD_DEPENDENT_LAUNCH=0, a diagnostic for A/B runs (session 44:
// every kernel then starts after the one before has ended; the kernels' waits return at once).
bool dependent_launch(const device_limits& d);

// The alignment in bytes a pointer has (16 at most): vector paths need 16.
inline int alignment_of(const void* p) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    for (int b = 16; b > 1; b /= 2)
        if (a % static_cast<std::uintptr_t>(b) == 0)
            return b;
    return 1;
}

} // namespace fourfold::kernels
