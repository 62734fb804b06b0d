#pragma once
// A compute device over libtorch (ggml-backend style): a small interface with explicit
// capabilities. Layers above ask `caps()` before they use an optional feature, and record the
// answer when it is "no" instead of failing.
#include "fourfold/core/dtype.hpp"
#include "fourfold/core/json.hpp"

#include <c10/core/Device.h>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::backend {

class memory_probe;

enum class device_kind { cpu, cuda, mps };
std::string_view to_string(device_kind k);

struct device_spec {
    device_kind kind = device_kind::cpu;
    int index = 0;
    std::string name() const; // "cpu", "cuda:0", "mps"
    // "cpu", "cuda", "cuda:1", "mps"; throws bad_input naming the valid forms.
    static device_spec parse(std::string_view text);
};

// Whether this build and device can use a libtorch feature, and why not when they cannot.
struct feature_state {
    bool available = false;
    std::string reason;
};

struct capabilities {
    bool events = false;           // device-side event timing
    bool graphs = false;           // graph capture and replay
    bool cache_flush = false;      // a cold-cache flush before a sample
    std::int64_t cache_bytes = 0;  // the last-level cache the flush must evict (L2 on CUDA)
    std::int64_t memory_bytes = 0; // device memory (host RAM for the CPU)
    int compute_units = 0;         // SMs on CUDA, logical cores on the CPU
    std::string arch;              // "sm_90", "x86_64", ...
    std::vector<dtype> dtypes;     // element types the device can hold on this build
    std::map<std::string, std::string> dtype_unsupported; // dtype name -> why not
    std::map<std::string, feature_state> features; // float8, grouped_mm, scaled_mm, sdpa, ...

    bool supports(dtype t) const;
    // nullopt when the feature is available; otherwise the reason (also for unknown names).
    std::optional<std::string> missing(const std::string& feature) const;
    json to_json() const;
};

class device_event {
  public:
    virtual ~device_event() = default;
    virtual void record() = 0;
    // Milliseconds from `start` to this event; both must have completed (synchronize first).
    virtual double elapsed_ms_since(const device_event& start) const = 0;
};

class captured_graph {
  public:
    virtual ~captured_graph() = default;
    virtual void replay() = 0;
};

struct bandwidth_figure {
    double bytes_per_s = 0;
    std::int64_t bytes_moved = 0; // per copy, bytes read + bytes written
    std::string method;
    json to_json() const;
};

class device {
  public:
    virtual ~device() = default;
    virtual const device_spec& spec() const = 0;
    std::string name() const { return spec().name(); }
    virtual c10::Device torch_device() const = 0;
    virtual const capabilities& caps() const = 0;
    // Waits until all work queued on the device's current stream is done.
    virtual void synchronize() = 0;
    // The stream native kernels launch on, read at the moment of the call: the device's current
    // stream (the capture stream while a graph is being captured). A cudaStream_t on CUDA;
    // nullptr on devices whose work libtorch alone queues (CPU, MPS).
    virtual void* native_stream() const { return nullptr; }
    // Throws device_error when !caps().events.
    virtual std::unique_ptr<device_event> make_event() = 0;
    // Evicts the last-level cache (a write over a buffer larger than it), in stream order.
    virtual void flush_cache() = 0;
    // Frees what the device keeps for its own use (the flush buffer), so that a memory pass
    // sees the job's memory alone. The next flush allocates it again.
    virtual void release_scratch() {}
    // Captures `body` (after running it once uncaptured on the capture stream as warm-up).
    // Throws device_error when !caps().graphs or capture fails.
    virtual std::unique_ptr<captured_graph> capture(const std::function<void()>& body) = 0;
    // Name, uuid, memory, clocks, ... for the run's provenance.
    virtual json fingerprint() const = 0;
    // A large device-to-device copy: the practical bandwidth ceiling for % of bandwidth.
    virtual bandwidth_figure measure_copy_bandwidth() = 0;
    // Driver- and allocator-level memory figures for the memory ledger.
    virtual memory_probe& memory() = 0;
};

// Opens a device; throws bad_input when this build or machine does not have it.
std::unique_ptr<device> open_device(const device_spec& spec);
// Every device this build can open on this machine.
std::vector<device_spec> visible_devices();
// The CPU threads libtorch computes on (intra-op); set before a device opens, as it counts them.
int cpu_threads();
void set_cpu_threads(int threads);

// Implementations (one file each); a build without CUDA or MPS has stubs that say so.
std::unique_ptr<device> make_cpu_device();
std::unique_ptr<device> make_cuda_device(int index);
std::unique_ptr<device> make_mps_device();
int cuda_device_count();
bool mps_available();
// Capabilities that depend on the libtorch build alone (shared by every device kind).
std::map<std::string, feature_state> build_features();

} // namespace fourfold::backend
