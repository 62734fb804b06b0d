#!/usr/bin/env python3
"""Every load of a round is in flight before any of them is waited on, in the pad's SASS.

The flat pad (pad_flat, pad.cu) loads B units a lane, then stores them: its speed is how many
DRAM round trips a round costs, one if all its loads are issued before the first use of any.
Session 56 found a build (760e68c) where each unit's elements were packed into the unit's store
word as they loaded; ptxas put that PRMT ahead of the next unit's step (a branch), with a
scoreboard wait on the loads just issued: one round trip a unit, 96x5x130x130 bf16 15.55 ->
17.67 us on an H100, with fewer instructions. The source looked fine; only the SASS said so.

The rule, per function whose name matches the pattern (default: pad_flat): cut the function at
its global stores (STG: a round ends there); within each piece, no instruction placed before the
piece's last global load (LDG) may wait on a scoreboard barrier that an earlier load of the piece
set. The barriers come from each instruction's control bits (cuobjdump -sass prints them as the
second 64-bit word of an instruction on the line below it; sm_70 and later: bits 46-48 the write
barrier, 52-57 the wait mask of that word), so the listing must be cuobjdump's, with its hex.
Without cuobjdump, the files' cubins are read directly (sass_listings.cubin_listing: the loads,
the stores and every control word, all this check needs), so the check runs on CI too.

Usage:
  check_sass_rounds.py [--functions REGEX] --cuobjdump PATH FILE...
  check_sass_rounds.py [--functions REGEX] --sass LISTING...
Exit 0 clean, 1 with findings (one line each), 2 on bad usage, 77 (ctest's skip) when no
cuobjdump is given or found and the files hold no cubin to read.
"""
import re
import sys

import sass_listings
from sass_listings import opcode

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$")
INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\*\s*(0x[0-9a-f]{16})\s*\*/")
CONTROL = re.compile(r"^\s*/\*\s*(0x[0-9a-f]{16})\s*\*/\s*$")
NO_BARRIER = 7


def functions(listing):
    """(name, [(address, text, write barrier, wait mask)]) per function, in listing order."""
    name, body, pending = None, [], None
    for line in listing.splitlines():
        m = FUNCTION.match(line)
        if m:
            if name is not None:
                yield name, body
            name, body, pending = m.group(1), [], None
            continue
        if name is None:
            continue
        i = INSTRUCTION.match(line)
        if i:
            pending = (i.group(1), i.group(2))
            continue
        c = CONTROL.match(line)
        if c and pending is not None:
            word = int(c.group(1), 16)
            body.append((pending[0], pending[1], (word >> 46) & 7, (word >> 52) & 0x3F))
            pending = None
    if name is not None:
        yield name, body


def findings(listing, pattern="pad_flat"):
    """(function, address, text) for each wait on a load of the same round before its last
    load; and how many functions were looked at."""
    wanted = re.compile(pattern)
    found, looked = [], 0
    for name, body in functions(listing):
        if not wanted.search(name) or not body:  # no control words: nothing to check
            continue
        looked += 1
        piece = []
        for entry in body + [("", "STG (end)", NO_BARRIER, 0)]:
            if opcode(entry[1]).startswith("STG"):
                found += [(name, a, t) for a, t in waits_in_round(piece)]
                piece = []
            else:
                piece.append(entry)
    return found, looked


def waits_in_round(piece):
    loads = [k for k, (_, text, _, _) in enumerate(piece) if opcode(text).startswith("LDG")]
    if len(loads) < 2:
        return []
    out, set_by_loads = [], 0
    for k, (address, text, barrier, wait) in enumerate(piece[: loads[-1]]):
        if wait & set_by_loads:
            out.append((address, text))
        if k in loads and barrier != NO_BARRIER:
            set_by_loads |= 1 << barrier
    return out


def main(argv):
    pattern = "pad_flat"
    if len(argv) >= 2 and argv[0] == "--functions":
        pattern, argv = argv[1], argv[2:]
    listings, rc = sass_listings.load(argv, "check_sass_rounds", __doc__.split("\n\n")[-2],
                                      decode=True)
    if listings is None:
        return rc
    bad, looked = 0, 0
    for f, listing in listings:
        found, n = findings(listing, pattern)
        looked += n
        for name, address, text in found:
            print(f"{f}: {name}: /*{address}*/ '{text}' waits on a load of its round before the "
                  "round's last load is issued: one round trip a unit, not a round")
        bad += len(found)
    if looked == 0:
        print(f"check_sass_rounds: no function matching '{pattern}' with control words found: "
              "not cuobjdump's listing, or not fourfold's kernels?", file=sys.stderr)
        return 1
    print(f"check_sass_rounds: {looked} functions looked at; {bad} waits inside a round")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
