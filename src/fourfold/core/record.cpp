#include "fourfold/core/record.hpp"

#include <fmt/format.h>

namespace fourfold {

json job_id::to_json() const {
    return json{{"workload", workload},
                {"variant", variant},
                {"device", device},
                {"dtype", dtype},
                {"params", params}};
}

std::string job_id::key() const {
    return canonical_hash(to_json());
}

std::string job_id::case_key() const {
    return canonical_hash(json{{"workload", workload}, {"params", params}});
}

std::string job_id::params_text() const {
    std::string out;
    for (auto it = params.begin(); it != params.end(); ++it) {
        if (!out.empty())
            out += ' ';
        const auto& v = it.value();
        out += fmt::format("{}={}", it.key(), v.is_string() ? v.get<std::string>() : v.dump());
    }
    return out;
}

record record::make(ledger l, job_id job) {
    record r;
    r.which = l;
    r.job = std::move(job);
    r.unit = std::string(unit_of(l));
    return r;
}

record record::skipped(ledger l, job_id job, std::string reason) {
    auto r = make(l, std::move(job));
    r.status = record_status::skipped;
    r.reason = std::move(reason);
    return r;
}

record record::failed(ledger l, job_id job, std::string reason) {
    auto r = make(l, std::move(job));
    r.status = record_status::failed;
    r.reason = std::move(reason);
    return r;
}

} // namespace fourfold
