#include "test_variants.hpp"

#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sys/mman.h>
#include <thread>
#if FOURFOLD_WITH_CUDA
#include <cuda_runtime_api.h>
#endif
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/scale.hpp"
#include "fourfold/workloads/native.hpp"
#endif

namespace fourfold::testing {
namespace {

using workloads::call_context;
using workloads::input_set;
using workloads::registry;
using workloads::workload_case;

at::Tensor stock_of(const workload_case& c, const call_context& ctx, const input_set& in) {
    return registry::instance().find(c.args().workload)->run("stock", c, ctx, in);
}

at::Tensor wrong_one_element(const workload_case& c, const call_context& ctx, const input_set& in) {
    auto out = stock_of(c, ctx, in).clone();
    auto flat = out.view({-1});
    const auto index = flat.abs().argmax().item<std::int64_t>();
    flat[index].mul_(1.01);
    return out;
}

at::Tensor bf16_rounded(const workload_case& c, const call_context& ctx, const input_set& in) {
    auto out = stock_of(c, ctx, in);
    return out.to(at::kBFloat16).to(out.scalar_type());
}

at::Tensor nan_one(const workload_case& c, const call_context& ctx, const input_set& in) {
    auto out = stock_of(c, ctx, in).clone();
    out.view({-1})[out.numel() / 2].fill_(std::numeric_limits<double>::quiet_NaN());
    return out;
}

// Keeps the compiler from proving the buffer unused and removing it (malloc + memset + free).
void keep(void* p) {
    asm volatile("" : : "r"(p) : "memory");
}

void hold() {
    std::this_thread::sleep_for(std::chrono::milliseconds(k_outside_hold_ms));
}

at::Tensor outside_allocator(const workload_case& c, const call_context& ctx, const input_set& in) {
    if (in.tensors().front().is_cuda()) {
#if FOURFOLD_WITH_CUDA
        void* p = nullptr;
        if (cudaMalloc(&p, k_outside_bytes) != cudaSuccess)
            throw std::runtime_error("cudaMalloc");
        cudaMemset(p, 1, k_outside_bytes);
        cudaDeviceSynchronize();
        auto out = stock_of(c, ctx, in);
        cudaDeviceSynchronize();
        hold();
        cudaFree(p);
        return out;
#endif
    }
    void* p =
        mmap(nullptr, k_outside_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        throw std::runtime_error("mmap");
    std::memset(p, 1, k_outside_bytes); // touch every page so it is resident
    keep(p);
    auto out = stock_of(c, ctx, in);
    hold();
    munmap(p, k_outside_bytes);
    return out;
}

at::Tensor malloc_outside(const workload_case& c, const call_context& ctx, const input_set& in) {
    void* p = std::malloc(k_outside_bytes);
    if (!p)
        throw std::runtime_error("malloc");
    std::memset(p, 1, k_outside_bytes);
    keep(p);
    auto out = stock_of(c, ctx, in);
    hold();
    std::free(p);
    return out;
}

// stock, then fourfold's smallest native kernel over its output (y = alpha * out) on the call's
// stream: the native path end to end (build, stream, graph capture, correctness ledger).
at::Tensor native_scaled(const workload_case& c, const call_context& ctx, const input_set& in,
                         float alpha) {
#if FOURFOLD_WITH_KERNELS
    const auto out = stock_of(c, ctx, in).contiguous();
    auto y = at::empty_like(out);
    workloads::native::check(kernels::launch_scale(out.data_ptr(), y.data_ptr(), out.numel(), alpha,
                                                   workloads::native::elem_of(c.args().type),
                                                   workloads::native::stream(ctx)),
                             "scale");
    return y;
#else
    throw std::logic_error("native_scale ran in a build without native kernels");
#endif
}

at::Tensor native_scale_one(const workload_case& c, const call_context& ctx, const input_set& in) {
    return native_scaled(c, ctx, in, 1.0f);
}
at::Tensor native_scale_off(const workload_case& c, const call_context& ctx, const input_set& in) {
    return native_scaled(c, ctx, in, 1.01f);
}

} // namespace

void register_test_variants() {
    auto& reg = registry::instance();
    for (const auto* w : reg.all()) {
        if (!w->find_variant("stock"))
            continue;
        reg.add_test_variant(w->name, {"wrong_one_element", "largest element +1 %"},
                             wrong_one_element);
        reg.add_test_variant(w->name, {"bf16_rounded", "rounded through bf16"}, bf16_rounded);
        reg.add_test_variant(w->name, {"nan_one", "one NaN"}, nan_one);
        reg.add_test_variant(w->name, {"outside_allocator", "1 GiB outside the allocator", true},
                             outside_allocator);
        reg.add_test_variant(w->name, {"malloc_outside", "1 GiB from malloc", true},
                             malloc_outside);
        workloads::variant_needs native;
        native.native_kernels = true;
        native.devices = {backend::device_kind::cuda};
        reg.add_test_variant(
            w->name,
            {"native_scale", "stock, then the native scale kernel (x 1)", false, false, native},
            native_scale_one);
        reg.add_test_variant(w->name,
                             {"native_scale_off", "stock, then the native scale kernel (x 1.01)",
                              false, false, native},
                             native_scale_off);
    }
}

} // namespace fourfold::testing
