#!/usr/bin/env bash
# The format checks with real consumers (tests/python): OTLP parsed by opentelemetry-proto,
# ATIF validated by Harbor's models and compared with atif-make, Parquet read by DuckDB.
# Creates (once) a Python 3.12 venv under target/pyvenv/formats with what they need; the pip
# installs are skipped while tests/python/requirements.txt is unchanged.
# Usage: scripts/test-formats.sh [AGENTNORM_BIN] [pytest args…]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-${CARGO_TARGET_DIR:-target}/debug/agentnorm}"
shift || true
venv="${CARGO_TARGET_DIR:-target}/pyvenv/formats"
req=tests/python/requirements.txt
# Harbor needs Python >= 3.12.
py=""
for c in python3.13 python3.12 "$HOME"/.pyenv/versions/3.13*/bin/python "$HOME"/.pyenv/versions/3.12*/bin/python python3; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
    py="$c"
    break
  fi
done
if [ -z "$py" ]; then
  echo "test-formats: no Python >= 3.12 found (Harbor needs it)" >&2
  exit 1
fi
stamp="$venv/.requirements"
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$req" "$stamp"; then
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
  # Harbor's package pulls a cloud SDK stack; its ATIF models need only pydantic (installed above).
  "$venv/bin/pip" install -q --disable-pip-version-check --no-deps "harbor==0.26.0"
  cp "$req" "$stamp"
fi
[ -x "$bin" ] || { echo "test-formats: $bin missing (cargo build first)" >&2; exit 1; }
AGENTNORM_BIN="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python "$@"
