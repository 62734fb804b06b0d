#pragma once
// What this binary is: version, git state, compiler, flags and build type, fixed at build time.
#include "fourfold/core/json.hpp"

#include <string>

namespace fourfold {

struct build_info {
    std::string version;
    std::string git_sha;
    int git_dirty = -1; // 1 dirty, 0 clean, -1 unknown (no git at build time)
    std::string compiler;
    std::string cxx_flags;
    std::string cuda_flags;
    std::string cuda_architectures;
    std::string build_type;
    std::string cmake_version;
    std::string torch_cmake_version;
    std::string torch_prefix;
    json to_json() const;
};

const build_info& this_build();

} // namespace fourfold
