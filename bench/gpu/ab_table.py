#!/usr/bin/env python3
"""A/B of the native variant between two runs of one machine (`fourfold export --format json`):
A, the baseline (a default path), and B, the trial (a switch set). For every op_time case native
ran in both: A's and B's medians, B over A, and stock's median where either run holds it (B's
first); then the geometric means of A / B and of stock / native for each side, over all cases and
over the bandwidth-bound ones (bytes moved >= 60 MiB). Standard library only.
Usage: ab_table.py A.json B.json [A-name B-name]"""
import json
import math
import sys


def key(rec):
    return (rec["workload"], rec["dtype"], json.dumps(rec["params"], sort_keys=True))


def load(path):
    out = {}
    try:
        records = json.load(open(path))["records"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"ab_table: {path} is not a fourfold JSON export ({e})")
    for rec in records:
        if rec["status"] == "ok" and rec["ledger"] == "op_time":
            out.setdefault(key(rec), {})[rec["variant"]] = rec["figures"]
    return out


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: ab_table.py A.json B.json [A-name B-name]")
    a, b = load(sys.argv[1]), load(sys.argv[2])
    an, bn = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else ("A", "B")
    med = lambda f: f["stats"]["median"]
    rows = []
    for k in sorted(set(a) & set(b)):
        if "native" not in a[k] or "native" not in b[k]:
            continue
        stock = b[k].get("stock") or a[k].get("stock")
        p = json.loads(k[2])
        fields = ("tokens", "n", "k") if "n" in p else ("channels", "frames", "height", "width")
        case = "x".join(str(p[f]) for f in fields if f in p) or k[2]
        case += " +bias" if p.get("bias") else ""
        rows.append(dict(case=f"{k[0]} {case} {k[1]}", a=med(a[k]["native"]), b=med(b[k]["native"]),
                         stock=med(stock) if stock else None,
                         big=b[k]["native"].get("bytes_moved", 0) >= 60 * 2**20))
    if not rows:
        sys.exit("no case with native in both runs")
    print(f"| case | {an} µs | {bn} µs | {an} / {bn} | stock µs | stock / {an} | stock / {bn} |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        s = r["stock"]
        extra = f'{s:.2f} | {s / r["a"]:.3f}x | {s / r["b"]:.3f}x' if s else "- | - | -"
        print(f'| {r["case"]} | {r["a"]:.2f} | {r["b"]:.2f} | {r["a"] / r["b"]:.3f}x | {extra} |')
    print()
    for what, sel in (("all", rows), ("bandwidth-bound (>= 60 MiB)", [r for r in rows if r["big"]])):
        if not sel:
            continue
        line = f"{what}, {len(sel)} cases: {an} / {bn} geometric mean {geomean([r['a'] / r['b'] for r in sel]):.3f}x"
        with_stock = [r for r in sel if r["stock"]]
        if with_stock:
            line += (f"; stock / {an} {geomean([r['stock'] / r['a'] for r in with_stock]):.3f}x, "
                     f"stock / {bn} {geomean([r['stock'] / r['b'] for r in with_stock]):.3f}x")
        print(line)


if __name__ == "__main__":
    main()
