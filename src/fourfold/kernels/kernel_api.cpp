#include "fourfold/kernels/kernel_api.hpp"

namespace fourfold::kernels {

std::size_t elem_bytes(elem e) {
    switch (e) {
    case elem::f32:
        return 4;
    case elem::f16:
    case elem::bf16:
        return 2;
    }
    return 4;
}

const char* to_string(elem e) {
    switch (e) {
    case elem::f32:
        return "fp32";
    case elem::f16:
        return "fp16";
    case elem::bf16:
        return "bf16";
    }
    return "?";
}

} // namespace fourfold::kernels
