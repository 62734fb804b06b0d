#include "fourfold/core/build_info.hpp"

#include "fourfold/core/text.hpp"

namespace fourfold {
namespace build_info_generated {
extern const char* const k_git_sha;
extern const int k_git_dirty;
} // namespace build_info_generated

json build_info::to_json() const {
    return json{{"version", version},
                {"git_sha", git_sha},
                {"git_dirty", git_dirty < 0 ? json("unknown") : json(git_dirty == 1)},
                {"compiler", compiler},
                {"cxx_flags", cxx_flags},
                {"cuda_flags", cuda_flags},
                {"cuda_architectures", cuda_architectures},
                {"build_type", build_type},
                {"cmake_version", cmake_version},
                {"torch_cmake_version", torch_cmake_version},
                {"torch_prefix", torch_prefix}};
}

const build_info& this_build() {
    static const build_info info{
        FOURFOLD_VERSION,
        build_info_generated::k_git_sha,
        build_info_generated::k_git_dirty,
        std::string(FOURFOLD_CXX_COMPILER) + " (" + __VERSION__ + ")",
        trim(FOURFOLD_CXX_FLAGS),
        trim(FOURFOLD_CUDA_FLAGS),
        FOURFOLD_CUDA_ARCHITECTURES,
        FOURFOLD_BUILD_TYPE,
        FOURFOLD_CMAKE_VERSION,
        FOURFOLD_TORCH_CMAKE_VERSION,
        FOURFOLD_TORCH_PREFIX,
    };
    return info;
}

} // namespace fourfold
