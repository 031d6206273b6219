"""Errors are Python exceptions carrying the CLI's messages; bad arguments are ValueError."""

import subprocess

import pytest

import agentnorm
from conftest import ROOT


def cli_message(cli, *args):
    out = subprocess.run([str(cli), *args], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 2
    return out.stderr.strip().removeprefix("agentnorm: ")


def test_missing_file_raises_with_the_cli_message(cli):
    with pytest.raises(FileNotFoundError) as e:
        agentnorm.read("no/such/file.jsonl")
    assert str(e.value) == cli_message(cli, "no/such/file.jsonl")


def test_detect_and_usage_missing_file(cli):
    with pytest.raises(FileNotFoundError) as e:
        agentnorm.detect("missing.jsonl")
    assert str(e.value) == cli_message(cli, "detect", "missing.jsonl")
    with pytest.raises(FileNotFoundError):
        agentnorm.usage(["missing.jsonl"])


def test_unknown_dialect():
    with pytest.raises(ValueError, match="invalid dialect"):
        agentnorm.Normalizer(dialect="nope")
    with pytest.raises(ValueError, match="invalid dialect"):
        agentnorm.read("fixtures", dialect="nope")


def test_bad_usage_arguments(cli):
    with pytest.raises(ValueError, match="possible values: session, project, model, day, week, month, block"):
        agentnorm.usage(["fixtures/claude"], by="fortnight")
    with pytest.raises(ValueError, match="since is later than until"):
        agentnorm.usage(["fixtures/claude"], since="2026-05-02", until="2026-05-01")
    with pytest.raises(ValueError) as e:
        agentnorm.usage(["fixtures/claude"], since="yesterday")
    assert str(e.value) == cli_message(cli, "usage", "--since", "yesterday", "fixtures/claude").replace("--since", "since")


def test_text_mode_file_object_is_refused():
    with open(ROOT / "fixtures/claude/compaction.jsonl") as f:
        with pytest.raises(ValueError, match="binary mode"):
            list(agentnorm.read(f))


def test_file_object_errors_propagate():
    class Broken:
        def read(self, n):
            raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        list(agentnorm.read(Broken()))
