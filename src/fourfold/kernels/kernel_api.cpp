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

bool switch_is(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v && std::strcmp(v, value) == 0;
}

bool dependent_launch(const device_limits& d) {
    return d.cc_major >= 9 && !switch_is("FOURFOLD_DEPENDENT_LAUNCH", "0");
}

} // namespace fourfold::kernels
