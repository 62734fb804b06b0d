#include "fourfold/suites/suite.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace fourfold::suites {

suite_registry& suite_registry::instance() {
    static suite_registry r;
    return r;
}

suite&
suite_registry::add(std::string name, std::string description,
                    std::function<std::vector<runner::job_spec>(const backend::device&)> jobs) {
    auto s = std::make_unique<suite>(suite{name, std::move(description), std::move(jobs)});
    auto& ref = *s;
    m_suites[std::move(name)] = std::move(s);
    return ref;
}

const suite* suite_registry::find(const std::string& name) const {
    const auto it = m_suites.find(name);
    return it == m_suites.end() ? nullptr : it->second.get();
}

std::vector<const suite*> suite_registry::all() const {
    std::vector<const suite*> out;
    for (const auto& [n, s] : m_suites)
        out.push_back(s.get());
    return out;
}

std::string suite_registry::names() const {
    std::vector<std::string> out;
    for (const auto& [n, s] : m_suites)
        out.push_back(n);
    return join(out, ", ");
}

std::vector<runner::job_spec> expand_suite(const std::string& name, const backend::device& dev) {
    const auto* s = suite_registry::instance().find(name);
    if (!s)
        throw bad_input(fmt::format("suite '{}' is unknown; valid: {}", name,
                                    suite_registry::instance().names()));
    return s->jobs(dev);
}

std::vector<runner::job_spec> jobs_of_workloads(const std::vector<runner::job_spec>& jobs,
                                                const std::string& suite_name,
                                                const std::vector<std::string>& workloads) {
    std::set<std::string> present;
    for (const auto& j : jobs)
        present.insert(j.workload);
    for (const auto& w : workloads)
        if (w.empty() || !present.count(w))
            throw bad_input(fmt::format(
                "suite {} has no job of workload '{}'; its workloads: {}", suite_name, w,
                join(std::vector<std::string>(present.begin(), present.end()), ", ")));
    std::vector<runner::job_spec> out;
    for (const auto& j : jobs)
        if (std::find(workloads.begin(), workloads.end(), j.workload) != workloads.end())
            out.push_back(j);
    return out;
}

} // namespace fourfold::suites
