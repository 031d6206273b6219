#!/usr/bin/env python3
"""Apache Spark runs agentnorm as its per-file step: a folder of rollouts and transcripts is
spread over the executors, each task runs `agentnorm export --parquet` on its files into the
shared output folder (one set of files per input, so tasks never collide), then Spark reads the
`requests` table and sums the tokens per day, which must equal `agentnorm usage --by day --json`
on the same folder. Run by scripts/spark-export.sh (local mode); README "Past one machine: Spark"
says how the same job runs on a cluster.

Usage: spark-export.py INPUT_DIR OUT_DIR --agentnorm BIN [--master local[*]] [--slices N]"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from pyspark import SparkFiles
from pyspark.sql import SparkSession, functions as F

LOG_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz", ".jsonl.zst", ".ndjson.zst")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--agentnorm", required=True, help="the binary; shipped to the executors with the job")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--slices", type=int, default=0, help="tasks (default: 4 per core)")
    ap.add_argument("--check", action="store_true", help="compare with agentnorm usage --by day --json")
    a = ap.parse_args()

    spark = (SparkSession.builder.master(a.master).appName("agentnorm-export")
             .config("spark.ui.enabled", "false").getOrCreate())
    sc = spark.sparkContext
    sc.setLogLevel("WARN")
    # The binary goes to every executor with the job (on a cluster too).
    sc.addFile(os.path.abspath(a.agentnorm))
    name = os.path.basename(a.agentnorm)
    tables = str(a.out.resolve() / "tables")

    paths = sorted(str(p) for p in a.input.rglob("*") if p.is_file() and p.name.endswith(LOG_SUFFIXES))
    slices = a.slices or 4 * sc.defaultParallelism

    def export(part):
        files = list(part)
        if not files:
            return
        binary = SparkFiles.get(name)
        os.chmod(binary, 0o755)
        # One agentnorm per task, over the task's files: each input its own set of Parquet files.
        p = subprocess.run([binary, "export", "--parquet", tables, "--partition", "day", "-j", "1", *files],
                           capture_output=True, text=True)
        yield (len(files), p.returncode, p.stderr[-2000:])

    t0 = time.monotonic()
    results = sc.parallelize(paths, slices).mapPartitions(export).collect()
    t_export = time.monotonic() - t0
    failed = [r for r in results if r[1] != 0]
    for r in failed:
        print(f"task failed ({r[0]} files, exit {r[1]}): {r[2]}", file=sys.stderr)

    t1 = time.monotonic()
    req = spark.read.option("basePath", f"{tables}/requests").parquet(f"{tables}/requests")
    by_day = (req.groupBy("day")
              .agg(*(F.sum(F.coalesce(F.col(c), F.lit(0))).cast("long").alias(c)
                     for c in ("input", "cache_read", "cache_write", "output")),
                   F.count(F.lit(1)).alias("requests"))
              .orderBy("day").collect())
    t_query = time.monotonic() - t1
    rows = {r["day"] if isinstance(r["day"], str) else r["day"].isoformat():
            (r["input"], r["cache_read"], r["cache_write"], r["output"]) for r in by_day}
    tools = spark.read.parquet(f"{tables}/tool_calls").count()
    sessions = spark.read.parquet(f"{tables}/sessions").count()
    print(json.dumps({"files": len(paths), "tasks": slices, "failed_tasks": len(failed),
                      "export_s": round(t_export, 2), "query_s": round(t_query, 2),
                      "days": len(rows), "requests": sum(r["requests"] for r in by_day),
                      "sessions": sessions, "tool_calls": tools}))
    code = 1 if failed else 0
    if a.check:
        out = subprocess.run([a.agentnorm, "usage", "--by", "day", "--json", str(a.input)],
                             capture_output=True, text=True, check=True).stdout
        want = {r.get("day", "unknown"): tuple(r.get(k, 0) for k in ("input", "cache_read", "cache_write", "output"))
                for r in map(json.loads, out.splitlines()) if not r.get("totals")}
        same = want == rows
        print(json.dumps({"equals_usage_by_day": same}))
        if not same:
            for d in sorted(set(want) | set(rows)):
                if want.get(d) != rows.get(d):
                    print(f"  {d}: usage {want.get(d)} spark {rows.get(d)}", file=sys.stderr)
            code = 1
    spark.stop()
    sys.exit(code)


if __name__ == "__main__":
    main()
