#include "fourfold/backend/cpu_allocator_tracker.hpp"

#include <atomic>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <cstring>
#include <mutex>

namespace fourfold::backend {
namespace {

std::atomic<std::int64_t> g_current{0};
std::atomic<std::int64_t> g_peak{0};
std::atomic<bool> g_installed{false};

void add_bytes(std::int64_t n) {
    const auto now = g_current.fetch_add(n, std::memory_order_relaxed) + n;
    auto peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
}

// The inner allocation rides along in the context so freeing it runs the original deleter.
struct tracked_context {
    c10::DataPtr inner;
    std::int64_t bytes;
};

void tracked_delete(void* ctx) {
    auto* c = static_cast<tracked_context*>(ctx);
    g_current.fetch_sub(c->bytes, std::memory_order_relaxed);
    delete c;
}

// libtorch 1.13 declares `allocate(size_t) const`; 2.x declares it non-const and adds a pure
// `copy_data`. Defining both forms (without `override`) satisfies either header set.
class tracking_allocator final : public c10::Allocator {
public:
    explicit tracking_allocator(c10::Allocator* inner) : m_inner(inner) {}

    c10::DataPtr allocate(size_t n) const { return wrap(n); }
    c10::DataPtr allocate(size_t n) { return wrap(n); }
    void copy_data(void* dest, const void* src, std::size_t count) const {
        std::memcpy(dest, src, count);
    }

private:
    c10::DataPtr wrap(size_t n) const {
        c10::DataPtr inner = m_inner->allocate(n);
        void* data = inner.get();
        const auto device = inner.device();
        auto* ctx = new tracked_context{std::move(inner), static_cast<std::int64_t>(n)};
        add_bytes(ctx->bytes);
        return c10::DataPtr(data, ctx, &tracked_delete, device);
    }
    c10::Allocator* m_inner;
};

} // namespace

bool install_cpu_allocator_tracker() {
    static std::once_flag once;
    std::call_once(once, [] {
        c10::Allocator* inner = c10::GetCPUAllocator();
        static tracking_allocator tracker(inner);
        // Highest priority so that no later default registration displaces it.
        c10::SetCPUAllocator(&tracker, /*priority=*/UINT8_MAX);
        g_installed = c10::GetCPUAllocator() == &tracker;
    });
    return g_installed;
}

bool cpu_allocator_tracker_installed() { return g_installed; }

cpu_allocator_counts cpu_allocator_counts_now() {
    return {g_current.load(std::memory_order_relaxed), g_peak.load(std::memory_order_relaxed)};
}

void cpu_allocator_reset_peak() { g_peak.store(g_current.load()); }

} // namespace fourfold::backend
