#!/usr/bin/env python3
"""What each kernel of a captured decode step adds to the step inside the graph.

Reads the .tsv files bench/gpu/kernel_timeline.cpp writes (one a process) and, for every CUDA
graph replayed at least --min-replays times, splits its kernel records into replays (a replay
runs each of the graph's kernel nodes once) and walks each replay in start order:

  frontier  = the latest end seen so far (the replay's first start at first)
  gap       = max(0, start - frontier): time no kernel of the step ran before this one started
  overlap   = max(0, frontier - start): time this one ran beside the kernels before it
  exposed   = max(0, end - frontier): what this kernel moved the step's end by

The exposed times of a replay add up to its span (first start to last end), gaps included, so a
table of them is where the step's time goes in the graph, dependent-launch overlaps counted
(ncu times each kernel alone, with nothing before or after it). Kernels are grouped by kind:
name, grid and block (a model's layers repeat, so a kind is usually one projection of every
layer). Medians over the replays, in µs.

  timeline_table.py [--min-replays N] [--nodes N] FILE.tsv ...
"""
import argparse
import collections
import csv
import statistics
import sys


def read(paths):
    rows = []
    for path in paths:
        with open(path, newline="") as f:
            for r in csv.DictReader(f, delimiter="\t"):
                rows.append(
                    {
                        "start": int(r["start_ns"]),
                        "end": int(r["end_ns"]),
                        "graph": (path, int(r["graph_id"])),
                        "node": int(r["graph_node_id"]),
                        "grid": int(r["grid"]),
                        "block": int(r["block"]),
                        "name": r["name"],
                    }
                )
    return rows


def short(name, width=70):
    # drop namespaces ahead of the kernel's own name, keep the template arguments
    head, sep, tail = name.partition("<")
    head = head.rsplit("::", 1)[-1]
    s = head + sep + tail
    for long, brief in (
        ("__nv_bfloat16", "bf16"),
        ("__half", "f16"),
        ("__nv_fp8_e4m3", "e4m3"),
        ("(anonymous namespace)::", ""),
        ("fourfold::kernels::", ""),
        ("fourfold::", ""),
    ):
        s = s.replace(long, brief)
    return s if len(s) <= width else s[: width - 3] + "..."


def replays_of(records):
    """The graph's records cut into replays: as many records a replay as the graph has nodes."""
    nodes = len({r["node"] for r in records})
    records.sort(key=lambda r: r["start"])
    whole = len(records) // nodes
    out = []
    for i in range(whole):
        chunk = records[i * nodes : (i + 1) * nodes]
        if len({r["node"] for r in chunk}) != nodes:
            continue  # a replay cut wrongly (a record missing or dropped): left out
        out.append(chunk)
    return nodes, out


def walk(replay):
    replay = sorted(replay, key=lambda r: (r["start"], r["end"]))
    frontier = replay[0]["start"]
    steps = []
    for r in replay:
        gap = max(0, r["start"] - frontier)
        overlap = max(0, frontier - r["start"])
        exposed = max(0, r["end"] - frontier)
        frontier = max(frontier, r["end"])
        steps.append((r, gap, overlap, exposed))
    return steps, replay[0]["start"], frontier


def med(values):
    return statistics.median(values) if values else 0.0


def table(graph, nodes, replays, show_nodes):
    spans, by_kind, by_position = [], collections.defaultdict(list), collections.defaultdict(list)
    for replay in replays:
        steps, first, last = walk(replay)
        spans.append((last - first) / 1e3)
        kinds = collections.defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
        for pos, (r, gap, overlap, exposed) in enumerate(steps):
            k = kinds[(r["name"], r["grid"], r["block"])]
            k[0] += 1
            k[1] += (r["end"] - r["start"]) / 1e3
            k[2] += gap / 1e3
            k[3] += overlap / 1e3
            k[4] += exposed / 1e3
            by_position[pos].append((r, gap / 1e3, overlap / 1e3, exposed / 1e3))
        for key, v in kinds.items():
            by_kind[key].append(v)
    span = med(spans)
    path, gid = graph
    print(f"\n## graph {gid} ({path}): {nodes} kernels a replay, {len(replays)} replays, "
          f"median span {span:.1f} µs (min {min(spans):.1f}, max {max(spans):.1f})")
    print("| kernel | grid x block | a step | µs alone (median, each) | gaps a step | "
          "overlap a step | **exposed** a step | exposed each | share |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    rows = []
    for (name, grid, block), per in by_kind.items():
        count = per[0][0]
        alone = med([p[1] for p in per]) / count
        gap = med([p[2] for p in per])
        overlap = med([p[3] for p in per])
        exposed = med([p[4] for p in per])
        rows.append((exposed, name, grid, block, count, alone, gap, overlap))
    rows.sort(reverse=True)
    total = 0.0
    for exposed, name, grid, block, count, alone, gap, overlap in rows:
        total += exposed
        print(f"| `{short(name)}` | {grid} x {block} | {count} | {alone:.2f} | {gap:.2f} | "
              f"{overlap:.2f} | **{exposed:.1f}** | {exposed / count:.2f} | "
              f"{100 * exposed / span if span else 0:.1f} % |")
    print(f"| (sum of the medians) | | {nodes} | | | | {total:.1f} | | |")
    if show_nodes:
        print(f"\nThe first {show_nodes} kernels of a replay, in start order (medians, µs):")
        print("| # | kernel | grid | alone | gap before | overlap | exposed |")
        print("|---:|---|---:|---:|---:|---:|---:|")
        for pos in range(min(show_nodes, nodes)):
            items = by_position[pos]
            r = items[0][0]
            print(f"| {pos} | `{short(r['name'])}` | {r['grid']} | "
                  f"{med([(i[0]['end'] - i[0]['start']) / 1e3 for i in items]):.2f} | "
                  f"{med([i[1] for i in items]):.2f} | {med([i[2] for i in items]):.2f} | "
                  f"{med([i[3] for i in items]):.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--min-replays", type=int, default=8)
    ap.add_argument("--nodes", type=int, default=0, help="list a replay's first N kernels")
    a = ap.parse_args()
    rows = read(a.files)
    graphs = collections.defaultdict(list)
    for r in rows:
        if r["graph"][1] != 0:
            graphs[r["graph"]].append(r)
    print(f"{len(rows)} kernel records, {sum(len(v) for v in graphs.values())} of them in "
          f"{len(graphs)} graph(s)")
    shown = 0
    for graph, records in sorted(graphs.items(), key=lambda kv: -len(kv[1])):
        nodes, replays = replays_of(records)
        if len(replays) < a.min_replays:
            continue
        table(graph, nodes, replays, a.nodes)
        shown += 1
    if not shown:
        print(f"no graph replayed {a.min_replays} times or more")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
