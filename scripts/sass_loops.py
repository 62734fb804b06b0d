#!/usr/bin/env python3
"""The instruction budget of a kernel's main loop, read from the built cubins (no cuobjdump).

For each function whose name matches REGEX: its longest backward branch (the main loop), that
loop's instructions, and its hot path: the instructions a pass runs where every forward branch
inside the loop is taken (the rare bodies it skips, such as the pad's plane crossing, left out).
The hot path counts the loads (LDG), stores (STG) and constant-bank reloads (LDC) on it. The
pad's flat path runs about 41 instructions a unit of 4 bf16 elements this way (session 57); a
change meant to cut its instructions can be counted here before it goes to a GPU.

Usage: sass_loops.py [--functions REGEX] FILE...   (objects, archives or cubins)
"""
import re
import struct
import sys

import sass_listings

BRA, LDG, STG, LDC = (sass_listings.OPCODE_OF[n] for n in ("BRA", "LDG", "STG", "LDC"))


def loop_budget(code):
    """(loop start, loop end, loop instructions, hot path instructions, {opcode: count on the
    hot path}) for the longest backward branch of a function's code, or None without one."""
    words = [struct.unpack_from("<Q", code, at)[0] for at in range(0, len(code) - 15, 16)]
    loops = []
    for i, low in enumerate(words):
        if low & 0xFFF == BRA:
            to = sass_listings.branch_target(16 * i, low) // 16
            if to <= i:
                loops.append((to, i))
    if not loops:
        return None
    start, end = max(loops, key=lambda loop: loop[1] - loop[0])
    counts, i = {}, start
    while i <= end:
        low = words[i]
        counts[low & 0xFFF] = counts.get(low & 0xFFF, 0) + 1
        if low & 0xFFF == BRA:
            to = sass_listings.branch_target(16 * i, low) // 16
            if i < to <= end:
                i = to
                continue
        i += 1
    return 16 * start, 16 * end, end - start + 1, sum(counts.values()), counts


def main(argv):
    pattern = "pad_flat"
    if len(argv) >= 2 and argv[0] == "--functions":
        pattern, argv = argv[1], argv[2:]
    if not argv:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    wanted, found = re.compile(pattern), 0
    for f in argv:
        try:
            with open(f, "rb") as handle:
                data = handle.read()
        except OSError as e:
            print(f"sass_loops: {f}: {e.strerror}", file=sys.stderr)
            return 2
        for cubin in sass_listings.object_cubins(data):
            for name, code in sass_listings.elf_sections(cubin):
                if not name.startswith(".text.") or not wanted.search(name):
                    continue
                budget = loop_budget(code)
                if budget is None:
                    continue
                found += 1
                start, end, size, hot, c = budget
                print(f"{name[6:]}: loop {start:#x}-{end:#x} {size} instructions, hot path {hot} "
                      f"({c.get(LDG, 0)} LDG, {c.get(STG, 0)} STG, {c.get(LDC, 0)} LDC)")
    if not found:
        print(f"sass_loops: no function matching '{pattern}' with a loop in {' '.join(argv)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
