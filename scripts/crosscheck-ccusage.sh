#!/usr/bin/env bash
# Cross-checks `agentnorm usage` against ccusage (a real usage client) on the corpus's Claude
# transcripts and Codex rollouts, and the project's pi saved sessions (the corpus has none:
# fixtures/pi/ files that start with a version 3 `session` header), session by session.
#
# Usage: scripts/crosscheck-ccusage.sh [AGENTNORM_BINARY] [CORPUS_DIR]
#   AGENTNORM_BINARY  default: ${CARGO_TARGET_DIR:-target}/release/agentnorm
#   CORPUS_DIR        default: ../shared/corpus (reads b_claude_transcript/ and d_codex_rollout/)
#
# ccusage@20.0.24 (and its native binary @ccusage/ccusage-<os>-<arch>) is installed once into
# ${XDG_CACHE_HOME:-$HOME/.cache}/agentnorm-crosscheck (override: CROSSCHECK_CACHE), never into
# the repository. The corpus files are copied into a temporary HOME laid out as the CLIs write them:
#   ~/.claude/projects/<corpus file name>/<session id>.jsonl   (one project folder per corpus file:
#                                                                 extracts of one session do not clash)
#   ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id or corpus file name>.jsonl
#   ~/.pi/agent/sessions/--<fixture name>--/<time>_<session id>.jsonl
# and both tools read that HOME (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME point there):
#   ccusage claude session --json --offline    ccusage codex session --json --offline
#   ccusage pi session --json --offline
#   agentnorm usage --json                     (no path: it walks the same three folders)
#
# Compared like with like, figure by figure (a figure agentnorm leaves absent counts as 0):
#   agentnorm input      = ccusage inputTokens          (prompt tokens not read from or written to cache;
#                                                        for Codex both subtract cached_input_tokens)
#   agentnorm cache_read = ccusage cacheReadTokens
#   agentnorm cache_write= ccusage cacheCreationTokens  (Codex: cache_write_input_tokens, where a log has it)
#   agentnorm output     = ccusage outputTokens         (Codex reasoning inside on both sides)
#   agentnorm total      = ccusage totalTokens          (the sum of the four)
# Sessions are matched by session id: Claude by the transcript's session id (ccusage names a
# session after its file, which is named after the session id its lines carry most), Codex by
# the session_meta id, else by the file.
#
# Exit: 0 = a report (all agree, every difference is in scripts/crosscheck-known-differences.txt,
# or ccusage could not be installed or run: skipped with a message); 1 = both ran and a session
# differs that the allow-list does not name (or names with another agentnorm total);
# 2 = bad arguments (no agentnorm binary, no corpus).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bin="${1:-${CARGO_TARGET_DIR:-$repo/target}/release/agentnorm}"
corpus="${2:-$repo/../shared/corpus}"
allow="${CROSSCHECK_ALLOW:-$here/crosscheck-known-differences.txt}"
version=20.0.24

[ -x "$bin" ] || { echo "crosscheck: no agentnorm binary at $bin (cargo build --release)" >&2; exit 2; }
[ -d "$corpus/b_claude_transcript" ] || [ -d "$corpus/d_codex_rollout" ] \
  || { echo "crosscheck: no b_claude_transcript/ or d_codex_rollout/ under $corpus" >&2; exit 2; }

skip() { echo "crosscheck: skipped: $*"; exit 0; }

command -v npm >/dev/null 2>&1 || skip "npm is not installed (ccusage comes from npm)"
command -v node >/dev/null 2>&1 || skip "node is not installed"

case "$(node -p 'process.platform + "-" + process.arch')" in
  linux-x64|linux-arm64|darwin-x64|darwin-arm64|win32-x64|win32-arm64) ;;
  *) skip "ccusage publishes no native binary for $(node -p 'process.platform + "-" + process.arch')" ;;
esac
native="@ccusage/ccusage-$(node -p 'process.platform + "-" + process.arch')"

cache="${CROSSCHECK_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agentnorm-crosscheck}"
installed() {
  node -e 'const v=require(process.argv[1]+"/node_modules/ccusage/package.json").version;
           const w=require(process.argv[1]+"/node_modules/"+process.argv[2]+"/package.json").version;
           process.exit(v===process.argv[3]&&w===process.argv[3]?0:1)' "$cache" "$native" "$version" 2>/dev/null
}
if ! installed; then
  mkdir -p "$cache" || skip "cannot create $cache"
  echo "crosscheck: installing ccusage@$version into $cache" >&2
  npm install --no-save --no-audit --no-fund --prefix "$cache" "ccusage@$version" "$native@$version" >&2 \
    || skip "npm install ccusage@$version $native@$version failed"
  installed || skip "ccusage@$version is not in $cache after npm install"
fi
# The package's bin (src/cli.js) finds the native binary with require.resolve("$native/bin/ccusage"),
# makes it executable and runs it.
ccusage="$cache/node_modules/.bin/ccusage"
"$ccusage" --version >/dev/null 2>&1 || skip "$ccusage does not run"

tmp="$(mktemp -d "${TMPDIR:-/tmp}/agentnorm-crosscheck.XXXXXX")"
if [ -n "${CROSSCHECK_KEEP:-}" ]; then echo "crosscheck: temp HOME kept at $tmp/home" >&2
else trap 'rm -rf "$tmp"' EXIT; fi
home="$tmp/home"
mkdir -p "$home/.claude/projects" "$home/.codex/sessions"

# 1. The temp HOME: copies of the corpus files where the CLIs put them.
node - "$corpus" "$home" "$repo/fixtures/pi" <<'JS'
const fs = require("fs"), path = require("path");
const [corpus, home, piFixtures] = process.argv.slice(2);
const jsonl = (d) => fs.existsSync(d) ? fs.readdirSync(d).filter((n) => n.endsWith(".jsonl")).sort() : [];
const lines = (f) => fs.readFileSync(f, "utf8").split("\n").map((l) => { try { return JSON.parse(l); } catch { return null; } });
const safe = (s) => s.replace(/[^A-Za-z0-9._-]/g, "_");
const dir = path.join(corpus, "b_claude_transcript");
for (const name of jsonl(dir)) {
  const stem = name.slice(0, -6), counts = new Map();
  for (const o of lines(path.join(dir, name)))
    if (o && typeof o.sessionId === "string") counts.set(o.sessionId, (counts.get(o.sessionId) || 0) + 1);
  const session = [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? stem;
  const to = path.join(home, ".claude", "projects", safe(stem));
  fs.mkdirSync(to, { recursive: true });
  fs.copyFileSync(path.join(dir, name), path.join(to, safe(session) + ".jsonl"));
}
const cdir = path.join(corpus, "d_codex_rollout");
for (const name of jsonl(cdir)) {
  const stem = name.slice(0, -6);
  let m = stem.match(/(rollout-(\d{4})-(\d{2})-(\d{2})T\d{2}-\d{2}-\d{2}-[0-9a-f-]{36})$/), file, ymd;
  if (m) { file = m[1]; ymd = [m[2], m[3], m[4]]; }
  else {
    const ts = lines(path.join(cdir, name)).find((o) => o && typeof o.timestamp === "string")?.timestamp
      ?? "1970-01-01T00:00:00";
    ymd = [ts.slice(0, 4), ts.slice(5, 7), ts.slice(8, 10)];
    file = `rollout-${ts.slice(0, 10)}T${ts.slice(11, 13)}-${ts.slice(14, 16)}-${ts.slice(17, 19)}-${safe(stem)}`;
  }
  const to = path.join(home, ".codex", "sessions", ...ymd);
  fs.mkdirSync(to, { recursive: true });
  fs.copyFileSync(path.join(cdir, name), path.join(to, file + ".jsonl"));
}
for (const name of jsonl(piFixtures)) {
  // A saved session: the header, then entries with a `parentId` (a `pi --mode json` stream
  // starts with the same header).
  const [first, second] = lines(path.join(piFixtures, name));
  if (!(first && first.type === "session" && first.version === 3 && second && "parentId" in second)) continue;
  const to = path.join(home, ".pi", "agent", "sessions", `--${name.slice(0, -6)}--`);
  fs.mkdirSync(to, { recursive: true });
  // pi names the file <time>_<session id>.jsonl; ccusage takes the session id from the name.
  fs.copyFileSync(path.join(piFixtures, name), path.join(to, `${first.timestamp.replace(/[:.]/g, "-")}_${first.id}.jsonl`));
}
JS

# 2. Both tools on the same HOME.
run_env=(env -u PI_CODING_AGENT_DIR -u PI_AGENT_DIR HOME="$home" CLAUDE_CONFIG_DIR="$home/.claude" CODEX_HOME="$home/.codex" TZ=UTC NO_COLOR=1)
"${run_env[@]}" "$ccusage" claude session --json --offline >"$tmp/cc-claude.json" 2>"$tmp/cc-claude.err" \
  || skip "ccusage claude session failed: $(head -c 300 "$tmp/cc-claude.err")"
# ccusage's session report of one more agent into $tmp/cc-AGENT.json (none where this ccusage
# has no such command).
agent_sessions() {
  local agent=$1 what=$2
  if "$ccusage" "$agent" --help >/dev/null 2>&1; then
    "${run_env[@]}" "$ccusage" "$agent" session --json --offline >"$tmp/cc-$agent.json" 2>"$tmp/cc-$agent.err" \
      || skip "ccusage $agent session failed: $(head -c 300 "$tmp/cc-$agent.err")"
  else
    echo "crosscheck: this ccusage has no $agent command; $what are not cross-checked" >&2
    echo '{"sessions":[]}' >"$tmp/cc-$agent.json"
  fi
}
agent_sessions codex "Codex rollouts"
agent_sessions pi "pi sessions"
"${run_env[@]}" "$bin" usage --json >"$tmp/agentnorm.ndjson" \
  || { echo "crosscheck: agentnorm usage failed" >&2; exit 1; }

# 3. Side by side.
node - "$home" "$tmp" "$allow" <<'JS'
const fs = require("fs"), path = require("path");
const [home, tmp, allowFile] = process.argv.slice(2);
const sessions = path.join(home, ".codex", "sessions");
const F = ["input", "cache_read", "cache_write", "output", "total"];
const CC = { input: "inputTokens", cache_read: "cacheReadTokens", cache_write: "cacheCreationTokens",
             output: "outputTokens", total: "totalTokens" };
const rows = new Map(); // key -> {cli, an, cc}
const row = (key, cli) => { if (!rows.has(key)) rows.set(key, { cli, an: null, cc: null }); return rows.get(key); };
const add = (acc, get) => { acc = acc || Object.fromEntries(F.map((f) => [f, 0])); for (const f of F) acc[f] += get(f) ?? 0; return acc; };
// A Codex file's session: its session_meta id, else the file (as ccusage names it: the path under sessions/).
const codexKey = (rel) => {
  for (const l of fs.readFileSync(path.join(sessions, rel + ".jsonl"), "utf8").split("\n")) {
    try { const o = JSON.parse(l); if (o.type === "session_meta" && o.payload?.id) return o.payload.id; } catch {}
  }
  return rel;
};
for (const l of fs.readFileSync(path.join(tmp, "agentnorm.ndjson"), "utf8").split("\n")) {
  if (!l.trim()) continue;
  const o = JSON.parse(l);
  if (o.totals) continue;
  const codex = (o.dialect || "").startsWith("codex");
  const src = o.source ? path.relative(sessions, o.source).replace(/\.jsonl$/, "") : "";
  const key = o.session_id ?? (codex ? src : o.source ?? "(none)");
  const r = row(key, codex ? "codex" : o.dialect === "pi" ? "pi" : "claude");
  r.an = add(r.an, (f) => o[f]);
}
for (const s of JSON.parse(fs.readFileSync(path.join(tmp, "cc-claude.json"), "utf8")).sessions ?? []) {
  const r = row(s.sessionId, "claude");
  r.cc = add(r.cc, (f) => s[CC[f]]);
}
for (const s of JSON.parse(fs.readFileSync(path.join(tmp, "cc-codex.json"), "utf8")).sessions ?? []) {
  const r = row(codexKey(s.sessionId), "codex");
  r.cc = add(r.cc, (f) => s[CC[f]]);
}
// ccusage names a pi session after its header's id, as agentnorm does.
for (const s of JSON.parse(fs.readFileSync(path.join(tmp, "cc-pi.json"), "utf8")).sessions ?? []) {
  const r = row(s.sessionId, "pi");
  r.cc = add(r.cc, (f) => s[CC[f]]);
}
// Allow-list: "<session id> [total=<agentnorm total>] <reason>"; # comments.
const allow = new Map();
if (fs.existsSync(allowFile))
  for (const l of fs.readFileSync(allowFile, "utf8").split("\n")) {
    const m = l.match(/^\s*([^#\s]\S*)\s+(?:total=(\d+)\s+)?(.*)$/);
    if (m) allow.set(m[1], { total: m[2] === undefined ? null : Number(m[2]), reason: m[3] });
  }
const W = 38, short = (k) => (k.length > W ? "…" + k.slice(-(W - 1)) : k);
const num = (v) => (v == null ? "-" : String(v));
const widths = F.map((f) => Math.max(f.length, ...[...rows.values()].flatMap((r) => [num(r.an?.[f]), num(r.cc?.[f])].map((s) => s.length))));
const block = (vals) => vals.map((v, i) => v.padStart(widths[i])).join(" ");
const blockW = widths.reduce((a, b) => a + b + 1, -1);
const out = [];
out.push(`${"".padEnd(W)} ${"".padEnd(6)} ${"agentnorm".padEnd(blockW)} | ${"ccusage".padEnd(blockW)} |`);
out.push(`${"session".padEnd(W)} ${"cli".padEnd(6)} ${block(F)} | ${block(F)} | verdict`);
let agree = 0, differ = 0, known = 0, unknown = [];
const order = [...rows.entries()].sort((a, b) => a[1].cli.localeCompare(b[1].cli) || a[0].localeCompare(b[0]));
for (const [key, r] of order) {
  const same = r.an && r.cc && F.every((f) => r.an[f] === r.cc[f]);
  let verdict = same ? "same" : "differs";
  if (same) agree++;
  else {
    differ++;
    const a = allow.get(key);
    if (a && (a.total === null || a.total === (r.an?.total ?? 0))) { known++; verdict += " (known)"; }
    else { unknown.push(key); verdict += a ? " (allow-list expects agentnorm total " + a.total + ")" : " (NOT in allow-list)"; }
  }
  out.push(`${short(key).padEnd(W)} ${r.cli.padEnd(6)} ${block(F.map((f) => (r.an ? num(r.an[f]) : "-")))} | ${block(F.map((f) => (r.cc ? num(r.cc[f]) : "-")))} | ${verdict}`);
}
out.push(`crosscheck: ${rows.size} sessions, ${agree} agree, ${differ} differ (${known} known, ${unknown.length} unexplained)`);
console.log(out.join("\n"));
for (const k of unknown) console.error(`crosscheck: ${k}: differs and is not explained in ${allowFile}`);
process.exit(unknown.length ? 1 : 0);
JS
