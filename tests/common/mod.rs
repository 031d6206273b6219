//! Helpers shared by the integration tests: where the crate and its fixtures are, running the
//! built binary on a file or on stdin, reading its NDJSON output back, reading a fixture's input,
//! and picking events out of an output.
//!
//! Each test file pulls it in with `mod common;` and uses only what it needs.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

// ------------------------------------------------------------------------------------------------
// The crate and its fixtures
// ------------------------------------------------------------------------------------------------

/// The crate root: the working directory of every run, and what fixture paths are relative to.
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The fixture `fixtures/<dialect>/<name>.jsonl`, relative to the crate root (so the `source` the
/// binary writes is stable).
pub fn fixture(dialect: &str, name: &str) -> PathBuf {
    PathBuf::from("fixtures").join(dialect).join(format!("{name}.jsonl"))
}

/// The fixture inputs of one dialect (`fixtures/<dialect>/*.jsonl`), relative to the crate root,
/// sorted; panics if there are none.
pub fn fixtures(dialect: &str) -> Vec<PathBuf> {
    let dir = root().join("fixtures").join(dialect);
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .map(|p| p.strip_prefix(root()).expect("under the crate root").to_path_buf())
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no fixtures under {}", dir.display());
    out
}

/// Every `fixtures/<dialect>/` folder name, sorted.
pub fn all_dialects() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root().join("fixtures"))
        .expect("fixtures/")
        .map(|e| e.expect("dir entry"))
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    out.sort();
    out
}

/// Every fixture input of every dialect, relative to the crate root, sorted.
pub fn all_fixtures() -> Vec<PathBuf> {
    all_dialects().iter().flat_map(|d| fixtures(d)).collect()
}

/// The input lines of a fixture (relative to the crate root, or absolute) as the contract counts
/// them: split on `\n`, a `\r` before it dropped, a last line without newline counted.
pub fn input_lines(fixture: &Path) -> Vec<String> {
    let bytes = std::fs::read(root().join(fixture)).expect("reading fixture");
    let text = String::from_utf8(bytes).expect("fixtures are UTF-8");
    let mut lines: Vec<String> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l).to_owned()).collect();
    if text.ends_with('\n') || text.is_empty() {
        lines.pop();
    }
    lines
}

/// The input lines of a fixture that parse as JSON, each with its 1-based line number.
pub fn input_frames(fixture: &Path) -> Vec<(u64, Value)> {
    input_lines(fixture)
        .iter()
        .enumerate()
        .filter_map(|(i, l)| serde_json::from_str::<Value>(l).ok().map(|v| (i as u64 + 1, v)))
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Running the binary
// ------------------------------------------------------------------------------------------------

/// The built `agentnorm`, with the crate root as its working directory.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentnorm"));
    c.current_dir(root());
    c
}

/// Runs agentnorm with `args` and `input` on stdin (written from a thread, so a large input cannot
/// block on a full stdout pipe); stdout and stderr captured, the exit status left to the caller.
pub fn run_raw(args: &[&str], input: &[u8]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running agentnorm");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("waiting for agentnorm");
    writer.join().expect("stdin writer");
    out
}

/// Panics with the exit code and stderr unless the run succeeded.
pub fn assert_success(out: &Output) {
    assert!(out.status.success(), "exit {:?}: {}", out.status.code(), String::from_utf8_lossy(&out.stderr));
}

/// Runs agentnorm `--no-observed-at` with `args` on `input` given on stdin; asserts success and
/// parses the events.
pub fn run_stdin(args: &[&str], input: &str) -> Vec<Value> {
    let mut all = vec!["--no-observed-at"];
    all.extend_from_slice(args);
    let out = run_raw(&all, input.as_bytes());
    assert_success(&out);
    parse(&out.stdout)
}

/// Runs agentnorm `--no-observed-at` on one file (relative to the crate root, or absolute);
/// asserts success and returns the output text.
pub fn run_path_text(path: &Path) -> String {
    let out = bin().arg("--no-observed-at").arg(path).output().expect("running agentnorm");
    assert!(
        out.status.success(),
        "agentnorm {} exited with {:?}\nstderr:\n{}",
        path.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("output is UTF-8")
}

/// Runs agentnorm `--no-observed-at` on one file (relative to the crate root, or absolute);
/// asserts success and parses the events.
pub fn run_path(path: &Path) -> Vec<Value> {
    parse(run_path_text(path).as_bytes())
}

/// The events for one fixture by short name, e.g. `("claude", "partial_messages")`.
pub fn events_of(dialect: &str, name: &str) -> Vec<Value> {
    run_path(&fixture(dialect, name))
}

// ------------------------------------------------------------------------------------------------
// Reading the output
// ------------------------------------------------------------------------------------------------

/// Parses NDJSON output, one event per line; panics on a line that is not JSON.
pub fn parse(stdout: &[u8]) -> Vec<Value> {
    std::str::from_utf8(stdout)
        .expect("output is UTF-8")
        .lines()
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("output line {} is not JSON ({e}): {l}", i + 1))
        })
        .collect()
}

/// The events of a run's stdout, whatever its exit status.
pub fn output_events(out: &Output) -> Vec<Value> {
    parse(&out.stdout)
}

/// An event's `type` (`""` if it has none).
pub fn ty(e: &Value) -> &str {
    e["type"].as_str().unwrap_or("")
}

/// An event's input `line`, if it has one.
pub fn line(e: &Value) -> Option<u64> {
    e.get("line").and_then(Value::as_u64)
}

/// The events of type `t`, in order.
pub fn of_type<'a>(evs: &'a [Value], t: &str) -> Vec<&'a Value> {
    evs.iter().filter(|e| ty(e) == t).collect()
}

/// The events written for input line `n`, in order.
pub fn at_line(evs: &[Value], n: u64) -> Vec<&Value> {
    evs.iter().filter(|e| line(e) == Some(n)).collect()
}

/// The types of the events written for input line `n`, in order.
pub fn types_at(evs: &[Value], n: u64) -> Vec<String> {
    at_line(evs, n).iter().map(|e| ty(e).to_owned()).collect()
}

/// The assistant text: every `output_delta.text`, concatenated.
pub fn output_text(evs: &[Value]) -> String {
    of_type(evs, "output_delta").iter().map(|e| e["text"].as_str().expect("output_delta.text")).collect()
}

/// The index of the first event matching `pred`; panics if none does.
pub fn position(evs: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    evs.iter().position(pred).expect("event present")
}

/// The last event, which must be `run_ended`.
pub fn run_ended(evs: &[Value]) -> &Value {
    evs.last().filter(|e| ty(e) == "run_ended").expect("run_ended last")
}

/// Normalizes `data` through the library, fed in chunks of the given sizes (cycled; an empty list
/// is one block), and returns the NDJSON output.
pub fn normalize_in_sizes(data: &[u8], opts: agentnorm::Options, sizes: &[usize]) -> Vec<u8> {
    let mut n = agentnorm::Normalizer::new(opts);
    let mut sink = agentnorm::NdjsonSink::default();
    let mut rest = data;
    for &s in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let (a, b) = rest.split_at(s.clamp(1, rest.len()));
        n.feed(a, &mut sink);
        rest = b;
    }
    n.feed(rest, &mut sink);
    n.finish(&mut sink);
    sink.buf
}
