#!/usr/bin/env bash
# A live Codex session's rollout that grows between runs: what a warm `agentnorm usage --json`
# over it costs when one turn (ten lines) is appended each time, with the cache the run before
# filled (read on from its last piece), against `--no-cache` (read whole) in the same run, and
# against another build with its own cache when AGENTNORM_OLD names one (a build that read a
# grown rollout whole).
#
# Usage: scripts/bench-append-rollout.sh [MB] [RUNS]
#   MB    size of the rollout (default 60): one session of turns shaped as Codex 0.1xx writes
#         them (turn_context, prompt, a shell call with a 4 KB output, an answer, a token_count
#         with the last request's usage, the running total and rate limits after each request)
#   RUNS  appends timed (default 5)
# Needs: target/release/agentnorm (cargo build --release). Prints milliseconds per run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
mb="${1:-60}"
runs="${2:-5}"
new="${AGENTNORM:-$repo/target/release/agentnorm}"
[ -x "$new" ] || { echo "bench-append-rollout: build first: cargo build --release" >&2; exit 2; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
log="$work/rollout-2026-06-01T00-00-00-live.jsonl"

# Writes turns FROM.. of the rollout to stdout until BYTES are written (0: one turn).
turns() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
start, limit = int(sys.argv[1]), int(sys.argv[2])
out, written, t = sys.stdout, 0, start
def line(t, s, ty, payload):
    at = "2026-06-01T%02d:%02d:%02d.%03dZ" % (t // 3600 % 24, t // 60 % 60, t % 60, s)
    return json.dumps({"timestamp": at, "type": ty, "payload": payload}, separators=(",", ":")) + "\n"
def count(n):
    last = {"input_tokens": 9000, "cached_input_tokens": 8000, "output_tokens": 300, "reasoning_output_tokens": 100, "total_tokens": 9300}
    total = {k: v * n for k, v in last.items()}
    rl = {"primary": {"used_percent": n % 100, "window_minutes": 300, "resets_at": 1780000000},
          "secondary": {"used_percent": 5.0, "window_minutes": 10080, "resets_at": 1780500000}}
    return {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last, "model_context_window": 272000}, "rate_limits": rl}
if start == 0:
    out.write(line(0, 0, "session_meta", {"id": "live", "timestamp": "2026-06-01T00:00:00.000Z", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.130.0", "model_provider": "openai"}))
while True:
    ctx = {"turn_id": "t%d" % t, "cwd": "/w", "approval_policy": "never", "model": "gpt-5.1-codex"}
    lines = [
        line(t, 0, "event_msg", {"type": "task_started", "turn_id": "t%d" % t}),
        line(t, 1, "turn_context", ctx),
        line(t, 2, "event_msg", {"type": "user_message", "message": "prompt %d" % t}),
        line(t, 3, "response_item", {"type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "c%d" % t}),
        line(t, 4, "event_msg", count(2 * t + 1)),
        line(t, 5, "response_item", {"type": "function_call_output", "call_id": "c%d" % t, "output": "x" * 4000}),
        line(t, 6, "turn_context", ctx),
        line(t, 7, "event_msg", {"type": "agent_message", "message": "answer %d" % t}),
        line(t, 8, "event_msg", count(2 * t + 2)),
        line(t, 9, "event_msg", {"type": "task_complete", "turn_id": "t%d" % t}),
    ]
    for l in lines:
        out.write(l)
        written += len(l)
    t += 1
    if written >= limit:
        break
print(t, file=sys.stderr)
EOF
}
next=$(turns 0 "$((mb * 1000000))" 2>&1 >"$log")
echo "rollout: $(( $(stat -c %s "$log") / 1000000 )) MB, $next turns"
ms() { local s e; s=$(date +%s%N); "$@" > /dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
bins=("$new")
[ -n "${AGENTNORM_OLD:-}" ] && bins=("$new" "$AGENTNORM_OLD")
# Each build its own cache (another build's is ignored).
for i in "${!bins[@]}"; do
  mkdir -p "$work/cache$i"
  AGENTNORM_CACHE_DIR="$work/cache$i" "${bins[$i]}" usage --json "$log" > /dev/null
done
for _ in $(seq "$runs"); do
  next=$(turns "$next" 0 2>&1 >>"$log")
  for i in "${!bins[@]}"; do
    echo "${bins[$i]}: appended, cache: $(AGENTNORM_CACHE_DIR="$work/cache$i" ms "${bins[$i]}" usage --json "$log") ms"
  done
  echo "$new: appended, --no-cache: $(ms "$new" usage --json --no-cache "$log") ms"
done
# The report read on is the one read whole.
if diff <(AGENTNORM_CACHE_DIR="$work/cache0" "$new" usage --json "$log") <("$new" usage --json --no-cache "$log") > /dev/null; then
  echo "reports: the same"
else
  echo "bench-append-rollout: the report read on differs from the one read whole" >&2
  exit 1
fi
