#pragma once
// The three memory levels of DESIGN.md, as one device reports them:
//   driver   - what the driver / OS charges the process (NVML per-process, RSS, MPS driver)
//   reserved - what the tensor allocator holds (CUDA caching allocator reserved; malloc arena
//              + mmapped bytes on the CPU)
//   allocated- what live tensors use (caching allocator allocated; tracked CPU allocator)
// A level a device cannot give is absent with its reason, never reported as 0.
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace fourfold::backend {

struct memory_sample {
    std::optional<std::int64_t> driver;
    std::optional<std::int64_t> reserved;
    std::optional<std::int64_t> allocated;
};

class memory_probe {
  public:
    virtual ~memory_probe() = default;
    // What the driver level is on this device ("NVML per-process used memory", ...).
    virtual std::string driver_level() const = 0;
    // True when the driver level counts every process on the device (cudaMemGetInfo fallback).
    virtual bool device_wide() const { return false; }
    // level name ("driver", "reserved", "allocated") -> why it cannot be had here.
    virtual std::map<std::string, std::string> unavailable() const = 0;
    // Starts a new peak window for the counters the system keeps (VmHWM, allocator stats).
    virtual void reset_peaks() = 0;
    // Current levels. Called from the sampler thread, so it must be thread-safe.
    virtual memory_sample now() = 0;
    // Peaks since reset_peaks() from counters kept by the system; absent where none is kept
    // (the sampler's maximum stands in for those).
    virtual memory_sample counter_peaks() = 0;
    // Returns cached, unused allocator memory to the driver so a job starts from its own need.
    // On CUDA it also frees libtorch's cuBLAS workspaces: never call it while a captured graph
    // that ran cuBLAS is alive (the graph keeps the workspace's raw address).
    void release_cached() {
        m_releases.fetch_add(1, std::memory_order_relaxed);
        free_cached();
    }
    // How many times release_cached() has run on this probe: lets a test see, on any device,
    // whether a release fell between two points (on the CPU nothing is freed to show it).
    std::uint64_t releases() const { return m_releases.load(std::memory_order_relaxed); }
    // The poll rate the sampler should aim for on this device.
    virtual double target_poll_hz() const { return 1000.0; }

  protected:
    // What release_cached() frees on this device; nothing where no allocator caches.
    virtual void free_cached() {}

  private:
    std::atomic<std::uint64_t> m_releases{0};
};

} // namespace fourfold::backend
