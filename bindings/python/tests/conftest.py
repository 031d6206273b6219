"""Shared paths: the repository root (fixtures are read relative to it, as the CLI's golden
tests do, so `source` is the same string) and the built CLI to compare against."""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = sorted(p.relative_to(ROOT) for p in (ROOT / "fixtures").glob("*/*.jsonl"))


def cli_path():
    """The agentnorm binary: $AGENTNORM_BIN, else target/release, else target/debug."""
    env = os.environ.get("AGENTNORM_BIN")
    if env:
        return Path(env)
    for profile in ("release", "debug"):
        p = ROOT / "target" / profile / "agentnorm"
        if p.exists():
            return p
    found = shutil.which("agentnorm")
    return Path(found) if found else None


@pytest.fixture(scope="session")
def cli():
    p = cli_path()
    if p is None or not p.exists():
        if os.environ.get("AGENTNORM_REQUIRE_CLI"):
            pytest.fail("AGENTNORM_REQUIRE_CLI is set but no agentnorm binary was found")
        pytest.skip("no agentnorm binary (build it with cargo build --release, or set AGENTNORM_BIN)")
    return p


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    monkeypatch.chdir(ROOT)
