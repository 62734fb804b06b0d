#include "fourfold/kernels/kernel_api.hpp"

#include <cstdlib>
#include <cstring>

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

bool dependent_launch(const device_limits& d) {
    const char* v = std::getenv("FOURFOLD_DEPENDENT_LAUNCH");
    return d.cc_major >= 9 && !(v && std::strcmp(v, "0") == 0);
}

} // namespace fourfold::kernels
