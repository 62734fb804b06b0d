#include "fourfold/workloads/workload.hpp"

#include "fourfold/backend/op_support.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <cstdlib>
#include <fmt/format.h>
#include <torch/version.h>

namespace fourfold::workloads {

json param_spec::default_json() const {
    switch (kind) {
    case param_kind::integer:
        return std::stoll(default_value);
    case param_kind::boolean:
        return default_value == "true";
    case param_kind::text:
        break;
    }
    return default_value;
}

json param_spec::to_json() const {
    json out{{"name", name},
             {"kind", kind == param_kind::integer   ? "integer"
                      : kind == param_kind::boolean ? "boolean"
                                                    : "text"},
             {"default", default_value},
             {"help", help}};
    if (kind == param_kind::integer) {
        out["min"] = min;
        out["max"] = max;
    }
    if (!choices.empty())
        out["choices"] = choices;
    if (omit_at_default)
        out["omitted_at_default"] = true;
    return out;
}

json variant_needs::to_json() const {
    json out = json::object();
    if (native_kernels)
        out["native_kernels"] = true;
    if (!devices.empty()) {
        json d = json::array();
        for (const auto k : devices)
            d.push_back(std::string(backend::to_string(k)));
        out["devices"] = d;
    }
    if (!features.empty())
        out["features"] = features;
    if (torch_major > 0)
        out["torch"] = fmt::format(">= {}.{}", torch_major, torch_minor);
    if (!ops.empty())
        out["ops"] = ops;
    return out;
}

namespace {

// Whether the kernels' code (CMAKE_CUDA_ARCHITECTURES, e.g. "90a" or "80-real,90-virtual") can
// load on a device of compute capability `cc` ("sm_90" -> 90): machine code for exactly that
// capability, or portable PTX of an older one ("a" PTX runs on its own capability alone).
[[maybe_unused]] bool kernels_run_on(const std::string& arch_list, int cc) {
    for (const auto& entry : split(arch_list, ',')) {
        const int v = std::atoi(entry.c_str());
        const auto digits = entry.find_first_not_of("0123456789");
        const bool arch_specific = digits != std::string::npos && entry[digits] == 'a';
        const bool ptx = entry.find("-real") == std::string::npos;
        if (v == cc || (ptx && !arch_specific && v < cc))
            return true;
    }
    return false;
}

} // namespace

std::optional<std::string> unmet(const variant_needs& needs, backend::device& dev, dtype t) {
    const auto kind = dev.spec().kind;
    if (!needs.devices.empty() &&
        std::find(needs.devices.begin(), needs.devices.end(), kind) == needs.devices.end()) {
        std::vector<std::string> names;
        for (const auto k : needs.devices)
            names.emplace_back(backend::to_string(k));
        return fmt::format("runs on {} only; this device is {}", join(names, ", "), dev.name());
    }
    if (needs.native_kernels) {
#if FOURFOLD_WITH_KERNELS
        const auto& arch = dev.caps().arch; // "sm_90"
        const int cc = arch.rfind("sm_", 0) == 0 ? std::atoi(arch.c_str() + 3) : 0;
        if (!kernels_run_on(FOURFOLD_KERNEL_ARCHITECTURES, cc))
            return fmt::format("fourfold's native kernels are built for CUDA architectures {} "
                               "(CMAKE_CUDA_ARCHITECTURES); this device is {}",
                               FOURFOLD_KERNEL_ARCHITECTURES, arch);
#elif FOURFOLD_BUILD_KERNELS
        return std::string("fourfold's native kernels are compiled in this build, but its libtorch "
                           "has no CUDA: they need a CUDA libtorch and a CUDA device");
#else
        return std::string("this build has no native CUDA kernels (no CUDA toolkit was found "
                           "when it was configured)");
#endif
    }
    for (const auto& f : needs.features)
        if (const auto why = dev.caps().missing(f))
            return "needs " + f + ": " + *why;
    if (needs.torch_major > 0 &&
        !(TORCH_VERSION_MAJOR > needs.torch_major ||
          (TORCH_VERSION_MAJOR == needs.torch_major && TORCH_VERSION_MINOR >= needs.torch_minor)))
        return fmt::format("needs libtorch {}.{} or later; this build has {}.{}", needs.torch_major,
                           needs.torch_minor, TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR);
    for (const auto& op : needs.ops)
        if (auto why = backend::op_unsupported(dev, op, t))
            return why;
    return std::nullopt;
}

json variant_spec::to_json() const {
    json out{{"name", name}, {"help", help}, {"host_sync", host_sync}};
    if (auto n = needs.to_json(); !n.empty())
        out["needs"] = std::move(n);
    return out;
}

json cost::to_json() const {
    return json{{"bytes_read", bytes_read},
                {"bytes_written", bytes_written},
                {"bytes_moved", bytes()},
                {"flops", flops},
                {"note", note}};
}

input_set& input_set::add(std::string name, at::Tensor tensor) {
    if (has(name))
        throw std::logic_error("input slot '" + name + "' added twice");
    m_names.push_back(std::move(name));
    m_tensors.push_back(std::move(tensor));
    return *this;
}

const at::Tensor& input_set::operator[](std::string_view name) const {
    for (std::size_t i = 0; i < m_names.size(); ++i)
        if (m_names[i] == name)
            return m_tensors[i];
    throw std::logic_error(fmt::format("no input slot '{}'; the slots are: {}", name,
                                       m_names.empty() ? "(none)" : join(m_names, ", ")));
}

bool input_set::has(std::string_view name) const {
    return std::find(m_names.begin(), m_names.end(), name) != m_names.end();
}

std::int64_t input_set::bytes() const {
    std::int64_t total = 0;
    for (const auto& t : m_tensors)
        if (t.defined())
            total += static_cast<std::int64_t>(t.numel() * t.element_size());
    return total;
}

input_set input_set::to(const c10::Device& device) const {
    input_set out;
    for (std::size_t i = 0; i < m_names.size(); ++i)
        out.add(m_names[i], m_tensors[i].defined() ? m_tensors[i].to(device) : m_tensors[i]);
    return out;
}

input_set input_set::clone() const {
    input_set out;
    for (std::size_t i = 0; i < m_names.size(); ++i)
        out.add(m_names[i], m_tensors[i].defined() ? m_tensors[i].clone() : m_tensors[i]);
    return out;
}

reference_plan chunked_reference(std::int64_t dim, std::int64_t total, std::int64_t bytes_per_unit,
                                 std::string method,
                                 std::function<at::Tensor(std::int64_t, std::int64_t)> compute) {
    const std::int64_t per_chunk = std::max<std::int64_t>(
        1, measure::k_reference_chunk_bytes / std::max<std::int64_t>(1, bytes_per_unit));
    const std::int64_t chunks = (total + per_chunk - 1) / per_chunk;
    reference_plan plan;
    plan.chunks = std::max<std::int64_t>(1, chunks);
    plan.method = std::move(method);
    plan.chunk = [dim, total, per_chunk, compute = std::move(compute)](std::int64_t i) {
        const std::int64_t start = i * per_chunk;
        const std::int64_t length = std::min(per_chunk, total - start);
        return reference_chunk{dim, start, compute(start, length)};
    };
    return plan;
}

std::int64_t case_args::get_int(const std::string& name) const {
    return params.at(name).get<std::int64_t>();
}
bool case_args::get_bool(const std::string& name) const {
    return params.at(name).get<bool>();
}
std::string case_args::get_text(const std::string& name) const {
    return params.at(name).get<std::string>();
}

measure::tolerance workload_case::tolerance() const {
    return measure::default_tolerance(output_dtype());
}

throughput_result workload_case::measure_throughput(const std::string&, const input_set&,
                                                    const throughput_context&) const {
    throw std::logic_error(m_args.workload + " declares no throughput ledger");
}

const variant_spec* workload::find_variant(const std::string& variant) const {
    for (const auto& v : variants)
        if (v.name == variant)
            return &v;
    return nullptr;
}

const param_spec* workload::find_param(const std::string& param) const {
    for (const auto& p : params)
        if (p.name == param)
            return &p;
    return nullptr;
}

std::vector<std::string> workload::user_variant_names() const {
    std::vector<std::string> out;
    for (const auto& v : variants)
        if (!v.test_only)
            out.push_back(v.name);
    return out;
}

bool workload::supports(dtype t) const {
    for (const auto d : dtypes)
        if (d == t)
            return true;
    return false;
}

std::optional<std::string> workload::unavailable(const std::string& variant, const workload_case& c,
                                                 backend::device& dev) const {
    if (const auto* spec = find_variant(variant))
        if (auto why = unmet(spec->needs, dev, c.args().type))
            return why;
    return c.unsupported(variant, dev);
}

at::Tensor workload::run(const std::string& variant, const workload_case& c,
                         const call_context& ctx, const input_set& in) const {
    const auto it = variant_fns.find(variant);
    if (it == variant_fns.end())
        throw bad_input(fmt::format("workload {} has no variant '{}'", name, variant));
    return it->second(c, ctx, in);
}

json workload::to_json() const {
    json ps = json::array(), vs = json::array(), ds = json::array();
    for (const auto& p : params)
        ps.push_back(p.to_json());
    for (const auto& v : variants)
        if (!v.test_only)
            vs.push_back(v.to_json());
    for (const auto d : dtypes)
        ds.push_back(std::string(to_string(d)));
    return json{{"name", name},
                {"description", description},
                {"shape", shape_params},
                {"params", ps},
                {"variants", vs},
                {"dtypes", ds},
                {"ledgers", split(ledgers.names(), ',')}};
}

registry& registry::instance() {
    static registry r;
    return r;
}

workload& registry::add(std::string name) {
    auto w = std::make_unique<workload>();
    w->name = name;
    auto& ref = *w;
    m_workloads[std::move(name)] = std::move(w);
    return ref;
}

const workload* registry::find(std::string_view name) const {
    const auto it = m_workloads.find(name);
    return it == m_workloads.end() ? nullptr : it->second.get();
}

std::vector<const workload*> registry::all() const {
    std::vector<const workload*> out;
    for (const auto& [name, w] : m_workloads)
        out.push_back(w.get());
    return out;
}

std::string registry::names() const {
    std::vector<std::string> out;
    for (const auto& [name, w] : m_workloads)
        out.push_back(name);
    return join(out, ", ");
}

void registry::add_test_variant(const std::string& workload_name, variant_spec spec,
                                variant_fn fn) {
    const auto it = m_workloads.find(workload_name);
    if (it == m_workloads.end())
        throw bad_input("no workload " + workload_name);
    spec.test_only = true;
    auto& w = *it->second;
    // a test variant wraps stock: it calls what stock calls
    if (const auto* stock = w.find_variant("stock"); stock && !spec.needs.native_kernels) {
        if (spec.needs.ops.empty())
            spec.needs.ops = stock->needs.ops;
        if (spec.needs.features.empty())
            spec.needs.features = stock->needs.features;
    }
    w.variant_fns[spec.name] = std::move(fn);
    if (!w.find_variant(spec.name))
        w.variants.push_back(std::move(spec));
}

} // namespace fourfold::workloads
