#pragma once
// NVML through dlopen (TORCH_COMPAT.md): per-process GPU memory, clocks, power limit and the
// driver version, with no link-time dependency. Every call answers "unavailable: reason"
// instead of failing when the library or the device is not there.
#include "fourfold/core/json.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace fourfold::backend {

class nvml_device {
  public:
    // Matches the CUDA device by its PCI bus id ("0000:19:00.0"); indices may differ.
    static std::unique_ptr<nvml_device> open(const std::string& pci_bus_id, std::string& why_not);
    ~nvml_device();
    nvml_device(const nvml_device&) = delete;
    nvml_device& operator=(const nvml_device&) = delete;

    // Memory NVML charges to this process on the device; nullopt with `why_not` when it
    // cannot say (not listed, PID namespace, value unavailable).
    std::optional<std::int64_t> process_used_bytes(std::string& why_not) const;
    // Clocks (MHz), power limits (W), driver version: whatever the driver will tell.
    json fingerprint() const;

    struct api; // the loaded library; opaque outside nvml.cpp

  private:
    nvml_device(std::shared_ptr<api> lib, void* handle) : m_lib(std::move(lib)), m_handle(handle) {}
    std::shared_ptr<api> m_lib;
    void* m_handle;
};

} // namespace fourfold::backend
