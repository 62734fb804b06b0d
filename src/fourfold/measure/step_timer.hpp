#pragma once
// The step timer of a whole-model workload: rounds of one lead-in (a decoder's prefill; a video
// VAE's first chunk) then `steps` steps (a token; a tile or a chunk of frames), every step timed
// at its boundaries. After one untimed warm-up round, rounds repeat until the shared stopping
// rule (stopping_rule.hpp), fed each step's time, stops: the same rule, settings and stop states
// as an op's timing, so a tokens/s figure converges, times out or caps as an op_time figure does.
// A round is never cut short: every timed round's steps are all in the samples.
#include "fourfold/backend/device.hpp"
#include "fourfold/core/json.hpp"
#include "fourfold/measure/stopping_rule.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fourfold::measure {

struct step_round {
    std::function<void()> lead_in;          // enqueues the round's lead-in
    std::function<void(std::int64_t)> step; // enqueues step i (0-based) of the round
    std::int64_t steps = 1;
    // Timed rounds to run however early the rule stops (a whole decode of several seconds would
    // otherwise be one round past the rule's timeout: a rate without a spread). The rule's stop
    // state is reported as it was; the rounds it took are in `rounds`.
    std::int64_t min_rounds = 1;
};

struct step_timing {
    std::vector<double> step_ms; // every step of every timed round, in order
    std::vector<double> lead_ms; // the lead-in of each timed round
    std::int64_t rounds = 0;
    stop_state stop = stop_state::running;
    std::string stop_detail;
    double elapsed_s = 0; // wall time of the timed rounds
    bool events = false;  // device events at the boundaries; else the host clock, synchronised
    // rounds, stop (the rule's class: converged, timed_out, sample_cap), stop_state,
    // stop_detail, elapsed_s: the keys op_time uses for the same facts
    json to_json() const;
    // How the steps were timed, in words, `lead_in` naming what the lead-in includes.
    std::string method(const std::string& lead_in) const;
};

// Device events at each step boundary where the device has them (no host sync between steps;
// one at the end of the round), else the host clock around each step with the device
// synchronised.
step_timing time_steps(backend::device& dev, const stopping_settings& stop,
                       const step_round& round);

} // namespace fourfold::measure
