"""What the SASS checks (check_sass_waits.py, check_sass_rounds.py) share: their listings from
cuobjdump or from files, and an instruction's opcode."""
import subprocess
import sys

SKIP = 77  # ctest's skip: no cuobjdump on this machine


def opcode(instruction):
    """The opcode with its modifiers, past any predicate (@P0, @!PT)."""
    parts = instruction.split()
    if parts and parts[0].startswith("@"):
        parts = parts[1:]
    return parts[0] if parts else ""


def load(argv, check, usage):
    """([(file, listing)], None) from `--cuobjdump PATH FILE...` or `--sass LISTING...`; or
    (None, exit code) having said why: 2 on bad usage, SKIP without cuobjdump."""
    if len(argv) < 2 or argv[0] not in ("--cuobjdump", "--sass"):
        print(usage, file=sys.stderr)
        return None, 2
    listings = []
    if argv[0] == "--cuobjdump":
        tool, files = argv[1], argv[2:]
        if not tool or tool.endswith("NOTFOUND"):
            print("skipped: no cuobjdump (the CUDA toolkit's disassembler) on this machine; "
                  "the check runs where it is (the H200's image)")
            return None, SKIP
        if not files:
            print(f"{check}: --cuobjdump PATH needs the files to disassemble", file=sys.stderr)
            return None, 2
        for f in files:
            run = subprocess.run([tool, "-sass", f], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{check}: {tool} -sass {f} failed: {run.stderr.strip()}", file=sys.stderr)
                return None, 2
            listings.append((f, run.stdout))
    else:
        for f in argv[1:]:
            with open(f, encoding="utf-8", errors="replace") as handle:
                listings.append((f, handle.read()))
    return listings, None
