#include "fourfold/workloads/model_ops/pad.hpp"

#include "fourfold/workloads/native.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <stdexcept>
#include <vector>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/pad.hpp"
#endif

namespace fourfold::workloads::model_ops {
namespace {

void check_pads(const at::Tensor& x, c10::IntArrayRef pads) {
    if (pads.size() % 2 != 0 || static_cast<std::int64_t>(pads.size() / 2) > x.dim())
        throw std::invalid_argument(fmt::format(
            "pad: {} pad values for a {}-D tensor; give (before, after) pairs for at most its "
            "dimensions",
            pads.size(), x.dim()));
    for (const auto p : pads)
        if (p < 0)
            throw std::invalid_argument("pad: pads must be non-negative (no cropping)");
}

} // namespace

std::vector<std::int64_t> padded_shape(c10::IntArrayRef shape, c10::IntArrayRef pads) {
    std::vector<std::int64_t> out(shape.begin(), shape.end());
    // pads name the last dimension first
    for (std::size_t pair = 0; pair < pads.size() / 2 && pair < out.size(); ++pair)
        out[out.size() - 1 - pair] += pads[2 * pair] + pads[2 * pair + 1];
    return out;
}

#if FOURFOLD_WITH_KERNELS
kernels::pad_args native_pad_args(const at::Tensor& x, c10::IntArrayRef pads, double value,
                                  const at::Tensor& y) {
    kernels::pad_args a;
    a.x = x.data_ptr();
    a.y = y.data_ptr();
    a.dims = static_cast<int>(x.dim());
    const auto pairs = static_cast<int>(pads.size() / 2);
    for (int i = 0; i < a.dims; ++i) {
        const int from_last = a.dims - 1 - i; // pads name the last dimension first
        a.in_shape[i] = x.size(i);
        a.in_stride[i] = x.stride(i);
        a.before[i] = from_last < pairs ? pads[2 * from_last] : 0;
        a.after[i] = from_last < pairs ? pads[2 * from_last + 1] : 0;
    }
    a.value = value;
    a.type = native::elem_of(x.scalar_type());
    return a;
}
#endif

namespace {

// fourfold's kernel (kernels/pad.cu): output allocated here, no host sync, the call's stream.
at::Tensor native_pad(const at::Tensor& x, c10::IntArrayRef pads, double value,
                      const call_context* ctx) {
#if FOURFOLD_WITH_KERNELS
    if (!ctx)
        throw std::logic_error("the native pad needs a call context (its stream)");
    const auto dims = static_cast<int>(x.dim());
    if (dims < 1 || dims > kernels::k_pad_max_dims)
        throw std::invalid_argument(
            fmt::format("pad native: {}-D input; the kernel pads 1 to {} dimensions", dims,
                        kernels::k_pad_max_dims));
    auto y = at::empty(padded_shape(x.sizes(), pads), x.options());
    const auto a = native_pad_args(x, pads, value, y);
    const auto plan = kernels::plan_pad(a, native::limits(*ctx));
    if (ctx->wants_facts())
        ctx->fact("kernel", json{{"path", plan.describe()},
                                 {"vector_elements", plan.vec},
                                 {"blocks", plan.blocks},
                                 {"threads_per_block", plan.threads}});
    native::check(kernels::launch_pad(plan, a, native::stream(*ctx)), "pad");
    return y;
#else
    (void)x;
    (void)pads;
    (void)value;
    (void)ctx;
    throw std::logic_error("pad native ran in a build without native kernels");
#endif
}

at::Tensor composite_pad(const at::Tensor& x, c10::IntArrayRef pads, double value) {
    auto y = x;
    bool padded = false;
    for (std::size_t pair = 0; pair < pads.size() / 2; ++pair) {
        const auto before = pads[2 * pair], after = pads[2 * pair + 1];
        if (before == 0 && after == 0)
            continue;
        const auto dim = x.dim() - 1 - static_cast<std::int64_t>(pair);
        std::vector<at::Tensor> parts;
        auto block = [&](std::int64_t n) {
            auto shape = y.sizes().vec();
            shape[static_cast<std::size_t>(dim)] = n;
            return at::full(shape, value, y.options());
        };
        // one block serves both sides where they are equal (as the pad workload always did)
        const auto front = before > 0 ? block(before) : at::Tensor();
        if (before > 0)
            parts.push_back(front);
        parts.push_back(y);
        if (after > 0)
            parts.push_back(after == before ? front : block(after));
        y = at::cat(parts, dim);
        padded = true;
    }
    return padded ? y : x.clone(at::MemoryFormat::Contiguous);
}

} // namespace

at::Tensor pad(const at::Tensor& x, c10::IntArrayRef pads, double value, op_path path,
               const call_context* ctx) {
    check_pads(x, pads);
    switch (path) {
    case op_path::stock:
        return at::constant_pad_nd(x, pads, value);
    case op_path::composite:
        return composite_pad(x, pads, value);
    case op_path::native:
        return native_pad(x, pads, value, ctx);
    }
    throw std::logic_error("pad: unknown path");
}

std::int64_t pad_composite_intermediate_elements(c10::IntArrayRef shape, c10::IntArrayRef pads) {
    std::vector<std::int64_t> s(shape.begin(), shape.end());
    auto numel = [&] {
        std::int64_t n = 1;
        for (const auto v : s)
            n *= v;
        return n;
    };
    // the padded dimensions, last first, as composite_pad walks them
    std::vector<std::size_t> dims;
    for (std::size_t pair = 0; pair < pads.size() / 2; ++pair)
        if (pads[2 * pair] > 0 || pads[2 * pair + 1] > 0)
            dims.push_back(pair);
    std::int64_t total = 0;
    for (std::size_t k = 0; k < dims.size(); ++k) {
        const auto pair = dims[k];
        const auto d = s.size() - 1 - pair;
        const auto row = numel() / s[d];
        const auto before = pads[2 * pair], after = pads[2 * pair + 1];
        total += row * (before == after ? before : before + after); // the constant blocks
        s[d] += pads[2 * pair] + pads[2 * pair + 1];
        if (k + 1 < dims.size())
            total += numel(); // an intermediate that the next cat reads
    }
    return total;
}

} // namespace fourfold::workloads::model_ops
