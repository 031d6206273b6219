#!/usr/bin/env bash
# The Spark recipe in local mode (not part of the test run): a venv with pyspark under
# target/pyvenv/spark, a JRE from the distribution when `java` is absent, then
# scripts/spark-export.py with --check (tokens per day from Spark equal `agentnorm usage`).
# Usage: scripts/spark-export.sh INPUT_DIR OUT_DIR [AGENTNORM_BIN]
set -euo pipefail
cd "$(dirname "$0")/.."
in="$1"; out="$2"; bin="${3:-target/release/agentnorm}"
if ! command -v java >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless
fi
venv="${CARGO_TARGET_DIR:-target}/pyvenv/spark"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pyspark' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check pyspark
fi
rm -rf "$out"
PYSPARK_PYTHON="$venv/bin/python" "$venv/bin/python" scripts/spark-export.py "$in" "$out" --agentnorm "$bin" --check
