#include "python_workload.hpp"

#include "fourfold/core/dtype.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/measure/statistics.hpp"
#include "fourfold/measure/step_timer.hpp"

#include <algorithm>
#include <chrono>
#include <fmt/format.h>
#include <map>
#include <set>
#include <torch/csrc/autograd/python_variable.h>

namespace fourfold::python {

void rethrow(py::error_already_set& e) {
    // fourfold.Unsupported: a valid request this device or build cannot do (a skipped record)
    const auto unsupported = py::module_::import("fourfold._workload").attr("Unsupported");
    if (e.matches(unsupported))
        throw unsupported_here(py::str(e.value()).cast<std::string>());
    throw std::runtime_error(std::string("Python: ") + e.what());
}

namespace {

// Runs `f` with the GIL held; a Python exception leaves as a std::runtime_error carrying its
// text, raised while the GIL is still held (pybind11's exception object needs it).
template <class F> auto with_gil(F&& f) -> decltype(f()) {
    py::gil_scoped_acquire gil;
    try {
        return f();
    } catch (py::error_already_set& e) {
        rethrow(e);
    }
}

json to_json_value(const py::handle& obj) {
    const auto text = py::module_::import("json").attr("dumps")(obj).cast<std::string>();
    return json::parse(text);
}

py::object to_py(const json& j) {
    return py::module_::import("json").attr("loads")(j.dump());
}

at::Tensor as_tensor(const py::object& out, const std::string& what) {
    if (!THPVariable_Check(out.ptr()))
        throw std::runtime_error(fmt::format("{} returned {}, not a torch.Tensor", what,
                                             py::str(py::type::of(out)).cast<std::string>()));
    return out.cast<at::Tensor>();
}

class py_case final : public workloads::workload_case {
  public:
    py_case(const workloads::case_args& a, std::shared_ptr<adapter_ref> adapter,
            std::shared_ptr<const call_overhead> overhead)
        : workload_case(a), m_adapter(std::move(adapter)), m_overhead(std::move(overhead)) {
        with_gil([&] {
            m_case = m_adapter->adapter.attr("make_case")(to_py(a.params),
                                                          std::string(to_string(a.type)));
            return 0;
        });
    }
    ~py_case() override {
        py::gil_scoped_acquire gil;
        m_fns.clear();
        m_case = py::object();
    }

    workloads::cost declared_cost() const override {
        return with_gil([&] {
            const py::object r = m_adapter->adapter.attr("cost")(m_case);
            workloads::cost c;
            if (r.is_none()) {
                c.note = "not declared by the Python workload (no cost method)";
                return c;
            }
            const auto j = to_json_value(r);
            c.bytes_read = j.value("bytes_read", 0.0);
            c.bytes_written = j.value("bytes_written", 0.0);
            c.flops = j.value("flops", 0.0);
            c.note = j.value("note", std::string("declared by the Python workload"));
            return c;
        });
    }

    workloads::input_set make_inputs(std::uint64_t seed) const override {
        return with_gil([&] {
            const py::object r = m_adapter->adapter.attr("make_inputs")(m_case, seed);
            workloads::input_set in;
            for (const auto& item : r.cast<py::list>()) {
                const auto pair = item.cast<py::tuple>();
                in.add(pair[0].cast<std::string>(),
                       as_tensor(py::reinterpret_borrow<py::object>(pair[1]), "make_inputs"));
            }
            return in;
        });
    }

    workloads::reference_plan reference(const workloads::input_set& cpu) const override {
        workloads::reference_plan plan;
        plan.chunks = 1;
        plan.method = with_gil([&] {
            return m_adapter->adapter.attr("reference_method")(m_case).cast<std::string>();
        });
        plan.chunk = [this, cpu](std::int64_t) {
            return with_gil([&] {
                const py::object fn = m_adapter->adapter.attr("reference_fn")(m_case);
                auto values = as_tensor(call_with_tensors(fn, cpu), "the reference");
                return workloads::reference_chunk{0, 0, values};
            });
        };
        return plan;
    }

    measure::tolerance tolerance() const override {
        auto t = workload_case::tolerance();
        with_gil([&] {
            const py::object r = m_adapter->adapter.attr("tolerance")(m_case);
            if (r.is_none())
                return 0;
            const auto j = to_json_value(r);
            t.rel_l2 = j.value("rel_l2", t.rel_l2);
            t.rtol = j.value("rtol", t.rtol);
            t.atol_scale = j.value("atol_scale", t.atol_scale);
            t.source = j.value("source", std::string("declared by the Python workload"));
            return 0;
        });
        return t;
    }

    json variant_facts(const std::string& variant) const override {
        json facts = with_gil(
            [&] { return to_json_value(m_adapter->adapter.attr("facts")(m_case, variant)); });
        if (!facts.is_object())
            facts = json::object();
        if (m_overhead && m_overhead->calls > 0)
            facts["python_call"] = m_overhead->to_json();
        return facts;
    }

    // A Python throughput workload gives a session (lead_in, step(i), steps, figures) and the
    // engine's step timer times it: the same rounds, stopping rule and figures as decode's.
    workloads::throughput_result
    measure_throughput(const std::string& variant, const workloads::input_set& in,
                       const workloads::throughput_context& ctx) const override {
        struct session_fns {
            py::object lead_in, step;
            std::int64_t steps = 1;
            json figures;
            std::string unit, step_unit, context_axis;
        };
        auto s = std::make_shared<session_fns>();
        with_gil([&] {
            py::list tensors;
            for (const auto& t : in.tensors())
                tensors.append(py::cast(t));
            const py::tuple r =
                m_adapter->adapter.attr("session")(m_case, variant, tensors, ctx.dev.name());
            s->lead_in = r[0];
            s->step = r[1];
            s->steps = r[2].cast<std::int64_t>();
            const auto about = to_json_value(r[3]);
            s->figures = about.value("figures", json::object());
            s->unit = about.value("unit", std::string("tokens/s"));
            s->step_unit = about.value("step_unit", std::string("ms/token"));
            s->context_axis = about.value("context_axis", std::string("ctx"));
            return 0;
        });
        auto release = [&] {
            py::gil_scoped_acquire gil;
            s->lead_in = py::object();
            s->step = py::object();
        };
        measure::step_timing timing;
        try {
            timing = measure::time_steps(ctx.dev, ctx.timing.stop,
                                         {[&] {
                                              with_gil([&] {
                                                  s->lead_in(); // its result dropped with the GIL
                                                  return 0;
                                              });
                                          },
                                          [&](std::int64_t i) {
                                              with_gil([&] {
                                                  s->step(i);
                                                  return 0;
                                              });
                                          },
                                          s->steps});
        } catch (...) {
            release();
            throw;
        }
        release();
        const auto stats = measure::summarize(timing.step_ms);
        const auto lead = measure::summarize(timing.lead_ms);
        double total_ms = 0;
        for (const auto v : timing.step_ms)
            total_ms += v;
        workloads::throughput_result out;
        out.unit = s->unit;
        out.step_unit = s->step_unit;
        out.context_axis = s->context_axis;
        out.figures = timing.to_json();
        const double rate = stats.median > 0 ? 1000.0 / stats.median : 0;
        out.figures.update(json{
            {"rate", rate},
            {"rate_basis", "1000 / median ms per step"},
            {"rate_mean",
             total_ms > 0 ? 1000.0 * static_cast<double>(timing.step_ms.size()) / total_ms : 0},
            {"step_stats", stats.to_json()},
            {"prefill_ms", lead.median},
            {"prefill_ms_stats", lead.to_json()},
            {"steps_per_round", s->steps},
            {"host_paced", true},
            {"timing", timing.method("the Python session's lead_in")}});
        if (s->unit == "tokens/s") {
            out.figures["tokens_per_s"] = rate;
            out.figures["ms_per_token"] = stats.to_json();
        }
        // the workload's own figures last: its mode, whether its steps are host-paced, ...
        out.figures.update(s->figures);
        out.samples_ms = timing.step_ms;
        return out;
    }

    // The Python callable of one variant for this case, looked up once (GIL held by the caller).
    const py::object& variant_fn(const std::string& variant) const {
        auto it = m_fns.find(variant);
        if (it == m_fns.end())
            it = m_fns.emplace(variant, m_adapter->adapter.attr("variant_fn")(m_case, variant))
                     .first;
        return it->second;
    }

  private:
    std::shared_ptr<adapter_ref> m_adapter;
    std::shared_ptr<const call_overhead> m_overhead;
    py::object m_case;
    mutable std::map<std::string, py::object> m_fns;
};

std::int64_t int_of(const json& j, const char* key, std::int64_t fallback) {
    const auto it = j.find(key);
    return it == j.end() || it->is_null() ? fallback : it->get<std::int64_t>();
}

} // namespace

bool is_released(const workloads::workload& w) {
    return w.variants.empty() && !w.make_case;
}

void release_python_workload(const std::string& name) {
    // the registry has no removal: an empty entry (no variants, no cases) takes the workload's
    // place, dropping what it held of Python; a later run may define the name again
    workloads::registry::instance().add(name);
}

json call_overhead::to_json() const {
    return json{{"overhead_us_median", median_us},
                {"overhead_us_p10", p10_us},
                {"overhead_us_p90", p90_us},
                {"calls_measured", calls},
                {"method", "host clock around one call of an empty Python callable through the "
                           "engine's path (GIL taken, the inputs wrapped as torch.Tensor, the "
                           "call, the GIL given back)"},
                {"included_in", "op_time in host, event and batch modes (every timed call runs "
                                "the interpreter); not in graph mode (a replay of the captured "
                                "kernels runs no Python)"}};
}

py::object call_with_tensors(const py::object& fn, const workloads::input_set& in) {
    py::gil_scoped_acquire gil;
    try {
        py::tuple args(in.tensors().size());
        for (std::size_t i = 0; i < in.tensors().size(); ++i)
            args[i] = py::cast(in.tensors()[i]);
        return fn(*args);
    } catch (py::error_already_set& e) {
        rethrow(e);
    }
}

call_overhead measure_call_overhead(const py::object& empty_fn, const workloads::input_set& in,
                                    int calls) {
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(calls));
    for (int i = 0; i < calls; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        {
            auto r = call_with_tensors(empty_fn, in);
            py::gil_scoped_acquire gil;
            r = py::object();
        }
        us.push_back(
            std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    std::sort(us.begin(), us.end());
    auto q = [&](double p) { return us[static_cast<std::size_t>(p * (us.size() - 1))]; };
    call_overhead out;
    out.calls = calls;
    out.median_us = q(0.5);
    out.p10_us = q(0.1);
    out.p90_us = q(0.9);
    return out;
}

void register_python_workload(const json& d, std::shared_ptr<adapter_ref> adapter,
                              std::shared_ptr<const call_overhead> overhead) {
    const auto name = d.value("name", std::string());
    if (name.empty() || name.find_first_of(" \t\n,=") != std::string::npos)
        throw bad_input(fmt::format("workload name '{}' is not valid: give a non-empty name "
                                    "without spaces, commas or '='",
                                    name));
    auto& reg = workloads::registry::instance();
    if (const auto* held = reg.find(name); held && !is_released(*held)) {
        std::vector<std::string> taken;
        for (const auto* w : reg.all())
            if (!is_released(*w))
                taken.push_back(w->name);
        throw bad_input(fmt::format("workload name '{}' is taken by a workload already "
                                    "registered ({}); choose another name",
                                    name, join(taken, ", ")));
    }
    std::vector<workloads::param_spec> params;
    std::set<std::string> seen;
    for (const auto& p : d.value("params", json::array())) {
        workloads::param_spec s;
        s.name = p.at("name").get<std::string>();
        if (!seen.insert(s.name).second)
            throw bad_input(
                fmt::format("workload {}: parameter '{}' is declared twice", name, s.name));
        const auto kind = p.at("kind").get<std::string>();
        s.kind = kind == "integer"   ? workloads::param_kind::integer
                 : kind == "boolean" ? workloads::param_kind::boolean
                                     : workloads::param_kind::text;
        s.default_value = p.at("default").get<std::string>();
        s.help = p.value("help", std::string());
        if (s.kind == workloads::param_kind::integer) {
            s.min = int_of(p, "min", std::numeric_limits<std::int64_t>::min() / 2);
            s.max = int_of(p, "max", std::numeric_limits<std::int64_t>::max() / 2);
        } else if (s.kind == workloads::param_kind::boolean) {
            s.min = 0;
            s.max = 1;
        } else {
            s.min = s.max = 0;
            s.choices = p.value("choices", std::vector<std::string>{});
        }
        params.push_back(std::move(s));
    }
    std::vector<dtype> types;
    for (const auto& t : d.value("dtypes", json::array())) {
        const auto text = t.get<std::string>();
        const auto parsed = parse_dtype(text);
        if (!parsed)
            throw bad_input(fmt::format("workload {}: dtype '{}' is unknown; valid: {}", name, text,
                                        dtype_names()));
        types.push_back(*parsed);
    }
    if (types.empty())
        throw bad_input(fmt::format("workload {} declares no dtypes; give one or more of: {}", name,
                                    dtype_names()));
    const auto variants = d.value("variants", json::array());
    if (variants.empty())
        throw bad_input(fmt::format("workload {} declares no variants; mark methods with "
                                    "@fourfold.variant",
                                    name));
    std::vector<workloads::variant_spec> specs;
    for (const auto& v : variants) {
        workloads::variant_spec s;
        s.name = v.at("name").get<std::string>();
        s.help = v.value("help", std::string());
        s.host_sync = v.value("host_sync", false);
        specs.push_back(std::move(s));
    }
    ledger_set ledgers;
    for (const auto& l : d.value("ledgers", json::array())) {
        const auto text = l.get<std::string>();
        const auto parsed = parse_ledger(text);
        if (!parsed)
            throw bad_input(fmt::format("workload {}: ledger '{}' is unknown; valid: op_time, "
                                        "throughput, correctness, memory",
                                        name, text));
        ledgers.add(*parsed);
    }
    if (ledgers.list().empty())
        throw bad_input(fmt::format("workload {} declares no ledgers", name));
    if (ledgers.has(ledger::op_time) && ledgers.has(ledger::throughput))
        throw bad_input(fmt::format("workload {} declares both op_time and throughput: an "
                                    "operator has op_time, a whole model throughput",
                                    name));

    auto& w = reg.add(name);
    w.description = d.value("description", std::string("a workload defined in Python"));
    w.shape_params = d.value("shape", std::vector<std::string>{});
    w.params = std::move(params);
    w.dtypes = std::move(types);
    w.ledgers = ledgers;
    w.variants = std::move(specs);
    for (const auto& v : w.variants)
        w.variant_fns[v.name] = [vname = v.name](const workloads::workload_case& c,
                                                 const workloads::call_context&,
                                                 const workloads::input_set& in) {
            const auto& pc = static_cast<const py_case&>(c);
            py::gil_scoped_acquire gil;
            const py::object* fn = nullptr;
            try {
                fn = &pc.variant_fn(vname);
            } catch (py::error_already_set& e) {
                rethrow(e);
            }
            return as_tensor(call_with_tensors(*fn, in), "variant " + vname);
        };
    w.make_case = [adapter = std::move(adapter),
                   overhead = std::move(overhead)](const workloads::case_args& a) {
        return std::make_unique<py_case>(a, adapter, overhead);
    };
}

} // namespace fourfold::python
