"""Python-defined workloads: the declaration (Workload, variant, param) and the adapters the
engine calls back into (fourfold._native holds them for the length of one run).

A Workload subclass declares what a C++ workload declares (DESIGN.md): its name, parameters,
dtypes, ledgers, how it makes inputs from a seed, its variants (methods marked @variant) and its
float64 reference. The engine validates a request against the declaration exactly as it does a
built-in workload's (an unknown parameter, a value out of range, a dtype not declared: ValueError).
"""
import inspect
import math

import torch

_TORCH_DTYPES = {
    "fp64": torch.float64,
    "fp32": torch.float32,
    "bf16": torch.bfloat16,
    "fp16": torch.float16,
}
for _name, _attr in (("fp8_e4m3fn", "float8_e4m3fn"), ("fp8_e5m2", "float8_e5m2")):
    if hasattr(torch, _attr):
        _TORCH_DTYPES[_name] = getattr(torch, _attr)
_NAMES_OF_TORCH = {v: k for k, v in _TORCH_DTYPES.items()}
LEDGERS = ("throughput", "op_time", "correctness", "memory")

# Workload classes defined so far (by name): what `fourfold run --python FILE --workload NAME`
# finds after running FILE.
defined = {}


def dtype_name(t):
    """fourfold's name of a torch dtype (torch.float32 -> 'fp32'); ValueError if it has none."""
    if t in _NAMES_OF_TORCH:
        return _NAMES_OF_TORCH[t]
    raise ValueError(f"dtype {t} has no fourfold name; valid: {', '.join(_TORCH_DTYPES)}")


def torch_dtype(name):
    if name not in _TORCH_DTYPES:
        raise ValueError(f"dtype '{name}' is not one this torch holds; valid: {', '.join(_TORCH_DTYPES)}")
    return _TORCH_DTYPES[name]


class Unsupported(Exception):
    """Raised by a workload for a valid request this device or build cannot do (graph mode on a
    CPU, a torch without torch.compile where it is required): the engine stores a skipped record
    with this text as its reason, as it does for a built-in workload."""


class Param:
    """A declared parameter: integer, boolean or text (with or without a list of choices)."""

    def __init__(self, default, help="", min=None, max=None, choices=None):
        if isinstance(default, bool):
            self.kind = "boolean"
        elif isinstance(default, int):
            self.kind = "integer"
        elif isinstance(default, str):
            self.kind = "text"
        else:
            raise ValueError(
                f"param default {default!r} is a {type(default).__name__}; give an int, a bool or a str")
        if self.kind != "integer" and (min is not None or max is not None):
            raise ValueError("param min/max apply to integer parameters only")
        if choices is not None and self.kind != "text":
            raise ValueError("param choices apply to text parameters only")
        if choices is not None and default not in choices:
            raise ValueError(f"param default {default!r} is not one of its choices {list(choices)}")
        self.default, self.help, self.min, self.max = default, help, min, max
        self.choices = list(choices) if choices is not None else None

    def describe(self, name):
        d = {"name": name, "kind": self.kind, "default": _text(self.default), "help": self.help}
        if self.min is not None:
            d["min"] = int(self.min)
        if self.max is not None:
            d["max"] = int(self.max)
        if self.choices is not None:
            d["choices"] = [str(c) for c in self.choices]
        return d


def param(default, help="", min=None, max=None, choices=None):
    """Declares a parameter: fourfold.param(1024, min=1, max=1 << 24, help='elements')."""
    return Param(default, help=help, min=min, max=max, choices=choices)


def _text(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def variant(fn=None, *, help="", host_sync=False, name=None):
    """Marks a method of a Workload as a variant: @fourfold.variant or
    @fourfold.variant(help='...', host_sync=True). host_sync: it synchronises with the host (a
    .item(), a copy to the CPU), so it cannot be captured in a CUDA graph; it is event-timed."""

    def mark(f):
        f._fourfold_variant = {"name": name or f.__name__, "help": help or (inspect.getdoc(f) or "").split("\n")[0],
                               "host_sync": bool(host_sync)}
        return f

    return mark(fn) if fn is not None else mark


class Case:
    """A workload bound to parameter values and a dtype: case['n'] or case.n, case.dtype
    ('fp32'), case.torch_dtype (torch.float32)."""

    def __init__(self, workload, params, dtype):
        self.workload, self.params, self.dtype = workload, dict(params), dtype
        self.torch_dtype = _TORCH_DTYPES.get(dtype)

    def __getitem__(self, name):
        return self.params[name]

    def __getattr__(self, name):
        params = self.__dict__.get("params", {})
        if name in params:
            return params[name]
        raise AttributeError(f"case of {self.__dict__.get('workload')} has no parameter '{name}'; "
                             f"it has: {', '.join(params) or '(none)'}")

    def __repr__(self):
        return f"Case({self.workload}, {self.params}, {self.dtype})"


class Steps:
    """What a throughput workload's session() returns: the engine's step timer calls lead_in()
    (a prefill), then step(i) for i in range(steps), per round, until its stopping rule stops.
    figures: the workload's own figures for the record (its mode, the model, ...)."""

    def __init__(self, lead_in, step, steps, figures=None, unit="tokens/s", step_unit="ms/token",
                 context_axis="ctx"):
        if not callable(lead_in) or not callable(step):
            raise ValueError("Steps needs callables lead_in() and step(i)")
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"Steps: steps={steps!r}; give an int >= 1")
        self.lead_in, self.step, self.steps = lead_in, step, steps
        self.figures = dict(figures or {})
        self.unit, self.step_unit, self.context_axis = unit, step_unit, context_axis


class Workload:
    """Base class of a Python-defined workload. Declare:
        name        the workload's name (not one of fourfold's own)
        params      {name: fourfold.param(default, ...)}
        dtypes      fourfold dtype names ('fp32', 'bf16', ...)
        ledgers     of 'op_time', 'correctness', 'memory' (an operator) or 'throughput',
                    'correctness', 'memory' (a whole model)
        shape       parameter names --shape AxB fills, in order (optional)
        peer_of     a built-in workload whose records these are filed beside (same params): the
                    records carry that workload's name, so compare pairs them by case
    and define:
        inputs(case, seed) -> {slot: tensor}   CPU tensors, in case.torch_dtype where floating
        reference(case, *inputs) -> tensor     inputs as float64 CPU tensors; default: the first
                                               variant on them
        @fourfold.variant methods (case, *inputs) -> tensor
    optionally cost(case) -> {bytes_read, bytes_written, flops, note}, tolerance(case) ->
    {rel_l2, rtol, atol_scale, source}, facts(case, variant) -> {...}, and for throughput
    session(case, variant, *inputs) -> fourfold.Steps."""

    name = None
    description = ""
    params = {}
    dtypes = ("fp32",)
    ledgers = ("op_time", "correctness", "memory")
    shape = ()
    peer_of = None

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if cls.__dict__.get("name"):
            defined[cls.name] = cls

    @classmethod
    def variants(cls):
        out, seen = [], set()
        for klass in reversed(cls.__mro__):
            for attr, value in klass.__dict__.items():
                spec = getattr(value, "_fourfold_variant", None)
                if spec and spec["name"] not in seen:
                    seen.add(spec["name"])
                    out.append((spec, attr))
        return out

    @classmethod
    def descriptor(cls):
        if not isinstance(cls.name, str) or not cls.name:
            raise ValueError(f"workload class {cls.__name__} has no name; set name = '...'")
        if not isinstance(cls.params, dict):
            raise ValueError(f"workload {cls.name}: params must be a dict of fourfold.param(...)")
        params = []
        for pname, p in cls.params.items():
            if not isinstance(p, Param):
                p = Param(p)
            params.append(p.describe(pname))
        ledgers = list(cls.ledgers)
        for l in ledgers:
            if l not in LEDGERS:
                raise ValueError(f"workload {cls.name}: ledger '{l}' is unknown; valid: {', '.join(LEDGERS)}")
        return {
            "name": cls.name,
            "description": cls.description or (inspect.getdoc(cls) or "").split("\n")[0],
            "shape": list(cls.shape),
            "params": params,
            "dtypes": list(cls.dtypes),
            "ledgers": ledgers,
            "variants": [spec for spec, _ in cls.variants()],
            "peer_of": cls.peer_of or "",
        }

    # defaults of the optional methods
    def cost(self, case):
        return None

    def tolerance(self, case):
        return None

    def facts(self, case, variant):
        return {}


def _upcast(t):
    if isinstance(t, torch.Tensor) and t.is_floating_point():
        return t.detach().to("cpu", torch.float64)
    return t


def _as_output(out, what):
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"{what} returned {type(out).__name__}, not a torch.Tensor")
    return out.reshape(1) if out.dim() == 0 else out


class WorkloadAdapter:
    """What the engine calls for a Workload subclass (python_workload.cpp)."""

    def __init__(self, cls):
        self.cls, self.obj = cls, cls()
        self.methods = {spec["name"]: getattr(self.obj, attr) for spec, attr in cls.variants()}
        self.first = next(iter(self.methods), None)

    def make_case(self, params, dtype):
        return Case(self.cls.name, params, dtype)

    def make_inputs(self, case, seed):
        inputs = self.obj.inputs(case, int(seed))
        if not isinstance(inputs, dict) or not inputs:
            raise TypeError(f"{self.cls.name}.inputs must return a non-empty dict of slot -> tensor")
        out = []
        for k, v in inputs.items():
            if not isinstance(v, torch.Tensor):
                raise TypeError(f"{self.cls.name}.inputs: slot '{k}' is a {type(v).__name__}, not a tensor")
            out.append((str(k), v.detach().to("cpu").contiguous()))
        return out

    def reference_method(self, case):
        if hasattr(self.obj, "reference"):
            doc = inspect.getdoc(self.obj.reference)
            return (doc or f"{self.cls.name}.reference on float64 CPU inputs").split("\n")[0]
        return f"variant {self.first} on the CPU with the inputs upcast to float64"

    def reference_fn(self, case):
        ref = getattr(self.obj, "reference", None) or self.methods[self.first]

        def call(*inputs):
            return _as_output(ref(case, *[_upcast(t) for t in inputs]), "the reference").to(torch.float64)

        return call

    def variant_fn(self, case, name):
        method = self.methods[name]

        def call(*inputs):
            return _as_output(method(case, *inputs), f"variant {name}")

        return call

    def cost(self, case):
        return self.obj.cost(case)

    def tolerance(self, case):
        return self.obj.tolerance(case)

    def facts(self, case, variant):
        f = dict(self.obj.facts(case, variant) or {})
        f.setdefault("defined_in", "python")
        f.setdefault("python_class", f"{self.cls.__module__}.{self.cls.__qualname__}")
        return f

    def session(self, case, variant, tensors, device):
        if not hasattr(self.obj, "session"):
            raise TypeError(f"{self.cls.name} declares the throughput ledger but has no session() method")
        s = self.obj.session(case, variant, *tensors)
        if not isinstance(s, Steps):
            raise TypeError(f"{self.cls.name}.session must return fourfold.Steps")
        about = {"figures": s.figures, "unit": s.unit, "step_unit": s.step_unit,
                 "context_axis": s.context_axis}
        return (s.lead_in, s.step, s.steps, about)

    def empty_fn(self):
        return lambda *inputs: None


class CallableAdapter(WorkloadAdapter):
    """The workload fourfold.measure makes of callables and their inputs: one case (the given
    inputs, whatever the seed), one variant per callable."""

    def __init__(self, name, fns, args, reference, tolerance, cost, dtype):
        self.name, self.fns, self.args = name, fns, args
        self.reference_callable, self.tol, self.cost_of, self.dtype = reference, tolerance, cost, dtype
        self.slots = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        first = next(iter(fns.values()))
        self.ref_name = getattr(reference or first, "__qualname__", repr(reference or first))

    def _assemble(self, tensors):
        args = list(self.args)
        for i, t in zip(self.slots, tensors):
            args[i] = t
        return args

    def make_case(self, params, dtype):
        return Case(self.name, params, dtype)

    def make_inputs(self, case, seed):
        return [(f"arg{i}", self.args[i].detach().to("cpu").contiguous()) for i in self.slots]

    def reference_method(self, case):
        if self.reference_callable is not None:
            return f"{self.ref_name} (the given reference) on the CPU with the inputs upcast to float64"
        return f"{self.ref_name} on the CPU with the inputs upcast to float64"

    def reference_fn(self, case):
        ref = self.reference_callable or next(iter(self.fns.values()))

        def call(*tensors):
            out = ref(*self._assemble([_upcast(t) for t in tensors]))
            return _as_output(out, "the reference").to(torch.float64)

        return call

    def variant_fn(self, case, name):
        fn, assemble = self.fns[name], self._assemble
        if not self.slots or len(self.slots) == len(self.args):
            def call(*tensors):
                return _as_output(fn(*tensors), f"variant {name}")
        else:
            def call(*tensors):
                return _as_output(fn(*assemble(tensors)), f"variant {name}")
        return call

    def cost(self, case):
        return self.cost_of

    def tolerance(self, case):
        return self.tol

    def facts(self, case, variant):
        fn = self.fns[variant]
        return {"defined_in": "python", "callable": getattr(fn, "__module__", None) and
                f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}" or repr(fn)}

    def session(self, case, variant, tensors, device):
        raise TypeError("fourfold.measure times operators (op_time); a throughput workload is a fourfold.Workload")

    def empty_fn(self):
        return lambda *inputs: None


def describe_inputs(args):
    """'f32[1,128256] -1': the inputs of a measure() call, as its case's one parameter."""
    parts = []
    for a in args:
        if isinstance(a, torch.Tensor):
            try:
                dt = dtype_name(a.dtype)
            except ValueError:
                dt = str(a.dtype).replace("torch.", "")
            parts.append(f"{dt}[{'x'.join(str(s) for s in a.shape)}]")
        elif isinstance(a, float) and not math.isfinite(a):
            parts.append(str(a))
        else:
            parts.append(repr(a))
    return " ".join(parts)
