// fourfold._native: the engine behind the Python package (python/fourfold). A run from Python
// goes the way `fourfold run` goes (cli/run_command.cpp): settings and plan first (every bad
// value a ValueError before the store opens), then the store, the device's copy bandwidth, the
// provenance (with the interpreter's and torch's versions), the run row, runner::execute with
// each record committed as it exists, the run row finished. Records are read back from the
// store by the Python side, so what Python returns is what `fourfold export` reads.
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/provenance.hpp"
#include "fourfold/core/build_info.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/runner/plan.hpp"
#include "fourfold/runner/runner.hpp"
#include "fourfold/store/result_store.hpp"
#include "fourfold/store/run_state.hpp"
#include "python_workload.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <map>
#include <torch/version.h>
#include <unistd.h>

namespace fourfold::python {
namespace {

// Writes each record to the store the moment it exists. A workload that declares `peer_of` (a
// Python peer of a built-in workload: the torch.compile decode beside `decode`) files its
// records under that workload's name, so compare pairs them with the built-in's by case.
class store_sink final : public runner::record_sink {
  public:
    store_sink(store::result_store& store, std::int64_t run,
               std::map<std::string, std::string> file_as)
        : m_store(store), m_run(run), m_file_as(std::move(file_as)) {}
    void write(const record& given) override {
        record rec = given;
        if (const auto it = m_file_as.find(rec.job.workload); it != m_file_as.end()) {
            rec.figures["defined_as"] = rec.job.workload;
            rec.job.workload = it->second;
        }
        m_store.add_record(m_run, rec);
        ++written;
    }
    std::size_t written = 0;

  private:
    store::result_store& m_store;
    std::int64_t m_run;
    std::map<std::string, std::string> m_file_as;
};

std::optional<std::string> opt_text(const json& j, const char* key) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return std::nullopt;
    return it->is_string() ? it->get<std::string>() : it->dump();
}

// Takes the run's Python workloads out of the registry however the run ends (GIL held).
class registration_guard {
  public:
    ~registration_guard() {
        for (const auto& n : names)
            release_python_workload(n);
    }
    std::vector<std::string> names;
};

// request (JSON text): jobs [{workload, shapes, params, dtypes, variants}], workloads
// [descriptor] with `adapters` {name: adapter}, device, db, label, command, settings {ledgers,
// timing, cache, min_time_s, timeout_s, max_rel_stdev, warmup_s, min_samples, seed, threads},
// python {version, executable, torch, ...}. Returns JSON text: run, exit_code and the counts.
std::string run_request(const std::string& request_text, const py::dict& adapters) {
    const auto req = json::parse(request_text);
    const auto settings_in = req.value("settings", json::object());
    const auto label = req.value("label", std::string());
    const auto db = req.value("db", std::string("fourfold.db"));
    if (db.empty())
        throw bad_input("db '' is empty; give the path of a store file, e.g. 'fourfold.db'");
    store::check_label(label);

    // the run's Python workloads, registered until this function returns
    registration_guard guard;
    std::map<std::string, std::string> file_as;
    auto overhead = std::make_shared<call_overhead>();
    py::object empty_fn;
    for (const auto& d : req.value("workloads", json::array())) {
        const auto name = d.value("name", std::string());
        if (!adapters.contains(name))
            throw std::logic_error("no adapter for Python workload " + name);
        auto ref = std::make_shared<adapter_ref>();
        ref->adapter = adapters[py::str(name)];
        if (!empty_fn)
            empty_fn = ref->adapter.attr("empty_fn")();
        register_python_workload(d, ref, overhead);
        guard.names.push_back(name);
        if (const auto peer = d.value("peer_of", std::string()); !peer.empty()) {
            const auto* built_in = workloads::registry::instance().find(peer);
            if (!built_in)
                throw bad_input(fmt::format("workload {}: peer_of '{}' is not a workload; valid: "
                                            "{}",
                                            name, peer, workloads::registry::instance().names()));
            file_as[name] = peer;
        }
    }

    // everything that can be wrong is found before the store opens
    runner::settings_request sr;
    sr.ledgers = settings_in.value("ledgers", std::string("all"));
    sr.timing = opt_text(settings_in, "timing");
    sr.cache = opt_text(settings_in, "cache");
    sr.min_time_s = opt_text(settings_in, "min_time_s");
    sr.timeout_s = opt_text(settings_in, "timeout_s");
    sr.max_rel_stdev = opt_text(settings_in, "max_rel_stdev");
    sr.warmup_s = opt_text(settings_in, "warmup_s");
    sr.min_samples = opt_text(settings_in, "min_samples");
    sr.seed = opt_text(settings_in, "seed");
    sr.threads = opt_text(settings_in, "threads");
    if (sr.threads)
        backend::set_cpu_threads(runner::parse_threads(*sr.threads));
    auto dev = backend::open_device(backend::device_spec::parse(req.value("device", "cpu")));
    const auto settings = runner::make_settings(sr, *dev);
    std::vector<runner::job_spec> specs;
    for (const auto& j : req.value("jobs", json::array())) {
        runner::workload_request wr;
        wr.workload = j.value("workload", std::string());
        wr.shapes = j.value("shapes", std::vector<std::string>{});
        wr.params = j.value("params", std::vector<std::string>{});
        wr.dtypes = j.value("dtypes", std::vector<std::string>{});
        wr.variants = j.value("variants", std::vector<std::string>{});
        for (auto& s : runner::expand_request(wr))
            specs.push_back(std::move(s));
    }
    if (specs.empty())
        throw bad_input("nothing to run: give one or more workloads");
    auto plan = runner::make_plan(specs, settings, *dev);

    auto store = store::result_store::open(db, store::open_mode::read_write);
    backend::bandwidth_figure bandwidth;
    {
        py::gil_scoped_release released;
        bandwidth = dev->measure_copy_bandwidth();
        if (empty_fn) {
            // one float32 input of the size the tests and examples use: the wrapping cost per
            // tensor argument does not depend on its size
            workloads::input_set probe;
            probe.add("x", at::zeros({1}));
            *overhead = measure_call_overhead(empty_fn, probe, 2000);
        }
    }
    auto provenance = backend::collect_provenance(dev.get());
    provenance["settings"] = plan.settings.to_json();
    provenance["bandwidth"] = bandwidth.to_json();
    provenance["request"] = json{{"suite", ""},
                                 {"workload", req.value("workload_names", std::string())},
                                 {"groups", plan.groups.size()},
                                 {"jobs", plan.job_count()},
                                 {"records", plan.record_count()},
                                 {"front_end", "python"},
                                 {"isolate", false}};
    provenance["python"] = req.value("python", json::object());
    // a measurement, like the bandwidth: under "request", which compare's provenance diff
    // leaves out (two runs always differ in it)
    if (overhead->calls > 0)
        provenance["request"]["python_call_overhead"] = overhead->to_json();
    provenance["pid"] = static_cast<std::int64_t>(getpid());
    const auto run_id = store.begin_run(
        label, dev->name(), req.value("command", std::string("fourfold (Python)")), provenance);
    store_sink sink(store, run_id, file_as);
    for (const auto& r : plan.skipped)
        sink.write(r);
    runner::run_context ctx{*dev, bandwidth, sink, nullptr, nullptr, "fourfold run"};
    runner::run_summary summary;
    try {
        py::gil_scoped_release released;
        summary = runner::execute(plan, ctx);
    } catch (...) {
        store.finish_run(run_id, "failed");
        throw;
    }
    store.finish_run(run_id, summary.interrupted ? "interrupted" : "complete");
    summary.skipped += plan.skipped.size();
    plan.groups.clear(); // the cases hold Python objects: released here, with the GIL
    int code = summary.exit_code();
    if (code == 0 && summary.ok == 0)
        code = static_cast<int>(exit_code::nothing_measured);
    return json{{"run", run_id},
                {"db", store.path()},
                {"exit_code", code},
                {"ok", summary.ok},
                {"skipped", summary.skipped},
                {"failed", summary.failed},
                {"correctness_fail", summary.correctness_fail},
                {"records", sink.written},
                {"python_call", overhead->calls > 0 ? overhead->to_json() : json(nullptr)}}
        .dump();
}

// A store opened read-only: its runs and records as JSON text (what `fourfold export` writes).
class store_reader {
  public:
    explicit store_reader(const std::string& path)
        : m_store(store::result_store::open(path, store::open_mode::read_only)) {}
    std::string runs() const {
        json out = json::array();
        for (const auto& r : m_store.runs()) {
            auto j = r.to_json();
            const auto state = store::state_of(r);
            j["state"] = state.word;
            out.push_back(std::move(j));
        }
        return out.dump();
    }
    std::string find_run(const std::string& id_or_label) const {
        return m_store.find_run(id_or_label).to_json().dump();
    }
    std::string records(std::int64_t run, bool with_samples) const {
        json out = json::array();
        for (const auto& r : m_store.records(run, with_samples))
            out.push_back(r.to_json(with_samples));
        return out.dump();
    }
    const std::string& path() const { return m_store.path(); }

  private:
    store::result_store m_store;
};

std::string workloads_json() {
    json out = json::array();
    for (const auto* w : workloads::registry::instance().all())
        if (!is_released(*w))
            out.push_back(w->to_json());
    return out.dump();
}

} // namespace
} // namespace fourfold::python

PYBIND11_MODULE(_native, m) {
    namespace fp = fourfold::python;
    m.doc() = "fourfold's engine (the layers the fourfold CLI links), for the fourfold package";
    // bad input is ValueError in Python, naming the value and what is valid, as the CLI's line
    py::register_exception<fourfold::bad_input>(m, "BadInput", PyExc_ValueError);
    py::register_exception<fourfold::device_error>(m, "DeviceError", PyExc_RuntimeError);
    py::register_exception<fourfold::write_error>(m, "WriteError", PyExc_OSError);
    m.def("run", &fp::run_request, py::arg("request"), py::arg("adapters"));
    m.def("workloads", &fp::workloads_json);
    m.def("build_info", [] { return fourfold::this_build().to_json().dump(); });
    m.attr("torch_version") =
        fmt::format("{}.{}.{}", TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR, TORCH_VERSION_PATCH);
    m.attr("python_executable") = FOURFOLD_PYTHON_EXECUTABLE;
    py::class_<fp::store_reader>(m, "StoreReader")
        .def(py::init<const std::string&>())
        .def("runs", &fp::store_reader::runs)
        .def("find_run", &fp::store_reader::find_run)
        .def("records", &fp::store_reader::records, py::arg("run"), py::arg("with_samples"))
        .def_property_readonly("path", &fp::store_reader::path);
}
