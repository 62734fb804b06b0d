// The CUDA device: events, L2 flush, CUDA graphs, NVML and caching-allocator memory levels.
// Compiled into every build; without CUDA in libtorch it only says so.
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/memory_probe.hpp"
#include "fourfold/core/error.hpp"

#if FOURFOLD_WITH_CUDA
#include "fourfold/backend/cuda_check.hpp"
#include "fourfold/backend/nvml.hpp"
#include "fourfold/backend/torch_features.hpp"

#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGraph.h>
#include <algorithm>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <mutex>
#include <optional>
#endif

namespace fourfold::backend {

#if FOURFOLD_WITH_CUDA
namespace {

cudaStream_t current_stream() {
    return at::cuda::getCurrentCUDAStream().stream();
}

class cuda_event final : public device_event {
  public:
    cuda_event() { FOURFOLD_CHECK_CUDA(cudaEventCreate(&m_event)); }
    ~cuda_event() override { FOURFOLD_CHECK_CUDA_NOEXCEPT(cudaEventDestroy(m_event)); }
    cuda_event(const cuda_event&) = delete;
    cuda_event& operator=(const cuda_event&) = delete;

    void record() override { FOURFOLD_CHECK_CUDA(cudaEventRecord(m_event, current_stream())); }
    double elapsed_ms_since(const device_event& start) const override {
        float ms = 0;
        FOURFOLD_CHECK_CUDA(
            cudaEventElapsedTime(&ms, static_cast<const cuda_event&>(start).m_event, m_event));
        return ms;
    }

  private:
    cudaEvent_t m_event = nullptr;
};

class cuda_graph final : public captured_graph {
  public:
    explicit cuda_graph(std::unique_ptr<at::cuda::CUDAGraph> g) : m_graph(std::move(g)) {}
    void replay() override { m_graph->replay(); }

  private:
    std::unique_ptr<at::cuda::CUDAGraph> m_graph;
};

// Driver level: NVML's per-process figure for this device (matched by PCI bus id); where NVML
// cannot say, cudaMemGetInfo's device-wide used memory, flagged as such.
class cuda_memory_probe final : public memory_probe {
  public:
    cuda_memory_probe(int index, const std::string& pci_bus_id) : m_index(index) {
        m_nvml = nvml_device::open(pci_bus_id, m_nvml_why_not);
        if (m_nvml) {
            // NVML may be there (clocks, power) and still not list this process's memory
            m_per_process = m_nvml->process_used_bytes(m_nvml_why_not).has_value();
        }
    }

    std::string driver_level() const override {
        return m_per_process ? "NVML per-process used GPU memory"
                             : "cudaMemGetInfo used memory (device-wide, all processes; NVML: " +
                                   m_nvml_why_not + ")";
    }
    bool device_wide() const override { return !m_per_process; }
    std::map<std::string, std::string> unavailable() const override { return {}; }

    void reset_peaks() override {
        c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(m_index));
    }

    memory_sample now() override {
        memory_sample s;
        if (m_per_process) {
            std::string why;
            s.driver = m_nvml->process_used_bytes(why);
        } else {
            std::lock_guard lock(m_mutex);
            cudaSetDevice(m_index);
            size_t free_b = 0, total_b = 0;
            if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
                s.driver = static_cast<std::int64_t>(total_b - free_b);
        }
        const auto st =
            c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(m_index));
        s.reserved = st.reserved_bytes[0].current;
        s.allocated = st.allocated_bytes[0].current;
        return s;
    }

    memory_sample counter_peaks() override {
        const auto st =
            c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(m_index));
        memory_sample s;
        s.reserved = st.reserved_bytes[0].peak;
        s.allocated = st.allocated_bytes[0].peak;
        return s;
    }

    double target_poll_hz() const override { return 2000.0; }

    json nvml_fingerprint() const { return m_nvml ? m_nvml->fingerprint() : json(m_nvml_why_not); }

  protected:
    void free_cached() override {
#if FOURFOLD_TORCH_AT_LEAST(2, 0)
        // cuBLAS keeps a workspace per (handle, stream) in the caching allocator: allocated
        // bytes that are libtorch's, not the job's (32 MiB each on Hopper)
        at::cuda::clearCublasWorkspaces();
#endif
        c10::cuda::CUDACachingAllocator::emptyCache();
    }

  private:
    int m_index;
    std::unique_ptr<nvml_device> m_nvml;
    bool m_per_process = false;
    std::string m_nvml_why_not;
    std::mutex m_mutex;
};

std::string pci_bus_id_of(int index) {
    char id[32] = {};
    if (cudaDeviceGetPCIBusId(id, sizeof id, index) != cudaSuccess)
        return {};
    return id;
}

class cuda_device final : public device {
  public:
    explicit cuda_device(int index)
        : m_spec{device_kind::cuda, index}, m_pci(pci_bus_id_of(index)) {
        c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
        // Create the CUDA context now: NVML lists a process only once it has one, and the
        // memory probe decides at construction whether NVML's per-process figure is there.
        FOURFOLD_CHECK_CUDA(cudaFree(nullptr));
        m_memory = std::make_unique<cuda_memory_probe>(index, m_pci);
        // One capture stream for the device's lifetime: every new stream would get its own
        // cuBLAS workspace from the caching allocator (a pool of 32 streams, 1 GiB in all).
        m_capture_stream.emplace(
            at::cuda::getStreamFromPool(false, static_cast<c10::DeviceIndex>(index)));
        FOURFOLD_CHECK_CUDA(cudaGetDeviceProperties(&m_prop, index));
        m_caps.events = true;
        m_caps.graphs = true;
        m_caps.cache_flush = true;
        m_caps.cache_bytes = m_prop.l2CacheSize;
        m_caps.memory_bytes = static_cast<std::int64_t>(m_prop.totalGlobalMem);
        m_caps.compute_units = m_prop.multiProcessorCount;
        m_caps.arch = fmt::format("sm_{}{}", m_prop.major, m_prop.minor);
        const int cc = m_prop.major * 10 + m_prop.minor;
        m_caps.dtypes = {dtype::fp64, dtype::fp32, dtype::fp16};
        if (cc >= 80)
            m_caps.dtypes.push_back(dtype::bf16);
        else
            m_caps.dtype_unsupported["bf16"] = "bf16 needs compute capability 8.0+";
        m_caps.features = build_features();
        if (FOURFOLD_HAS_FLOAT8) {
            m_caps.dtypes.push_back(dtype::fp8_e4m3fn);
            m_caps.dtypes.push_back(dtype::fp8_e5m2);
        } else {
            for (const char* t : {"fp8_e4m3fn", "fp8_e5m2"})
                m_caps.dtype_unsupported[t] = m_caps.features["float8"].reason;
        }
        if (m_caps.features["scaled_mm"].available && cc < 89)
            m_caps.features["scaled_mm"] = {false, fmt::format("_scaled_mm needs sm_89+, device "
                                                               "is {}",
                                                               m_caps.arch)};
        if (m_caps.features["grouped_mm"].available && cc != 90 && cc != 100)
            m_caps.features["grouped_mm_fast"] = {
                false, fmt::format("_grouped_mm's fast path needs sm_90/sm_100, device is {} "
                                   "(it falls back to an mm loop that syncs with the host)",
                                   m_caps.arch)};
        else
            m_caps.features["grouped_mm_fast"] = m_caps.features["grouped_mm"];
        m_caps.features["graphs"] = {true, {}};
        m_caps.features["events"] = {true, {}};
    }

    const device_spec& spec() const override { return m_spec; }
    c10::Device torch_device() const override {
        return c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(m_spec.index));
    }
    const capabilities& caps() const override { return m_caps; }
    void synchronize() override { FOURFOLD_CHECK_CUDA(cudaStreamSynchronize(current_stream())); }
    void* native_stream() const override { return current_stream(); }
    std::unique_ptr<device_event> make_event() override { return std::make_unique<cuda_event>(); }

    void flush_cache() override {
        if (!m_flush.defined())
            m_flush = at::empty({2 * m_caps.cache_bytes},
                                at::TensorOptions().dtype(at::kByte).device(torch_device()));
        m_flush_value = (m_flush_value + 1) & 0xff;
        FOURFOLD_CHECK_CUDA(cudaMemsetAsync(m_flush.data_ptr(), m_flush_value,
                                            static_cast<size_t>(m_flush.numel()),
                                            current_stream()));
    }

    void release_scratch() override { m_flush = at::Tensor(); }

    std::unique_ptr<captured_graph> capture(const std::function<void()>& body) override {
        FOURFOLD_CHECK_CUDA(cudaDeviceSynchronize());
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        {
            // Capture needs a side stream; warm it first so lazy handles and workspaces exist.
            c10::cuda::CUDAStreamGuard guard(*m_capture_stream);
            body();
            FOURFOLD_CHECK_CUDA(cudaStreamSynchronize(current_stream()));
            try {
                graph->capture_begin();
                body();
                graph->capture_end();
            } catch (const std::exception& e) {
                throw device_error(fmt::format("CUDA graph capture failed: {}", e.what()));
            }
        }
        FOURFOLD_CHECK_CUDA(cudaDeviceSynchronize());
        return std::make_unique<cuda_graph>(std::move(graph));
    }

    json fingerprint() const override {
        int runtime = 0, driver = 0, clock_khz = 0, mem_clock_khz = 0;
        cudaRuntimeGetVersion(&runtime);
        cudaDriverGetVersion(&driver);
        cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, m_spec.index);
        cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, m_spec.index);
        std::string uuid = "GPU-";
        for (int i = 0; i < 16; ++i) {
            uuid += fmt::format("{:02x}", static_cast<unsigned char>(m_prop.uuid.bytes[i]));
            if (i == 3 || i == 5 || i == 7 || i == 9)
                uuid += '-';
        }
        return json{
            {"kind", "cuda"},
            {"index", m_spec.index},
            {"name", m_prop.name},
            {"uuid", uuid},
            {"pci_bus_id", m_pci},
            {"compute_capability", fmt::format("{}.{}", m_prop.major, m_prop.minor)},
            {"sm_count", m_prop.multiProcessorCount},
            {"memory_bytes", static_cast<std::int64_t>(m_prop.totalGlobalMem)},
            {"l2_bytes", m_prop.l2CacheSize},
            {"memory_bus_width_bits", m_prop.memoryBusWidth},
            {"max_sm_clock_mhz_attr", clock_khz / 1000},
            {"max_memory_clock_mhz_attr", mem_clock_khz / 1000},
            {"cuda_runtime_version", fmt::format("{}.{}", runtime / 1000, (runtime % 1000) / 10)},
            {"cuda_driver_api_version", fmt::format("{}.{}", driver / 1000, (driver % 1000) / 10)},
            {"nvml", m_memory->nvml_fingerprint()}};
    }

    bandwidth_figure measure_copy_bandwidth() override {
        const std::int64_t bytes = std::min<std::int64_t>(1ll << 30, m_caps.memory_bytes / 8);
        auto opts = at::TensorOptions().dtype(at::kByte).device(torch_device());
        auto src = at::empty({bytes}, opts);
        auto dst = at::empty({bytes}, opts);
        FOURFOLD_CHECK_CUDA(cudaMemsetAsync(src.data_ptr(), 1, bytes, current_stream()));
        dst.copy_(src);
        cuda_event start, stop;
        std::vector<double> ms;
        for (int i = 0; i < 20; ++i) {
            start.record();
            dst.copy_(src);
            stop.record();
            synchronize();
            ms.push_back(stop.elapsed_ms_since(start));
        }
        std::sort(ms.begin(), ms.end());
        const double median_s = ms[ms.size() / 2] / 1e3;
        // Give the 2 GiB back to the driver: cached, it would be split for later allocations
        // and pin a whole segment in every later memory pass.
        src = at::Tensor();
        dst = at::Tensor();
        c10::cuda::CUDACachingAllocator::emptyCache();
        return {2.0 * static_cast<double>(bytes) / median_s, 2 * bytes,
                fmt::format("device-to-device Tensor::copy_ of {} MiB, CUDA events, median of 20, "
                            "bytes read + written",
                            bytes >> 20)};
    }

    memory_probe& memory() override { return *m_memory; }

  private:
    device_spec m_spec;
    std::string m_pci;
    cudaDeviceProp m_prop{};
    capabilities m_caps;
    std::unique_ptr<cuda_memory_probe> m_memory;
    std::optional<c10::cuda::CUDAStream> m_capture_stream;
    at::Tensor m_flush;
    int m_flush_value = 0;
};

} // namespace

int cuda_device_count() {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}
std::unique_ptr<device> make_cuda_device(int index) {
    return std::make_unique<cuda_device>(index);
}

#else

int cuda_device_count() {
    return 0;
}
std::unique_ptr<device> make_cuda_device(int) {
    throw bad_input("this build's libtorch has no CUDA; valid device here: cpu");
}

#endif

} // namespace fourfold::backend
