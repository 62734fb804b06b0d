#!/usr/bin/env python3
"""Reads the output of the timed decode attention test
(`decode_attention_cuda.the_paths_and_their_phases_are_timed_and_printed`) and prints, in
Markdown, each shape and path's phases as differences of the probe stops (warm, µs a launch):
the wait (stop 1), the positions (2 - 1), the block merge (3 - 2), and the split merge (whole -
3), itself split at stop 4 where the log has it (the wait for the kv head's last block, 4 - 3,
and the merge, whole - 4), and the merge at stops 5 and 6 where it has them (the maxima, sums
and first values, 5 - 4; the splits added, 6 - 5; the stores and the exit, whole - 6); then the
whole launch warm and cold. Lines of the least-chunk sweep
are listed after. Standard library only. Usage: phases_table.py LOG"""
import re
import sys

LINE = re.compile(
    r"attention (?P<shape>.*?), (?P<path>grid|cluster) path(?P<least>, least chunk \d+)? "
    r"\((?:stopped after phase (?P<stop>\d)|whole launch)\): warm (?P<warm>[\d.]+) us, "
    r"cold (?P<cold>[\d.]+) us")


def main():
    phases, sweep = {}, []
    for line in open(sys.argv[1], encoding="utf-8", errors="replace"):
        m = LINE.match(line)
        if not m:
            continue
        warm, cold = float(m["warm"]), float(m["cold"])
        if m["least"]:
            sweep.append((m["shape"], m["least"].split()[-1], warm, cold))
            continue
        stop = int(m["stop"]) if m["stop"] else 0
        phases.setdefault((m["shape"], m["path"]), {})[stop] = (warm, cold)
    print("| shape, path | wait | positions | block merge | split merge (wait for the last "
          "block + merge [first loads + adds + stores]) | whole warm (cold) |")
    print("|---|---:|---:|---:|---|---:|")
    for (shape, path), st in phases.items():
        if not all(s in st for s in (0, 1, 2, 3)):
            continue
        w = {s: v[0] for s, v in st.items()}
        split = f"{w[0] - w[3]:.2f}"
        if 4 in w:
            merge = f"{w[0] - w[4]:.2f}"
            if 5 in w and 6 in w:
                merge += f" [{w[5] - w[4]:.2f} + {w[6] - w[5]:.2f} + {w[0] - w[6]:.2f}]"
            split += f" ({w[4] - w[3]:.2f} + {merge})"
        print(f"| {shape}, {path} | {w[1]:.2f} | {w[2] - w[1]:.2f} | {w[3] - w[2]:.2f} | "
              f"{split} | {w[0]:.2f} ({st[0][1]:.2f}) |")
    if sweep:
        print()
        print("| shape | least chunk | whole warm (cold) |")
        print("|---|---:|---:|")
        for shape, least, warm, cold in sweep:
            print(f"| {shape} | {least} | {warm:.2f} ({cold:.2f}) |")


if __name__ == "__main__":
    main()
