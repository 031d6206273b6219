#!/usr/bin/env bash
# Checks that `agentnorm detect` names the right dialect for every file of the shared corpus.
# Usage: scripts/detect-corpus.sh BINARY [CORPUS_DIR]   (default corpus: ../shared/corpus)
set -euo pipefail
bin="${1:?usage: scripts/detect-corpus.sh BINARY [CORPUS_DIR]}"
corpus="${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/../shared/corpus}"
[ -d "$corpus" ] || { echo "detect-corpus: no corpus at $corpus" >&2; exit 2; }
python3 - "$bin" "$corpus" <<'PY'
import os, subprocess, sys
binary, corpus = sys.argv[1], sys.argv[2]
expected = {
    "a_claude_stream_json": "claude", "b_claude_transcript": "claude-transcript",
    "c_codex_exec_json": "codex", "c2_codex_legacy": "codex-legacy",
    "d_codex_rollout": "codex-rollout", "e_gemini": "gemini", "f_opencode": "opencode",
    "g_cursor": "cursor", "j_agent_cli": "claude", "i_seed_runner/claude": "claude",
    "i_seed_runner/codex": "codex", "i_seed_runner/gemini": "gemini",
    "i_seed_runner/antigravity": "gemini",
}
# Files of h_others: Amp speaks Claude's stream; pi is no contract dialect.
exceptions = {"amp__unidentified-unison-clink__AMP_HAPPY_PATH_FIXTURE.jsonl": "claude"}
checked = wrong = 0
for root, _, files in sorted(os.walk(corpus)):
    for name in sorted(files):
        if not name.endswith((".jsonl", ".ndjson")):
            continue
        path = os.path.join(root, name)
        parts = os.path.relpath(path, corpus).split(os.sep)
        folder = "/".join(parts[:2]) if len(parts) > 2 else parts[0]
        want = exceptions.get(name, expected.get(folder))
        if want is None:
            continue
        out = subprocess.run([binary, "detect", path], capture_output=True, text=True)
        got = out.stdout.split("\t")[0] if out.stdout else f"(exit {out.returncode})"
        checked += 1
        if got != want:
            wrong += 1
            print(f"{os.path.relpath(path, corpus)}: detected {got}, expected {want}")
print(f"detect-corpus: {checked - wrong} right, {wrong} wrong")
sys.exit(1 if wrong else 0)
PY
