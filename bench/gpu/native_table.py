#!/usr/bin/env python3
"""Reads `fourfold export --format json` of one run that holds stock, generic and native variants
(the native_article stage) and prints, in Markdown, every case's medians side by side and the
issue's targets for the native kernels, each with its measured value and MET / MISSED.
Standard library only. Usage: native_table.py EXPORT.json"""
import json
import math
import sys


def key(rec):
    return (rec["workload"], rec["dtype"], json.dumps(rec["params"], sort_keys=True))


def main():
    doc = json.load(open(sys.argv[1]))
    op, corr = {}, {}
    for rec in doc["records"]:
        if rec["status"] != "ok":
            continue
        if rec["ledger"] == "op_time":
            op.setdefault(key(rec), {})[rec["variant"]] = rec
        elif rec["ledger"] == "correctness":
            corr.setdefault(key(rec), {})[rec["variant"]] = rec["figures"]["verdict"]
    ceiling = None
    rows = []
    for k, by_variant in sorted(op.items()):
        if "native" not in by_variant or "stock" not in by_variant:
            continue
        workload, dtype, params = k
        p = json.loads(params)
        nat, stk = by_variant["native"]["figures"], by_variant["stock"]["figures"]
        ceiling = nat.get("bandwidth_ceiling_gb_per_s", ceiling)
        gen = by_variant.get("generic", {}).get("figures")
        rows.append(dict(workload=workload, dtype=dtype, p=p, native=nat, stock=stk, generic=gen,
                         verdict=corr.get(k, {}).get("native", "-"), stock_verdict=corr.get(k, {}).get("stock", "-")))

    def med(f):
        return f["stats"]["median"]

    def shape(r):
        p = r["p"]
        if r["workload"] == "softmax":
            return f'{p["rows"]}x{p["vocab"]}'
        if r["workload"] == "linear_decode":
            return f'{p["tokens"]}x{p["n"]}x{p["k"]}' + (" +bias" if p["bias"] else "")
        return f'{p["batch"]}x{p["channels"]}x{p["frames"]}x{p["height"]}x{p["width"]}'

    print(f"copy bandwidth of the run: {ceiling:.0f} GB/s\n" if ceiling else "")
    print("| workload | case | dtype | stock µs | generic µs | native µs | native / stock speed-up | native GB/s | % of copy bw | correctness native (stock) | kernel |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---|")
    for r in rows:
        g = f'{med(r["generic"]):.2f}' if r["generic"] else "-"
        kern = r["native"].get("facts", {}).get("kernel", {}).get("path", "")
        print(f'| {r["workload"]} | {shape(r)} | {r["dtype"]} | {med(r["stock"]):.2f} | {g} | {med(r["native"]):.2f} | '
              f'{med(r["stock"]) / med(r["native"]):.2f}x | {r["native"]["gb_per_s"]:.0f} | {r["native"]["pct_of_bandwidth"]:.1f} | '
              f'{r["verdict"]} ({r["stock_verdict"]}) | {kern} |')
    print()

    def geomean(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")

    # What stock leaves to gain, from a run's own figures: every case at the run's fastest GEMV
    # call (the floor: a launch and a round trip) or at its bytes over the run's best GEMV rate,
    # whichever is longer (the most any kernel could reach), or at their sum (nothing overlapped).
    def ceiling_note(cases):
        floor = min(med(r["native"]) for r in lin)
        rate = max(r["native"]["gb_per_s"] for r in lin)
        byte_us = [r["native"]["bytes_moved"] / (rate * 1e3) for r in cases]
        best = geomean([med(r["stock"]) / max(floor, b) for r, b in zip(cases, byte_us)])
        serial = geomean([med(r["stock"]) / (floor + b) for r, b in zip(cases, byte_us)])
        return (f"every case at max(floor {floor:.2f} µs, bytes at {rate / 1e3:.2f} TB/s): {best:.3f}x; "
                f"at floor + bytes: {serial:.3f}x")

    targets, ceilings = [], []
    sm = [r for r in rows if r["workload"] == "softmax"]
    one = [r for r in sm if r["p"]["rows"] == 1 and r["p"]["vocab"] == 128256 and r["dtype"] == "fp32"]
    if one:
        t = med(one[0]["native"])
        targets.append(("softmax 1x128,256 fp32 <= 3 µs", f"{t:.2f} µs ({med(one[0]['stock']) / t:.1f}x over stock)", t <= 3.0))
    if sm:
        worst = min(sm, key=lambda r: med(r["stock"]) / med(r["native"]))
        s = med(worst["stock"]) / med(worst["native"])
        targets.append(("every softmax case >= 3x over stock", f"lowest {s:.2f}x ({shape(worst)} {worst['dtype']})", s >= 3.0))
    lin = [r for r in rows if r["workload"] == "linear_decode" and r["dtype"] == "bf16"]
    t1 = [r for r in lin if r["p"]["tokens"] == 1 and not r["p"]["bias"]]
    if t1:
        sp = [med(r["stock"]) / med(r["native"]) for r in t1]
        targets.append((f"GEMV T=1 geometric mean >= 1.5x over stock ({len(t1)} shapes)", f"{geomean(sp):.3f}x", geomean(sp) >= 1.5))
        ceilings.append(("T=1", ceiling_note(t1)))
        worst = min(t1, key=lambda r: med(r["stock"]) / med(r["native"]))
        w = med(worst["native"]) / med(worst["stock"]) - 1
        targets.append(("no GEMV shape more than 2 % slower than stock", f"worst {100 * w:+.1f} % ({shape(worst)})", w <= 0.02))
        big = [r for r in t1 if r["p"]["n"] * r["p"]["k"] * 2 >= 64e6]
        if big:
            low = min(big, key=lambda r: r["native"]["gb_per_s"])
            targets.append((f"GEMV >= 4.0 TB/s where the weights are >= 64 MB ({len(big)} shapes)",
                            f"lowest {low['native']['gb_per_s'] / 1e3:.2f} TB/s ({shape(low)})", low["native"]["gb_per_s"] >= 4000))
    biased = [r for r in lin if r["p"]["tokens"] == 1 and r["p"]["bias"]]
    plain = {(r["p"]["n"], r["p"]["k"]): r for r in t1}
    costs = [med(r["native"]) / med(plain[(r["p"]["n"], r["p"]["k"])]["native"]) - 1
             for r in biased if (r["p"]["n"], r["p"]["k"]) in plain]
    if costs:
        targets.append(("the fused bias adds <= 2 % over no bias", f"worst {100 * max(costs):+.1f} %, median {100 * sorted(costs)[len(costs) // 2]:+.1f} %", max(costs) <= 0.02))
    multi = [r for r in lin if r["p"]["tokens"] > 1 and not r["p"]["bias"]]
    if multi:
        sp = [med(r["stock"]) / med(r["native"]) for r in multi]
        targets.append((f"GEMV T=2..8 geometric mean >= 1.3x ({len(multi)} cases)", f"{geomean(sp):.3f}x", geomean(sp) >= 1.3))
        ceilings.append(("T=2..8", ceiling_note(multi)))
    pads = [r for r in rows if r["workload"] == "pad"]
    big_pad = [r for r in pads if r["p"]["channels"] == 96 and r["p"]["height"] == 130 and r["dtype"] == "bf16"]
    if big_pad:
        t = med(big_pad[0]["native"])
        targets.append(("pad 1x96x5x130x130 bf16 <= 10.5 µs", f"{t:.2f} µs", t <= 10.5))
    if pads and ceiling:
        ok = []
        for r in pads:
            byte_us = r["native"]["bytes_moved"] / (ceiling * 1e3)
            ok.append((r["native"]["pct_of_bandwidth"] >= 85 or med(r["native"]) <= byte_us + 1.5, r, byte_us))
        bad = [f"{shape(r)} {r['dtype']}: {med(r['native']):.2f} µs vs byte time {b:.2f}" for good, r, b in ok if not good]
        targets.append(("every pad case >= 85 % of copy bandwidth or within 1.5 µs of its byte time",
                        "all" if not bad else "; ".join(bad), not bad))
    fails = [r for r in rows if r["verdict"] != "PASS"]
    targets.append(("correctness of every native case PASS", f"{len(rows) - len(fails)} of {len(rows)} PASS", not fails))
    print("| target | measured | |")
    print("|---|---|---|")
    for what, value, met in targets:
        print(f"| {what} | {value} | {'MET' if met else 'MISSED'} |")
    for what, note in ceilings:
        print(f"\nthe {what} geometric mean's ceiling from this run's figures: {note}")


if __name__ == "__main__":
    main()
