#include "fourfold/measure/step_timer.hpp"

#include <chrono>
#include <fmt/format.h>
#include <memory>
#include <stdexcept>

namespace fourfold::measure {
namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point t) {
    return std::chrono::duration<double, std::milli>(clock_type::now() - t).count();
}

// One round, its times appended when `timed`.
class round_runner {
  public:
    round_runner(backend::device& dev, const step_round& round)
        : m_dev(dev), m_round(round), m_events(dev.caps().events) {
        if (m_events)
            for (std::int64_t i = 0; i < round.steps + 2; ++i)
                m_marks.push_back(dev.make_event());
    }

    bool events() const { return m_events; }

    void run(bool timed, step_timing& out) {
        if (m_events) {
            m_marks[0]->record();
            m_round.lead_in();
            m_marks[1]->record();
            for (std::int64_t i = 0; i < m_round.steps; ++i) {
                m_round.step(i);
                m_marks[static_cast<std::size_t>(i + 2)]->record();
            }
            m_dev.synchronize();
            if (!timed)
                return;
            out.lead_ms.push_back(m_marks[1]->elapsed_ms_since(*m_marks[0]));
            for (std::size_t i = 1; i + 1 < m_marks.size(); ++i)
                out.step_ms.push_back(m_marks[i + 1]->elapsed_ms_since(*m_marks[i]));
            return;
        }
        m_dev.synchronize();
        auto t = clock_type::now();
        m_round.lead_in();
        m_dev.synchronize();
        if (timed)
            out.lead_ms.push_back(ms_since(t));
        for (std::int64_t i = 0; i < m_round.steps; ++i) {
            t = clock_type::now();
            m_round.step(i);
            m_dev.synchronize();
            if (timed)
                out.step_ms.push_back(ms_since(t));
        }
    }

  private:
    backend::device& m_dev;
    const step_round& m_round;
    bool m_events;
    std::vector<std::unique_ptr<backend::device_event>> m_marks;
};

} // namespace

json step_timing::to_json() const {
    return json{{"rounds", rounds},
                {"stop", stop_class(stop)},
                {"stop_state", to_string(stop)},
                {"stop_detail", stop_detail},
                {"elapsed_s", elapsed_s}};
}

std::string step_timing::method(const std::string& lead_in) const {
    return events ? fmt::format("device events at each step boundary, no host sync between "
                                "steps; {}",
                                lead_in)
                  : fmt::format("host clock around each step with the device synchronised; {}",
                                lead_in);
}

step_timing time_steps(backend::device& dev, const stopping_settings& stop,
                       const step_round& round) {
    if (round.steps < 1 || !round.lead_in || !round.step)
        throw std::invalid_argument("time_steps: a round needs a lead-in and at least one step");
    step_timing out;
    round_runner runner(dev, round);
    out.events = runner.events();
    runner.run(false, out); // warm-up: lazy handles, workspaces, allocator pools
    stopping_rule rule(stop);
    const auto t0 = clock_type::now();
    do {
        const auto first = out.step_ms.size();
        runner.run(true, out);
        ++out.rounds;
        for (auto i = first; i < out.step_ms.size(); ++i)
            rule.add(out.step_ms[i]);
        out.elapsed_s = ms_since(t0) / 1000.0;
    } while (rule.check(out.elapsed_s) == stop_state::running || out.rounds < round.min_rounds);
    out.stop = rule.check(out.elapsed_s);
    out.stop_detail = rule.detail();
    if (round.min_rounds > 1)
        out.stop_detail +=
            fmt::format("; at least {} rounds (the workload's minimum)", round.min_rounds);
    return out;
}

} // namespace fourfold::measure
