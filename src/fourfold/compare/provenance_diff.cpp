#include "fourfold/compare/provenance_diff.hpp"

#include "fourfold/core/text.hpp"

#include <fmt/format.h>
#include <map>

namespace fourfold::compare {
namespace {

// Job fields first: they are checked per pair, not in the provenance.
const std::vector<diff_name> k_names{
    {"device", "the job's device (cpu, cuda:0, mps): records paired across devices"},
    {"dtype", "the job's dtype: records paired across dtypes (fp32 vs bf16)"},
    {"device_model", "device model and its properties (device.name, SMs, memory, caches)"},
    {"device_instance", "another unit of the same model (device.uuid, PCI bus id, index)"},
    {"device_config", "clock and power limits of the device"},
    {"driver", "GPU driver version"},
    {"cuda", "CUDA runtime version"},
    {"torch", "libtorch version and build configuration"},
    {"build", "fourfold's own build: git sha, dirty flag, compiler, flags, build type"},
    {"host", "host CPU, OS, kernel, memory"},
    {"threads", "CPU thread counts of libtorch"},
    {"timing", "timing settings (mode, cache, stopping rule) or a record's timing mode/cache"},
    {"seed", "the base seed of the inputs"},
    {"settings", "other run settings (memory pass window)"},
    {"other", "any provenance field fourfold does not know"},
};

// Ordered: the first prefix that matches names the field. An empty name: never treatment.
struct rule {
    std::string_view prefix;
    std::string_view name;
};
const std::vector<rule> k_rules{
    // differ between any two runs: when they ran, where, what the clocks read at that moment,
    // what the copy bandwidth measured at start, what was asked (pairing shows the jobs)
    {"collected_at", ""},
    {"host.hostname", ""},
    {"device.nvml.sm_clock_mhz", ""},
    {"device.nvml.graphics_clock_mhz", ""},
    {"device.nvml.memory_clock_mhz", ""},
    {"bandwidth", ""},
    {"request", ""},
    {"settings.ledgers", ""},
    {"pid", ""},
    {"device.uuid", "device_instance"},
    {"device.pci_bus_id", "device_instance"},
    {"device.index", "device_instance"},
    {"device.max_sm_clock_mhz_attr", "device_config"},
    {"device.max_memory_clock_mhz_attr", "device_config"},
    {"device.nvml.max_", "device_config"},
    {"device.nvml.power_limit_w", "device_config"},
    {"device.nvml.enforced_power_limit_w", "device_config"},
    {"device.nvml.driver_version", "driver"},
    {"device.cuda_driver_api_version", "driver"},
    {"device.cuda_runtime_version", "cuda"},
    {"device.torch_threads", "threads"},
    {"device.torch_interop_threads", "threads"},
    // what the device can do follows from the device model and the libtorch build: shown,
    // never required to be declared, since its causes are
    {"device.capabilities", "derived"},
    {"device", "device_model"},
    {"libtorch.num_threads", "threads"},
    {"libtorch.parallel_info", "threads"},
    {"libtorch", "torch"},
    {"fourfold.torch_", "torch"},
    {"fourfold", "build"},
    {"host", "host"},
    {"settings.timing", "timing"},
    {"settings.seed", "seed"},
    {"settings", "settings"},
};

bool matches(std::string_view path, std::string_view prefix) {
    if (!starts_with(path, prefix))
        return false;
    if (path.size() == prefix.size())
        return true;
    // "device.nvml.max_" matches "device.nvml.max_sm_clock_mhz"; "host" must not match "hostx"
    return prefix.back() == '_' || path[prefix.size()] == '.';
}

// Flattens into dotted paths; arrays are compared whole.
void flatten_into(const json& v, const std::string& prefix, std::map<std::string, json>& out) {
    if (v.is_object() && !v.empty()) {
        for (auto it = v.begin(); it != v.end(); ++it)
            flatten_into(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
        return;
    }
    out[prefix] = v;
}

} // namespace

const std::vector<diff_name>& diff_names() {
    return k_names;
}

bool is_diff_name(std::string_view name) {
    for (const auto& n : k_names)
        if (n.name == name)
            return true;
    return false;
}

std::string diff_names_text() {
    std::vector<std::string> out;
    out.reserve(k_names.size());
    for (const auto& n : k_names)
        out.emplace_back(n.name);
    return join(out, ", ");
}

std::string diff_names_help() {
    std::string out;
    for (const auto& n : k_names)
        out += fmt::format("  {:<16} {}\n", n.name, n.covers);
    return out;
}

std::string diff_name_of(std::string_view path) {
    for (const auto& r : k_rules)
        if (matches(path, r.prefix))
            return std::string(r.name);
    return "other";
}

std::set<std::string> provenance_diff::names() const {
    // `derived` fields are not in `fields`: they need no declaration
    std::set<std::string> out;
    for (const auto& f : fields)
        out.insert(f.name);
    return out;
}

provenance_diff diff_provenance(const json& a, const json& b) {
    std::map<std::string, json> fa, fb;
    flatten_into(a, "", fa);
    flatten_into(b, "", fb);
    std::map<std::string, std::pair<json, json>> differing;
    for (const auto& [k, v] : fa) {
        const auto it = fb.find(k);
        if (it == fb.end())
            differing[k] = {v, nullptr};
        else if (it->second != v)
            differing[k] = {v, it->second};
    }
    for (const auto& [k, v] : fb)
        if (!fa.count(k))
            differing[k] = {nullptr, v};
    provenance_diff out;
    for (auto& [path, values] : differing) {
        auto name = diff_name_of(path);
        if (name.empty())
            out.never_treatment.push_back(path);
        else if (name == k_derived)
            out.derived.push_back({path, name, values.first, values.second});
        else
            out.fields.push_back({path, std::move(name), values.first, values.second});
    }
    return out;
}

std::string short_value(const json& v) {
    if (v.is_null())
        return "(absent)";
    std::string text = v.is_string() ? v.get<std::string>() : v.dump();
    if (text.find('\n') != std::string::npos || text.size() > 60)
        return fmt::format("({} characters of text)", text.size());
    return v.is_string() ? "'" + text + "'" : text;
}

} // namespace fourfold::compare
