#!/usr/bin/env python3
"""Events per second through the Python API against the obvious pure-Python loop (json.loads
per line plus a dict rewrite), on one file, same run, medians of N.

    python bindings/python/bench.py FILE [RUNS]

Prints one tab-separated row per way: name, wall seconds, CPU seconds (medians), MB/s (wall),
events (dicts) made, events/s (wall), events per CPU second (steadier on a shared machine).
"""

import json
import statistics
import sys
import time

import agentnorm


def pure_python(path):
    """The loop a wrapper writes by hand: parse each line, rewrite it into its own dicts (one
    per content block of a message, one per other frame)."""
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except ValueError:
                ev = {"type": "unknown", "raw": line}
                n += 1
                continue
            if not isinstance(d, dict):
                n += 1
                continue
            msg = d.get("message")
            content = msg.get("content") if isinstance(msg, dict) else None
            if isinstance(content, list):
                for block in content:
                    if isinstance(block, dict):
                        ev = {
                            "type": block.get("type"),
                            "session_id": d.get("session_id"),
                            "text": block.get("text"),
                            "tool_id": block.get("id") or block.get("tool_use_id"),
                            "input": block.get("input"),
                            "usage": msg.get("usage"),
                        }
                        n += 1
            else:
                item = d.get("item")
                ev = {
                    "type": d.get("type"),
                    "session_id": d.get("session_id") or d.get("thread_id"),
                    "item": item,
                    "text": item.get("text") if isinstance(item, dict) else None,
                    "usage": d.get("usage"),
                }
                n += 1
    del ev
    return n


def agentnorm_read(path):
    n = 0
    for _ in agentnorm.read(path, observed_at=False):
        n += 1
    return n


def agentnorm_feed(path):
    norm = agentnorm.Normalizer(observed_at=False)
    n = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            n += len(norm.feed(chunk))
    return n + len(norm.finish())


def main():
    path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with open(path, "rb") as f:
        size = sum(len(b) for b in iter(lambda: f.read(1 << 24), b""))
    for name, fn in [
        ("python: json.loads per line + dict rewrite", pure_python),
        ("python: agentnorm.read(path)", agentnorm_read),
        ("python: agentnorm.Normalizer.feed (1 MB chunks)", agentnorm_feed),
    ]:
        times, cpus, events = [], [], 0
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            events = fn(path)
            times.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        t, c = statistics.median(times), statistics.median(cpus)
        print(f"{name}\t{t:.3f}\t{c:.3f}\t{size / t / 1e6:.1f}\t{events}\t{events / t:.0f}\t{events / c:.0f}", flush=True)


if __name__ == "__main__":
    main()
