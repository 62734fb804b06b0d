#include "fourfold/workloads/model_ops/softmax.hpp"

#include "fourfold/workloads/native.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <stdexcept>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/softmax.hpp"
#endif

namespace fourfold::workloads::model_ops {
namespace {

// fourfold's kernel (kernels/softmax.cu): one launch, the row read once and written once.
at::Tensor native_softmax(const at::Tensor& x, const call_context* ctx) {
#if FOURFOLD_WITH_KERNELS
    if (!ctx)
        throw std::logic_error("the native softmax needs a call context (its stream)");
    if (x.dim() != 2 || x.stride(1) != 1)
        throw std::logic_error("softmax native: logits must be 2-D with contiguous rows");
    const auto rows = x.size(0), n = x.size(1);
    auto y = at::empty({rows, n}, x.options());
    const kernels::softmax_args a{x.data_ptr(),
                                  y.data_ptr(),
                                  rows,
                                  n,
                                  x.stride(0),
                                  y.stride(0),
                                  native::elem_of(x.scalar_type())};
    const auto plan = kernels::plan_softmax(a, native::limits(*ctx));
    if (ctx->wants_facts())
        ctx->fact("kernel", json{{"path", plan.describe()},
                                 {"threads_per_block", plan.threads},
                                 {"blocks_per_row", plan.cluster},
                                 {"vector_elements", plan.vec},
                                 {"cached_vectors_per_thread", plan.cache},
                                 {"rereads", plan.rereads}});
    native::check(kernels::launch_softmax(plan, a, native::stream(*ctx)), "softmax");
    return y;
#else
    (void)x;
    (void)ctx;
    throw std::logic_error("softmax native ran in a build without native kernels");
#endif
}

} // namespace

at::Tensor softmax(const at::Tensor& x, op_path path, const call_context* ctx,
                   std::optional<c10::ScalarType> out_type) {
    const bool same_type = !out_type || *out_type == x.scalar_type();
    switch (path) {
    case op_path::stock:
        return same_type ? at::softmax(x, -1) : at::softmax(x, -1, *out_type);
    case op_path::composite: {
        const auto in = same_type ? x : x.to(*out_type);
        const auto shifted = in - std::get<0>(in.max(-1, true));
        const auto e = shifted.exp();
        return e / e.sum(-1, true);
    }
    case op_path::native:
        if (!same_type)
            throw std::invalid_argument("the native softmax writes the input's dtype");
        return native_softmax(x, ctx);
    }
    throw std::logic_error("softmax: unknown path");
}

} // namespace fourfold::workloads::model_ops
