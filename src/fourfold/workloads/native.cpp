#include "fourfold/workloads/native.hpp"

#if FOURFOLD_WITH_KERNELS
#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/core/error.hpp"

#include <fmt/format.h>
#include <map>
#include <mutex>

namespace fourfold::workloads::native {

kernels::elem elem_of(dtype t) {
    switch (t) {
    case dtype::fp32:
        return kernels::elem::f32;
    case dtype::fp16:
        return kernels::elem::f16;
    case dtype::bf16:
        return kernels::elem::bf16;
    default:
        break;
    }
    throw std::logic_error(
        fmt::format("the native kernels take fp32, fp16 and bf16, not {}", to_string(t)));
}

kernels::elem elem_of(c10::ScalarType t) {
    const auto d = backend::from_scalar_type(t);
    if (!d)
        throw std::logic_error(
            fmt::format("the native kernels take fp32, fp16 and bf16, not {}", c10::toString(t)));
    return elem_of(*d);
}

const kernels::device_limits& limits(const call_context& ctx) {
    static std::mutex mutex;
    static std::map<int, kernels::device_limits> known;
    const int index = ctx.device().spec().index;
    std::lock_guard lock(mutex);
    auto it = known.find(index);
    if (it == known.end())
        it = known.emplace(index, kernels::query_device(index)).first;
    return it->second;
}

kernels::stream_t stream(const call_context& ctx) {
    return static_cast<kernels::stream_t>(ctx.stream());
}

void check(const kernels::launch_status& status, std::string_view kernel) {
    if (!status.ok())
        throw device_error(fmt::format("native {} kernel: launch failed: {} (CUDA error {})",
                                       kernel, status.message, status.code));
}

} // namespace fourfold::workloads::native
#endif
