#!/usr/bin/env bash
# agentnorm usage against ccusage (the native Rust binary) on one generated home, in one run:
# wall time and peak RSS, cold (page cache dropped where allowed, else first run) and warm
# (the same command again), for the session and day reports.
#
# agentnorm's cold run starts with an empty usage cache (AGENTNORM_CACHE_DIR, a fresh temporary
# folder), its warm run is the same command again (reading that cache).
#
# Usage: scripts/bench-usage.sh [HOME_DIR] [MB]
#   HOME_DIR  default: ${TMPDIR:-/tmp}/agentnorm-bench-home (made by scripts/mkhome if absent)
#   MB        size for mkhome (default 2000)
# Needs: target/release/agentnorm (cargo build --release), /usr/bin/time, and ccusage: taken from
# $CCUSAGE, else installed once with npm into ${XDG_CACHE_HOME:-$HOME/.cache}/agentnorm-bench
# (ccusage@20.0.24: its npm package is a launcher for the native @ccusage/ccusage-<os>-<arch>
# binary, which is what is timed; 20.0.26 has no linux-x64 binary published).
# ccusage 20 reads Claude and Codex logs (its `daily` rows say `"agent":"all"`): both tools read
# the whole home (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME point into it; agentnorm given no path).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
home="${1:-${TMPDIR:-/tmp}/agentnorm-bench-home}"
mb="${2:-2000}"
bin="${AGENTNORM:-$repo/target/release/agentnorm}"
[ -x "$bin" ] || { echo "bench-usage: build first: cargo build --release" >&2; exit 2; }
[ -d "$home/.claude/projects" ] || "$here/mkhome" "$home" --mb "$mb"

ccusage="${CCUSAGE:-}"
if [ -z "$ccusage" ]; then
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/agentnorm-bench"
  native="@ccusage/ccusage-$(node -p 'process.platform + "-" + process.arch')"
  ccusage="$cache/node_modules/$native/bin/ccusage"
  [ -f "$ccusage" ] || npm i --silent --prefix "$cache" ccusage@20.0.24 >&2
  # npm leaves the binary without its x bit; the launcher sets it on first run.
  [ -f "$ccusage" ] && chmod +x "$ccusage"
fi
[ -x "$ccusage" ] || { echo "bench-usage: no ccusage binary ($ccusage)" >&2; exit 2; }

size=$(du -sm "$home" | cut -f1)
files=$(find "$home" -name '*.jsonl' | wc -l)
echo "home: $home ($size MB, $files files); agentnorm $("$bin" --version | cut -d' ' -f2), ccusage $("$ccusage" --version 2>/dev/null | tail -1)"
drop() { sync; { echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null || true; }

# run LABEL CMD...: prints seconds and peak RSS (MiB).
run() {
  local label=$1; shift
  local t="${TMPDIR:-/tmp}/bench-usage.time"
  /usr/bin/time -o "$t" -f '%e %M' "$@" > /dev/null 2>/dev/null || true
  read -r secs kb < <(tail -1 "$t")
  printf '%-44s %7.2f s %7.1f MiB\n' "$label" "$secs" "$(echo "$kb / 1024" | bc -l)"
  echo "$secs" > "${TMPDIR:-/tmp}/bench-usage.last"
}
ratio() { echo "scale=2; $1 / $2" | bc -l; }

export HOME="$home" CLAUDE_CONFIG_DIR="$home/.claude" CODEX_HOME="$home/.codex"
projects="$home/.claude/projects"
for report in session daily; do
  by=$([ $report = daily ] && echo day || echo session)
  drop; run "ccusage $report --json --offline (cold)" "$ccusage" $report --json --offline; c_cold=$(cat /tmp/bench-usage.last)
  run "ccusage $report --json --offline (warm)" "$ccusage" $report --json --offline; c_warm=$(cat /tmp/bench-usage.last)
  # Cold: no usage cache and no page cache. Warm: the same command again (the cache it wrote).
  export AGENTNORM_CACHE_DIR; AGENTNORM_CACHE_DIR="$(mktemp -d)"
  drop; run "agentnorm usage --by $by --json (cold)" "$bin" usage --by "$by" --json; a_cold=$(cat /tmp/bench-usage.last)
  run "agentnorm usage --by $by --json (warm)" "$bin" usage --by "$by" --json; a_warm=$(cat /tmp/bench-usage.last)
  run "agentnorm usage --by $by --no-cache (page cache warm)" "$bin" usage --by "$by" --json --no-cache
  run "agentnorm usage --by $by -j1 --no-cache" "$bin" usage --by "$by" --json -j1 --no-cache
  rm -rf "$AGENTNORM_CACHE_DIR"
  echo "  $report: ccusage/agentnorm cold $(ratio "$c_cold" "$a_cold")x, warm $(ratio "$c_warm" "$a_warm")x; agentnorm warm/cold $(ratio "$a_warm" "$a_cold")"
done
# The status line as Claude Code runs it, at the end of a mkhome home's last day.
# As Claude Code passes it: with the session's cost (`cost.total_cost_usd`), so no session row is built.
status='{"model":{"display_name":"Opus"},"session_id":"none","transcript_path":"/nonexistent","cost":{"total_cost_usd":1.25}}'
AGENTNORM_CACHE_DIR="$(mktemp -d)"
statusline() { printf '%s' "$status" | "$bin" statusline --now 2026-05-31T00:00:00Z; }
export -f statusline; export bin status
drop; run "agentnorm statusline (cold: no cache)" bash -c statusline
run "agentnorm statusline (warm)" bash -c statusline
rm -rf "$AGENTNORM_CACHE_DIR"
run "agentnorm usage --by day, Claude logs only" "$bin" usage --by day --json --no-cache "$projects"
