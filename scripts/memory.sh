#!/usr/bin/env bash
# Bounded memory: peak RSS of `agentnorm` for a 0.5 GB stream and for a GB-sized one (default 5),
# both generated on the fly (fixture lines repeated with ever-changing ids) and piped in, never
# stored. A flat peak (the two figures close) means memory does not grow with the input. A third
# figure pipes the output of 0.5 GB into a slow reader (64 KiB, then 0.5 ms asleep), so that
# output blocks wait for it.
#
# Then one line of very many content blocks (BLOCKS, default 370000; about 12 MB of text blocks),
# written to a temporary file and piped in, in each shape the Claude adapters read block by
# block: the peak RSS and its ratio to the line, default output and `--raw` (whose output, the
# line again with every event, is cut after 2 GB by `head -c`).
#
#   scripts/memory.sh [GB]        AGENTNORM=path/to/agentnorm to choose the binary
#   LINES_ONLY=1 scripts/memory.sh    only the long lines
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

# Writes a stream of one long line: `shape` (stream-text, stream-mixed, transcript, results) of
# `n` content blocks, after an init line for stream-json.
long_line() {
    python3 - "$1" "$2" <<'PY'
import json, sys
shape, n = sys.argv[1], int(sys.argv[2])
def text(i): return {"type": "text", "text": "w%d" % i}
def tool(i): return {"type": "tool_use", "id": "toolu_%d" % i, "name": "Bash", "input": {"command": "ls %d" % i}}
compact = lambda v: json.dumps(v, separators=(",", ":"))
if shape == "results":
    blocks = [{"type": "tool_result", "tool_use_id": "toolu_%d" % i, "content": "ok %d" % i} for i in range(n)]
    print(compact({"type": "user", "message": {"role": "user", "content": blocks}, "session_id": "s1"}))
    sys.exit()
blocks = [tool(i) if shape != "stream-text" and shape != "transcript" and i % 2 else text(i) for i in range(n)]
msg = {"id": "msg_1", "model": "m", "content": blocks, "usage": {"input_tokens": 1, "output_tokens": 1}}
if shape == "transcript":
    print(compact({"type": "assistant", "uuid": "u1", "parentUuid": None, "sessionId": "s1",
                   "timestamp": "2026-01-01T00:00:01Z", "message": msg}))
else:
    print(compact({"type": "system", "subtype": "init", "session_id": "s1", "model": "m", "tools": []}))
    print(compact({"type": "assistant", "message": msg, "session_id": "s1"}))
PY
}

measure_line() {
    local shape=$1 n=$2 file kb kb_raw size
    file=$(mktemp)
    long_line "$shape" "$n" > "$file"
    size=$(tail -n 1 "$file" | wc -c)
    kb=$( { /usr/bin/time -f %M "$bin" --no-observed-at < "$file" > /dev/null; } 2>&1 | tail -n 1)
    kb_raw=$( { /usr/bin/time -f %M "$bin" --no-observed-at --raw < "$file" | head -c 2000000000 > /dev/null; } 2>&1 | tail -n 1)
    rm -f "$file"
    printf '%-13s %8.1f MB line   %7.1f MiB peak RSS (%4.1fx)   --raw %7.1f MiB (%4.1fx)\n' "$shape" \
        "$(echo "$size / 1000000" | bc -l)" "$(echo "$kb / 1024" | bc -l)" "$(echo "$kb * 1024 / $size" | bc -l)" \
        "$(echo "$kb_raw / 1024" | bc -l)" "$(echo "$kb_raw * 1024 / $size" | bc -l)"
}

echo "agentnorm: $("$bin" --version)"
if [[ -z ${LINES_ONLY:-} ]]; then
    measure $((512 * 1024 * 1024)) "0.5 GB"
    measure "$(echo "$gb * 1024 * 1024 * 1024 / 1" | bc)" "$gb GB"
    measure_slow $((512 * 1024 * 1024)) "0.5 GB"
fi
blocks=${BLOCKS:-370000}
for shape in stream-text stream-mixed transcript results; do
    measure_line "$shape" "$blocks"
done
