//! The ecosystem formats from the command line, offline and without Python (their real consumers
//! read them in tests/python): `--format otlp` is deterministic and accounts for every request
//! and tool call, `--format atif --output-dir` writes one file per session, and `export
//! --parquet` writes tables whose token sums are the events'.

mod common;

use std::fs::File;

use common::*;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;

fn spans(out: &[u8]) -> Vec<Value> {
    parse(out)
        .iter()
        .flat_map(|r| r["resourceSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|rs| rs["scopeSpans"].as_array().cloned().unwrap_or_default())
        .flat_map(|ss| ss["spans"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn otlp_has_a_chat_span_per_request_and_a_tool_span_per_call_and_the_same_ids_twice() {
    for f in all_fixtures() {
        let f = f.to_str().unwrap();
        let out = bin().args(["--format", "otlp", "--no-observed-at", f]).output().unwrap();
        let again = bin().args(["--format", "otlp", "--no-observed-at", f]).output().unwrap();
        assert_eq!(out.stdout, again.stdout, "{f}");
        let evs = output_events(&bin().args(["--no-observed-at", f]).output().unwrap());
        let s = spans(&out.stdout);
        let named = |p: &str| s.iter().filter(|x| x["name"].as_str().unwrap().starts_with(p)).count();
        assert_eq!(named("chat"), evs.iter().filter(|e| ty(e) == "usage").count(), "{f}");
        assert_eq!(named("execute_tool "), evs.iter().filter(|e| ty(e) == "tool_started").count(), "{f}");
    }
}

#[test]
fn atif_output_dir_has_one_file_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let f = fixture("claude-transcript", "sidechain_task");
    let out = bin()
        .args(["--format", "atif", "--output-dir", dir.path().to_str().unwrap(), f.to_str().unwrap()])
        .output()
        .unwrap();
    assert_success(&out);
    let files: Vec<_> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
    assert_eq!(files.len(), 1);
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap();
    assert_eq!(t["schema_version"], "ATIF-v1.7");
    assert_eq!(t["subagent_trajectories"].as_array().map(Vec::len), Some(1));
}

#[test]
fn parquet_requests_sum_to_the_usage_events() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = fixtures("claude-transcript");
    let mut args = vec!["export".to_owned(), "--parquet".to_owned(), dir.path().display().to_string()];
    args.extend(inputs.iter().map(|p| p.display().to_string()));
    assert_success(&bin().args(&args).output().unwrap());
    let mut from_tables = 0;
    for e in std::fs::read_dir(dir.path().join("requests")).unwrap() {
        let file = File::open(e.unwrap().path()).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        for row in reader.get_row_iter(None).unwrap() {
            for (name, value) in row.unwrap().get_column_iter() {
                if name == "cache_read" {
                    match value {
                        Field::ULong(v) => from_tables += v,
                        Field::Null => {}
                        other => panic!("cache_read is {other:?}"),
                    }
                }
            }
        }
    }
    let from_events: u64 = inputs
        .iter()
        .flat_map(|p| run_path(p))
        .filter(|e| ty(e) == "usage")
        .filter_map(|e| e["usage"]["cache_read"].as_u64())
        .sum();
    assert!(from_events > 0);
    assert_eq!(from_tables, from_events);
}
