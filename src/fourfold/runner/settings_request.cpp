#include "fourfold/runner/settings_request.hpp"

#include "fourfold/core/error.hpp"

#include <fmt/format.h>

namespace fourfold::runner {
namespace {

std::optional<std::string> opt_text(const json& j, const char* name) {
    const auto it = j.find(name);
    if (it == j.end() || it->is_null())
        return std::nullopt;
    if (!it->is_string())
        throw bad_input(fmt::format("a job request whose '{}' is not text", name));
    return it->get<std::string>();
}

} // namespace

json to_json(const settings_request& r) {
    auto opt = [](const std::optional<std::string>& v) { return v ? json(*v) : json(nullptr); };
    return json{{"ledgers", r.ledgers},
                {"timing", opt(r.timing)},
                {"cache", opt(r.cache)},
                {"min_time_s", opt(r.min_time_s)},
                {"timeout_s", opt(r.timeout_s)},
                {"max_rel_stdev", opt(r.max_rel_stdev)},
                {"warmup_s", opt(r.warmup_s)},
                {"min_samples", opt(r.min_samples)},
                {"seed", opt(r.seed)},
                {"threads", opt(r.threads)},
                {"suite_timeout_s", r.suite_timeout_s}};
}

settings_request settings_request_from_json(const json& j) {
    if (!j.is_object())
        throw bad_input("a settings request that is not a JSON object");
    settings_request r;
    r.ledgers = opt_text(j, "ledgers").value_or("all");
    r.timing = opt_text(j, "timing");
    r.cache = opt_text(j, "cache");
    r.min_time_s = opt_text(j, "min_time_s");
    r.timeout_s = opt_text(j, "timeout_s");
    r.max_rel_stdev = opt_text(j, "max_rel_stdev");
    r.warmup_s = opt_text(j, "warmup_s");
    r.min_samples = opt_text(j, "min_samples");
    r.seed = opt_text(j, "seed");
    r.threads = opt_text(j, "threads");
    const auto it = j.find("suite_timeout_s");
    if (it != j.end() && !it->is_number())
        throw bad_input("a settings request whose suite_timeout_s is not a number");
    r.suite_timeout_s = it == j.end() ? 0.0 : it->get<double>();
    return r;
}

} // namespace fourfold::runner
