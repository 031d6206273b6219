//! The hostile-input battery: whatever a crashing CLI, a truncated log or an attacker's tool output
//! puts on the wire, agentnorm keeps working, loses nothing, and writes valid JSON that cannot take
//! control of a terminal. Each test runs the built binary (`tests/common`).
//!
//! [`ESCAPE_PAYLOADS`] (in `tests/common`, shared with the renderers' tests) is the list of terminal- and page-hostile strings every renderer of
//! agentnorm's output (a `pretty` format, an HTML report, …) must be held to.

use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

mod common;
use common::{
    ESCAPE_PAYLOADS, at_line, bin, of_type, output_events as events, output_text, parse, run_ended, run_raw,
    spec_lines, stdout_lines, strip_sgr, ty, types_at,
};

const TIMEOUT: Duration = Duration::from_secs(30);

const CODEX_OK: &str = r#"{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"done"}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":3}}
"#;

// ------------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------------

/// Runs `--no-observed-at` plus `args` on `input`; asserts exit 0, valid output, every non-blank
/// input line named, and returns the events.
fn run_ok(args: &[&str], input: &[u8]) -> Vec<Value> {
    let mut all = vec!["--no-observed-at"];
    all.extend_from_slice(args);
    let out = run_raw(&all, input);
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert_output_is_safe(&out.stdout);
    let evs = parse(&out.stdout);
    assert_accounted(input, &evs);
    evs
}

/// Output is UTF-8 JSON lines with every C0 control escaped, no `null` outside
/// `tool_started.input`, and each line reads back into `Event`.
fn assert_output_is_safe(stdout: &[u8]) {
    let text = std::str::from_utf8(stdout).expect("output is UTF-8");
    assert!(text.is_empty() || text.ends_with('\n'), "output ends with a newline");
    if let Some(i) = text.bytes().position(|b| b < 0x20 && b != b'\n') {
        panic!("raw control byte {:#04x} in output at {i}", text.as_bytes()[i]);
    }
    for l in text.lines() {
        let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"));
        assert!(l.starts_with("{\"type\":"), "type first: {l}");
        assert!(no_null(&v, true), "null outside tool_started.input: {l}");
        let _: agentnorm::Event = serde_json::from_str(l).unwrap_or_else(|e| panic!("not an Event ({e}): {l}"));
    }
}

fn no_null(v: &Value, top: bool) -> bool {
    match v {
        Value::Null => false,
        Value::Array(a) => a.iter().all(|x| no_null(x, false)),
        Value::Object(o) => {
            o.iter().all(|(k, x)| (top && k == "input" && v["type"] == "tool_started") || no_null(x, false))
        }
        _ => true,
    }
}

/// Every non-blank line named by an event, `run_ended.lines` counting every line.
fn assert_accounted(input: &[u8], evs: &[Value]) {
    let lines = spec_lines(input);
    assert_eq!(run_ended(evs)["lines"].as_u64(), Some(lines.len() as u64));
    for (i, l) in lines.iter().enumerate() {
        let n = i as u64 + 1;
        let named = evs.iter().any(|e| {
            e["line"].as_u64().is_some_and(|first| first <= n && n <= e["line_end"].as_u64().unwrap_or(first))
        });
        assert_eq!(named, !l.iter().all(u8::is_ascii_whitespace), "line {n} named iff not blank");
    }
}

fn codex_message(id: &str, text: &str) -> String {
    json!({"type":"item.completed","item":{"id":id,"type":"agent_message","text":text}}).to_string()
}

/// Waits for the next output line containing `needle`; returns the lines read meanwhile.
fn wait_for(rx: &Receiver<String>, needle: &str) -> Vec<String> {
    let mut got = Vec::new();
    loop {
        let l = rx.recv_timeout(TIMEOUT).unwrap_or_else(|_| panic!("no {needle} after {got:?}"));
        let found = l.contains(needle);
        got.push(l);
        if found {
            return got;
        }
    }
}

fn sigint(child: &Child) {
    // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
}

// ------------------------------------------------------------------------------------------------
// Shapes of input
// ------------------------------------------------------------------------------------------------

#[test]
fn empty_input() {
    let evs = run_ok(&[], b"");
    assert_eq!(evs.iter().map(ty).collect::<Vec<_>>(), ["run_started", "run_ended"]);
    let end = run_ended(&evs);
    assert_eq!((end["lines"].as_u64(), end["unknown"].as_u64()), (Some(0), Some(0)));
    assert_eq!(end["complete"], true, "an empty input is complete");
}

#[test]
fn only_blank_lines() {
    let evs = run_ok(&[], b"\n   \n\t\r\n\r\n \x0c \n\n");
    assert_eq!(evs.iter().map(ty).collect::<Vec<_>>(), ["run_started", "run_ended"]);
    let end = run_ended(&evs);
    assert_eq!((end["lines"].as_u64(), end["events"].as_u64()), (Some(6), Some(1)));
    assert_eq!(end["complete"], true);
}

#[test]
fn a_bom_before_the_first_frame_is_skipped_and_later_ones_are_content() {
    let input =
        b"\xEF\xBB\xBF{\"type\":\"thread.started\",\"thread_id\":\"b\"}\n\xEF\xBB\xBF{\"type\":\"turn.started\"}\n";
    let evs = run_ok(&["--raw"], input);
    assert_eq!(types_at(&evs, 1), ["session_started"]);
    assert_eq!(at_line(&evs, 1)[0]["raw"], "{\"type\":\"thread.started\",\"thread_id\":\"b\"}", "no BOM in raw");
    // Only the source's first bytes are skipped: a BOM later is part of its line, kept whole.
    assert_eq!(at_line(&evs, 2)[0]["raw"], "\u{feff}{\"type\":\"turn.started\"}");
    // A source that is only a BOM is empty.
    let evs = run_ok(&[], b"\xEF\xBB\xBF");
    assert_eq!(run_ended(&evs)["lines"], 0);
    assert_eq!(run_ended(&evs)["complete"], true);
}

#[test]
fn cr_only_and_mixed_line_endings() {
    // CR alone never ends a line: two frames joined by `\r` are one line, and not JSON.
    let evs = run_ok(&["--raw"], b"{\"type\":\"turn.started\"}\r{\"type\":\"turn.started\"}\r");
    assert_eq!(run_ended(&evs)["lines"], 1);
    assert_eq!(types_at(&evs, 1), ["unknown"]);
    assert_eq!(
        at_line(&evs, 1)[0]["raw"],
        "{\"type\":\"turn.started\"}\r{\"type\":\"turn.started\"}\r",
        "a lone \\r is content"
    );
    // Mixed: LF, CRLF, CR CR LF (one \r is content, JSON white space), and a last line without LF.
    let input = b"{\"type\":\"thread.started\",\"thread_id\":\"m\"}\r\n{\"type\":\"turn.started\"}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"a\\rb\"}}\r\r\n{\"type\":\"turn.completed\"}\r";
    let evs = run_ok(&["--raw"], input);
    assert_eq!(run_ended(&evs)["lines"], 4);
    assert_eq!(types_at(&evs, 1), ["session_started"]);
    assert_eq!(types_at(&evs, 3), ["output_delta"]);
    assert_eq!(output_text(&evs), "a\rb");
    assert!(at_line(&evs, 3)[0]["raw"].as_str().unwrap().ends_with("}}\r"));
    assert_eq!(types_at(&evs, 4), ["turn_completed"]);
    assert_eq!(at_line(&evs, 4)[0]["raw"], "{\"type\":\"turn.completed\"}\r", "no \\n after it: the \\r is content");
    assert_eq!(run_ended(&evs)["complete"], false, "no final newline");
}

#[test]
fn nul_bytes() {
    let input = b"\0\0\0\n{\"type\":\"turn.started\"}\0\n{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"a\0b\"}}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"j\",\"type\":\"agent_message\",\"text\":\"esc\\u0000aped\"}}\n";
    let evs = run_ok(&["--raw"], input);
    for n in 1..=3 {
        let e = at_line(&evs, n)[0];
        assert_eq!(ty(e), "unknown", "line {n}: {e}");
        assert_eq!(e["raw"].as_str().unwrap().as_bytes(), spec_lines(input)[n as usize - 1], "lossless");
    }
    assert_eq!(at_line(&evs, 1)[0]["reason"], "not_json");
    assert_eq!(at_line(&evs, 2)[0]["reason"], "invalid_json");
    assert_eq!(at_line(&evs, 3)[0]["reason"], "invalid_json", "a raw NUL in a string is not JSON");
    assert_eq!(output_text(&evs), "esc\0aped", "an escaped NUL is text");
}

#[test]
fn invalid_utf8_inside_strings_and_between_frames() {
    use base64::Engine as _;
    let mut input = Vec::new();
    input.extend_from_slice(b"{\"type\":\"thread.started\",\"thread_id\":\"u\"}\n");
    input.extend_from_slice(b"{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"caf\xc3\x28 \xff\xfe\"}}\n");
    input.extend_from_slice(b"\xc3\x28\xa0\xa1 garbage \xf0\x28\x8c\x28\n");
    input.extend_from_slice(
        b"2026-04-09T14:20:45Z  WARN codex_core::plugins: plugin is not installed plugin=\"gh\xff\"\n",
    );
    input.extend_from_slice(&codex_message("k", "still fine").into_bytes());
    input.push(b'\n');
    let evs = run_ok(&[], &input);
    let lines = spec_lines(&input);
    for n in 2..=4 {
        let e = at_line(&evs, n)[0];
        assert_eq!(ty(e), "unknown", "{e}");
        let b64 = e["raw_base64"].as_str().unwrap_or_else(|| panic!("raw_base64 on line {n}: {e}"));
        assert_eq!(base64::engine::general_purpose::STANDARD.decode(b64).unwrap(), lines[n as usize - 1]);
        assert!(e["raw"].as_str().unwrap().contains('\u{fffd}'));
        assert_eq!(e["dialect"], "codex", "a non-frame line carries the stream's dialect");
    }
    assert_eq!(output_text(&evs), "still fine");
    assert_eq!(at_line(&evs, 5)[0]["session_id"], "u");
}

#[test]
fn lone_surrogate_escapes_read_as_replacement_characters() {
    let long = "y".repeat(300); // long strings take the raw-bytes path
    let input = [
        r#"{"type":"item.completed","item":{"id":"a","type":"agent_message","text":"<\ud800>"}}"#.to_owned(),
        r#"{"type":"item.completed","item":{"id":"b","type":"agent_message","text":"<\udc00\ud800\ud800>"}}"#
            .to_owned(),
        r#"{"type":"item.completed","item":{"id":"c","type":"agent_message","text":"<\ud83d\ude00>"}}"#.to_owned(),
        format!(r#"{{"type":"item.completed","item":{{"id":"d","type":"agent_message","text":"{long}\udbff"}}}}"#),
        r#"{"type":"item.completed","item":{"id":"e","type":"agent_message","text":"<\ud800\u0041>"}}"#.to_owned(),
    ]
    .join("\n");
    let evs = run_ok(&[], input.as_bytes());
    let texts: Vec<&str> = of_type(&evs, "output_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
    let long_expected = format!("{long}\u{fffd}");
    assert_eq!(
        texts,
        ["<\u{fffd}>", "<\u{fffd}\u{fffd}\u{fffd}>", "<\u{1f600}>", long_expected.as_str(), "<\u{fffd}A>"]
    );
}

#[test]
fn numbers_beyond_u64_and_f64() {
    let input = r#"{"type":"thread.started","thread_id":"n"}
{"type":"turn.completed","usage":{"input_tokens":184467440737095516150,"cached_input_tokens":0,"output_tokens":7}}
{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1e400}}
{"type":"turn.completed","usage":{"input_tokens":-5,"output_tokens":100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000}}
{"type":"item.completed","item":{"id":"m","type":"mcp_tool_call","server":"s","tool":"t","arguments":{"big":-1e999,"tiny":1e-999,"huge":123456789012345678901234567890,"s":"1e400"},"status":"completed"}}
{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","rateLimitType":"five_hour","utilization":1e400,"resetsAt":1e400},"session_id":"n"}
"#;
    let evs = run_ok(&[], input.as_bytes());
    // Valid JSON whatever its numbers: each frame is read; a number beyond range is absent,
    // never wrapped, clamped or `null` (as JSON.parse reads Infinity, and JSON.stringify drops it).
    assert_eq!(types_at(&evs, 2), ["turn_completed"]);
    assert_eq!(at_line(&evs, 2)[0]["usage"], json!({"cache_read": 0, "output": 7}));
    assert_eq!(types_at(&evs, 3), ["turn_completed"]);
    assert_eq!(at_line(&evs, 3)[0]["usage"], json!({"input": 5}));
    assert_eq!(types_at(&evs, 4), ["turn_completed"]);
    assert!(at_line(&evs, 4)[0].get("usage").is_none_or(|u| u.get("input").is_none() && u.get("output").is_none()));
    let started = at_line(&evs, 5)[0];
    assert_eq!(ty(started), "tool_started");
    assert_eq!(
        started["input"]["arguments"]["big"],
        Value::Null,
        "the CLI's own arguments: Infinity as JSON writes it"
    );
    assert_eq!(started["input"]["arguments"]["tiny"], 0.0);
    assert_eq!(started["input"]["arguments"]["s"], "1e400", "strings untouched");
    assert!(started["input"]["arguments"]["huge"].as_f64().is_some_and(|f| f > 1e29));
    let rl = at_line(&evs, 6);
    assert!(rl.iter().all(|e| e.get("used_percent").is_none() && e.get("resets_at").is_none()), "{rl:?}");
}

#[test]
fn duplicate_keys_last_wins() {
    let input = r#"{"type":"thread.started","thread_id":"first","thread_id":"second"}
{"type":"not.a.type","type":"item.completed","item":{"id":"i","type":"agent_message","text":"old","text":"new"}}
{"type":"item.completed","item":{"id":"j","type":"agent_message","text":"x"},"item":{"id":"j","type":"agent_message","text":"y"}}
"#;
    let evs = run_ok(&[], input.as_bytes());
    assert_eq!(at_line(&evs, 1)[0]["session_id"], "second");
    assert_eq!(output_text(&evs), "newy");
}

#[test]
fn json_nested_100_000_deep_is_a_malformed_frame_not_a_stack_overflow() {
    let deep = 100_000;
    let mut input = Vec::new();
    input.extend_from_slice("{\"a\":".repeat(deep).as_bytes());
    input.push(b'1');
    input.extend_from_slice("}".repeat(deep).as_bytes());
    input.push(b'\n');
    input.extend_from_slice(format!("{}{}\n", "[".repeat(deep), "]".repeat(deep)).as_bytes());
    input.extend_from_slice(format!("{{\"type\":\"turn.started\",\"x\":{}\n", "[".repeat(deep)).as_bytes());
    input.extend_from_slice(
        format!("{{\"type\":\"turn.started\",\"x\":{}1{}}}\n", "[".repeat(2000), "]".repeat(2000)).as_bytes(),
    );
    input.extend_from_slice(
        format!("{{\"type\":\"turn.started\",\"x\":{}1{}}}\n", "[".repeat(1000), "]".repeat(1000)).as_bytes(),
    );
    input.extend_from_slice(b"{\"type\":\"turn.completed\"}\n");
    let evs = run_ok(&[], &input);
    for n in 1..=4 {
        let e = at_line(&evs, n)[0];
        assert_eq!((ty(e), e["reason"].as_str()), ("unknown", Some("malformed_frame")), "line {n}");
        assert!(e["sample"].as_str().unwrap().chars().count() <= 200);
    }
    assert_eq!(types_at(&evs, 5), ["turn_started"], "1000 levels are within the limit");
    assert_eq!(types_at(&evs, 6), ["turn_completed"], "the stream goes on");
}

#[test]
fn a_50_mb_single_line_is_kept_intact() {
    // Escapes, multi-byte characters and quotes throughout, so the long-string path is exercised.
    let unit = "line \"quoted\" caf\u{e9} \u{1f600} tab\there\\back\n";
    let text = unit.repeat(50_000_000 / unit.len() + 1);
    let line = codex_message("big", &text);
    assert!(line.len() > 50_000_000);
    let input = format!("{{\"type\":\"thread.started\",\"thread_id\":\"big\"}}\n{line}\n");
    let out = run_raw(&["--no-observed-at", "--raw"], input.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let evs = events(&out);
    let e = at_line(&evs, 2)[0];
    assert_eq!(ty(e), "output_delta");
    assert!(e["text"].as_str() == Some(text.as_str()), "text equals the input's");
    assert!(e["raw"].as_str() == Some(line.as_str()), "raw equals the line");
    assert_eq!(run_ended(&evs)["lines"], 2);
}

/// Peak resident set size of a live process in KiB (`VmHWM`).
fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc/<pid>/status");
    let l = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM");
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn a_line_over_max_line_bytes_is_line_too_long_and_memory_stays_bounded() {
    const LINE: usize = 256 << 20;
    let mut child = bin()
        .args(["--no-observed-at", "--max-line-bytes", "1000000"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = stdout_lines(&mut child);
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(
            b"{\"type\":\"thread.started\",\"thread_id\":\"L\"}\n{\"type\":\"item.completed\",\"item\":{\"text\":\"",
        )
        .unwrap();
    let chunk = vec![b'z'; 1 << 20];
    for _ in 0..LINE / chunk.len() {
        stdin.write_all(&chunk).unwrap();
    }
    stdin.write_all(b"\"}}\n{\"type\":\"turn.started\"}\n").unwrap();
    stdin.flush().unwrap();
    let got = wait_for(&rx, "turn_started");
    // Measured while the process is alive (stdin still open).
    let hwm = vm_hwm_kib(child.id());
    drop(stdin);
    let mut rest = got;
    rest.extend(rx.iter());
    assert_eq!(child.wait().unwrap().code(), Some(0));
    let evs: Vec<Value> = rest.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let e = at_line(&evs, 2)[0];
    assert_eq!((ty(e), e["reason"].as_str()), ("unknown", Some("line_too_long")));
    assert!(e.get("raw").is_none(), "the line is not held");
    assert!(e["sample"].as_str().unwrap().starts_with("{\"type\":\"item.completed\""));
    assert_eq!(types_at(&evs, 3), ["turn_started"]);
    assert_eq!(run_ended(&evs)["lines"], 3);
    assert!(hwm < 64 * 1024, "peak RSS {hwm} KiB for a {} MiB line over a 1 MB limit", LINE >> 20);
}

/// Every value of `v` but the `type`/`subtype` discriminators given the wrong type; `deep`
/// keeps containers and flips their leaves, otherwise containers become scalars too.
fn wrong_types(v: &Value, key: &str, deep: bool) -> Value {
    match v {
        Value::String(s) if key == "type" || key == "subtype" => Value::String(s.clone()),
        Value::String(_) => json!(42),
        Value::Number(_) => json!("7"),
        Value::Bool(_) => json!("true"),
        Value::Null => json!({}),
        Value::Array(a) if deep => Value::Array(a.iter().map(|x| wrong_types(x, "", deep)).collect()),
        Value::Object(o) if deep || key.is_empty() || key == "payload" || key == "msg" => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), wrong_types(x, k, deep))).collect())
        }
        Value::Array(_) => json!({"0": 1}),
        Value::Object(_) => json!(["object"]),
    }
}

#[test]
fn frames_with_every_field_of_the_wrong_type_in_every_dialect() {
    let mut dialects: Vec<String> = std::fs::read_dir(common::root().join("fixtures"))
        .unwrap()
        .map(|e| e.unwrap())
        // `fixtures/README.md` (provenance) sits beside the dialect folders.
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    dialects.sort();
    assert!(dialects.len() >= 8);
    for d in &dialects {
        let mut input = String::new();
        for f in common::fixtures(d) {
            for (_, frame) in common::input_frames(&f) {
                for deep in [true, false] {
                    input.push_str(&wrong_types(&frame, "", deep).to_string());
                    input.push('\n');
                }
            }
        }
        // Detected and forced: the adapter sees each frame either way.
        for args in [vec![], vec!["--dialect", d.as_str()]] {
            let evs = run_ok(&args, input.as_bytes());
            assert!(evs.len() > 2, "{d}");
        }
    }
}

#[test]
fn a_stream_cut_mid_line() {
    use base64::Engine as _;
    let cut = &CODEX_OK[..CODEX_OK.len() - 30];
    let evs = run_ok(&[], cut.as_bytes());
    let last = at_line(&evs, 4)[0];
    assert_eq!((ty(last), last["reason"].as_str()), ("unknown", Some("invalid_json")));
    assert_eq!(last["raw"].as_str().unwrap(), cut.lines().nth(3).unwrap());
    assert_eq!(run_ended(&evs)["complete"], false);
    // Cut inside a multi-byte character: the bytes survive in raw_base64.
    let mut input = codex_message("i", "caf\u{e9}").into_bytes();
    let at = input.iter().position(|&b| b == 0xC3).unwrap() + 1;
    input.truncate(at);
    let evs = run_ok(&[], &input);
    let e = at_line(&evs, 1)[0];
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(e["raw_base64"].as_str().unwrap()).unwrap(), input);
    // A cut stream ends with an open turn: --fail-on-error says so.
    let out = run_raw(&["--fail-on-error"], cut.as_bytes());
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn input_trickling_one_byte_at_a_time_through_a_pipe() {
    let mut input = CODEX_OK.replace('\n', "\r\n");
    input.push_str(&codex_message("z", "caf\u{e9} \u{1f600}"));
    input.push_str("\nnot json\n{\"type\":\"turn.comp");
    let whole = run_raw(&["--no-observed-at"], input.as_bytes());
    let mut child = bin()
        .arg("--no-observed-at")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = input.into_bytes();
    let writer = std::thread::spawn(move || {
        for b in bytes {
            stdin.write_all(&[b]).unwrap();
            stdin.flush().unwrap();
            std::thread::sleep(Duration::from_micros(300));
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), String::from_utf8(whole.stdout).unwrap());
}

#[test]
fn a_fifo_is_read_like_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("live.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let mut child = bin().arg("--no-observed-at").arg(&fifo).stdout(Stdio::piped()).spawn().unwrap();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut w = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            for l in CODEX_OK.lines() {
                writeln!(w, "{l}").unwrap();
                w.flush().unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let mut stdout = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    writer.join().unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_output_is_safe(stdout.as_bytes());
    let evs = parse(stdout.as_bytes());
    assert_eq!(evs[0]["source"], fifo.to_str().unwrap());
    assert_accounted(CODEX_OK.as_bytes(), &evs);
    assert_eq!(output_text(&evs), "done");
    assert_eq!(run_ended(&evs)["complete"], true);
}

#[test]
fn an_unreadable_file_among_readable_ones() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let c = dir.path().join("c.jsonl");
    std::fs::write(&a, CODEX_OK).unwrap();
    std::fs::write(&c, CODEX_OK).unwrap();
    // A permission-denied file, or for root (who may read anything) a file whose read fails.
    // SAFETY: geteuid has no preconditions.
    let bad = if unsafe { libc::geteuid() } == 0 {
        std::path::PathBuf::from("/proc/self/mem")
    } else {
        let b = dir.path().join("b.jsonl");
        std::fs::write(&b, CODEX_OK).unwrap();
        std::fs::set_permissions(&b, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        b
    };
    let out = run_raw(&["--no-observed-at", a.to_str().unwrap(), bad.to_str().unwrap(), c.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr.clone()).unwrap();
    assert!(stderr.contains(bad.to_str().unwrap()), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line for the one unreadable input: {stderr}");
    assert_output_is_safe(&out.stdout);
    let evs = events(&out);
    let sources: Vec<&str> = of_type(&evs, "run_ended").iter().map(|e| e["source"].as_str().unwrap()).collect();
    assert_eq!(sources, [a.to_str().unwrap(), c.to_str().unwrap()], "no events for the unreadable one");
}

#[test]
fn a_directory_with_a_symlink_loop() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
    std::fs::write(root.join("sub/x.jsonl"), CODEX_OK).unwrap();
    std::os::unix::fs::symlink(root, root.join("sub/deeper/up.jsonl")).unwrap();
    std::os::unix::fs::symlink(root.join("sub"), root.join("sub/deeper/loop")).unwrap();
    std::os::unix::fs::symlink("self.jsonl", root.join("self.jsonl")).unwrap();
    let mut child =
        bin().arg("--no-observed-at").arg(root).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(start.elapsed() < TIMEOUT, "a symlink loop must not hang the walk");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stdout = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
    assert_eq!(status.code(), Some(0), "links are not followed in a walk");
    let evs = parse(&stdout);
    let sources: Vec<&str> = of_type(&evs, "run_started").iter().map(|e| e["source"].as_str().unwrap()).collect();
    assert_eq!(sources.len(), 1, "the one real file, once: {sources:?}");
    assert!(sources[0].ends_with("sub/x.jsonl"));
    // Named explicitly, a looping link cannot be opened: exit 2, said on stderr.
    let out = run_raw(&[root.join("self.jsonl").to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("self.jsonl"));
}

#[test]
fn sigint_mid_stream_exits_130_with_the_output_intact_and_flushed() {
    let mut child = bin().arg("--no-observed-at").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let rx = stdout_lines(&mut child);
    let mut stdin = child.stdin.take().unwrap();
    // The writer never stops by itself: the stream is live when SIGINT comes.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(b"{\"type\":\"thread.started\",\"thread_id\":\"sig\"}\n{\"type\":\"turn.started\"}\n");
        for i in 0u64.. {
            let line = codex_message(&format!("i{i}"), &format!("message {i} ").repeat(20));
            if stdin.write_all(line.as_bytes()).and_then(|()| stdin.write_all(b"\n")).is_err() {
                break;
            }
        }
    });
    let mut got = Vec::new();
    while got.len() < 2000 {
        got.push(rx.recv_timeout(TIMEOUT).expect("events while the stream runs"));
    }
    sigint(&child);
    let start = std::time::Instant::now();
    let status = child.wait().unwrap();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(status.code(), Some(130));
    got.extend(rx.iter());
    writer.join().unwrap();
    // Every line written is a whole event; the numbering has no hole; run_ended closes it.
    let text = got.join("\n") + "\n";
    assert_output_is_safe(text.as_bytes());
    let evs = parse(text.as_bytes());
    let end = run_ended(&evs);
    assert_eq!(end["complete"], false);
    let lines: Vec<u64> = evs.iter().filter_map(|e| e["line"].as_u64()).collect();
    assert!(lines.windows(2).all(|w| w[1] == w[0] + 1), "no line lost or repeated");
    assert_eq!(lines.last().copied(), end["lines"].as_u64(), "run_ended counts what was written");
}

// ------------------------------------------------------------------------------------------------
// Terminal and page safety
// ------------------------------------------------------------------------------------------------

#[test]
fn escape_payloads_come_out_as_valid_json_with_controls_escaped_and_text_intact() {
    let pad = "p".repeat(300); // long strings take the raw-bytes path
    for (name, payload) in ESCAPE_PAYLOADS {
        for text in [payload.to_string(), format!("{pad}{payload}")] {
            let lines = [
                json!({"type":"thread.started","thread_id":format!("s-{payload}")}).to_string(),
                codex_message("m", &text),
                json!({"type":"item.completed","item":{"id":"c","type":"command_execution","command":text,"aggregated_output":text,"exit_code":1,"status":"failed"}}).to_string(),
                json!({"type":"assistant","message":{"id":"a1","model":"m","content":[{"type":"text","text":text},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":text}}]},"session_id":"c","uuid":"u1"}).to_string(),
                json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":text,"is_error":true}]},"session_id":"c","uuid":"u2"}).to_string(),
                format!("stderr: {}", text.replace('\n', " ")),
                json!({"type":text}).to_string(),
            ];
            let input = lines.join("\n") + "\n";
            let evs = run_ok(&["--raw"], input.as_bytes());
            // Lossless: the text reaches the output as it was, escaped where JSON requires.
            let deltas: Vec<&str> = of_type(&evs, "output_delta").iter().map(|e| e["text"].as_str().unwrap()).collect();
            assert_eq!(deltas, [text.as_str(), text.as_str()], "{name}");
            let outputs: Vec<&str> =
                of_type(&evs, "tool_completed").iter().filter_map(|e| e["output"].as_str()).collect();
            assert_eq!(outputs, [text.as_str(), text.as_str()], "{name}");
            let summaries: Vec<&Value> = of_type(&evs, "tool_started").iter().map(|e| &e["input"]["command"]).collect();
            assert_eq!(summaries, [&json!(text), &json!(text)], "{name}");
            for (i, l) in lines.iter().enumerate() {
                assert_eq!(at_line(&evs, i as u64 + 1)[0]["raw"], json!(l), "{name}: raw of line {}", i + 1);
            }
            let unknown = at_line(&evs, 7)[0];
            assert_eq!(unknown["frame"], json!(text), "{name}");
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Exit status: one test per row of the table in `--help` and the README
// ------------------------------------------------------------------------------------------------

#[test]
fn help_has_the_exit_status_table() {
    let out = bin().arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8(out.stdout).unwrap();
    for row in [
        "Exit status:",
        "0    success (also when the reader of stdout went away)",
        "1    --strict and a line ended as `unknown`",
        "2    bad usage, or an input could not be read",
        "3    --fail-on-error and a turn failed or a stream ended with a turn open",
        "130  interrupted (SIGINT); the output so far is flushed",
        "When several apply, the highest wins.",
    ] {
        assert!(help.contains(row), "--help lacks {row:?}");
    }
}

#[test]
fn exit_2_for_an_unknown_option_said_on_stderr_with_no_events() {
    let out = run_raw(&["--no-such-option"], CODEX_OK.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-option"));
    assert!(out.stdout.is_empty());
}

#[test]
fn highest_exit_status_wins() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let messy = dir.path().join("messy.jsonl");
    // An unknown line and a failed turn.
    std::fs::write(&messy, format!("{CODEX_OK}not json\n{{\"type\":\"turn.started\"}}\n{{\"type\":\"turn.failed\",\"error\":{{\"message\":\"boom\"}}}}\n")).unwrap();
    let code = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push(missing.to_str().unwrap());
        all.push(messy.to_str().unwrap());
        run_raw(&all, b"").status.code()
    };
    assert_eq!(code(&[]), Some(2), "unreadable");
    assert_eq!(code(&["--strict"]), Some(2), "2 (unreadable) over 1 (strict)");
    assert_eq!(code(&["--strict", "--fail-on-error"]), Some(3), "3 (failed turn) over 2 and 1");
    let out = run_raw(&["--strict", "--fail-on-error", messy.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(3), "3 over 1");
    // 130 over everything: an unknown line, an open turn, a failed turn, then SIGINT.
    let mut child = bin()
        .args(["--no-observed-at", "--strict", "--fail-on-error", "-"])
        .arg(&missing)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let rx = stdout_lines(&mut child);
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(std::fs::read(&messy).unwrap().as_slice()).unwrap();
    stdin.write_all(b"{\"type\":\"turn.started\"}\n").unwrap();
    stdin.flush().unwrap();
    wait_for(&rx, "turn_started\",\"dialect\":\"codex\",\"line\":8");
    sigint(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    drop(stdin);
}

// ------------------------------------------------------------------------------------------------
// Regressions: inputs that once crashed or lost data (found by tests/props.rs)
// ------------------------------------------------------------------------------------------------

/// A line with a `\u` escape and a final backslash (a frame cut after `\`) panicked the surrogate
/// repair (index past the end); the worker thread died and the run ended silently with exit 0.
#[test]
fn regression_a_cut_line_ending_in_a_backslash_after_a_unicode_escape() {
    let input = br#"{"type":"item.completed","item":{"type":"agent_message","text":"\u001b[32mPASS\u001b[0m C:\\\\work\\\\out.txt {\"#;
    for line in [&input[..], b"\\u", b"{\"a\":\"\\ud800\\", b"{\"a\":\"\\ud800\\u", b"{\"a\":\"\\ud800\\udc0"] {
        let evs = run_ok(&["--raw"], line);
        let e = at_line(&evs, 1)[0];
        assert_eq!(ty(e), "unknown");
        assert_eq!(e["raw"].as_str().unwrap().as_bytes(), line);
    }
}

/// A non-JSON line with invalid UTF-8 that reads like a Codex warning became a `diagnostic`
/// whose `raw` had U+FFFD and no `raw_base64`: the bytes were lost.
#[test]
fn regression_a_diagnostic_looking_line_with_invalid_utf8_stays_lossless() {
    use base64::Engine as _;
    let line = b"\x80026-04-09T14:20:46Z  WARN codex_core_plugins::loader: failed to load plugin: plugin is not installed plugin=linear-sync";
    let evs = run_ok(&[], line);
    let e = at_line(&evs, 1)[0];
    assert_eq!(base64::engine::general_purpose::STANDARD.decode(e["raw_base64"].as_str().unwrap()).unwrap(), line);
}

/// A Claude message announced by `message_start` whose `message_delta` never came has its usage
/// written at the end of input; it named the last line read, which could be blank (blank lines
/// yield nothing) and had no `raw`.
#[test]
fn regression_usage_held_to_the_end_names_a_line_with_content() {
    let input = concat!(
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"model":"m","id":"msg_1","usage":{"input_tokens":9,"output_tokens":5}}},"session_id":"s","parent_tool_use_id":null,"uuid":"u1"}"#,
        "\n\n  \n"
    );
    let evs = run_ok(&[], input.as_bytes());
    let usage = of_type(&evs, "usage");
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0]["line"], 1);
    assert!(at_line(&evs, 2).is_empty() && at_line(&evs, 3).is_empty());
}

#[test]
fn the_usage_table_neutralises_escape_payloads_in_session_ids_and_models() {
    let dir = tempfile::tempdir().unwrap();
    let mut input = String::new();
    for (i, (_, payload)) in ESCAPE_PAYLOADS.iter().enumerate() {
        let session = format!("s{i}{payload}");
        let init = json!({"type": "system", "subtype": "init", "session_id": session, "model": payload, "tools": []});
        let result = json!({"type": "result", "subtype": "success", "is_error": false, "session_id": session,
            "usage": {"input_tokens": 1, "output_tokens": 1}});
        input.push_str(&format!("{init}\n{result}\n"));
    }
    let path = dir.path().join("hostile.jsonl");
    std::fs::write(&path, input).unwrap();
    let out = bin().args(["usage", "--by", "session"]).arg(&path).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    let bad: Vec<char> = table.chars().filter(|c| *c != '\n' && agentnorm::sink::safe::is_unsafe(*c)).collect();
    assert!(bad.is_empty(), "unsafe characters reached the table: {bad:?}");
    assert!(table.contains("\\u{1b}"), "escapes are shown as text");
}

#[test]
fn the_pretty_view_neutralises_every_escape_payload_plain_and_coloured() {
    for (name, payload) in ESCAPE_PAYLOADS {
        // The payload wherever an agent or a tool puts text: ids, model, prompt, Markdown text,
        // a command and its output, a plan, a question, an error, a stderr line, an unknown frame.
        let session = format!("s-{payload}");
        let md =
            format!("# {payload}\n\n*{payload}* [{payload}](https://x.example/{payload})\n\n```\n{payload}\n```\n");
        let lines = [
            json!({"type":"system","subtype":"init","session_id":session,"model":payload,"cwd":payload,"tools":[]}).to_string(),
            json!({"type":"user","message":{"role":"user","content":payload},"session_id":session}).to_string(),
            json!({"type":"assistant","message":{"id":"a1","model":"m","content":[{"type":"thinking","thinking":payload},{"type":"text","text":md},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":payload}},{"type":"tool_use","id":"t2","name":"TodoWrite","input":{"todos":[{"content":payload,"status":"pending"}]}},{"type":"tool_use","id":"t3","name":payload,"input":{}}]},"session_id":session}).to_string(),
            json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":format!("{payload}\n{payload}"),"is_error":true},{"type":"tool_result","tool_use_id":"t2","content":payload},{"type":"tool_result","tool_use_id":"t3","content":payload}]},"session_id":session}).to_string(),
            json!({"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"error":payload,"session_id":session}).to_string(),
            json!({"type":"result","subtype":"error_during_execution","is_error":true,"result":payload,"errors":[payload],"session_id":session}).to_string(),
            format!("stderr: {}", payload.replace('\n', " ")),
            json!({"type":payload}).to_string(),
        ];
        let input = lines.join("\n") + "\n";
        for color in ["never", "always"] {
            let out = run_raw(&["--format", "pretty", "--color", color], input.as_bytes());
            assert_eq!(out.status.code(), Some(0), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            let text = String::from_utf8(out.stdout).expect("UTF-8");
            if color == "never" {
                assert!(!text.contains('\x1b'), "{name}: an escape in the plain view: {text:?}");
            }
            let shown = strip_sgr(&text);
            let bad: Vec<char> = shown.chars().filter(|c| *c != '\n' && agentnorm::sink::safe::is_unsafe(*c)).collect();
            assert!(bad.is_empty(), "{name} ({color}): unsafe characters reached the terminal: {bad:?}\n{shown}");
            // Nothing is dropped: each unsafe character is there as visible text.
            for c in payload.chars().filter(|c| agentnorm::sink::safe::is_unsafe(*c) && *c != '\n') {
                let visible = format!("\\u{{{:x}}}", c as u32);
                assert!(shown.contains(&visible), "{name} ({color}): {visible} not shown\n{shown}");
            }
            assert!(shown.contains("✗ Run"), "{name}: the failed call is shown\n{shown}");
        }
    }
}
