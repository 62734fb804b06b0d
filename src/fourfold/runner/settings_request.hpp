#pragma once
// The settings a user gave, as text (CLI option values), and their JSON form: what the isolation
// channel carries to a job's process. No libtorch here: plan.hpp's make_settings checks the
// values against a device; fuzz/fuzz_settings_request.cpp feeds the reader arbitrary JSON.
#include "fourfold/core/json.hpp"

#include <optional>
#include <string>

namespace fourfold::runner {

// make_settings (plan.hpp) checks every one and says what is wrong in fourfold's words. Empty
// optionals take the defaults.
struct settings_request {
    std::string ledgers = "all";
    std::optional<std::string> timing, cache;
    std::optional<std::string> min_time_s, timeout_s, max_rel_stdev, warmup_s, min_samples;
    std::optional<std::string> seed, threads;
    double suite_timeout_s = 0; // a suite's own budget per job (0: none)
    bool operator==(const settings_request&) const = default;
};

// The request as the channel carries it to a job's process, and back (which throws bad_input
// for a JSON value that is not one: not an object, a field of the wrong type).
json to_json(const settings_request& r);
settings_request settings_request_from_json(const json& j);

} // namespace fourfold::runner
