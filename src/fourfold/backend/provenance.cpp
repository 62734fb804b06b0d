#include "fourfold/backend/provenance.hpp"

#include "fourfold/backend/host_info.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/build_info.hpp"
#include "fourfold/core/text.hpp"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <fmt/format.h>

namespace fourfold::backend {

json libtorch_fingerprint() {
    return json{{"version", fmt::format("{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR)},
                {"version_header", TORCH_VERSION},
                {"cuda", FOURFOLD_WITH_CUDA == 1},
                {"mps", FOURFOLD_WITH_MPS == 1},
                {"cxx_flags", trim(at::get_cxx_flags())},
                {"show_config", at::show_config()},
                {"parallel_info", at::get_parallel_info()},
                {"num_threads", at::get_num_threads()},
                {"features", [] {
                     json f = json::object();
                     for (const auto& [name, state] : build_features())
                         f[name] = state.available ? json(true) : json(state.reason);
                     return f;
                 }()}};
}

json collect_provenance(const device* dev) {
    json out{{"fourfold", this_build().to_json()},
             {"libtorch", libtorch_fingerprint()},
             {"host", host_fingerprint()},
             {"collected_at", utc_now_iso8601()}};
    if (dev) {
        out["device"] = dev->fingerprint();
        out["device"]["capabilities"] = dev->caps().to_json();
    }
    return out;
}

} // namespace fourfold::backend
