#!/usr/bin/env bash
# The README's test command: the crate's tests, the Python and Node packages' suites, and the
# output formats read by their real consumers (OTLP, ATIF, Parquet).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked
scripts/test-bindings.sh
scripts/test-formats.sh
