#!/usr/bin/env bash
# The speed table of the bindings: events per second through the Python and Node APIs against
# the pure-language loops (json.loads / JSON.parse per line plus a rewrite), same file, same run.
#
#   scripts/bench-bindings.sh [FILE] [RUNS]
#
# FILE defaults to the reference workload, written by ../shared/bench/gen_workload.py (200 MB,
# seed 42) into target/bindings/workload.ndjson. Both packages are built first in the release
# profile, as `pip install` and `npm run build` build them (scripts/test-bindings.sh --release
# --build-only; the suites' own build is the dev profile, which would measure unoptimized code).
set -euo pipefail
cd "$(dirname "$0")/.."
bt="${CARGO_TARGET_DIR:-target}/bindings"
file=${1:-$bt/workload.ndjson}
runs=${2:-3}
if [ ! -f "$file" ]; then
  python3 ../shared/bench/gen_workload.py "$file" 200
fi
scripts/test-bindings.sh --release --build-only >&2
py="$bt/venv/bin/python"
echo "file: $file ($(du -m "$file" | cut -f1) MB), medians of $runs, $(nproc) cores"
printf 'way\twall s\tCPU s\tMB/s\tevents\tevents/s\tevents/CPU s\n'
"$py" bindings/python/bench.py "$file" "$runs"
node bindings/node/bench.js "$file" "$runs"
