#!/usr/bin/env python3
"""Writes a folder of synthetic logs for the export measurements: the project's own Claude
transcript and Codex rollout fixtures, copied with fresh session, message and request ids (so
that no copy is deduplicated against another), into OUT/<n>/<fixture>-<copy>.jsonl.

Usage: scripts/gen-folder.py OUT --files N [--copies-per-file K] [--only DIALECT]
  K copies of a fixture go into one file (more sessions per file, larger files);
  --only claude-transcript (or codex-rollout): the fixtures of that dialect only (a Claude-only
  folder, for tools that read only Claude transcripts)."""

import argparse
import re
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
IDS = re.compile(r"\b((?:msg|req|toolu|call|resp)_[A-Za-z0-9_]+)")


def fresh(text, n):
    """The fixture with every uuid replaced by a new one and every msg_/req_/… id suffixed."""
    seen = {}
    text = UUID.sub(lambda m: seen.setdefault(m.group(0), str(uuid.UUID(int=uuid.uuid4().int))), text)
    return IDS.sub(lambda m: f"{m.group(1)}x{n}", text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--files", type=int, required=True)
    ap.add_argument("--copies-per-file", type=int, default=1)
    ap.add_argument("--only", choices=["claude-transcript", "codex-rollout"])
    a = ap.parse_args()
    fixtures = []
    for dialect in ["claude-transcript", "codex-rollout"]:
        if a.only in (None, dialect):
            fixtures += sorted((ROOT / "fixtures" / dialect).glob("*.jsonl"))
    texts = [(f.stem, f.read_text()) for f in fixtures]
    total = 0
    n = 0
    for i in range(a.files):
        stem, text = texts[i % len(texts)]
        d = a.out / f"{i // 1000:03d}"
        d.mkdir(parents=True, exist_ok=True)
        with open(d / f"{stem}-{i:06d}.jsonl", "w") as f:
            for _ in range(a.copies_per_file):
                n += 1
                chunk = fresh(text, n)
                if not chunk.endswith("\n"):
                    chunk += "\n"
                f.write(chunk)
                total += len(chunk)
    print(f"{a.files} files, {n} sessions copied, {total / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
