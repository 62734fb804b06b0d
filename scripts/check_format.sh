#!/usr/bin/env bash
# Fails when a C++ or CUDA source differs from what the checked-in .clang-format makes of it
# (Debian's clang-format 14). Fix with: scripts/check_format.sh --fix
set -euo pipefail
cd "$(dirname "$0")/.."
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h' '*.cu' '*.cuh')
else
    mapfile -t files < <(find src tests fuzz -name '*.cpp' -o -name '*.hpp' -o -name '*.h' \
        -o -name '*.cu' -o -name '*.cuh' 2>/dev/null)
fi
if [ "${1:-}" = --fix ]; then
    clang-format -i "${files[@]}"
    exit 0
fi
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/fourfold-format.$$; then
    grep -E "^[^ ].*: (error|warning):" /tmp/fourfold-format.$$ | cut -d: -f1 | sort -u |
        sed 's/^/unformatted: /'
    rm -f /tmp/fourfold-format.$$
    echo "fourfold: sources differ from .clang-format; run scripts/check_format.sh --fix" >&2
    exit 1
fi
rm -f /tmp/fourfold-format.$$
echo "format: ${#files[@]} files as .clang-format has them"
