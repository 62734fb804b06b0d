#include "fourfold/backend/cpu_allocator_tracker.hpp"

#include <atomic>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <cstring>
#include <mutex>
#include <unordered_map>

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

// libtorch expects CPU allocations to be "simple" (context == data: raw_allocate asserts it in
// 2.x), so the wrapper keeps the inner pointer as both and remembers each allocation's size in
// a table, freeing through the inner allocator's raw deleter. An inner allocator without a raw
// deleter is wrapped by context instead (1.13's default has one, as does 2.x's).
std::mutex g_sizes_mutex;
std::unordered_map<void*, std::int64_t> g_sizes;
c10::DeleterFnPtr g_inner_raw_delete = nullptr;

void tracked_raw_delete(void* p) {
    if (!p)
        return;
    std::int64_t bytes = 0;
    {
        std::lock_guard lock(g_sizes_mutex);
        const auto it = g_sizes.find(p);
        if (it != g_sizes.end()) {
            bytes = it->second;
            g_sizes.erase(it);
        }
    }
    g_current.fetch_sub(bytes, std::memory_order_relaxed);
    g_inner_raw_delete(p);
}

struct tracked_context {
    c10::DataPtr inner;
    std::int64_t bytes;
};

void tracked_context_delete(void* ctx) {
    auto* c = static_cast<tracked_context*>(ctx);
    g_current.fetch_sub(c->bytes, std::memory_order_relaxed);
    delete c;
}

// libtorch 1.13 declares `allocate(size_t) const`; 2.x declares it non-const and adds a pure
// `copy_data`. Defining both forms (without `override`) satisfies either header set.
class tracking_allocator final : public c10::Allocator {
  public:
    explicit tracking_allocator(c10::Allocator* inner) : m_inner(inner) {
        g_inner_raw_delete = inner->raw_deleter();
    }

    // NOLINTNEXTLINE(modernize-use-override): it overrides in libtorch 1.13 only (see above)
    c10::DataPtr allocate(size_t n) const { return wrap(n); }
    c10::DataPtr allocate(size_t n) { return wrap(n); }
    c10::DeleterFnPtr raw_deleter() const override {
        return g_inner_raw_delete ? &tracked_raw_delete : nullptr;
    }
    void copy_data(void* dest, const void* src, std::size_t count) const {
        std::memcpy(dest, src, count);
    }

  private:
    c10::DataPtr wrap(size_t n) const {
        c10::DataPtr inner = m_inner->allocate(n);
        if (n == 0 || !inner.get())
            return inner;
        const auto bytes = static_cast<std::int64_t>(n);
        const auto device = inner.device();
        if (g_inner_raw_delete && inner.get() == inner.get_context()) {
            void* p = inner.release_context();
            {
                std::lock_guard lock(g_sizes_mutex);
                g_sizes[p] = bytes;
            }
            add_bytes(bytes);
            return c10::DataPtr(p, p, &tracked_raw_delete, device);
        }
        void* data = inner.get();
        auto* ctx = new tracked_context{std::move(inner), bytes};
        add_bytes(bytes);
        return c10::DataPtr(data, ctx, &tracked_context_delete, device);
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

bool cpu_allocator_tracker_installed() {
    return g_installed;
}

cpu_allocator_counts cpu_allocator_counts_now() {
    return {g_current.load(std::memory_order_relaxed), g_peak.load(std::memory_order_relaxed)};
}

void cpu_allocator_reset_peak() {
    g_peak.store(g_current.load());
}

} // namespace fourfold::backend
