"""Reading a fourfold store from Python: fourfold.open(db).runs(), .records(run), .to_pandas().

The store is opened read-only through the engine's own reader (the one `fourfold export` uses):
reading writes nothing, not even SQLite's -wal/-shm files. Records are what export writes as
JSON, as objects.
"""
import json as _json

from . import _native


class Run:
    """One run of the store: id, label, status, state (complete, running, ended unfinished,
    ...), started_at, finished_at, device, command, provenance."""

    def __init__(self, d):
        self._d = d
        for k in ("id", "label", "status", "started_at", "finished_at", "device", "command", "provenance"):
            setattr(self, k, d.get(k))
        self.state = d.get("state", self.status)

    def __getitem__(self, k):
        return self._d[k]

    def to_dict(self):
        return dict(self._d)

    def __repr__(self):
        return f"Run({self.id}, label={self.label!r}, {self.state}, {self.device})"


class Record:
    """One ledger's figures for one job: ledger, workload, variant, device, dtype, params,
    status (ok, skipped, failed), reason, unit, figures, samples, key, case_key, seed, run, id.

    value: the headline figure (op_time: median µs per call; throughput: the rate, e.g.
    tokens/s; correctness: 'PASS'/'FAIL'; memory: the driver-level peak in bytes)."""

    def __init__(self, d):
        self._d = d
        for k in ("id", "run", "ledger", "workload", "variant", "device", "dtype", "params", "key",
                  "case_key", "seed", "status", "unit", "figures", "recorded_at"):
            setattr(self, k, d.get(k))
        self.reason = d.get("reason", "")
        self.samples = d.get("samples", [])
        self.samples_unit = d.get("samples_unit", self.unit)

    @property
    def value(self):
        f = self.figures or {}
        if self.status != "ok":
            return None
        if self.ledger == "op_time":
            return (f.get("stats") or {}).get("median")
        if self.ledger == "throughput":
            return f.get("rate", f.get("tokens_per_s"))
        if self.ledger == "correctness":
            return f.get("verdict")
        if self.ledger == "memory":
            for k in ("driver_peak_bytes", "reserved_peak_bytes", "allocated_peak_bytes"):
                if f.get(k) is not None:
                    return f[k]
        return None

    def __getitem__(self, k):
        return self._d[k]

    def to_dict(self):
        return dict(self._d)

    def __repr__(self):
        what = self.value if self.status == "ok" else f"{self.status}: {self.reason}"
        return (f"Record({self.ledger}, {self.workload}/{self.variant}, {self.dtype}, {self.params}, "
                f"{what} {self.unit if self.status == 'ok' else ''})").rstrip()


class Records(list):
    """A list of Record, with the ledgers' records at hand: .op_time, .correctness, .memory,
    .throughput (the one record of that ledger; a list where there are several) and
    to_pandas()."""

    def of(self, ledger):
        return [r for r in self if r.ledger == ledger]

    def _one(self, ledger):
        rs = self.of(ledger)
        return rs[0] if len(rs) == 1 else rs

    op_time = property(lambda self: self._one("op_time"))
    correctness = property(lambda self: self._one("correctness"))
    memory = property(lambda self: self._one("memory"))
    throughput = property(lambda self: self._one("throughput"))

    def to_pandas(self):
        """One row per record: run, ledger, workload, variant, device, dtype, each parameter as
        a column, status, value (the headline figure), unit, reason, and for op_time the median,
        q1, q3, ci95 bounds and timing mode; for correctness the metrics. Needs pandas
        (python3-pandas); ImportError saying so otherwise."""
        try:
            import pandas as pd
        except ImportError as e:  # optional at import
            raise ImportError("to_pandas needs pandas (Debian: apt-get install python3-pandas)") from e
        rows = []
        for r in self:
            row = {"run": r.run, "id": r.id, "ledger": r.ledger, "workload": r.workload,
                   "variant": r.variant, "device": r.device, "dtype": r.dtype}
            for k, v in (r.params or {}).items():
                row[f"param.{k}"] = v
            row.update(status=r.status, value=r.value, unit=r.unit, reason=r.reason)
            f = r.figures or {}
            if r.ledger == "op_time" and r.status == "ok":
                s = f.get("stats") or {}
                row.update(median_us=s.get("median"), q1_us=s.get("q1"), q3_us=s.get("q3"),
                           ci95_low_us=s.get("ci95_low"), ci95_high_us=s.get("ci95_high"),
                           n=s.get("n"), mode=f.get("mode"), cache=f.get("cache"))
            elif r.ledger == "correctness" and r.status == "ok":
                for k, v in (f.get("metrics") or {}).items():
                    if isinstance(v, (int, float, str, bool)) or v is None:
                        row[f"metric.{k}"] = v
            elif r.ledger == "throughput" and r.status == "ok":
                row.update(mode=f.get("mode"))
            rows.append(row)
        return pd.DataFrame(rows)


class Store:
    """A store opened read-only (fourfold.open(path)). A missing file, a file that is not a
    fourfold store, or a damaged one raises ValueError naming it."""

    def __init__(self, path):
        if not isinstance(path, str) or not path:
            raise ValueError(f"store path {path!r}; give the path of a store file")
        self.path = path

    def _reader(self):
        # opened per call: a reader sees what writers committed since
        return _native.StoreReader(self.path)

    def runs(self):
        return [Run(d) for d in _json.loads(self._reader().runs())]

    def run(self, run):
        """A run by id or label (the latest carrying it)."""
        return Run(_json.loads(self._reader().find_run(str(run))))

    def records(self, run=None, samples=True):
        """The records of a run (an id, a label, a Run; default: the latest run)."""
        reader = self._reader()
        if run is None:
            runs = _json.loads(reader.runs())
            if not runs:
                return Records()
            run_id = max(r["id"] for r in runs)
        elif isinstance(run, Run):
            run_id = run.id
        else:
            run_id = _json.loads(reader.find_run(str(run)))["id"]
        return Records(Record(d) for d in _json.loads(reader.records(int(run_id), bool(samples))))

    def to_pandas(self, run=None):
        """The records of a run (default: every run) as a DataFrame (see Records.to_pandas)."""
        if run is not None:
            return self.records(run).to_pandas()
        all_records = Records()
        for r in self.runs():
            all_records.extend(self.records(r.id))
        return all_records.to_pandas()

    def __repr__(self):
        return f"Store({self.path!r})"


def open(path):
    """Opens a store for reading: fourfold.open('fourfold.db').runs(), .records(run),
    .to_pandas()."""
    return Store(path)
