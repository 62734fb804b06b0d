#pragma once
// A workload defined in Python (fourfold.Workload, or the one fourfold.measure makes for a
// callable), registered in the engine's registry for the length of one run. Its case calls back
// into the Python adapter (python/fourfold/_adapter.py) for inputs, the reference, each variant
// and, for a throughput workload, its steps; every call into Python takes the GIL, so the engine
// runs with it released.
#include "fourfold/core/json.hpp"
#include "fourfold/workloads/workload.hpp"

#include <memory>
#include <string>
#include <torch/csrc/utils/pybind.h>
#include <vector>

namespace fourfold::python {

namespace py = pybind11;

// The Python objects a registered workload holds. Created and destroyed with the GIL held.
struct adapter_ref {
    py::object adapter;
};

// What the engine says of the interpreter's cost per call (set before the run executes).
struct call_overhead {
    double median_us = 0;
    double p10_us = 0, p90_us = 0;
    std::int64_t calls = 0;
    json to_json() const;
};

// A Python exception, rethrown with the GIL held: fourfold.Unsupported as unsupported_here (a
// skipped record with its text), anything else as std::runtime_error with its text.
[[noreturn]] void rethrow(py::error_already_set& e);

// Calls `fn(*tensors)` with the GIL; a Python exception becomes a std::runtime_error with its
// text (the runner turns it into a failed record naming it).
py::object call_with_tensors(const py::object& fn, const workloads::input_set& in);

// Times `calls` calls of an empty callable through call_with_tensors (the GIL released between
// calls, as in the timing loop): what each timed call of a Python variant pays beyond its work.
call_overhead measure_call_overhead(const py::object& empty_fn, const workloads::input_set& in,
                                    int calls);

// Registers a Python workload from its descriptor (JSON: name, description, shape, params,
// dtypes, ledgers, variants) and its adapter. Throws bad_input naming what is wrong in the
// descriptor (an unknown dtype, a name a built-in workload holds, no variants, ...).
void register_python_workload(const json& descriptor, std::shared_ptr<adapter_ref> adapter,
                              std::shared_ptr<const call_overhead> overhead);

// After its run: the workload's place in the registry is taken by an empty entry (nothing of
// Python kept), which a later registration of the name may replace. GIL held.
void release_python_workload(const std::string& name);
bool is_released(const workloads::workload& w);

} // namespace fourfold::python
