#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ for SECONDS_PER_TARGET (default 600), two at a time, then
# prints each target's execution count and exits non-zero if any target crashed.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]          (TARGETS="gemini pi" for some targets only)
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). The seed corpus of
# each target is made here from fixtures/ (each fixture file whole and each of its lines), in
# fuzz/corpus/<target>/ where libFuzzer also keeps what it finds (gitignored). Crashes land in
# fuzz/artifacts/<target>/; logs in fuzz/logs/<target>.log (JOBS=n to change the parallelism).
set -uo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
jobs="${JOBS:-2}"
# Every target fuzz/Cargo.toml declares (one per dialect, plus the whole normalizer).
mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
# TARGETS="a b" runs only those.
if [ -n "${TARGETS:-}" ]; then read -ra targets <<< "$TARGETS"; fi
[ "${#targets[@]}" -gt 0 ] || { echo "fuzz.sh: cargo fuzz list gave no targets" >&2; exit 2; }

(cd fuzz && cargo +nightly fuzz build --release) || exit 2

# Seeds: fixtures/<dialect>/*.jsonl, whole and one line per file; `normalize` gets them all.
seed() { # target, fixture dirs...
  local t="$1" dir n f
  shift
  mkdir -p "fuzz/corpus/$t"
  for dir in "$@"; do
    for f in fixtures/"$dir"/*.jsonl; do
      [ -f "$f" ] || continue
      base="$(basename "$dir")-$(basename "$f" .jsonl)"
      cp "$f" "fuzz/corpus/$t/seed-$base"
      n=0
      while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
        printf '%s\n' "$line" > "fuzz/corpus/$t/seed-$base-$n"
      done < "$f"
    done
  done
}
all=()
for t in "${targets[@]}"; do
  [ "$t" = normalize ] && continue
  seed "$t" "${t//_/-}"
  all+=("${t//_/-}")
done
seed normalize "${all[@]}"

mkdir -p fuzz/logs
run() { # target
  local t="$1"
  mkdir -p "fuzz/artifacts/$t"
  cargo +nightly fuzz run --release "$t" "fuzz/corpus/$t" -- \
    -max_total_time="$secs" -dict=fuzz/dict/json.dict -print_final_stats=1 \
    -rss_limit_mb=4096 -timeout=30 > "fuzz/logs/$t.log" 2>&1
  echo $? > "fuzz/logs/$t.rc"
}

start=$SECONDS
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  echo "[$((SECONDS - start))s] start $t"
  run "$t" &
  running=$((running + 1))
done
wait

failed=0
printf '%-18s %14s %8s  %s\n' target executions seconds result
for t in "${targets[@]}"; do
  log="fuzz/logs/$t.log"
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')"
  [ -n "$execs" ] || execs="$(grep -oE '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 | grep -oE '[0-9]+')"
  time="$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | grep -oE '[0-9]+ second' | grep -oE '[0-9]+')"
  rc="$(cat "fuzz/logs/$t.rc" 2>/dev/null || echo '?')"
  if [ "$rc" = 0 ]; then
    result=ok
  else
    result="CRASH (exit $rc): $(ls fuzz/artifacts/"$t" 2>/dev/null | tr '\n' ' ')"
    failed=1
  fi
  printf '%-18s %14s %8s  %s\n' "$t" "${execs:-?}" "${time:-?}" "$result"
done
exit "$failed"
