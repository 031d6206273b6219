#!/usr/bin/env bash
# `--format html --output-dir`: the first run over a folder of generated Claude transcripts, then
# re-runs over the same unchanged inputs (which keep their pages), wall time; with
# CCL=path/to/claude-code-log, the same for claude-code-log over a copy of the same folder.
#
#   scripts/bench-pages.sh [FILES] [COPIES]   200 files of 1 copy each by default
#   AGENTNORM=path/to/agentnorm to choose the binary; WORK=dir to keep the folders (default: a
#   temporary one, removed at the end).
#
# pip install claude-code-log (in a venv) gives CCL=venv/bin/claude-code-log.
set -euo pipefail
cd "$(dirname "$0")/.."
files=${1:-200}
copies=${2:-1}
bin=${AGENTNORM:-target/release/agentnorm}
if [[ -z ${AGENTNORM:-} ]]; then
    cargo build --release --quiet
    bin="${CARGO_TARGET_DIR:-target}/release/agentnorm"
fi
bin=$(realpath "$bin")
work=${WORK:-$(mktemp -d)}
[[ -n ${WORK:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
rm -rf "$work/in" "$work/pages" "$work/ccl" "$work/home"
python3 scripts/gen-folder.py "$work/in" --files "$files" --copies-per-file "$copies" --only claude-transcript
# Dated back: an input modified in the two seconds before it is read is read again next time.
find "$work/in" -name '*.jsonl' -exec touch -d '1 hour ago' {} +

# The wall time (s, to the ms) of one run of a command; its output and messages dropped.
wall() {
    local start end
    start=$(date +%s%N)
    "$@" > /dev/null 2> /dev/null || true
    end=$(date +%s%N)
    printf '%.3f' "$(echo "($end - $start) / 1000000000" | bc -l)"
}
report() { # name, first, re-runs...
    local name=$1 first=$2 best
    shift 2
    best=$(printf '%s\n' "$@" | sort -g | head -n 1)
    printf '%-16s first %7.3f s   re-run %7.3f s (best of %d: %s)\n' "$name" "$first" "$best" "$#" "$*"
}

echo "agentnorm: $("$bin" --version); $(find "$work/in" -name '*.jsonl' | wc -l) files, $(du -sh "$work/in" | cut -f1)"
run() { wall "$bin" --format html --output-dir "$work/pages" "$work/in"; }
first=$(run)
again=("$(run)" "$(run)" "$(run)")
report agentnorm "$first" "${again[@]}"
echo "  $(find "$work/pages" -name '*.html' | wc -l) pages"

if [[ -n ${CCL:-} ]]; then
    # claude-code-log writes its pages beside the transcripts: a copy of its own.
    cp -r "$work/in" "$work/ccl"
    mkdir -p "$work/home"
    project=$(find "$work/ccl" -mindepth 1 -maxdepth 1 -type d | head -n 1)
    run() { HOME="$work/home" wall "$CCL" "$project"; }
    first=$(run)
    again=("$(run)" "$(run)" "$(run)")
    report claude-code-log "$first" "${again[@]}"
    echo "  $("$CCL" --version), $(find "$project" -name '*.html' | wc -l) pages"
fi
