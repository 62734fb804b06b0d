#pragma once
// Which implementation of an op a call takes. An op workload's variants and a whole-model
// workload's session call the same model_ops functions with a path, so an op_time figure and a
// tokens/s figure are about the same code; fourfold's own kernel is one more path of the same
// switch, for the model as for the op.
#include <string_view>

namespace fourfold::workloads::model_ops {

enum class op_path {
    stock,     // libtorch's own kernel for the op (at::softmax, at::linear)
    composite, // the same function as separate libtorch ops (what a graph compiler emits)
    native     // fourfold's CUDA kernel (kernels/): needs a call context (stream, limits, facts)
};
std::string_view to_string(op_path p);

} // namespace fourfold::workloads::model_ops
