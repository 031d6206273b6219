"""`agentnorm export --parquet` read by DuckDB: the tables are there, typed, joinable, and the
tokens per model and per day equal `agentnorm usage --by model|day --json`."""

import json

import duckdb
import pytest

from conftest import ROOT, run

# Dialects whose usage report sums the per-request `usage` events (SPEC §5), as `requests` does.
FOLDERS = [ROOT / "fixtures" / "claude-transcript", ROOT / "fixtures" / "codex-rollout"]
TABLES = ["sessions", "turns", "requests", "tool_calls", "messages", "rate_limits", "diagnostics", "unknown"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    out = tmp_path_factory.mktemp("pq")
    run("export", "--parquet", out, *FOLDERS)
    return out


def q(sql):
    return duckdb.sql(sql).fetchall()


def usage(by):
    rows = [json.loads(l) for l in run("usage", "--by", by, "--json", *FOLDERS).stdout.splitlines()]
    # A row of requests whose model no CLI named has no key (SPEC: absent, never "").
    return {r.get(by, "unknown"): tuple(r.get(k, 0) for k in ("input", "cache_read", "cache_write", "output"))
            for r in rows if not r.get("totals")}


def test_tokens_per_day_equal_the_usage_report(binary, exported):
    got = q(f"""select coalesce(day, 'unknown'), sum(coalesce(input,0)), sum(coalesce(cache_read,0)),
                       sum(coalesce(cache_write,0)), sum(coalesce(output,0))
                from read_parquet('{exported}/requests/*.parquet') group by 1""")
    assert {r[0]: tuple(int(x) for x in r[1:]) for r in got} == usage("day")


def test_tokens_per_model_equal_the_usage_report(binary, exported):
    got = q(f"""select coalesce(model, 'unknown'), sum(coalesce(input,0)), sum(coalesce(cache_read,0)),
                       sum(coalesce(cache_write,0)), sum(coalesce(output,0))
                from read_parquet('{exported}/requests/*.parquet') group by 1""")
    assert {r[0]: tuple(int(x) for x in r[1:]) for r in got} == usage("model")


def test_every_table_reads_and_joins(binary, exported):
    for t in TABLES:
        files = list((exported / t).glob("*.parquet"))
        if t in ("sessions", "requests", "tool_calls", "messages"):
            assert files, t
    # Tool calls join their session; every request's turn is a turn of its session.
    orphans = q(f"""select count(*) from read_parquet('{exported}/tool_calls/*.parquet') t
                    anti join read_parquet('{exported}/sessions/*.parquet') s
                    on t.source = s.source and t.session_id = s.session_id""")
    assert orphans == [(0,)]
    n_tools = q(f"select count(*) from read_parquet('{exported}/tool_calls/*.parquet')")[0][0]
    started = sum(1 for p in FOLDERS for f in sorted(p.glob("*.jsonl"))
                  for l in run("--no-observed-at", f).stdout.splitlines()
                  if json.loads(l)["type"] == "tool_started" and "session_id" in json.loads(l))
    assert n_tools == started
    types = dict(q(f"""select column_name, column_type from
                       (describe select * from read_parquet('{exported}/tool_calls/*.parquet'))"""))
    assert types["ok"] == "BOOLEAN" and types["exit_code"] == "BIGINT" and types["duration_ms"] == "UBIGINT"


def test_partition_by_day_lays_out_hive_folders(binary, tmp_path):
    run("export", "--parquet", tmp_path, "--partition", "day", *FOLDERS)
    days = sorted(p.name for p in (tmp_path / "requests").iterdir())
    assert days and all(d.startswith("day=") for d in days)
    got = q(f"""select day::varchar, count(*) from read_parquet('{tmp_path}/requests/*/*.parquet',
                hive_partitioning=true) group by 1""")
    assert {r[0] for r in got} == {d[4:] for d in days}
    total = q(f"select count(*) from read_parquet('{tmp_path}/requests/*/*.parquet')")[0][0]
    assert total == sum(r[1] for r in got) > 0
