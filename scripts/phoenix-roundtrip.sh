#!/usr/bin/env bash
# Loads sessions into Arize Phoenix (a local OTLP receiver, from PyPI) and reads the spans back
# (not part of the test run): a venv under target/pyvenv/phoenix, then scripts/phoenix-roundtrip.py.
# Usage: scripts/phoenix-roundtrip.sh [AGENTNORM_BIN] [LOG...]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-target/debug/agentnorm}"
shift || true
[ $# -gt 0 ] || set -- fixtures/claude-transcript/sidechain_task.jsonl fixtures/codex-rollout/v0104_tasks_unified_exec.jsonl \
  fixtures/claude/subagent_background_agent.jsonl
venv="${CARGO_TARGET_DIR:-target}/pyvenv/phoenix"
py=""
for c in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python python3; do
  if command -v "$c" >/dev/null 2>&1; then py="$c"; break; fi
done
if [ ! -x "$venv/bin/phoenix" ]; then
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check arize-phoenix opentelemetry-proto
fi
"$venv/bin/python" scripts/phoenix-roundtrip.py "$bin" "$@"
