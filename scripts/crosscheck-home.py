#!/usr/bin/env python3
"""Cross-checks `agentnorm usage` against ccusage on a whole home (one made by scripts/mkhome).

    scripts/crosscheck-home.py HOME [--agentnorm BIN] [--ccusage BIN]

Both tools read HOME (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME point into it; TZ=UTC, agentnorm
--timezone UTC, no cache). Compared, Claude Code and Codex apart:

- the totals of every token figure (input, cache read, cache write, output): must equal the
  totals of ccusage's session or of its daily report (on some homes those two differ: ccusage
  counts a sidechain's replay of its parent's message, same message id under a new request id,
  twice in its session report and once in its daily one; agentnorm counts it once);
- Codex sessions (ccusage names a session by its rollout file, agentnorm's row names its file
  as `source`): every session must be equal;
- Claude sessions: ccusage's rows are files, agentnorm's are session ids (a file can hold
  several, and a session's row names its first file): counted as agreeing per file, printed;
- days: printed, with how many agree. A request is dated by its first line in agentnorm (when
  it was made) and by its usage line in ccusage, so a request that spans midnight falls on
  neighbouring days; the totals above show nothing is lost or counted twice.

ccusage's daily and session reports are compared with each other too: where they differ, ccusage
disagrees with itself. Exit 0 when the totals and the Codex sessions agree, 1 when not, 2 when a
tool cannot be run.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIGS = ("input", "cache_read", "cache_write", "output")
CC = ("inputTokens", "cacheReadTokens", "cacheCreationTokens", "outputTokens")


def run(cmd, env):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"crosscheck-home: {' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()[:300]}")
    return r.stdout


def rows(text):
    out = [json.loads(l) for l in text.splitlines() if l.strip()]
    return [r for r in out if not r.get("totals")], next(r for r in out if r.get("totals"))


def ours(r):
    return tuple(r.get(k, 0) or 0 for k in FIGS)


def theirs(r):
    return tuple(r.get(k, 0) or 0 for k in CC)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("home")
    ap.add_argument("--agentnorm", default=str(REPO / "target/release/agentnorm"))
    ap.add_argument("--ccusage", default=os.environ.get("CCUSAGE", "ccusage"))
    a = ap.parse_args()
    home = Path(a.home).resolve()
    env = dict(os.environ, HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex"), TZ="UTC")
    ok = True
    for agent, paths in (("claude", [home / ".claude/projects"]), ("codex", [home / ".codex/sessions", home / ".codex/archived_sessions"])):
        paths = [str(p) for p in paths if p.is_dir()]
        an = lambda by: rows(run([a.agentnorm, "usage", "--no-cache", "--json", "--timezone", "UTC", "--by", by, *paths], env))
        cc = lambda report: json.loads(run([a.ccusage, agent, report, "--json", "--offline"], env))
        a_sess, a_tot = an("session")
        a_days, _ = an("day")
        c_sess = cc("session")
        c_days = cc("daily")
        total_ours, total_sess, total_days = ours(a_tot), theirs(c_sess["totals"]), theirs(c_days["totals"])
        matches = [name for name, t in (("session", total_sess), ("daily", total_days)) if t == total_ours]
        ok &= bool(matches)
        print(f"{agent}: totals agentnorm {total_ours}: " + (f"equal to ccusage {' and '.join(matches)}" if matches else "DIFFER"))
        if total_days != total_sess:
            print(f"  ccusage disagrees with itself: session totals {total_sess}, daily totals {total_days}")
        by_file = collections.defaultdict(lambda: (0, 0, 0, 0))
        for r in a_sess:
            f = Path(r.get("source") or "").name.removesuffix(".jsonl")
            by_file[f] = tuple(x + y for x, y in zip(by_file[f], ours(r)))
        sessions = c_sess.get("sessions", [])
        agree = sum(1 for s in sessions if by_file.get(Path(s.get("sessionFile") or s["sessionId"]).name.removesuffix(".jsonl")) == theirs(s))
        print(f"  sessions: {agree} of {len(sessions)} files agree (agentnorm: {len(a_sess)} session rows)")
        if agent == "codex" and agree != len(sessions):
            ok = False
        days = {r["day"]: ours(r) for r in a_days}
        c_list = c_days.get("daily", [])
        d_agree = sum(1 for d in c_list if days.get(d.get("date") or d.get("period")) == theirs(d))
        print(f"  days: {d_agree} of {len(c_list)} agree (the others: requests that span midnight, dated by their first line)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
