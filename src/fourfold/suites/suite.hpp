#pragma once
// Named suites: a list of jobs, sized for the device they will run on.
#include "fourfold/backend/device.hpp"
#include "fourfold/runner/plan.hpp"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fourfold::suites {

struct suite {
    std::string name;
    std::string description;
    std::function<std::vector<runner::job_spec>(const backend::device&)> jobs;
    // A per-job timing budget for this suite (seconds; 0 keeps the default). --timeout overrides.
    double timeout_s = 0;
    // The budget on the CPU, where a suite runs reduced sizes in CI (0: timeout_s).
    double cpu_timeout_s = 0;
    double timeout_for(const backend::device& dev) const {
        return dev.spec().kind == backend::device_kind::cpu && cpu_timeout_s > 0 ? cpu_timeout_s
                                                                                 : timeout_s;
    }
};

class suite_registry {
  public:
    static suite_registry& instance();
    suite& add(std::string name, std::string description,
               std::function<std::vector<runner::job_spec>(const backend::device&)> jobs);
    const suite* find(const std::string& name) const;
    std::vector<const suite*> all() const;
    std::string names() const;

  private:
    std::map<std::string, std::unique_ptr<suite>> m_suites;
};

// Throws bad_input naming the valid suites.
std::vector<runner::job_spec> expand_suite(const std::string& name, const backend::device& dev);
// The jobs of `jobs` (suite `suite_name`'s) whose workload is one of `workloads`; throws
// bad_input naming the suite's workloads when one of them has no job there.
std::vector<runner::job_spec> jobs_of_workloads(const std::vector<runner::job_spec>& jobs,
                                                const std::string& suite_name,
                                                const std::vector<std::string>& workloads);

#define FOURFOLD_SUITE(ident, name, description, fn)                                               \
    static ::fourfold::suites::suite& fourfold_suite_##ident [[maybe_unused]] =                    \
        ::fourfold::suites::suite_registry::instance().add(name, description, fn)

} // namespace fourfold::suites
