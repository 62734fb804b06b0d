#include "fourfold/backend/device.hpp"

#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>

namespace fourfold::backend {

std::string_view to_string(device_kind k) {
    switch (k) {
    case device_kind::cpu:
        return "cpu";
    case device_kind::cuda:
        return "cuda";
    case device_kind::mps:
        return "mps";
    }
    return "?";
}

std::string device_spec::name() const {
    return kind == device_kind::cuda ? fmt::format("cuda:{}", index) : std::string(to_string(kind));
}

device_spec device_spec::parse(std::string_view text) {
    const std::string t = trim(text);
    if (t == "cpu")
        return {device_kind::cpu, 0};
    if (t == "mps")
        return {device_kind::mps, 0};
    if (t == "cuda")
        return {device_kind::cuda, 0};
    if (starts_with(t, "cuda:")) {
        std::uint64_t index = 0;
        if (parse_uint(std::string_view(t).substr(5), index) && index < 64)
            return {device_kind::cuda, static_cast<int>(index)};
    }
    throw bad_input(
        fmt::format("device '{}' is not a device name; valid: cpu, cuda, cuda:N, mps", text));
}

bool capabilities::supports(dtype t) const {
    for (const auto d : dtypes)
        if (d == t)
            return true;
    return false;
}

std::optional<std::string> capabilities::missing(const std::string& feature) const {
    const auto it = features.find(feature);
    if (it == features.end())
        return fmt::format("feature '{}' is not known to this build", feature);
    if (it->second.available)
        return std::nullopt;
    return it->second.reason;
}

json capabilities::to_json() const {
    json f = json::object();
    for (const auto& [name, state] : features)
        f[name] = state.available ? json(true) : json(state.reason);
    std::vector<std::string> names;
    for (const auto d : dtypes)
        names.emplace_back(to_string(d));
    return json{{"events", events},
                {"graphs", graphs},
                {"cache_flush", cache_flush},
                {"cache_bytes", cache_bytes},
                {"memory_bytes", memory_bytes},
                {"compute_units", compute_units},
                {"arch", arch},
                {"dtypes", names},
                {"dtype_unsupported", dtype_unsupported},
                {"features", f}};
}

json bandwidth_figure::to_json() const {
    return json{{"bytes_per_s", bytes_per_s},
                {"gb_per_s", bytes_per_s / 1e9},
                {"bytes_moved_per_copy", bytes_moved},
                {"method", method}};
}

std::map<std::string, feature_state> build_features() {
    const std::string version =
        fmt::format("libtorch {}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR);
    auto state = [&](bool ok, const char* since) {
        return ok ? feature_state{true, {}}
                  : feature_state{false, fmt::format("not in {} (needs {})", version, since)};
    };
    return {
        {"float8", state(FOURFOLD_HAS_FLOAT8, "2.1+")},
        {"grouped_mm", state(FOURFOLD_HAS_GROUPED_MM, "about 2.8+")},
        {"scaled_mm", state(FOURFOLD_HAS_SCALED_MM, "2.5+ for the current signature")},
        {"sdpa", state(FOURFOLD_HAS_SDPA, "2.0+")},
    };
}

int cpu_threads() {
    return at::get_num_threads();
}

void set_cpu_threads(int threads) {
    at::set_num_threads(threads);
}

std::unique_ptr<device> open_device(const device_spec& spec) {
    switch (spec.kind) {
    case device_kind::cpu:
        return make_cpu_device();
    case device_kind::cuda: {
        const int count = cuda_device_count();
        if (!FOURFOLD_WITH_CUDA)
            throw bad_input(fmt::format("device '{}' is not available: this build's libtorch has "
                                        "no CUDA; valid here: cpu",
                                        spec.name()));
        if (spec.index >= count)
            throw bad_input(fmt::format("device '{}' is not available: {} CUDA device(s) visible{}",
                                        spec.name(), count,
                                        count ? fmt::format("; valid: cuda:0..cuda:{}", count - 1)
                                              : std::string("; valid here: cpu")));
        return make_cuda_device(spec.index);
    }
    case device_kind::mps:
        if (!mps_available())
            throw bad_input("device 'mps' is not available on this build or machine; valid here: "
                            "cpu" +
                            std::string(cuda_device_count() ? ", cuda" : ""));
        return make_mps_device();
    }
    throw bad_input("unknown device kind");
}

std::vector<device_spec> visible_devices() {
    std::vector<device_spec> out{{device_kind::cpu, 0}};
    for (int i = 0; i < cuda_device_count(); ++i)
        out.push_back({device_kind::cuda, i});
    if (mps_available())
        out.push_back({device_kind::mps, 0});
    return out;
}

} // namespace fourfold::backend
