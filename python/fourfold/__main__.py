"""python3 -m fourfold run --python FILE --workload NAME[,NAME] [the options of `fourfold run`]

What `fourfold run --python FILE ...` runs (the CLI hands its arguments to this interpreter):
FILE is run as a script, its fourfold.Workload subclasses become workloads, and the named ones
(or fourfold's own, by name) are swept as `fourfold run --workload` sweeps a C++ workload. Bad
input: one line on stderr and exit code 2, the store untouched.
"""
import argparse
import runpy
import sys


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"fourfold: error: {message}", file=sys.stderr)
        sys.exit(2)


def _parser():
    p = _Parser(prog="fourfold run --python FILE", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="sweep Python-defined workloads")
    r.error = p.error
    r.add_argument("--python", required=True, metavar="FILE", help="a Python file defining fourfold.Workload classes")
    r.add_argument("--workload", required=True, help="workload name(s), comma list")
    r.add_argument("--shape", action="append", default=[])
    r.add_argument("--param", action="append", default=[], help="NAME=VALUE[,VALUE|A..B] (repeatable)")
    r.add_argument("--dtype", action="append", default=[])
    r.add_argument("--variants", action="append", default=[])
    r.add_argument("--device", default="cpu")
    r.add_argument("--ledgers", default="all")
    r.add_argument("--db", default="fourfold.db")
    r.add_argument("--label", default="")
    for opt in ("timing", "cache", "min-time", "min-samples", "timeout", "max-rel-stdev", "warmup", "seed", "threads"):
        r.add_argument(f"--{opt}")
    r.add_argument("--quiet", action="store_true")
    r.add_argument("--format", default="text", choices=["text", "json"])
    r.add_argument("--isolate", action="store_true")
    r.add_argument("--no-isolate", action="store_true")
    return p


def _table(records):
    rows = [("ledger", "workload", "variant", "dtype", "params", "value", "unit", "status")]
    for r in records:
        v = r.value
        if isinstance(v, float):
            v = f"{v:.4g}"
        params = " ".join(f"{k}={val}" for k, val in (r.params or {}).items())
        rows.append((r.ledger, r.workload, r.variant, r.dtype, params, "" if v is None else str(v),
                     r.unit or "", r.status if r.status == "ok" else f"{r.status}: {r.reason}"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = _parser().parse_args(argv)
    if a.isolate:
        print("fourfold: error: --isolate: a Python workload runs in this interpreter's process "
              "(the job process is the C++ binary); give --no-isolate or leave it out", file=sys.stderr)
        return 2
    import fourfold
    import json

    try:
        sys.argv = [a.python]
        runpy.run_path(a.python, run_name="__fourfold__")
    except FileNotFoundError:
        print(f"fourfold: error: --python '{a.python}' does not exist; give a Python file that "
              "defines fourfold.Workload classes", file=sys.stderr)
        return 2
    names = [n for n in a.workload.split(",")]
    if any(not n for n in names):
        print(f"fourfold: error: --workload '{a.workload}' has an empty name", file=sys.stderr)
        return 2
    known = {w["name"] for w in fourfold.workloads()}
    for n in names:
        if n not in known:
            defined = ", ".join(sorted(fourfold.defined)) or "(none)"
            print(f"fourfold: error: --workload '{n}' is neither defined in {a.python} (it defines: "
                  f"{defined}) nor one of fourfold's own", file=sys.stderr)
            return 2
    settings = {k: getattr(a, k) for k in ("timing", "cache", "min_time", "min_samples", "timeout",
                                            "max_rel_stdev", "warmup", "seed", "threads")}
    try:
        result = fourfold.run(names, params=a.param, shapes=a.shape, dtypes=[d for d in a.dtype],
                              variants=[v for v in a.variants], device=a.device, db=a.db, label=a.label,
                              ledgers=a.ledgers, command=" ".join(["fourfold", "run"] + argv[1:]),
                              **settings)
    except ValueError as e:
        print(f"fourfold: error: {e}", file=sys.stderr)
        return 2
    if a.format == "json":
        print(json.dumps([r.to_dict() for r in result], indent=1))
    else:
        print(_table(result))
    print(f"store: {result.db} (run {result.run}{', label ' + repr(a.label) if a.label else ''}); "
          f"records: {result.summary['ok']} ok, {result.summary['skipped']} skipped, "
          f"{result.summary['failed']} failed; correctness FAIL: {result.summary['correctness_fail']}",
          file=sys.stderr if a.format == "json" else sys.stdout)
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
