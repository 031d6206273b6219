//! Throughput of the library pipeline (frame, detect, decode, fold, write NDJSON) in bytes/s.
//!
//! The input is a ~50 MB slice of the reference workload (`../shared/bench/README.md`), found or
//! made in this order:
//!
//! 1. `AGENTNORM_BENCH_WORKLOAD=FILE`: the first 50 MB of FILE, cut at a line end;
//! 2. a copy cached by an earlier run under `target/agentnorm-bench/` (or the temp dir);
//! 3. `python3 ../shared/bench/gen_workload.py OUT 50` (`GEN_WORKLOAD=PATH` overrides the path);
//! 4. the project's fixtures (`fixtures/**/*.jsonl|ndjson`) repeated up to 50 MB;
//! 5. a small built-in Claude + Codex stream repeated up to 50 MB.
//!
//! Benchmarks (all `Throughput::Bytes`, sample size 10, a whole run takes a few minutes):
//! - `normalize/mixed`: the whole pipeline on the slice; `normalize/claude` and
//!   `normalize/codex`: its lines split by dialect (a line containing `"thread.started"`,
//!   `"item.` or `"turn.` is Codex, any other line Claude);
//! - `dialect/NAME` for every dialect of `fixtures/` (the workload has only Claude and Codex):
//!   that dialect's fixture files repeated up to 50 MB, detected as the CLI does;
//! - `baseline/memchr_lines`, the framing ceiling (a memchr line split of the slice), and
//!   `baseline/simd_tape`, a bare simd-json tape parse of every line of the slice (what the
//!   normalizer must beat, issue 5).
//!
//! Each normalizer benchmark feeds 1 MiB chunks to a fresh `Normalizer` with
//! `observed_at: false` writing into an `NdjsonSink` whose buffer is cleared after every chunk.
//!
//! Run: `cargo bench --bench throughput` (add `-- normalize/codex` to run one).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agentnorm::{NdjsonSink, Normalizer, Options};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

/// Size of the benchmark slice, in bytes (MB = 10^6 bytes).
const SLICE_BYTES: usize = 50_000_000;
/// Size of the chunks fed to the normalizer.
const CHUNK: usize = 1 << 20;

/// A small stream of both dialects, used only when neither the generator nor fixtures exist.
const SYNTHETIC: &str = concat!(
    r#"{"type":"system","subtype":"init","cwd":"/home/dev/p","session_id":"s-1","tools":["Bash","Read"],"mcp_servers":[],"model":"claude-sonnet-4-5-20250929","permissionMode":"bypassPermissions","apiKeySource":"none","claude_code_version":"2.0.14"}"#,
    "\n",
    r#"{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Voilà: the path is `C:\\Users\\dev\\src\\main.rs`, a \"quoted\" café ✅ 日本語.\nNext line\tand a tab."}],"stop_reason":null,"usage":{"input_tokens":11,"cache_creation_input_tokens":3589,"cache_read_input_tokens":81200,"output_tokens":144}},"parent_tool_use_id":null,"session_id":"s-1"}"#,
    "\n",
    r#"{"type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"cargo test 2>&1 | tail -n 50","description":"Run tests"}}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":40}},"parent_tool_use_id":null,"session_id":"s-1"}"#,
    "\n",
    r#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_1","type":"tool_result","content":"running 42 tests\ntest parse::tests::roundtrip ... ok\n    let path = \"C:\\\\Users\\\\dev\\\\file.txt\";\n🚀 done\n","is_error":false}]},"parent_tool_use_id":null,"session_id":"s-1"}"#,
    "\n",
    r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"All 42 tests pass now."}},"session_id":"s-1","parent_tool_use_id":null}"#,
    "\n",
    r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":5120,"num_turns":2,"result":"All 42 tests pass now.","session_id":"s-1","total_cost_usd":0.0123,"usage":{"input_tokens":14,"output_tokens":184}}"#,
    "\n",
    r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}"#,
    "\n",
    r#"{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Planning the change**\n\nRésumé: rename `foo` → `bar`."}}"#,
    "\n",
    r#"{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#,
    "\n",
    r#"{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc ls","aggregated_output":"Cargo.toml\nsrc/\ntests/\nwarning: unused variable: `x`\n","exit_code":0,"status":"completed"}}"#,
    "\n",
    r#"{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Done: the \"usage\" field is optional now."}}"#,
    "\n",
    r#"{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}"#,
    "\n",
);

/// Runs the whole pipeline over `data` as the CLI does, returning the bytes written.
fn normalize(data: &[u8]) -> usize {
    let mut n = Normalizer::new(Options::default().observed_at(false));
    let mut sink = NdjsonSink::default();
    let mut written = 0;
    for chunk in data.chunks(CHUNK) {
        n.feed(chunk, &mut sink);
        written += black_box(&sink.buf).len();
        sink.buf.clear();
    }
    black_box(n.finish(&mut sink));
    written + black_box(&sink.buf).len()
}

/// Splits `data` into lines with memchr, the framing ceiling; returns the line count.
fn memchr_lines(data: &[u8]) -> usize {
    let mut start = 0;
    let mut lines = 0;
    for end in memchr::memchr_iter(b'\n', data) {
        black_box(&data[start..end]);
        start = end + 1;
        lines += 1;
    }
    lines
}

/// Parses every line of `data` into a reused simd-json tape (the bare-parse anchor); returns the
/// lines it refused.
fn simd_tape(data: &[u8]) -> usize {
    let mut buffers = simd_json::Buffers::default();
    let mut tape = simd_json::Tape::null().reset();
    let mut scratch = Vec::new();
    let mut refused = 0;
    for line in data.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        scratch.clear();
        scratch.extend_from_slice(line);
        scratch.resize(line.len() + simd_json::INPUT_PADDING, 0);
        let mut t = std::mem::replace(&mut tape, simd_json::Tape::null().reset()).reset();
        refused += usize::from(simd_json::fill_tape_padded(&mut scratch, line.len(), &mut buffers, &mut t).is_err());
        black_box(&t);
        tape = t.reset();
    }
    refused
}

/// The fixture files of one dialect (`fixtures/NAME/`), concatenated, repeated up to the slice
/// size.
fn dialect_slice(dir: &Path) -> Option<Vec<u8>> {
    let mut files = Vec::new();
    fixture_files(dir, &mut files);
    let mut unit = Vec::new();
    for file in &files {
        let bytes = std::fs::read(file).ok()?;
        unit.extend_from_slice(&bytes);
        if unit.last().is_some_and(|&b| b != b'\n') {
            unit.push(b'\n');
        }
    }
    (!unit.is_empty()).then(|| repeat_to_slice(unit))
}

/// Whether a workload line is Codex `exec --json` (else it is Claude stream-json).
fn is_codex(line: &[u8]) -> bool {
    [&b"\"thread.started\""[..], b"\"item.", b"\"turn."]
        .iter()
        .any(|needle| memchr::memmem::find(line, needle).is_some())
}

/// The Claude lines and the Codex lines of `data`, each in their original order.
fn split_dialects(data: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (mut claude, mut codex) = (Vec::new(), Vec::new());
    for line in data.split_inclusive(|&b| b == b'\n') {
        if is_codex(line) {
            codex.extend_from_slice(line);
        } else {
            claude.extend_from_slice(line);
        }
    }
    (claude, codex)
}

/// The first `max` bytes of `data`, cut after the last complete line (or all of it if shorter).
fn cut_at_line(mut data: Vec<u8>, max: usize) -> Vec<u8> {
    if data.len() > max {
        let end = memchr::memrchr(b'\n', &data[..max]).map_or(max, |i| i + 1);
        data.truncate(end);
    }
    data
}

/// Repeats `unit` (made to end with a newline) until it reaches `SLICE_BYTES`.
fn repeat_to_slice(mut unit: Vec<u8>) -> Vec<u8> {
    if unit.last() != Some(&b'\n') {
        unit.push(b'\n');
    }
    let mut out = Vec::with_capacity(SLICE_BYTES + unit.len());
    while out.len() < SLICE_BYTES {
        out.extend_from_slice(&unit);
    }
    out
}

/// Every `*.jsonl` / `*.ndjson` under `dir`, recursively, in sorted order.
fn fixture_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            fixture_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "jsonl" || ext == "ndjson") {
            out.push(path);
        }
    }
}

/// Where a generated slice is cached: under the target dir, else the temp dir.
fn cache_path() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| manifest.join("target"));
    let dir = target.join("agentnorm-bench");
    let dir = if std::fs::create_dir_all(&dir).is_ok() { dir } else { std::env::temp_dir() };
    dir.join("workload-50mb.ndjson")
}

/// Generates the 50 MB workload at `path` with the reference generator; false if it cannot.
fn generate(path: &Path) -> bool {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let generator = std::env::var_os("GEN_WORKLOAD")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../shared/bench/gen_workload.py"));
    if !generator.is_file() {
        eprintln!("throughput: no generator at {}", generator.display());
        return false;
    }
    let partial = path.with_extension(format!("partial.{}", std::process::id()));
    let status =
        Command::new("python3").arg(&generator).arg(&partial).arg((SLICE_BYTES / 1_000_000).to_string()).status();
    match status {
        Ok(s) if s.success() => std::fs::rename(&partial, path).is_ok(),
        other => {
            eprintln!("throughput: {} failed: {other:?}", generator.display());
            let _ = std::fs::remove_file(&partial);
            false
        }
    }
}

/// The benchmark input and a description of where it came from.
fn workload() -> (Vec<u8>, String) {
    if let Some(file) = std::env::var_os("AGENTNORM_BENCH_WORKLOAD") {
        let data = std::fs::read(&file)
            .unwrap_or_else(|e| panic!("AGENTNORM_BENCH_WORKLOAD={}: {e}", Path::new(&file).display()));
        let from = format!("first 50 MB of {}", Path::new(&file).display());
        return (cut_at_line(data, SLICE_BYTES), from);
    }
    let cached = cache_path();
    if (cached.metadata().is_ok_and(|m| m.len() > 0) || generate(&cached))
        && let Ok(data) = std::fs::read(&cached)
    {
        let from = format!("generated workload {}", cached.display());
        return (data, from);
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut files = Vec::new();
    fixture_files(&fixtures, &mut files);
    let mut unit = Vec::new();
    for file in &files {
        if let Ok(bytes) = std::fs::read(file) {
            unit.extend_from_slice(&bytes);
            if unit.last().is_some_and(|&b| b != b'\n') {
                unit.push(b'\n');
            }
        }
    }
    if !unit.is_empty() {
        let from = format!("{} fixture files repeated", files.len());
        return (repeat_to_slice(unit), from);
    }
    let from = "built-in synthetic stream repeated".to_string();
    (repeat_to_slice(SYNTHETIC.as_bytes().to_vec()), from)
}

fn throughput(c: &mut Criterion) {
    let (mixed, from) = workload();
    let (claude, codex) = split_dialects(&mixed);
    let out = normalize(&mixed);
    assert!(out > 0, "the normalizer wrote nothing");
    eprintln!(
        "throughput: {from}: {} bytes ({} Claude, {} Codex); normalized output {} bytes",
        mixed.len(),
        claude.len(),
        codex.len(),
        out
    );

    let mut group = c.benchmark_group("normalize");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (name, data) in [("mixed", &mixed), ("claude", &claude), ("codex", &codex)] {
        if data.is_empty() {
            eprintln!("throughput: no {name} lines, skipping normalize/{name}");
            continue;
        }
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.bench_function(name, |b| b.iter(|| normalize(black_box(data))));
    }
    group.finish();

    let mut group = c.benchmark_group("dialect");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect())
        .unwrap_or_default();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // One slice at a time: 50 MB each.
        let Some(data) = dialect_slice(&dir) else { continue };
        group.throughput(Throughput::Bytes(data.len() as u64));
        group.bench_function(name.as_str(), |b| b.iter(|| normalize(black_box(&data))));
    }
    group.finish();

    let mut group = c.benchmark_group("baseline");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    group.throughput(Throughput::Bytes(mixed.len() as u64));
    group.bench_function("memchr_lines", |b| b.iter(|| memchr_lines(black_box(&mixed))));
    group.measurement_time(Duration::from_secs(4));
    group.bench_function("simd_tape", |b| b.iter(|| simd_tape(black_box(&mixed))));
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
