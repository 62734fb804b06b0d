#include "fourfold/workloads/model_ops/op_path.hpp"

namespace fourfold::workloads::model_ops {

std::string_view to_string(op_path p) {
    switch (p) {
    case op_path::stock:
        return "stock";
    case op_path::composite:
        return "composite";
    case op_path::native:
        return "native";
    }
    return "?";
}

} // namespace fourfold::workloads::model_ops
