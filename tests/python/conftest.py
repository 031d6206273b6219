"""Shared helpers of the format checks: the agentnorm binary, the fixtures, running it."""

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("AGENTNORM_BIN", str(ROOT / "target" / "debug" / "agentnorm"))
FIXTURES = sorted((ROOT / "fixtures").glob("*/*.jsonl"))


def run(*args, check=True, timeout=60, **kw):
    """Runs agentnorm with args, returns the CompletedProcess (stdout as text)."""
    p = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)
    if check and p.returncode not in (0, 1, 3):
        raise AssertionError(f"agentnorm {args} exited {p.returncode}: {p.stderr}")
    return p


def events(path, *extra):
    """The NDJSON events of one input."""
    out = run("--no-observed-at", *extra, path).stdout
    return [json.loads(l) for l in out.splitlines() if l.strip()]


@pytest.fixture(scope="session")
def binary():
    assert Path(BIN).exists(), f"{BIN} missing: build agentnorm first (cargo build)"
    return BIN
