#include "fourfold/backend/nvml.hpp"

#include <climits>
#include <dlfcn.h>
#include <fmt/format.h>
#include <mutex>
#include <unistd.h>
#include <vector>

namespace fourfold::backend {
namespace {

// The stable NVML C ABI, declared here so that no NVML header is needed to build.
using nvml_return = int;
using nvml_handle = void*;
constexpr nvml_return k_success = 0;
constexpr nvml_return k_insufficient_size = 7;
constexpr unsigned k_clock_graphics = 0, k_clock_sm = 1, k_clock_mem = 2;

struct nvml_process_info { // nvmlProcessInfo_t (v2 and v3 share this layout)
    unsigned int pid;
    unsigned long long used_gpu_memory;
    unsigned int gpu_instance_id;
    unsigned int compute_instance_id;
};

} // namespace

struct nvml_device::api {
    void* lib = nullptr;
    nvml_return (*init)() = nullptr;
    nvml_return (*shutdown)() = nullptr;
    const char* (*error_string)(nvml_return) = nullptr;
    nvml_return (*by_pci)(const char*, nvml_handle*) = nullptr;
    nvml_return (*processes)(nvml_handle, unsigned*, nvml_process_info*) = nullptr;
    nvml_return (*clock)(nvml_handle, unsigned, unsigned*) = nullptr;
    nvml_return (*max_clock)(nvml_handle, unsigned, unsigned*) = nullptr;
    nvml_return (*power_limit)(nvml_handle, unsigned*) = nullptr;
    nvml_return (*enforced_power_limit)(nvml_handle, unsigned*) = nullptr;
    nvml_return (*driver_version)(char*, unsigned) = nullptr;
    nvml_return (*name)(nvml_handle, char*, unsigned) = nullptr;

    std::string error(nvml_return rc) const {
        return error_string ? error_string(rc) : fmt::format("NVML error {}", rc);
    }
    ~api() {
        if (shutdown)
            shutdown();
        if (lib)
            dlclose(lib);
    }
};

namespace {

template <class F> bool load(void* lib, const char* name, F& out) {
    out = reinterpret_cast<F>(dlsym(lib, name));
    return out != nullptr;
}

std::shared_ptr<nvml_device::api> load_api(std::string& why_not) {
    static std::mutex mutex;
    static std::weak_ptr<nvml_device::api> cached;
    std::lock_guard lock(mutex);
    if (auto existing = cached.lock())
        return existing;
    auto a = std::make_shared<nvml_device::api>();
    a->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a->lib) {
        why_not = fmt::format("libnvidia-ml.so.1 cannot be loaded ({})", dlerror());
        return nullptr;
    }
    const bool ok = load(a->lib, "nvmlInit_v2", a->init) &&
                    load(a->lib, "nvmlShutdown", a->shutdown) &&
                    load(a->lib, "nvmlDeviceGetHandleByPciBusId_v2", a->by_pci) &&
                    load(a->lib, "nvmlDeviceGetComputeRunningProcesses_v3", a->processes);
    if (!ok) {
        why_not =
            "libnvidia-ml.so.1 lacks nvmlDeviceGetComputeRunningProcesses_v3 (driver too old)";
        a->shutdown = nullptr;
        return nullptr;
    }
    load(a->lib, "nvmlErrorString", a->error_string);
    load(a->lib, "nvmlDeviceGetClockInfo", a->clock);
    load(a->lib, "nvmlDeviceGetMaxClockInfo", a->max_clock);
    load(a->lib, "nvmlDeviceGetPowerManagementLimit", a->power_limit);
    load(a->lib, "nvmlDeviceGetEnforcedPowerLimit", a->enforced_power_limit);
    load(a->lib, "nvmlSystemGetDriverVersion", a->driver_version);
    load(a->lib, "nvmlDeviceGetName", a->name);
    if (const auto rc = a->init(); rc != k_success) {
        why_not = fmt::format("nvmlInit failed: {}", a->error(rc));
        a->shutdown = nullptr;
        return nullptr;
    }
    cached = a;
    return a;
}

} // namespace

std::unique_ptr<nvml_device> nvml_device::open(const std::string& pci_bus_id,
                                               std::string& why_not) {
    auto lib = load_api(why_not);
    if (!lib)
        return nullptr;
    nvml_handle handle = nullptr;
    if (const auto rc = lib->by_pci(pci_bus_id.c_str(), &handle); rc != k_success) {
        why_not =
            fmt::format("NVML has no device at PCI bus id {}: {}", pci_bus_id, lib->error(rc));
        return nullptr;
    }
    return std::unique_ptr<nvml_device>(new nvml_device(std::move(lib), handle));
}

nvml_device::~nvml_device() = default;

std::optional<std::int64_t> nvml_device::process_used_bytes(std::string& why_not) const {
    std::vector<nvml_process_info> infos(16);
    for (int attempt = 0; attempt < 4; ++attempt) {
        unsigned count = static_cast<unsigned>(infos.size());
        const auto rc = m_lib->processes(m_handle, &count, infos.data());
        if (rc == k_insufficient_size) {
            infos.resize(count + 8);
            continue;
        }
        if (rc != k_success) {
            why_not = fmt::format("nvmlDeviceGetComputeRunningProcesses: {}", m_lib->error(rc));
            return std::nullopt;
        }
        const auto self = static_cast<unsigned>(getpid());
        std::string listed;
        for (unsigned i = 0; i < count; ++i)
            listed += (listed.empty() ? "" : ",") + std::to_string(infos[i].pid);
        for (unsigned i = 0; i < count; ++i) {
            if (infos[i].pid != self)
                continue;
            if (infos[i].used_gpu_memory == ULLONG_MAX) {
                why_not = "NVML lists this process but reports its memory as unavailable";
                return std::nullopt;
            }
            return static_cast<std::int64_t>(infos[i].used_gpu_memory);
        }
        why_not = fmt::format("NVML does not list this process (pid {}; it lists {} compute "
                              "process(es){}{}; a PID namespace or VM shows other pids)",
                              self, count, count ? ": " : "", listed);
        return std::nullopt;
    }
    why_not = "NVML process list kept growing";
    return std::nullopt;
}

json nvml_device::fingerprint() const {
    json out = json::object();
    auto clock_of = [&](auto fn, unsigned which) -> json {
        unsigned mhz = 0;
        if (fn && fn(m_handle, which, &mhz) == k_success)
            return mhz;
        return "unavailable";
    };
    out["sm_clock_mhz"] = clock_of(m_lib->clock, k_clock_sm);
    out["graphics_clock_mhz"] = clock_of(m_lib->clock, k_clock_graphics);
    out["memory_clock_mhz"] = clock_of(m_lib->clock, k_clock_mem);
    out["max_sm_clock_mhz"] = clock_of(m_lib->max_clock, k_clock_sm);
    out["max_memory_clock_mhz"] = clock_of(m_lib->max_clock, k_clock_mem);
    auto watts = [&](auto fn) -> json {
        unsigned mw = 0;
        if (fn && fn(m_handle, &mw) == k_success)
            return mw / 1000.0;
        return "unavailable";
    };
    out["power_limit_w"] = watts(m_lib->power_limit);
    out["enforced_power_limit_w"] = watts(m_lib->enforced_power_limit);
    char version[96] = {};
    out["driver_version"] =
        m_lib->driver_version && m_lib->driver_version(version, sizeof version) == k_success
            ? json(version)
            : json("unavailable");
    return out;
}

} // namespace fourfold::backend
