#!/usr/bin/env bash
# Bounded memory: peak RSS of `agentnorm` for a 0.5 GB stream and for a GB-sized one (default 5),
# both generated on the fly (fixture lines repeated with ever-changing ids) and piped in, never
# stored. A flat peak (the two figures close) means memory does not grow with the input. A third
# figure pipes the output of 0.5 GB into a slow reader (64 KiB, then 0.5 ms asleep), so that
# output blocks wait for it.
#
#   scripts/memory.sh [GB]        AGENTNORM=path/to/agentnorm to choose the binary
set -euo pipefail
cd "$(dirname "$0")/.."
gb=${1:-5}
bin=${AGENTNORM:-target/release/agentnorm}
if [[ -z ${AGENTNORM:-} ]]; then
    cargo build --release --quiet
    bin="${CARGO_TARGET_DIR:-target}/release/agentnorm"
fi
[[ -x /usr/bin/time ]] || { echo "memory.sh: needs GNU time at /usr/bin/time" >&2; exit 2; }

# Writes `bytes` bytes of NDJSON: every fixture line of every dialect, over and over, each round
# with new ids (so id-keyed state such as tool pairing and message dedupe is exercised, not reused).
generate() {
    python3 - "$1" <<'PY'
import glob, re, sys
limit = int(sys.argv[1])
lines = []
for f in sorted(glob.glob("fixtures/*/*.jsonl")):
    with open(f, "rb") as fh:
        lines += [l.rstrip(b"\r\n") + b"\n" for l in fh if l.strip()]
ids = re.compile(rb'"(?:id|session_id|sessionId|thread_id|call_id|tool_use_id|uuid|parentUuid|requestId|callID|messageID|sessionID|model_call_id)":\s*"[^"]*')
block = b"".join(lines)
# Split right after each id's value: joining the parts with a round tag renames every id.
cuts = [m.end() for m in ids.finditer(block)]
parts = [block[a:b] for a, b in zip([0] + cuts, cuts + [len(block)])]
out = sys.stdout.buffer
written, rnd = 0, 0
while written < limit:
    chunk = (b"-r%d" % rnd).join(parts)[: limit - written]
    try:
        out.write(chunk)
    except BrokenPipeError:
        break
    written += len(chunk)
    rnd += 1
PY
}

measure() {
    local bytes=$1 label=$2 start end kb
    start=$(date +%s.%N)
    kb=$( { generate "$bytes" | /usr/bin/time -f %M "$bin" --no-observed-at > /dev/null; } 2>&1 | tail -n 1)
    end=$(date +%s.%N)
    printf '%-8s %8.1f MiB peak RSS   (%s bytes in, %.1f s)\n' "$label" "$(echo "$kb / 1024" | bc -l)" "$bytes" \
        "$(echo "$end - $start" | bc -l)"
}

slow_reader() {
    python3 -c '
import sys, time
while sys.stdin.buffer.read1(65536):
    time.sleep(0.0005)
'
}

measure_slow() {
    local bytes=$1 label=$2 kb
    kb=$( { generate "$bytes" | /usr/bin/time -f %M "$bin" --no-observed-at | slow_reader; } 2>&1 | tail -n 1)
    printf '%-8s %8.1f MiB peak RSS   (%s bytes in, output read slowly)\n' "$label" "$(echo "$kb / 1024" | bc -l)" "$bytes"
}

echo "agentnorm: $("$bin" --version)"
measure $((512 * 1024 * 1024)) "0.5 GB"
measure "$(echo "$gb * 1024 * 1024 * 1024 / 1" | bc)" "$gb GB"
measure_slow $((512 * 1024 * 1024)) "0.5 GB"
