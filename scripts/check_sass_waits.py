#!/usr/bin/env python3
"""No kernel reads a dependent launch's input before griddepcontrol.wait, in the SASS.

A kernel launched as a programmatic dependent launch may start while the kernel before it still
runs; griddepcontrol.wait (ACQBULK in the SASS) is where that kernel's writes become visible.
ptxas treats a non-coherent load (ld.global.nc, __ldg: LDG...CONSTANT in the SASS) as reading
data that no one writes while the kernel lives, and moves such loads above ACQBULK to hide their
latency: with nvcc 13.0 it did so for the softmax's first vectors, the column-stationary GEMV's x
and the per-warp SwiGLU's [gate | up] (that one gave llama3-8b fp8 a relative L2 of 0.27 on the
H200, session 41), where the source reads them after the wait. The PTX was in order each time.

The rule, per function that has an ACQBULK: before the first one in program order, a global load
may be
  - coherent (LDG without CONSTANT): the source put it there (the attention's and rope_kv's read
    of *pos as a prefetch hint, read again after the wait);
  - non-coherent with L1::no_allocate (LDG...NA...CONSTANT): a weight streamed early on purpose
    (load_streaming and its variants in reduce.cuh; weights are never a kernel's output);
and never a non-coherent load that allocates in L1 (__ldg, or a plain load of a const
__restrict__ pointer that the compiler made non-coherent), nor an asynchronous copy to shared
memory (cp.async: LDGSTS; none is issued before a wait today, so one there was moved).
Dependent inputs go through load_after_wait (elements.cuh).

Usage:
  check_sass_waits.py --cuobjdump PATH FILE...   disassemble FILE (an object, library or
                                                 executable) with cuobjdump -sass and check it
  check_sass_waits.py --sass LISTING...          check listings already made (cuobjdump -sass
                                                 or nvdisasm output)
Exit 0 clean, 1 with findings (one line each), 2 on bad usage, 77 (ctest's skip) when no
cuobjdump is given or found.
"""
import re
import sys

import sass_listings
from sass_listings import opcode

INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
# cuobjdump: "Function : name"; nvdisasm: ".text.name:"
FUNCTION = re.compile(r"^\s*(?:Function\s*:\s*(\S+)|\.text\.(\S+):)\s*$")
GLOBAL_LOAD = re.compile(r"\bLDG(?:STS)?(?:\.[A-Z0-9_]+)*\b")


def functions(listing):
    """(name, [instruction text]) per function, in listing order."""
    name, body = None, []
    for line in listing.splitlines():
        m = FUNCTION.match(line)
        if m:
            if name is not None:
                yield name, body
            name, body = m.group(1) or m.group(2), []
            continue
        if name is None:
            continue
        i = INSTRUCTION.match(line)
        if i:
            body.append(i.group(2))
    if name is not None:
        yield name, body


def findings(listing):
    """(function, instruction) for each early non-coherent L1 load; and how many functions wait."""
    found, waiting = [], 0
    for name, body in functions(listing):
        ops = [opcode(i) for i in body]
        if "ACQBULK" not in ops:
            continue
        waiting += 1
        for op, text in zip(ops[: ops.index("ACQBULK")], body):
            if not GLOBAL_LOAD.fullmatch(op):
                continue
            mods = op.split(".")[1:]
            if op.startswith("LDGSTS") or ("CONSTANT" in mods and "NA" not in mods):
                found.append((name, text))
    return found, waiting


def main(argv):
    listings, rc = sass_listings.load(argv, "check_sass_waits", __doc__.split("\n\n")[-2])
    if listings is None:
        return rc
    bad, waiting = 0, 0
    for f, listing in listings:
        found, n = findings(listing)
        waiting += n
        for name, text in found:
            print(f"{f}: {name}: '{text}' loads before griddepcontrol.wait (ACQBULK), "
                  "non-coherent into L1 or by cp.async: a dependent launch's input read early? "
                  "use load_after_wait")
        bad += len(found)
    if waiting == 0:
        print("check_sass_waits: no function with griddepcontrol.wait (ACQBULK) found: "
              "not a sm_90 build, or not fourfold's kernels?", file=sys.stderr)
        return 1
    print(f"check_sass_waits: {waiting} functions wait for the launch before; "
          f"{bad} early non-coherent loads")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
