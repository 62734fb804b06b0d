"""fourfold from Python: measure any PyTorch callable on the four ledgers, define workloads in
Python, and read the store back.

    import fourfold, torch
    recs = fourfold.measure(torch.softmax, torch.randn(1, 128256), -1, db="f.db")
    print(recs.op_time.figures["stats"]["median"], recs.correctness.figures["verdict"])

The engine is the one the fourfold CLI runs (the same C++ layers, linked into fourfold._native):
the same timing modes, stopping rule, float64 correctness pass, memory sampler and store, so a
figure from Python and one from `fourfold run` are the same kind of figure. See README.md.
"""
import json as _json
import os as _os
import sys as _sys

import torch as _torch  # first: its libtorch_python is what _native's tensor conversion uses

from . import _native
from ._workload import Case, Param, Steps, Unsupported, Workload, defined, dtype_name, param, torch_dtype, variant
from ._workload import CallableAdapter as _CallableAdapter
from ._workload import WorkloadAdapter as _WorkloadAdapter
from ._workload import describe_inputs as _describe_inputs
from .store import Record, Records, Run, Store, open

__all__ = ["measure", "run", "open", "Workload", "variant", "param", "Steps", "Unsupported", "Case", "Store",
           "Record", "Records", "Run", "workloads"]


def _check_torch():
    """The torch Python imports must be the libtorch the module was built against."""
    built = _native.torch_version.split(".")[:2]
    have = _torch.__version__.split("+")[0].split(".")[:2]
    if built != have:
        raise ImportError(
            f"fourfold._native was built against libtorch {_native.torch_version}, but this Python's torch is "
            f"{_torch.__version__} ({_torch.__file__}); rebuild fourfold with this interpreter "
            f"(-DPython3_EXECUTABLE={_sys.executable}) or use {_native.python_executable}")


_check_torch()

_SETTING_NAMES = {
    "timing": "timing", "cache": "cache", "min_time": "min_time_s", "timeout": "timeout_s",
    "max_rel_stdev": "max_rel_stdev", "warmup": "warmup_s", "min_samples": "min_samples",
    "seed": "seed", "threads": "threads",
}


def _python_provenance():
    return {
        "version": _sys.version.split()[0],
        "implementation": _sys.implementation.name,
        "executable": _sys.executable,
        "torch": _torch.__version__,
        "torch_file": _torch.__file__,
        "torch_cuda": _torch.version.cuda,
        "torch_compile": hasattr(_torch, "compile"),
    }


def _ledgers_text(ledgers):
    if ledgers is None:
        return "all"
    if isinstance(ledgers, str):
        return ledgers
    if not isinstance(ledgers, (list, tuple, set)) or not all(isinstance(l, str) for l in ledgers):
        raise ValueError(f"ledgers={ledgers!r}; give 'all', a comma list or a list of names "
                         "(op_time, throughput, correctness, memory)")
    if not ledgers:
        raise ValueError("ledgers is empty; give 'all' or one or more of op_time, throughput, correctness, memory")
    return ",".join(ledgers)


def _settings(ledgers, kw):
    out = {"ledgers": _ledgers_text(ledgers)}
    for name, value in kw.items():
        if name not in _SETTING_NAMES:
            raise TypeError(f"unknown setting '{name}'; valid: {', '.join(_SETTING_NAMES)}")
        if value is not None:
            out[_SETTING_NAMES[name]] = str(value)
    return out


def _param_text(name, values):
    if not isinstance(name, str) or not name:
        raise ValueError(f"parameter name {name!r}; give a non-empty str")
    if isinstance(values, (list, tuple)):
        if not values:
            raise ValueError(f"parameter {name}: an empty list; give one or more values")
        values = ",".join(_text(v) for v in values)
    else:
        values = _text(values)
    return f"{name}={values}"


def _text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    raise ValueError(f"parameter value {v!r} is a {type(v).__name__}; give an int, a bool or a str")


def _list(v, what):
    if v is None:
        return []
    if isinstance(v, str):
        return [v]
    if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
        return list(v)
    raise ValueError(f"{what}={v!r}; give a str or a list of str")


def _execute(jobs, adapters, descriptors, device, db, label, settings, command):
    if not isinstance(db, str) or not db:
        raise ValueError(f"db={db!r}; give the path of a store file, e.g. 'fourfold.db'")
    if not isinstance(label, str):
        raise ValueError(f"label={label!r}; give a str")
    request = {
        "jobs": jobs, "workloads": descriptors, "device": device, "db": db, "label": label,
        "settings": settings, "python": _python_provenance(),
        "command": command or " ".join(["python3"] + _sys.argv),
        "workload_names": ",".join(j["workload"] for j in jobs),
    }
    result = _json.loads(_native.run(_json.dumps(request), adapters))
    store = Store(result["db"])
    return RunResult(result, store.records(result["run"]))


class RunResult(Records):
    """The records of one run, read back from the store (a list of Record), with the run's id,
    its store and the engine's exit code (0 ok, 1 a correctness FAIL, 3 a failed record,
    4 nothing measured)."""

    def __init__(self, result, records):
        super().__init__(records)
        self.run = result["run"]
        self.db = result["db"]
        self.exit_code = result["exit_code"]
        self.summary = result
        self.python_call = result.get("python_call")


def measure(fn, *inputs, reference=None, ledgers=("op_time", "correctness", "memory"), device=None,
            timing=None, label="", db="fourfold.db", name=None, tolerance=None, cost=None, **settings):
    """Measures a callable on the operator ledgers with fourfold's engine.

    fn: a callable, or {variant name: callable} to time several interleaved (A B A B) against
    one reference. inputs: its positional arguments; tensors become the job's inputs (moved to
    `device`), anything else is passed as it is. reference: a callable given the same arguments
    with floating tensors as float64 on the CPU; default: the (first) callable itself there.
    device: 'cpu', 'cuda', 'cuda:1', 'mps' (default: the first tensor's). timing: host, event,
    batch or graph (default: graph on CUDA, host elsewhere). Other settings: cache, min_time,
    timeout, max_rel_stdev, warmup, min_samples, seed, threads (as the CLI's options).
    tolerance: {rel_l2, rtol, atol_scale}; cost: {bytes_read, bytes_written, flops} of one call.

    Returns the run's records (RunResult: .op_time, .correctness, .memory, .run, .db); they are
    in the store `db` with the run's provenance, the Python and torch versions and the measured
    cost of one Python call. Bad arguments raise ValueError before the store is opened."""
    fns = fn if isinstance(fn, dict) else {"call": fn}
    if not fns:
        raise ValueError("fn is an empty dict; give a callable or {variant name: callable}")
    for vname, f in fns.items():
        if not isinstance(vname, str) or not vname or not callable(f):
            raise ValueError(f"fn[{vname!r}] = {f!r}; give {{variant name (str): callable}}")
    if reference is not None and not callable(reference):
        raise ValueError(f"reference={reference!r} is not callable; give a callable or None")
    tensors = [a for a in inputs if isinstance(a, torch_Tensor)]
    if not tensors:
        raise ValueError("measure needs at least one tensor among the inputs (the job's inputs are its tensors)")
    floating = [t for t in tensors if t.is_floating_point()]
    dtype = dtype_name(floating[0].dtype) if floating else "fp32"
    if device is None:
        d = tensors[0].device
        device = "cpu" if d.type == "cpu" else (f"{d.type}:{d.index}" if d.index is not None else d.type)
    if not isinstance(device, str):
        device = str(device)
    if name is None:
        first = next(iter(fns.values()))
        name = "py." + getattr(first, "__name__", type(first).__name__)
    if not isinstance(name, str) or not name:
        raise ValueError(f"name={name!r}; give a non-empty str")
    for what, v in (("tolerance", tolerance), ("cost", cost)):
        if v is not None and not isinstance(v, dict):
            raise ValueError(f"{what}={v!r}; give a dict or None")
    adapter = _CallableAdapter(name, fns, list(inputs), reference, tolerance, cost, dtype)
    descriptor = {
        "name": name,
        "description": "a Python callable measured by fourfold.measure",
        "params": [{"name": "inputs", "kind": "text", "default": _describe_inputs(inputs),
                    "help": "the call's arguments: dtype[shape] per tensor, the others as given"}],
        "dtypes": [dtype],
        "ledgers": ["op_time", "correctness", "memory"],
        "variants": [{"name": v, "help": getattr(f, "__qualname__", repr(f)), "host_sync": False}
                     for v, f in fns.items()],
    }
    jobs = [{"workload": name, "dtypes": [dtype]}]
    return _execute(jobs, {name: adapter}, [descriptor], device, db, label,
                    _settings(ledgers, dict(timing=timing, **settings)), None)


torch_Tensor = _torch.Tensor


def run(workloads, *, params=None, shapes=None, dtypes=None, variants=None, device="cpu",
        db="fourfold.db", label="", ledgers="all", command=None, **settings):
    """Sweeps workloads with fourfold's engine, as `fourfold run --workload` does.

    workloads: a Workload subclass, the name of one (defined in Python, or one of fourfold's
    own: 'softmax', 'decode', ...), or a list of those. params: {name: value or [values]}
    (lists and 'a..b' ranges sweep as a Cartesian product); shapes: '1x4096' or a list;
    dtypes and variants: a name or a list. Settings as in measure(). Every bad value raises
    ValueError naming it and what is valid, before the store is opened.

    Returns the run's records (RunResult)."""
    if not isinstance(workloads, (list, tuple)):
        workloads = [workloads]
    if not workloads:
        raise ValueError("workloads is empty; give a Workload subclass or a workload name")
    if isinstance(params, (list, tuple)) and all(isinstance(p, str) for p in params):
        param_texts = list(params)  # the CLI's NAME=VALUE[,VALUE|A..B] form
    elif params is None or isinstance(params, dict):
        param_texts = [_param_text(k, v) for k, v in (params or {}).items()]
    else:
        raise ValueError(f"params={params!r}; give a dict of name -> value or list of values")
    jobs, adapters, descriptors = [], {}, []
    built_in = {w["name"] for w in _json.loads(_native.workloads())}
    for w in workloads:
        if isinstance(w, str) and w not in built_in and w in defined:
            w = defined[w]  # fourfold's own names come first
        if isinstance(w, type) and issubclass(w, Workload):
            d = w.descriptor()
            if d["name"] not in adapters:
                adapters[d["name"]] = _WorkloadAdapter(w)
                descriptors.append(d)
            wname = d["name"]
        elif isinstance(w, str):
            wname = w
        else:
            raise ValueError(f"workload {w!r}; give a fourfold.Workload subclass or a workload name")
        jobs.append({"workload": wname, "params": param_texts, "shapes": _list(shapes, "shapes"),
                     "dtypes": _list(dtypes, "dtypes"), "variants": _list(variants, "variants")})
    return _execute(jobs, adapters, descriptors, str(device), db, label, _settings(ledgers, settings), command)


def workloads():
    """Every workload the engine has (fourfold's own), as `fourfold list --json` describes them,
    and the Python ones defined so far."""
    out = _json.loads(_native.workloads())
    for name, cls in defined.items():
        out.append(dict(cls.descriptor(), defined_in="python"))
    return out
