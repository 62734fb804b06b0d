#include "fourfold/workloads/workload.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

namespace fourfold::workloads {

json param_spec::to_json() const {
    json out{{"name", name},
             {"kind", kind == param_kind::integer ? "integer"
                      : kind == param_kind::boolean ? "boolean"
                                                    : "text"},
             {"default", default_value},
             {"help", help}};
    if (kind == param_kind::integer) {
        out["min"] = min;
        out["max"] = max;
    }
    if (!choices.empty()) out["choices"] = choices;
    return out;
}

json variant_spec::to_json() const {
    return json{{"name", name}, {"help", help}, {"host_sync", host_sync}};
}

json cost::to_json() const {
    return json{{"bytes_read", bytes_read}, {"bytes_written", bytes_written},
                {"bytes_moved", bytes()},   {"flops", flops}, {"note", note}};
}

std::int64_t input_set::bytes() const {
    std::int64_t total = 0;
    for (const auto& t : tensors)
        if (t.defined()) total += static_cast<std::int64_t>(t.numel() * t.element_size());
    return total;
}

input_set input_set::to(const c10::Device& device) const {
    input_set out;
    for (const auto& t : tensors) out.tensors.push_back(t.defined() ? t.to(device) : t);
    return out;
}

input_set input_set::clone() const {
    input_set out;
    for (const auto& t : tensors) out.tensors.push_back(t.defined() ? t.clone() : t);
    return out;
}

reference_plan chunked_reference(std::int64_t dim, std::int64_t total, std::int64_t bytes_per_unit,
                                 std::string method,
                                 std::function<at::Tensor(std::int64_t, std::int64_t)> compute) {
    const std::int64_t per_chunk =
        std::max<std::int64_t>(1, measure::k_reference_chunk_bytes / std::max<std::int64_t>(1, bytes_per_unit));
    const std::int64_t chunks = (total + per_chunk - 1) / per_chunk;
    reference_plan plan;
    plan.chunks = std::max<std::int64_t>(1, chunks);
    plan.method = std::move(method);
    plan.chunk = [=](std::int64_t i) {
        const std::int64_t start = i * per_chunk;
        const std::int64_t length = std::min(per_chunk, total - start);
        return reference_chunk{dim, start, compute(start, length)};
    };
    return plan;
}

std::int64_t case_args::get_int(const std::string& name) const {
    return params.at(name).get<std::int64_t>();
}
bool case_args::get_bool(const std::string& name) const { return params.at(name).get<bool>(); }
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
        if (v.name == variant) return &v;
    return nullptr;
}

const param_spec* workload::find_param(const std::string& param) const {
    for (const auto& p : params)
        if (p.name == param) return &p;
    return nullptr;
}

std::vector<std::string> workload::user_variant_names() const {
    std::vector<std::string> out;
    for (const auto& v : variants)
        if (!v.test_only) out.push_back(v.name);
    return out;
}

bool workload::supports(dtype t) const {
    for (const auto d : dtypes)
        if (d == t) return true;
    return false;
}

at::Tensor workload::run(const std::string& variant, const workload_case& c,
                         const input_set& in) const {
    const auto it = variant_fns.find(variant);
    if (it == variant_fns.end())
        throw bad_input(fmt::format("workload {} has no variant '{}'", name, variant));
    return it->second(c, in);
}

json workload::to_json() const {
    json ps = json::array(), vs = json::array(), ds = json::array();
    for (const auto& p : params) ps.push_back(p.to_json());
    for (const auto& v : variants)
        if (!v.test_only) vs.push_back(v.to_json());
    for (const auto d : dtypes) ds.push_back(std::string(to_string(d)));
    return json{{"name", name},        {"description", description}, {"shape", shape_params},
                {"params", ps},        {"variants", vs},             {"dtypes", ds},
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
    for (const auto& [name, w] : m_workloads) out.push_back(w.get());
    return out;
}

std::string registry::names() const {
    std::vector<std::string> out;
    for (const auto& [name, w] : m_workloads) out.push_back(name);
    return join(out, ", ");
}

void registry::add_test_variant(const std::string& workload_name, variant_spec spec, variant_fn fn) {
    const auto it = m_workloads.find(workload_name);
    if (it == m_workloads.end()) throw bad_input("no workload " + workload_name);
    spec.test_only = true;
    auto& w = *it->second;
    w.variant_fns[spec.name] = std::move(fn);
    if (!w.find_variant(spec.name)) w.variants.push_back(std::move(spec));
}

} // namespace fourfold::workloads
