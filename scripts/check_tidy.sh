#!/usr/bin/env bash
# clang-tidy (Debian's clang-tidy 14) with the checked-in .clang-tidy over every .cpp the build
# compiles from src/, tests/ and python/ (.cu files are nvcc's; the generated data tables in the
# build folder are not ours to lint), from the build's compile_commands.json.
# Usage: scripts/check_tidy.sh [BUILD_DIR] [FILE...]   (default build, every file)
# The commands are rewritten into BUILD_DIR/tidy/compile_commands.json:
#  - without GCC's precompiled header (cmake_pch.hxx is GCC's, not clang's): a unit must
#    include what it uses;
#  - with scripts/tidy_prelude.hpp first: clang cannot parse libtorch 1.13's headers in C++20
#    with libstdc++ 12 without it (the header says why);
#  - a translation unit that includes all of ATen (<ATen/ATen.h>, found from the #include
#    lines of src/, tests/ and python/) gets a clang precompiled header of the prelude and
#    <ATen/ATen.h> when at least three such units share its flags: parsing ATen is a quarter of
#    such a unit's time (the rest is the checks walking ATen's inline code).
# Findings are errors (WarningsAsErrors in .clang-tidy); one log a file in BUILD_DIR/tidy/logs.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
[ -f "$build/compile_commands.json" ] || {
    echo "fourfold: $build/compile_commands.json missing (configure with" \
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON first)" >&2
    exit 2
}
tidy=${CLANG_TIDY:-clang-tidy}
clangxx=${CLANGXX:-clang++}
command -v "$tidy" >/dev/null || {
    echo "fourfold: $tidy not found (Debian's clang-tidy; scripts/setup.sh test installs it)" >&2
    exit 2
}
major() { "$1" --version 2>/dev/null | sed -n 's/.*version \([0-9]*\)\..*/\1/p' | head -1; }
tidy_major=$(major "$tidy")
pch=1 # a clang PCH must come from the clang that clang-tidy is built on
if ! command -v "$clangxx" >/dev/null || [ "$(major "$clangxx")" != "$tidy_major" ]; then
    echo "clang-tidy: no clang++ $tidy_major beside clang-tidy $tidy_major: no precompiled headers"
    pch=0
fi
out="$build/tidy"
rm -rf "$out/logs"
mkdir -p "$out/logs" "$out/pch"
python3 - "$build" "$out" "$pch" "$@" <<'PY'
import json, os, re, shlex, sys
build, out, use_pch = sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3] == "1"
root = os.getcwd()
only = set(os.path.abspath(f) for f in sys.argv[4:])
prelude = os.path.join(root, "scripts", "tidy_prelude.hpp")
include_re = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# the headers that bring in all of ATen (ATen/core/ivalue.h and the rest); ATen/Tensor.h and
# c10's headers are light and parse quickly without a PCH
torch_re = re.compile(r"^(ATen/ATen\.h|ATen/cuda/|ATen/core/ivalue|torch/csrc/|"
                      r"torch/torch\.h|torch/extension\.h)")
memo = {}

def includes_torch(path, search, stack=()):
    """Whether path includes all of ATen, through the repository's own headers."""
    if path in memo:
        return memo[path]
    if path in stack:
        return False
    try:
        text = open(path, encoding="utf-8", errors="replace").read()
    except OSError:
        return False
    found = False
    for kind, name in include_re.findall(text):
        if torch_re.match(name):
            found = True
            break
        dirs = ([os.path.dirname(path)] if kind == '"' else []) + search
        for d in dirs:
            cand = os.path.normpath(os.path.join(d, name))
            if cand.startswith(root + os.sep) and os.path.isfile(cand):
                if includes_torch(cand, search, stack + (path,)):
                    found = True
                break
        if found:
            break
    memo[path] = found
    return found

units, seen = [], set()
for e in json.load(open(os.path.join(build, "compile_commands.json"))):
    f = os.path.abspath(os.path.join(e["directory"], e["file"]))
    rel = os.path.relpath(f, root)
    if not f.endswith(".cpp") or not rel.startswith(("src/", "tests/", "python/")):
        continue
    if f in seen or (only and f not in only):
        continue
    seen.add(f)
    args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
    flags, skip = [], False
    for a in args[1:]:
        if skip:
            skip = False
            continue
        if a in ("-include", "-o"):  # -include <dir>/cmake_pch.hxx: GCC's PCH
            skip = True
            continue
        if a in ("-c", "-Winvalid-pch", e["file"], f):
            continue
        flags.append(a)
    search = [a[2:] for a in flags if a.startswith("-I") and len(a) > 2]
    units.append((f, e["directory"], args[0], flags, includes_torch(f, search)))

groups = {}
for f, d, cc, flags, torch in units:
    if torch:
        groups.setdefault(tuple(flags), []).append(f)
pch_of, pch_jobs = {}, []
if use_pch:
    for i, (flags, files) in enumerate(sorted(groups.items(), key=lambda g: -len(g[1]))):
        if len(files) < 3:
            continue
        header = os.path.join(out, "pch", f"group{i}.hpp")
        with open(header, "w") as h:
            h.write(f'#include "{prelude}"\n#include <ATen/ATen.h>\n')
        pch_jobs.append([*flags, "-Wno-unknown-warning-option", "-x", "c++-header", header,
                         "-o", header + ".pch"])
        for f in files:
            pch_of[f] = header + ".pch"
db = []
for f, d, cc, flags, torch in units:
    pre = ["-include-pch", pch_of[f]] if f in pch_of else ["-include", prelude]
    db.append({"directory": d, "file": f, "arguments": [cc, *pre, *flags, "-c", f]})
json.dump(db, open(os.path.join(out, "compile_commands.json"), "w"), indent=0)
with open(os.path.join(out, "files.txt"), "w") as fl:
    fl.write("".join(f + "\n" for f, *_ in sorted(units, key=lambda u: (not u[4], u[0]))))
with open(os.path.join(out, "pch_jobs.txt"), "w") as pj:
    pj.write("".join(shlex.join(j) + "\n" for j in pch_jobs))
print(f"clang-tidy: {len(units)} files ({sum(u[4] for u in units)} with all of ATen, "
      f"{len(pch_of)} of them through {len(pch_jobs)} precompiled header(s))")
PY
jobs=$(nproc)
start=$SECONDS
while read -r line; do
    eval "set -- $line"
    (cd "$build" && "$clangxx" "$@") >"$out/pch/build.log" 2>&1 || {
        cat "$out/pch/build.log" >&2
        echo "fourfold: the clang precompiled header for clang-tidy did not build" >&2
        exit 1
    }
done <"$out/pch_jobs.txt"
# the ATen units first (the longest), then the rest: -j keeps both cores busy to the end
export tidy out
status=0
# each unit's CPU seconds (user + system) go to BUILD_DIR/tidy/cpu.txt
: >"$out/cpu.txt"
xargs -P "$jobs" -I{} bash -c \
    'f="$1"; log="$out/logs/$(echo "$f" | tr / _).log"; TIMEFORMAT="%U %S"
     { time "$tidy" --quiet -p "$out" --extra-arg=-Wno-unknown-warning-option "$f" \
           >"$log" 2>&1; } 2>"$log.time"; rc=$?
     echo "$(awk "{print \$1 + \$2}" "$log.time") $f" >>"$out/cpu.txt"; rm -f "$log.time"
     exit $rc' _ {} <"$out/files.txt" || status=$?
findings=$(cat "$out"/logs/*.log | grep -E '^/.*:[0-9]+:[0-9]+: (warning|error): ' |
    sort -u || true)
n=$(printf '%s' "$findings" | grep -c . || true)
cpu=$(awk '{s += $1} END {printf "%.0f", s}' "$out/cpu.txt")
echo "clang-tidy: $(wc -l <"$out/files.txt") files in $((SECONDS - start)) s, $jobs at a time" \
    "($cpu s of CPU in clang-tidy)"
if [ "$status" -ne 0 ] || [ "$n" -ne 0 ]; then
    printf '%s\n' "$findings" | head -100
    echo "fourfold: clang-tidy found $n problem(s) (xargs status $status); logs in $out/logs" >&2
    exit 1
fi
echo "clang-tidy: clean"
