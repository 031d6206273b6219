#!/usr/bin/env bash
# The README's test command: the crate's tests, then the Python and Node packages' suites.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --locked
scripts/test-bindings.sh
