#!/usr/bin/env bash
# Run here, before a device call: copies into .deps/ (ignored by git, named in the call's carry)
# the two things the GPU machine's image lacks for building fourfold: SQLite's header and
# GoogleTest's sources, both from this machine's Debian packages.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .deps/include
cp /usr/include/sqlite3.h /usr/include/sqlite3ext.h .deps/include/
rm -rf .deps/googletest && cp -r /usr/src/googletest .deps/googletest
du -sh .deps
