// Apple MPS: compiled where libtorch has it (macOS, 2.0+). It cannot be run on fourfold's own
// machines, so it stays small: host timing around the hooks' synchronize, the driver level from
// getDriverAllocatedMemory and the allocated level sampled (no peaks exist in 2.11).
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/memory_probe.hpp"
#include "fourfold/core/error.hpp"

#if FOURFOLD_WITH_MPS
#include <ATen/ATen.h>
#include <ATen/detail/MPSHooksInterface.h>
#include <fmt/format.h>
#endif

namespace fourfold::backend {

#if FOURFOLD_WITH_MPS
namespace {

class mps_memory_probe final : public memory_probe {
  public:
    std::string driver_level() const override { return "MPS driver allocated memory"; }
    std::map<std::string, std::string> unavailable() const override {
        return {{"reserved", "the MPS allocator exposes no reserved figure before 2.12"}};
    }
    void reset_peaks() override {}
    memory_sample now() override {
        const auto& hooks = at::detail::getMPSHooks();
        memory_sample s;
        s.driver = static_cast<std::int64_t>(hooks.getDriverAllocatedMemory());
        s.allocated = static_cast<std::int64_t>(hooks.getCurrentAllocatedMemory());
        return s;
    }
    memory_sample counter_peaks() override { return {}; }

  protected:
    void free_cached() override { at::detail::getMPSHooks().emptyCache(); }
};

class mps_device final : public device {
  public:
    mps_device() {
        m_caps.cache_flush = false;
        m_caps.dtypes = {dtype::fp32, dtype::fp16, dtype::bf16};
        m_caps.dtype_unsupported["fp64"] = "MPS has no float64";
        m_caps.features = build_features();
        m_caps.features["graphs"] = {false, "graph capture is a CUDA feature"};
        m_caps.features["events"] = {false, "fourfold times MPS with the host clock"};
        m_caps.arch = "apple";
    }
    const device_spec& spec() const override { return m_spec; }
    c10::Device torch_device() const override { return c10::Device(c10::DeviceType::MPS); }
    const capabilities& caps() const override { return m_caps; }
    void synchronize() override { at::detail::getMPSHooks().deviceSynchronize(); }
    std::unique_ptr<device_event> make_event() override {
        throw device_error("fourfold times MPS with the host clock; use --timing host");
    }
    void flush_cache() override {}
    std::unique_ptr<captured_graph> capture(const std::function<void()>&) override {
        throw unsupported_here("graph capture is not available on MPS; use --timing host");
    }
    json fingerprint() const override { return json{{"kind", "mps"}, {"name", "Apple MPS"}}; }
    bandwidth_figure measure_copy_bandwidth() override {
        const std::int64_t bytes = 256ll << 20;
        auto opts = at::TensorOptions().dtype(at::kByte).device(torch_device());
        auto src = at::ones({bytes}, opts);
        auto dst = at::empty({bytes}, opts);
        dst.copy_(src);
        synchronize();
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 10; ++i)
            dst.copy_(src);
        synchronize();
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return {20.0 * bytes / s, 2 * bytes, "Tensor::copy_ of 256 MiB x10, host clock"};
    }
    memory_probe& memory() override { return m_memory; }

  private:
    device_spec m_spec{device_kind::mps, 0};
    capabilities m_caps;
    mps_memory_probe m_memory;
};

} // namespace

bool mps_available() {
    return at::detail::getMPSHooks().hasMPS();
}
std::unique_ptr<device> make_mps_device() {
    return std::make_unique<mps_device>();
}

#else

bool mps_available() {
    return false;
}
std::unique_ptr<device> make_mps_device() {
    throw bad_input("this build has no MPS support; valid device here: cpu");
}

#endif

} // namespace fourfold::backend
