#!/usr/bin/env bash
# Builds the Python and Node packages the way a user does on a fresh machine (Rust, Python >= 3.9
# with pip, Node >= 20 with npm; maturin from PyPI, @napi-rs/cli from npm) and runs both suites,
# which compare the bindings' events with the CLI's output on the fixtures.
#
#   scripts/test-bindings.sh            both
#   scripts/test-bindings.sh python     one of them (or: node)
#
# The CLI compared against is $AGENTNORM_BIN, else target/debug/agentnorm (built here if
# missing). The bindings' crates build in target/bindings; the venv is target/bindings/venv.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
which=${1:-all}

export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
if [ -z "${AGENTNORM_BIN:-}" ]; then
  cargo build --locked --bin agentnorm
  export AGENTNORM_BIN="$root/${CARGO_TARGET_DIR:-target}/debug/agentnorm"
fi
# A missing binary fails the suites instead of skipping the comparisons.
export AGENTNORM_REQUIRE_CLI=1
bindings_target="$root/${CARGO_TARGET_DIR:-target}/bindings"
mkdir -p "$bindings_target"

# The shared layer's own unit tests.
(cd bindings/common && CARGO_TARGET_DIR="$bindings_target" cargo test --locked)

if [ "$which" = all ] || [ "$which" = python ]; then
  venv="$bindings_target/venv"
  if [ ! -x "$venv/bin/python" ]; then
    # A Python built without ensurepip (Debian's without python3-venv) gets virtualenv from PyPI.
    python3 -m venv "$venv" 2>/dev/null || {
      rm -rf "$venv"
      python3 -m pip install --quiet --user virtualenv && python3 -m virtualenv --quiet "$venv"
    }
  fi
  # As a user installs it: pip builds the wheel with maturin (fetched from PyPI into an isolated
  # build environment) and cargo.
  CARGO_TARGET_DIR="$bindings_target" "$venv/bin/pip" install --quiet --force-reinstall ./bindings/python pytest
  "$venv/bin/python" -m pytest -q bindings/python/tests
fi

if [ "$which" = all ] || [ "$which" = node ]; then
  (
    cd bindings/node
    npm ci --no-audit --no-fund --loglevel=error
    CARGO_TARGET_DIR="$bindings_target" npm run --silent build
    npm test
  )
fi
