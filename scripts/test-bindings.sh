#!/usr/bin/env bash
# Builds the Python and Node packages the way a user does on a fresh machine (Rust, Python >= 3.9
# with pip, Node >= 20 with npm; maturin from PyPI, @napi-rs/cli from npm) and runs both suites,
# which compare the bindings' events with the CLI's output on the fixtures.
#
#   scripts/test-bindings.sh                       both
#   scripts/test-bindings.sh python                one of them (or: node)
#   scripts/test-bindings.sh --release [WHICH]     the packages as shipped (release, LTO)
#   scripts/test-bindings.sh --build-only [WHICH]  build and install, run no suite
#
# The suites build the native modules in cargo's dev profile: the build is what costs (the
# release profile's single codegen unit and LTO took most of the 28.5 minutes this script used
# to take on the 2-core CI machine), and the suites run as fast either way, since the time goes
# to Python, Node and the CLI. `pip install ./bindings/python` and `npm run build`, as the README
# says, build the release profile; so does --release, which scripts/bench-bindings.sh uses: the
# speed table is measured on what a user installs.
#
# The CLI compared against is $AGENTNORM_BIN, else target/debug/agentnorm (built here if
# missing). The bindings' crates build in target/bindings; the venv is target/bindings/venv.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
profile=dev
build_only=
while [ $# -gt 0 ]; do
  case $1 in
    --release) profile=release ;;
    --build-only) build_only=1 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
which=${1:-all}

export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
bindings_target="$root/${CARGO_TARGET_DIR:-target}/bindings"
mkdir -p "$bindings_target"

if [ -z "$build_only" ]; then
  if [ -z "${AGENTNORM_BIN:-}" ]; then
    cargo build --locked --bin agentnorm
    export AGENTNORM_BIN="$root/${CARGO_TARGET_DIR:-target}/debug/agentnorm"
  fi
  # A missing binary fails the suites instead of skipping the comparisons.
  export AGENTNORM_REQUIRE_CLI=1
fi

# The library and its crates are compiled once for the three builds below (the shared layer's
# tests, the Python module, the Node module): @napi-rs/cli always passes cargo a --target, which
# puts its artifacts in their own folder, so the other two are given the same target (maturin
# and cargo read it from CARGO_BUILD_TARGET); and the dev profile without debug info, which
# the suites do not use (panics still name their file and line).
export CARGO_BUILD_TARGET=${CARGO_BUILD_TARGET:-$(rustc -vV | sed -n 's/^host: //p')}
[ "$profile" = release ] || export CARGO_PROFILE_DEV_DEBUG=${CARGO_PROFILE_DEV_DEBUG:-0}

if [ -z "$build_only" ]; then
  # The shared layer's own unit tests.
  (cd bindings/common && CARGO_TARGET_DIR="$bindings_target" cargo test --locked)
fi

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
  # build environment) and cargo. maturin's PEP 517 backend builds the release profile unless
  # MATURIN_PEP517_ARGS names another.
  args=
  [ "$profile" = release ] || args="--profile $profile"
  MATURIN_PEP517_ARGS="$args" CARGO_TARGET_DIR="$bindings_target" \
    "$venv/bin/pip" install --quiet --force-reinstall ./bindings/python pytest
  [ -n "$build_only" ] || "$venv/bin/python" -m pytest -q bindings/python/tests
fi

if [ "$which" = all ] || [ "$which" = node ]; then
  (
    cd bindings/node
    npm ci --no-audit --no-fund --loglevel=error
    if [ "$profile" = release ]; then
      CARGO_TARGET_DIR="$bindings_target" npm run --silent build
    else
      CARGO_TARGET_DIR="$bindings_target" npm run --silent build:dev
    fi
    [ -n "$build_only" ] || npm test
  )
fi
