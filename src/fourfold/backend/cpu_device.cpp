#include "fourfold/backend/cpu_allocator_tracker.hpp"
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/host_info.hpp"
#include "fourfold/backend/memory_probe.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace fourfold::backend {
namespace {

// Process-level memory on Linux: RSS now from /proc/self/statm (one pread, cheap enough for a
// 1 kHz sampler), its peak from VmHWM, which writing "5" to /proc/self/clear_refs resets.
class cpu_memory_probe final : public memory_probe {
  public:
    cpu_memory_probe() : m_page(sysconf(_SC_PAGESIZE)) {
        m_statm = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
        m_tracked = install_cpu_allocator_tracker();
    }
    ~cpu_memory_probe() override {
        if (m_statm >= 0)
            ::close(m_statm);
    }

    std::string driver_level() const override {
        return "process RSS (VmRSS sampled; peak VmHWM, reset through /proc/self/clear_refs)";
    }

    std::map<std::string, std::string> unavailable() const override {
        std::map<std::string, std::string> out;
        if (m_statm < 0)
            out["driver"] = "/proc/self/statm cannot be read";
#if !(defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33)))
        out["reserved"] = "mallinfo2 needs glibc 2.33 or newer";
#endif
        if (!m_tracked)
            out["allocated"] = "libtorch refused the tracking CPU allocator";
        return out;
    }

    void reset_peaks() override {
        const int fd = ::open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
        m_hwm_reset = fd >= 0 && ::write(fd, "5", 1) == 1;
        if (fd >= 0)
            ::close(fd);
        cpu_allocator_reset_peak();
    }

    memory_sample now() override {
        memory_sample s;
        if (m_statm >= 0) {
            char buf[128] = {};
            if (::pread(m_statm, buf, sizeof buf - 1, 0) > 0) {
                long long size = 0, resident = 0;
                if (std::sscanf(buf, "%lld %lld", &size, &resident) == 2)
                    s.driver = resident * m_page;
            }
        }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
        const auto mi = mallinfo2();
        s.reserved = static_cast<std::int64_t>(mi.arena + mi.hblkhd);
#endif
        if (m_tracked)
            s.allocated = cpu_allocator_counts_now().current;
        return s;
    }

    memory_sample counter_peaks() override {
        memory_sample s;
        if (m_hwm_reset)
            s.driver = read_hwm();
        if (m_tracked)
            s.allocated = cpu_allocator_counts_now().peak;
        return s;
    }

  private:
    static std::optional<std::int64_t> read_hwm() {
        FILE* f = std::fopen("/proc/self/status", "r");
        if (!f)
            return std::nullopt;
        char line[256];
        std::optional<std::int64_t> out;
        while (std::fgets(line, sizeof line, f)) {
            long long kb = 0;
            if (std::sscanf(line, "VmHWM: %lld kB", &kb) == 1) {
                out = kb * 1024;
                break;
            }
        }
        std::fclose(f);
        return out;
    }

    long m_page;
    int m_statm = -1;
    bool m_tracked = false;
    bool m_hwm_reset = false;
};

class cpu_device final : public device {
  public:
    cpu_device() {
        m_caps.events = false;
        m_caps.graphs = false;
        m_caps.cache_flush = true;
        m_caps.cache_bytes = host_llc_bytes();
        m_caps.memory_bytes = host_memory_bytes();
        m_caps.compute_units = at::get_num_threads();
        utsname u{};
        uname(&u);
        m_caps.arch = u.machine;
        m_caps.dtypes = {dtype::fp64, dtype::fp32, dtype::bf16, dtype::fp16};
        if (FOURFOLD_HAS_FLOAT8) {
            m_caps.dtypes.push_back(dtype::fp8_e4m3fn);
            m_caps.dtypes.push_back(dtype::fp8_e5m2);
        } else {
            for (const auto t : {dtype::fp8_e4m3fn, dtype::fp8_e5m2})
                m_caps.dtype_unsupported[std::string(to_string(t))] =
                    fmt::format("libtorch {}.{} has no float8 types (2.1+)", TORCH_VERSION_MAJOR,
                                TORCH_VERSION_MINOR);
        }
        m_caps.features = build_features();
        m_caps.features["graphs"] = {false, "graph capture is a CUDA feature"};
        m_caps.features["events"] = {false, "the CPU has no device events; use host timing"};
    }

    const device_spec& spec() const override { return m_spec; }
    c10::Device torch_device() const override { return c10::Device(c10::DeviceType::CPU); }
    const capabilities& caps() const override { return m_caps; }
    void synchronize() override {}

    std::unique_ptr<device_event> make_event() override {
        throw device_error("the CPU has no device events; use --timing host");
    }

    void flush_cache() override {
        // Writing a buffer twice the last-level cache evicts what the op left there.
        if (m_flush.empty())
            m_flush.resize(static_cast<std::size_t>(2 * m_caps.cache_bytes));
        std::memset(m_flush.data(), static_cast<int>(++m_flush_value), m_flush.size());
        m_sink = m_flush[m_flush.size() / 2];
    }

    void release_scratch() override { std::vector<unsigned char>().swap(m_flush); }

    std::unique_ptr<captured_graph> capture(const std::function<void()>&) override {
        throw unsupported_here("graph capture is not available on the CPU; use --timing host");
    }

    json fingerprint() const override {
        return json{{"kind", "cpu"},
                    {"name", host_cpu_model()},
                    {"torch_threads", at::get_num_threads()},
                    {"torch_interop_threads", at::get_num_interop_threads()},
                    {"llc_bytes", m_caps.cache_bytes},
                    {"memory_bytes", m_caps.memory_bytes}};
    }

    bandwidth_figure measure_copy_bandwidth() override {
        const std::int64_t bytes = std::min<std::int64_t>(256ll << 20, m_caps.memory_bytes / 16);
        auto src = at::empty({bytes}, at::TensorOptions().dtype(at::kByte));
        src.fill_(1);
        auto dst = at::empty_like(src);
        dst.copy_(src); // first touch of dst's pages stays out of the timing
        std::vector<double> seconds;
        for (int i = 0; i < 7; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            dst.copy_(src);
            const auto t1 = std::chrono::steady_clock::now();
            seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
        std::sort(seconds.begin(), seconds.end());
        const double median = seconds[seconds.size() / 2];
        return {2.0 * static_cast<double>(bytes) / median, 2 * bytes,
                fmt::format("Tensor::copy_ of {} MiB on {} threads, median of 7, bytes read + "
                            "written",
                            bytes >> 20, at::get_num_threads())};
    }

    memory_probe& memory() override { return m_memory; }

  private:
    device_spec m_spec{device_kind::cpu, 0};
    capabilities m_caps;
    cpu_memory_probe m_memory;
    std::vector<unsigned char> m_flush;
    unsigned char m_flush_value = 0;
    volatile unsigned m_sink = 0;
};

} // namespace

std::unique_ptr<device> make_cpu_device() {
    return std::make_unique<cpu_device>();
}

} // namespace fourfold::backend
