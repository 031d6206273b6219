#!/usr/bin/env bash
# Regenerates data/litellm-prices.json, the price snapshot `agentnorm usage` embeds at build
# time (src/prices.rs, include_str!), from LiteLLM's model_prices_and_context_window.json (MIT,
# https://github.com/BerriAI/litellm), trimmed to the chat models of the vendors whose CLIs
# agentnorm reads and to the price keys it uses.
#
# Where the JSON comes from: by default the `litellm` package on PyPI, which ships the same file
# as litellm/model_prices_and_context_window_backup.json (`pip download --no-deps litellm`, then
# unzip that one member: nothing is installed). With network access to GitHub you can instead
# pass the raw file:
#   scripts/update-prices.sh                          # newest litellm on PyPI
#   LITELLM_VERSION=1.110.2 scripts/update-prices.sh  # a given release
#   scripts/update-prices.sh path/to/model_prices_and_context_window.json
#   curl -sL https://raw.githubusercontent.com/BerriAI/litellm/main/model_prices_and_context_window.json > p.json && scripts/update-prices.sh p.json
#
# data/prices-corrections.json replaces the entries that the CLIs' own reported costs prove wrong
# (each with its evidence).
#
# Writes data/litellm-prices.json (one model per line, sorted, so that a price change is a
# one-line diff) and data/litellm-prices.date (the snapshot date, shown in `usage --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $# -ge 1 ]]; then
  src=$1
  origin="file $(basename "$1")"
else
  spec=litellm${LITELLM_VERSION:+==$LITELLM_VERSION}
  python3 -m pip download --quiet --no-deps --only-binary=:all: "$spec" -d "$tmp" >&2
  whl=$(ls "$tmp"/litellm-*.whl)
  python3 - "$whl" "$tmp/prices.json" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    open(sys.argv[2], "wb").write(z.read("litellm/model_prices_and_context_window_backup.json"))
PY
  src=$tmp/prices.json
  origin="PyPI $(basename "$whl" | cut -d- -f1-2)"
fi
python3 - "$src" "$origin" <<'PY'
import datetime, json, re, sys

src, origin = sys.argv[1], sys.argv[2]
full = json.load(open(src))
# The vendors whose CLIs agentnorm reads: Claude Code (anthropic), Codex (openai), Gemini CLI
# (gemini, vertex), and the providers OpenCode / Cursor / pi sessions name most (xai, deepseek,
# mistral).
PROVIDERS = {"anthropic", "openai", "gemini", "vertex_ai-language-models", "xai", "deepseek", "mistral"}
MODES = {"chat", "responses"}
# The price keys agentnorm prices with: the base rates, the 1-hour cache write, the long-context
# tiers (`*_above_<N>k_tokens`) and the OpenAI/Gemini service tiers (`*_priority`, `*_flex`).
BASE = ("input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost",
        "cache_creation_input_token_cost")
KEY = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost)"
    r"(_above_1hr)?(_above_\d+k_tokens)?(_priority|_flex)?$")
def trim(v):
    out = {k: x for k, x in v.items() if KEY.match(k) and isinstance(x, (int, float))}
    if "max_input_tokens" in v and isinstance(v["max_input_tokens"], int):
        out["max_input_tokens"] = v["max_input_tokens"]
    return out

models = {}
def put(name, v, via=None):
    t = trim(v)
    if "input_cost_per_token" not in t or "output_cost_per_token" not in t:
        return
    if via:
        t["via"] = via
    models.setdefault(name, t)

for name, v in full.items():
    if not isinstance(v, dict) or v.get("litellm_provider") not in PROVIDERS or v.get("mode") not in MODES:
        continue
    # `gemini/gemini-2.5-pro`, `xai/grok-4`: the CLIs name the model without the provider.
    bare = name.split("/", 1)[1] if "/" in name else name
    put(bare, v)
# Anthropic models LiteLLM no longer lists under `anthropic` (claude-opus-4-1, claude-sonnet-4,
# claude-3-7-sonnet, ...) still appear in old transcripts: their Bedrock entries carry the same
# list prices (`anthropic.claude-opus-4-1-20250805-v1:0`, no region prefix).
for name, v in full.items():
    m = re.fullmatch(r"anthropic\.(claude-[a-z0-9.-]+?)-v\d+:\d+", name)
    if m and isinstance(v, dict) and v.get("mode") == "chat":
        put(m.group(1), v, via="bedrock")

# Corrections: where the CLI's own reported cost proves an entry wrong (each with its evidence).
for name, v in json.load(open("data/prices-corrections.json")).items():
    if not name.startswith("_"):
        t = trim(v)
        t["via"] = "data/prices-corrections.json"
        models[name] = t

today = datetime.date.today().isoformat()
with open("data/litellm-prices.json", "w") as f:
    f.write('{"_snapshot":' + json.dumps({"date": today, "source": origin,
            "upstream": "https://github.com/BerriAI/litellm/blob/main/model_prices_and_context_window.json",
            "license": "MIT"}, sort_keys=True) + ",\n")
    f.write(",\n".join(json.dumps(k) + ":" + json.dumps(models[k], sort_keys=True) for k in sorted(models)))
    f.write("\n}\n")
with open("data/litellm-prices.date", "w") as f:
    f.write(today)
print(f"data/litellm-prices.json: {len(models)} models from {origin}, dated {today}", file=sys.stderr)
PY
