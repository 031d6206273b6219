#!/usr/bin/env bash
# The README's test command: the crate's tests, the Python and Node packages' suites, and the
# output formats read by their real consumers (OTLP, ATIF, Parquet).
set -euo pipefail
cd "$(dirname "$0")/.."
# The suites' `agentnorm usage` runs keep their usage cache here, never in the user's cache folder.
AGENTNORM_CACHE_DIR="$(mktemp -d)"
export AGENTNORM_CACHE_DIR
trap 'rm -rf "$AGENTNORM_CACHE_DIR"' EXIT
cargo test --locked
scripts/test-bindings.sh
scripts/test-formats.sh
