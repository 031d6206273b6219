#!/usr/bin/env bash
# A live session's transcript that grows between runs: what a warm `agentnorm statusline` and
# `agentnorm usage` cost when one log of the home has two lines more each time (as after a
# message), with the cache that `usage` filled; and an unchanged run given the live transcript
# as `transcript_path` without `context_window` (the context then comes from the transcript).
# Against another build in the same run when AGENTNORM_OLD names one (a build before logs were
# read on from their last piece).
#
# Usage: scripts/bench-append.sh [HOME_DIR] [MB...]
#   HOME_DIR  a scripts/mkhome home (default: ${TMPDIR:-/tmp}/agentnorm-bench-home, made if absent)
#   MB        sizes of the live transcript (default: 5 69), made of the home's own Claude logs
#             one after the other, under HOME_DIR/.claude/projects/live/ (removed at the end)
# Needs: target/release/agentnorm (cargo build --release). Prints milliseconds per run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
home="${1:-${TMPDIR:-/tmp}/agentnorm-bench-home}"
shift || true
sizes=("${@:-5 69}")
read -r -a sizes <<< "${sizes[*]}"
new="${AGENTNORM:-$repo/target/release/agentnorm}"
[ -x "$new" ] || { echo "bench-append: build first: cargo build --release" >&2; exit 2; }
[ -d "$home/.claude/projects" ] || "$here/mkhome" "$home"
live="$home/.claude/projects/live"
[ -e "$live" ] && { echo "bench-append: $live exists; remove it first" >&2; exit 2; }
trap 'rm -rf "$live"' EXIT
export HOME="$home" CLAUDE_CONFIG_DIR="$home/.claude" CODEX_HOME="$home/.codex"
# As Claude Code passes it: with the session's cost (`cost.total_cost_usd`), so no session row is built.
status='{"model":{"display_name":"Opus"},"session_id":"none","transcript_path":"/nonexistent","cost":{"total_cost_usd":1.25}}'
ms() { local s e; s=$(date +%s%N); "$@" > /dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
bins=("$new")
[ -n "${AGENTNORM_OLD:-}" ] && bins=("$AGENTNORM_OLD" "$new")
for mb in "${sizes[@]}"; do
  for bin in "${bins[@]}"; do
    mkdir -p "$live"
    # (`head` stops reading before `cat` is done: its broken pipe is expected.)
    find "$home/.claude/projects" -path "$live" -prune -o -name '*.jsonl' -print0 | sort -z \
      | xargs -0 cat 2> /dev/null | head -c "$((mb * 1000000))" | head -n -1 > "$live/live.jsonl" || true
    # The two lines appended each time: the transcript's last two (a replay, counted once).
    tail -n 2 "$live/live.jsonl" > "$live/.tail"
    export AGENTNORM_CACHE_DIR; AGENTNORM_CACHE_DIR="$(mktemp -d)"
    "$bin" usage --json > /dev/null
    printf '%s' "$status" | "$bin" statusline --now 2026-05-31T00:00:00Z > /dev/null
    line=""; for _ in 1 2 3 4 5; do
      cat "$live/.tail" >> "$live/live.jsonl"
      line="$line $(printf '%s' "$status" | ms "$bin" statusline --now 2026-05-31T00:00:00Z)"
    done
    same=""; for _ in 1 2 3; do same="$same $(printf '%s' "$status" | ms "$bin" statusline --now 2026-05-31T00:00:00Z)"; done
    # As Claude Code builds that pass no `context_window` run it: the context from the transcript.
    with_t="${status/\/nonexistent/$live/live.jsonl}"
    ctx=""; for _ in 1 2 3; do ctx="$ctx $(printf '%s' "$with_t" | ms "$bin" statusline --now 2026-05-31T00:00:00Z)"; done
    use=""; for _ in 1 2 3; do cat "$live/.tail" >> "$live/live.jsonl"; use="$use $(ms "$bin" usage --json)"; done
    printf '%s, live transcript %s MB: statusline after an append (ms):%s; unchanged:%s; unchanged, context from the transcript:%s; usage --json after an append:%s\n' \
      "$bin" "$mb" "$line" "$same" "$ctx" "$use"
    rm -rf "$AGENTNORM_CACHE_DIR" "$live"
  done
done
