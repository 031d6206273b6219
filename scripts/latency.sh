#!/usr/bin/env bash
# Live latency and start-up time of agentnorm.
#
# Usage: scripts/latency.sh [LINES] [BINARY]
#   LINES   how many lines the live writer sends, one at a time (default 1000)
#   BINARY  the agentnorm to measure (default: the release build, built if needed)
#
# Live latency: a writer sends one Codex line at a time into agentnorm's stdin (sleeping 2 ms
# between lines, as a live CLI would), and the time from writing each line to reading its event
# on agentnorm's stdout is measured; p50 / p99 / max are printed. Start-up: `agentnorm < /dev/null`
# run 200 times, median and p90 wall time.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
lines="${1:-1000}"
bin="${2:-}"
if [ -z "$bin" ]; then
    (cd "$repo" && cargo build --release --quiet)
    bin="${CARGO_TARGET_DIR:-$repo/target}/release/agentnorm"
fi
[ -x "$bin" ] || { echo "latency.sh: no binary at $bin" >&2; exit 2; }
python3 - "$bin" "$lines" <<'PY'
import os, statistics, subprocess, sys, time
binary, n = sys.argv[1], int(sys.argv[2])
p = subprocess.Popen([binary, "--no-observed-at"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
out = p.stdout
def read_line():
    buf = b""
    while not buf.endswith(b"\n"):
        c = out.read(1)
        if not c:
            raise SystemExit("agentnorm closed its output")
        buf += c
    return buf
p.stdin.write(b'{"type":"thread.started","thread_id":"latency"}\n')
read_line(); read_line()  # run_started, session_started
lat = []
for i in range(n):
    line = ('{"type":"item.completed","item":{"id":"i%d","type":"agent_message","text":"line %d"}}\n' % (i, i)).encode()
    t0 = time.perf_counter()
    p.stdin.write(line)
    got = read_line()
    lat.append((time.perf_counter() - t0) * 1000)
    assert b'"output_delta"' in got, got
    time.sleep(0.002)
p.stdin.close(); p.wait()
lat.sort()
q = lambda f: lat[min(len(lat) - 1, int(f * len(lat)))]
print(f"live latency over {n} lines (write -> event read): p50 {q(0.5):.3f} ms, p99 {q(0.99):.3f} ms, max {lat[-1]:.3f} ms")
runs = []
for _ in range(200):
    t0 = time.perf_counter()
    subprocess.run([binary, "--no-observed-at"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, check=True)
    runs.append((time.perf_counter() - t0) * 1000)
runs.sort()
print(f"start-up on empty input (200 runs): median {statistics.median(runs):.3f} ms, p90 {runs[int(0.9 * len(runs))]:.3f} ms")
PY
