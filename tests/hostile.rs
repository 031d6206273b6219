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
    // The dialect folders (`fixtures/README.md` sits beside them).
    let dialects = common::all_dialects();
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

// ------------------------------------------------------------------------------------------------
// Issue 14: nothing lost, nothing let in
// ------------------------------------------------------------------------------------------------

/// Runs `script` in bash with `$BIN` the built binary and the crate root as working directory.
fn sh(script: &str) -> std::process::Output {
    std::process::Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("BIN", env!("CARGO_BIN_EXE_agentnorm"))
        .env("AGENTNORM_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/usage-cache"))
        .current_dir(common::root())
        .stdin(Stdio::null())
        .output()
        .expect("running bash")
}

/// The names in an `--output-dir` folder but its record of the run (`.agentnorm-pages.json`).
fn pages_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".agentnorm-pages.json")
        .collect()
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_closed_stdout_is_an_error_exit_that_names_stdout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("s.jsonl");
    std::fs::write(&f, CODEX_OK).expect("write");
    let f = f.display();
    for cmd in [
        format!("\"$BIN\" {f}"),
        format!("\"$BIN\" --format pretty {f}"),
        format!("\"$BIN\" --format html {f}"),
        format!("\"$BIN\" usage {f}"),
        format!("\"$BIN\" detect {f}"),
        "\"$BIN\" --help".to_owned(),
    ] {
        let out = sh(&format!("{cmd} >&-"));
        assert_eq!(out.status.code(), Some(2), "{cmd} >&-: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains("stdout"), "{cmd} >&-: {}", stderr_of(&out));
    }
}

#[test]
fn a_full_stdout_is_an_error_exit_that_names_stdout_and_a_broken_pipe_is_not() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("s.jsonl");
    std::fs::write(&f, CODEX_OK).expect("write");
    let f = f.display();
    for cmd in [
        format!("\"$BIN\" {f}"),
        format!("\"$BIN\" --format pretty {f}"),
        format!("\"$BIN\" --format html {f}"),
        format!("\"$BIN\" usage {f}"),
        format!("\"$BIN\" detect {f}"),
        "\"$BIN\" --help".to_owned(),
        "\"$BIN\" --version".to_owned(),
        "\"$BIN\" schema".to_owned(),
    ] {
        let out = sh(&format!("{cmd} > /dev/full"));
        assert_eq!(out.status.code(), Some(2), "{cmd} > /dev/full: {}", stderr_of(&out));
        assert!(stderr_of(&out).contains("writing stdout"), "{cmd}: {}", stderr_of(&out));
        // The reader going away is not an error.
        let out = sh(&format!("set -o pipefail; {cmd} | head -c1 >/dev/null; echo \"${{PIPESTATUS[0]}}\""));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "{cmd} | head: {}", stderr_of(&out));
    }
}

#[test]
fn usage_sums_saturate_instead_of_wrapping() {
    let max = u64::MAX - 615;
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, out) in [(1, max), (2, 1)] {
        let text = format!(
            "{{\"type\":\"thread.started\",\"thread_id\":\"t{i}\"}}\n{{\"type\":\"turn.started\"}}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":{max},\"output_tokens\":{out}}}}}\n"
        );
        std::fs::write(dir.path().join(format!("{i}.jsonl")), text).expect("write");
    }
    let out = bin().args(["usage", "--json"]).arg(dir.path()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let rows = parse(&out.stdout);
    let totals = rows.iter().find(|r| r["totals"] == true).expect("totals row");
    assert_eq!(totals["input"].as_u64(), Some(u64::MAX), "{totals}");
    assert_eq!(totals["total"].as_u64(), Some(u64::MAX), "{totals}");
    let one = rows.iter().find(|r| r["session_id"] == "t1").expect("t1");
    assert_eq!(one["total"].as_u64(), Some(u64::MAX), "{one}");
}

#[test]
fn usage_csv_cells_cannot_start_a_formula() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ids = Vec::new();
    for (i, lead) in ["=", "+", "-", "@", "\t", "\r"].iter().enumerate() {
        let id = format!("{lead}HYPERLINK(\"http://x.example\",\"y\"){i}");
        let text = format!(
            "{}\n{{\"type\":\"turn.started\"}}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}\n",
            json!({"type":"thread.started","thread_id":id})
        );
        std::fs::write(dir.path().join(format!("{i}.jsonl")), text).expect("write");
        ids.push(id);
    }
    let out = bin().args(["usage", "--csv"]).arg(dir.path()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    // Read back as RFC 4180: each first cell of a data row starts with `'` and then the id.
    let mut rows = Vec::new();
    let (mut cell, mut row, mut quoted, mut chars) = (String::new(), Vec::new(), false, text.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cell.push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => row.push(std::mem::take(&mut cell)),
            ('\n', false) => {
                row.push(std::mem::take(&mut cell));
                rows.push(std::mem::take(&mut row));
            }
            (c, _) => cell.push(c),
        }
    }
    let firsts: Vec<&String> = rows.iter().skip(1).map(|r| &r[0]).filter(|c| !c.is_empty()).collect();
    assert_eq!(firsts.len(), ids.len(), "{text}");
    for id in &ids {
        assert!(firsts.contains(&&format!("'{id}")), "{id:?} not guarded in {text}");
    }
    for c in firsts {
        assert!(!c.starts_with(['=', '+', '-', '@', '\t', '\r']), "{c:?}");
    }
}

#[test]
fn only_takes_spaces_offers_event_types_to_completion_and_refuses_a_type_also_excluded() {
    let out = run_raw(&["--no-observed-at", "--only", "turn_started, turn_completed"], CODEX_OK.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let types: Vec<String> = parse(&out.stdout).iter().map(|e| ty(e).to_owned()).collect();
    assert_eq!(types, ["turn_started", "turn_completed"]);
    let out = run_raw(&["--only", "usage", "--exclude", "usage"], CODEX_OK.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr_of(&out).contains("usage"), "{}", stderr_of(&out));
    assert!(out.stdout.is_empty());
    let out = run_raw(&["--only", "turn_started, nope"], CODEX_OK.as_bytes());
    assert_eq!(out.status.code(), Some(2));
    for shell in ["bash", "fish", "zsh"] {
        let out = bin().args(["completions", shell]).output().expect("run");
        let script = String::from_utf8_lossy(&out.stdout);
        for t in ["tool_started", "run_ended", "output_delta"] {
            assert!(script.contains(t), "{shell} completion does not offer {t}");
        }
    }
}

#[test]
fn max_line_bytes_does_not_count_the_cr_of_a_crlf() {
    let line = r#"{"type":"turn.started"}"#;
    let input = format!("{line}\r\n{line}\r\n");
    let n = line.len().to_string();
    let evs = run_ok(&["--max-line-bytes", &n], input.as_bytes());
    assert_eq!(of_type(&evs, "turn_started").len(), 2, "{evs:?}");
    assert!(of_type(&evs, "unknown").is_empty(), "{evs:?}");
    // One byte of content more is over.
    let input = format!("{line} \r\n");
    let evs = run_ok(&["--max-line-bytes", &n], input.as_bytes());
    assert_eq!(of_type(&evs, "unknown")[0]["reason"], "line_too_long");
}

#[test]
fn a_folder_walk_reads_names_that_are_not_utf8_and_escapes_names_in_detect_and_stderr() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let names: [&[u8]; 4] =
        [b"a\xff\xfe.jsonl", b"b\x1b]0;pwned\x07.jsonl", b"c\xe2\x80\xaeldo.jsonl", b"d\nfake\tline.jsonl"];
    for n in names {
        std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(n)), CODEX_OK).expect("write");
    }
    let out = bin().arg("--no-observed-at").arg(dir.path()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(of_type(&parse(&out.stdout), "run_started").len(), 4, "every file read");

    let out = bin().arg("detect").arg(dir.path()).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(text.lines().count(), 4, "one line per file: {text:?}");
    assert!(!text.chars().any(|c| !matches!(c, '\n' | '\t') && agentnorm::sink::safe::is_unsafe(c)), "{text:?}");
    for shown in ["\\u{1b}]0;pwned\\u{7}", "\\u{202e}", "\\u{a}fake\\u{9}line"] {
        assert!(text.contains(shown), "{shown} in {text:?}");
    }

    // A walked file that fails to read: its name on stderr is escaped too.
    let bad = tempfile::tempdir().expect("tempdir");
    std::fs::write(bad.path().join(std::ffi::OsStr::from_bytes(b"x\x1b[2J\x07.jsonl.gz")), b"\x1f\x8bnot gzip")
        .expect("write");
    let out = bin().arg(bad.path()).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = stderr_of(&out);
    assert!(!err.contains('\x1b') && !err.contains('\x07'), "{err:?}");
    assert!(err.contains("x\\u{1b}[2J\\u{7}.jsonl.gz"), "{err:?}");
}

#[test]
fn a_folder_without_logs_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("session.json"), "{}").expect("write");
    for args in [&[][..], &["usage"], &["detect"]] {
        let out = bin().args(args).arg(dir.path()).output().expect("run");
        let err = stderr_of(&out);
        assert!(err.contains(&format!("no log files found under {}", dir.path().display())), "{args:?}: {err}");
    }
}

#[test]
fn impossible_timestamps_become_a_missing_at_never_a_shifted_one() {
    for bad in ["2025-02-31T00:00:00Z", "2025-09-25T99:99:99Z", "2025-09-25T01:22:20Zjunk", "2025-09-25T01:22:20+02x00"]
    {
        let line =
            json!({"type":"user","message":{"role":"user","content":"hi"},"timestamp":bad,"sessionId":"s","uuid":"u1"});
        let evs = run_ok(&["--dialect", "claude-transcript"], format!("{line}\n").as_bytes());
        let msg = &of_type(&evs, "user_message")[0];
        assert!(msg.get("at").is_none(), "{bad} became at {}", msg["at"]);
    }
    let line = json!({"type":"user","message":{"role":"user","content":"hi"},"timestamp":"2024-02-29T23:59:59.5+01:00","sessionId":"s","uuid":"u1"});
    let evs = run_ok(&["--dialect", "claude-transcript"], format!("{line}\n").as_bytes());
    assert_eq!(of_type(&evs, "user_message")[0]["at"], "2024-02-29T22:59:59.500Z");
}

#[test]
fn bad_since_and_until_are_exit_2_and_so_is_since_after_until() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("s.jsonl");
    std::fs::write(&f, CODEX_OK).expect("write");
    for args in [
        &["--until", "2026-02-30"][..],
        &["--since", "2026-01-01T99:00:00Z"],
        &["--since", "2026-01-01T00:00:00Zx"],
        &["--since", "2026-03-01", "--until", "2026-02-01"],
    ] {
        let out = bin().arg("usage").args(args).arg(&f).output().expect("run");
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr_of(&out));
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    let out = bin().args(["usage", "--since", "2026-02-01", "--until", "2026-02-01"]).arg(&f).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
}

fn codex_session(id: &str, text: &str) -> String {
    format!(
        "{}\n{{\"type\":\"turn.started\"}}\n{}\n{{\"type\":\"turn.completed\",\"usage\":{{\"input_tokens\":1,\"output_tokens\":1}}}}\n",
        json!({"type":"thread.started","thread_id":id}),
        codex_message("m1", text)
    )
}

#[test]
fn html_interrupted_writes_the_page_of_what_was_read() {
    let mut child = bin()
        .args(["--format", "html", "--no-observed-at"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let first = codex_session("s-read", "the words read before ctrl-c");
    stdin.write_all(first.as_bytes()).expect("write");
    stdin.flush().expect("flush");
    std::thread::sleep(Duration::from_millis(800));
    sigint(&child);
    // The pipe stays open: the reader is blocked in a read when SIGINT comes.
    let out = child.wait_with_output().expect("wait");
    drop(stdin);
    assert_eq!(out.status.code(), Some(130), "{}", stderr_of(&out));
    let page = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(page.contains("</html>"), "a whole page: {} bytes", page.len());
    assert!(page.contains("the words read before ctrl-c"), "what was read is on the page");
}

#[test]
fn output_dir_writes_every_page_when_the_reader_of_the_paths_goes_away() {
    let inputs = tempfile::tempdir().expect("tempdir");
    for i in 0..40 {
        std::fs::write(inputs.path().join(format!("{i:02}.jsonl")), codex_session(&format!("s{i:02}"), "hi"))
            .expect("write");
    }
    let pages = tempfile::tempdir().expect("tempdir");
    let out = sh(&format!(
        "\"$BIN\" --format html --output-dir {} {} | head -1; echo \"exit=${{PIPESTATUS[0]}}\"",
        pages.path().display(),
        inputs.path().display()
    ));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("exit=0"), "{text} {}", stderr_of(&out));
    let written = pages_in(pages.path()).len();
    assert_eq!(written, 40, "every page written: {text}");
}

#[test]
fn output_dir_does_not_write_through_planted_symlinks() {
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "precious").expect("write");
    let dangling = outside.path().join("created-outside.txt");
    let pages = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(&victim, pages.path().join("s-a.html")).expect("symlink");
    std::os::unix::fs::symlink(&dangling, pages.path().join("s-b.html")).expect("symlink");
    let input = codex_session("s-a", "page a") + &codex_session("s-b", "page b");
    let out = bin()
        .args(["--format", "html", "--no-observed-at", "--output-dir"])
        .arg(pages.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().expect("stdin").write_all(input.as_bytes())?;
            c.wait_with_output()
        })
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert_eq!(std::fs::read_to_string(&victim).expect("victim"), "precious", "the link's target is untouched");
    assert!(!dangling.exists(), "nothing created outside DIR through a dangling link");
    for (name, text) in [("s-a.html", "page a"), ("s-b.html", "page b")] {
        let p = pages.path().join(name);
        let meta = std::fs::symlink_metadata(&p).expect("page");
        assert!(meta.file_type().is_file(), "{name} is a file of its own, the link replaced");
        assert!(std::fs::read_to_string(&p).expect("page").contains(text));
    }
    let names = pages_in(pages.path());
    assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
}

#[test]
fn a_file_truncated_while_it_is_read_on_all_cores_ends_no_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.jsonl");
    let block = CODEX_OK.repeat(2000);
    let mut text = String::with_capacity(48 << 20);
    while text.len() < 40 << 20 {
        text.push_str(&block);
    }
    std::fs::write(&path, &text).expect("write");
    for truncate_to in [0u64, 1 << 20] {
        std::fs::write(&path, &text).expect("write");
        let mut child = bin()
            .args(["-j", "2", "--no-observed-at"])
            .arg(&path)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut head = vec![0u8; 64 << 10];
        stdout.read_exact(&mut head).expect("the first output");
        // A writer truncates it (held, if need be, until agentnorm has let go of the mapping).
        std::fs::OpenOptions::new().write(true).open(&path).and_then(|f| f.set_len(truncate_to)).expect("truncate");
        let mut rest = Vec::new();
        stdout.read_to_end(&mut rest).expect("read");
        let status = child.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt as _;
        assert_eq!(status.signal(), None, "ended by a signal (truncated to {truncate_to})");
        assert_eq!(status.code(), Some(0), "truncated to {truncate_to}");
        head.extend_from_slice(&rest);
        let evs = parse(&head);
        assert_eq!(ty(evs.last().expect("events")), "run_ended", "the run ends with run_ended");
    }
}

#[test]
fn a_filter_leaving_out_run_ended_does_not_starve_the_pretty_view() {
    let pretty = |args: &[&str], f: &std::path::Path| {
        let out = bin()
            .args(["--format", "pretty", "--color", "never"])
            .args(args)
            .arg(f)
            .env("COLUMNS", "100")
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0), "{}: {}", f.display(), stderr_of(&out));
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let mut with_text = 0;
    for f in common::all_fixtures() {
        let whole = pretty(&[], &f);
        assert_eq!(pretty(&["--exclude", "run_ended"], &f), whole, "{}: --exclude run_ended", f.display());
        assert_eq!(pretty(&["--exclude", "run_started,run_ended"], &f), whole, "{}", f.display());
        let text = output_text(&common::run_path(&f));
        let only = pretty(&["--only", "output_delta"], &f);
        assert_eq!(only, pretty(&["--only", "output_delta,run_ended"], &f), "{}: --only output_delta", f.display());
        if let Some(word) =
            text.split_whitespace().rfind(|w| (4..30).contains(&w.len()) && w.chars().all(char::is_alphanumeric))
        {
            with_text += 1;
            assert!(only.contains(word), "{}: the last words of the text ({word}) are shown\n{only}", f.display());
        }
    }
    assert!(with_text > 10, "fixtures with text: {with_text}");
}

#[test]
fn a_slash_command_in_a_transcript_is_the_users_turn_in_the_views() {
    let lines = [
        json!({"type":"user","sessionId":"s1","uuid":"u1","parentUuid":null,"isSidechain":false,"timestamp":"2026-03-01T09:00:00.000Z","message":{"role":"user","content":"<command-message>orchestrator is running…</command-message>\n<command-name>/orchestrator</command-name>\n<command-args>build a TODO app</command-args>"}}),
        json!({"type":"user","sessionId":"s1","uuid":"u2","parentUuid":"u1","isSidechain":false,"isMeta":true,"timestamp":"2026-03-01T09:00:00.100Z","message":{"role":"user","content":[{"type":"text","text":"Split complex tasks into subtasks."}]}}),
        json!({"type":"assistant","sessionId":"s1","uuid":"a1","parentUuid":"u2","isSidechain":false,"timestamp":"2026-03-01T09:00:03.000Z","message":{"id":"msg_1","role":"assistant","model":"claude-sonnet-5","content":[{"type":"text","text":"Here is the plan."}],"usage":{"input_tokens":5,"output_tokens":7}}}),
        json!({"type":"user","sessionId":"s1","uuid":"u3","parentUuid":"a1","isSidechain":false,"timestamp":"2026-03-01T09:01:00.000Z","message":{"role":"user","content":"<command-name>/clear</command-name>\n            <command-message>clear</command-message>\n            <command-args></command-args>"}}),
    ];
    let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let evs = run_ok(&[], input.as_bytes());
    let prompts: Vec<&str> = of_type(&evs, "user_message").iter().map(|e| e["text"].as_str().unwrap_or("")).collect();
    assert_eq!(prompts, ["/orchestrator build a TODO app", "/clear"]);
    let out = run_raw(&["--format", "pretty", "--color", "never"], input.as_bytes());
    let view = String::from_utf8(out.stdout).expect("UTF-8");
    let (q, a) = (view.find("› /orchestrator build a TODO app"), view.find("Here is the plan."));
    assert!(q.is_some() && q < a, "the question opens the turn:\n{view}");
    let out = run_raw(&["--format", "html", "--no-observed-at"], input.as_bytes());
    let page = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(page.contains("/orchestrator build a TODO app"), "the page shows the question");
}

#[test]
fn redact_masks_a_secret_split_over_two_text_blocks_in_raw_lines_too() {
    let line = json!({"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","role":"assistant","content":[{"type":"text","text":"the key is sk-ant-api03-"},{"type":"text","text":"Zx9Kq2Lm8Np4Rs6Tu1Vw3Xy5 ok"}]},"session_id":"s"});
    let out = run_raw(&["--no-observed-at", "--redact", "--raw"], format!("{line}\n").as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    for half in ["api03", "Zx9Kq2Lm8Np4"] {
        assert!(!text.contains(half), "{half} leaked:\n{text}");
    }
    assert!(text.contains(" ok"), "the words after the secret stay");
    assert_output_is_safe(text.as_bytes());
}

#[test]
fn redact_masks_authorization_given_as_a_json_object_and_credentials_in_urls() {
    let line = json!({"type":"assistant","message":{"id":"m2","model":"claude-sonnet-5","role":"assistant","content":[
        {"type":"tool_use","id":"t1","name":"WebFetch","input":{"url":"https://api.example.com","headers":{"Authorization":"Bearer abcDEF123456789xyz","X-Api-Key":"k3y-0123456789abcdef"}}},
        {"type":"tool_use","id":"t2","name":"Bash","input":{"command":"psql postgres://admin:Pa55word@db.internal:5432/app; curl https://bob:${PASS}@x.example/a"}}]},"session_id":"s"});
    let out = run_raw(&["--no-observed-at", "--redact", "--raw"], format!("{line}\n").as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    for secret in ["abcDEF123456789xyz", "k3y-0123456789abcdef", "Pa55word"] {
        assert!(!text.contains(secret), "{secret} leaked:\n{text}");
    }
    for kept in
        ["Bearer [REDACTED:authorization]", "postgres://admin:[REDACTED:password]@db.internal", "bob:${PASS}@x.example"]
    {
        assert!(text.contains(kept), "{kept} not in:\n{text}");
    }
    assert_output_is_safe(text.as_bytes());
}

#[test]
fn follow_reads_a_fifo_as_a_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("live.jsonl");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo(3) on a NUL-terminated path in a fresh temporary folder.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let child = bin()
        .args(["--follow", "--no-observed-at"])
        .arg(&fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&fifo)
        .and_then(|mut w| w.write_all(CODEX_OK.as_bytes()))
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(!stderr_of(&out).contains("Illegal seek"), "{}", stderr_of(&out));
    let evs = parse(&out.stdout);
    assert_eq!(run_ended(&evs)["lines"], 4);
}

#[test]
fn follow_after_truncation_starts_a_new_run_counting_lines_from_1_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("live.jsonl");
    std::fs::write(&path, CODEX_OK).expect("write");
    let mut child = bin()
        .args(["--follow", "--no-observed-at"])
        .arg(&path)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let rx = stdout_lines(&mut child);
    wait_for(&rx, "turn_completed");
    std::fs::write(&path, codex_message("m9", "after the truncation") + "\n").expect("truncate and write");
    let got = wait_for(&rx, "after the truncation");
    let types: Vec<String> =
        got.iter().map(|l| ty(&serde_json::from_str::<Value>(l).expect("JSON")).to_owned()).collect();
    assert!(types.contains(&"run_ended".to_owned()) && types.contains(&"run_started".to_owned()), "{got:?}");
    let last: Value = serde_json::from_str(got.last().expect("line")).expect("JSON");
    assert_eq!(last["line"], 1, "the new run counts from 1: {last}");
    sigint(&child);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(130));
    assert!(stderr_of(&out).contains("truncated"), "{}", stderr_of(&out));
}

fn pretty_at(columns: &str, args: &[&str], input: &[u8]) -> String {
    let mut child = bin()
        .args(["--format", "pretty", "--color", "never"])
        .args(args)
        .env("COLUMNS", columns)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(input).expect("write");
    String::from_utf8(child.wait_with_output().expect("wait").stdout).expect("UTF-8")
}

#[test]
fn the_pretty_path_header_wraps_between_components_never_inside_a_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let deep = dir.path().join("a-rather-long-folder-name-for-logs").join("and-another-level-deeper");
    std::fs::create_dir_all(&deep).expect("mkdir");
    let f = deep.join("session-with-a-long-name.jsonl");
    std::fs::write(&f, CODEX_OK).expect("write");
    let out =
        bin().args(["--format", "pretty", "--color", "never"]).arg(&f).env("COLUMNS", "50").output().expect("run");
    let text = String::from_utf8(out.stdout).expect("UTF-8");
    let header: Vec<&str> = text.lines().take_while(|l| !l.starts_with('●')).collect();
    assert!(header.len() > 1, "the header wraps at 50 columns: {text}");
    for row in &header[..header.len() - 1] {
        assert!(row.ends_with('/'), "a row of the header ends at a `/`: {row:?}\n{text}");
    }
    assert_eq!(header.concat(), format!("── {}", f.display()), "nothing lost");
}

#[test]
fn a_long_command_keeps_its_outcome_and_duration_in_pretty_and_html_alike() {
    let cmd = format!("cargo test --workspace --all-features --no-fail-fast -- {}", "--nocapture ".repeat(8));
    let input = [
        json!({"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":cmd}}]},"session_id":"s","uuid":"a1","timestamp":"2026-03-01T09:00:00.000Z","sessionId":"s","parentUuid":null,"isSidechain":false}),
        json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"boom","is_error":true}]},"uuid":"u1","timestamp":"2026-03-01T09:00:02.500Z","sessionId":"s","parentUuid":"a1","isSidechain":false}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect::<String>();
    let view = pretty_at("70", &[], input.as_bytes());
    let row = view.lines().find(|l| l.contains("cargo test")).unwrap_or_else(|| panic!("no call row:\n{view}"));
    assert!(row.ends_with("· 2.5s"), "the duration stays at the end of a cut command: {row:?}");
    assert!(row.contains('…'), "the command is cut: {row:?}");
    let out = run_raw(&["--format", "html", "--no-observed-at"], input.as_bytes());
    let page = String::from_utf8(out.stdout).expect("UTF-8");
    assert!(page.contains("<span class=\"dur\">2.5s</span>"), "the page says the same duration");
    assert!(!page.contains(">0ms<"), "no 0ms on the page");
}

#[test]
fn the_cut_short_footer_says_which_cause() {
    let open = "{\"type\":\"thread.started\",\"thread_id\":\"t1\"}\n{\"type\":\"turn.started\"}\n";
    assert!(pretty_at("100", &[], open.as_bytes()).contains("cut short: a turn was still open"));
    let no_newline = CODEX_OK.trim_end();
    assert!(pretty_at("100", &[], no_newline.as_bytes()).contains("cut short: its last line had no newline"));
    assert!(!pretty_at("100", &[], CODEX_OK.as_bytes()).contains("cut short"));
    // Text after the turn's end opens a turn again (without a turn start): the fold's reason,
    // not a missing newline.
    let reopened = concat!(
        r#"{"type":"step_start","timestamp":1,"sessionID":"ses_1","part":{"type":"step-start"}}"#,
        "\n",
        r#"{"type":"step_finish","timestamp":2,"sessionID":"ses_1","part":{"type":"step-finish","reason":"stop","tokens":{"input":6,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}}}"#,
        "\n",
        r#"{"type":"text","timestamp":3,"sessionID":"ses_1","part":{"type":"text","text":"DONE"}}"#,
        "\n",
    );
    let ended = run_raw(&["--no-observed-at"], reopened.as_bytes());
    assert!(String::from_utf8_lossy(&ended.stdout).contains(r#""complete":false"#), "the fold: a turn open");
    assert!(pretty_at("100", &[], reopened.as_bytes()).contains("cut short: a turn was still open"));
}

#[test]
fn raw_on_a_line_of_many_events_keeps_memory_a_small_multiple_of_the_line() {
    // One 40 KiB line of 1,500 text blocks: 1,500 events, each written with the line again.
    let blocks: Vec<Value> = (0..1500).map(|i| json!({"type":"text","text":format!("w{i}")})).collect();
    let line = json!({"type":"assistant","message":{"id":"m1","model":"claude-sonnet-5","role":"assistant","content":blocks},"session_id":"s"}).to_string();
    let mut child =
        bin().args(["--no-observed-at", "--raw"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let counter = std::thread::spawn(move || {
        let (mut n, mut buf, mut lines) = (0usize, vec![0u8; 1 << 16], 0usize);
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => return (n, lines),
                Ok(k) => {
                    n += k;
                    lines += buf[..k].iter().filter(|&&b| b == b'\n').count();
                }
            }
        }
    });
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(format!("{line}\n").as_bytes()).expect("write");
    stdin.write_all(b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n").expect("write");
    stdin.flush().expect("flush");
    // Measured while the process is alive (stdin still open, the line done).
    std::thread::sleep(Duration::from_millis(200));
    let deadline = std::time::Instant::now() + TIMEOUT;
    let mut hwm = vm_hwm_kib(child.id());
    while std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        let now = vm_hwm_kib(child.id());
        if now == hwm {
            break;
        }
        hwm = now;
    }
    drop(stdin);
    assert_eq!(child.wait().expect("wait").code(), Some(0));
    let (written, lines) = counter.join().expect("counter");
    assert!(lines >= 1500, "every event written ({lines} lines)");
    assert!(written > 1500 * line.len(), "each with the raw line ({written} bytes)");
    // Before: every event held its own copy of the line, and the whole output was gathered
    // before any of it was written (60+ MiB for this line).
    assert!(hwm < 24 * 1024, "peak RSS {hwm} KiB for one {} KiB line", line.len() >> 10);
}

#[test]
fn output_dir_writes_each_inputs_pages_when_that_input_is_done() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = dir.path().join("a.jsonl");
    std::fs::write(&first, codex_session("s-first", "first input")).expect("write");
    let fifo = dir.path().join("b.jsonl");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).expect("path");
    // SAFETY: mkfifo(3) on a NUL-terminated path in a fresh temporary folder.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let pages = dir.path().join("pages");
    let mut child = bin()
        .args(["--format", "html", "--no-observed-at", "--output-dir"])
        .arg(&pages)
        .arg(&first)
        .arg(&fifo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut writer = std::fs::OpenOptions::new().write(true).open(&fifo).expect("open the FIFO");
    writer.write_all(codex_session("s-second", "second input").as_bytes()).expect("write");
    // The second input is still open: the first one's page is there already.
    let rx = stdout_lines(&mut child);
    let listed = rx.recv_timeout(TIMEOUT).expect("the first page's path");
    assert!(listed.ends_with("s-first.html"), "{listed}");
    assert!(std::fs::read_to_string(&listed).expect("page").contains("first input"));
    assert!(!pages.join("s-second.html").exists(), "the open input's page waits for its end");
    drop(writer);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    assert!(std::fs::read_to_string(pages.join("s-second.html")).expect("page").contains("second input"));
}

#[test]
fn output_dir_puts_a_session_resumed_in_a_later_file_on_its_one_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, c) = (dir.path().join("1.jsonl"), dir.path().join("2.jsonl"), dir.path().join("3.jsonl"));
    std::fs::write(&a, codex_session("s-resumed", "before the resume")).expect("write");
    std::fs::write(&b, codex_session("s-other", "another session")).expect("write");
    std::fs::write(&c, codex_session("s-resumed", "after the resume")).expect("write");
    let pages = dir.path().join("pages");
    let out = bin()
        .args(["--format", "html", "--no-observed-at", "--output-dir"])
        .arg(&pages)
        .args([&a, &b, &c])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0), "{}", stderr_of(&out));
    let listed = String::from_utf8(out.stdout).expect("UTF-8");
    assert_eq!(listed.lines().count(), 2, "each page listed once: {listed}");
    let page = std::fs::read_to_string(pages.join("s-resumed.html")).expect("page");
    assert_eq!(page.matches("<section class=\"session\"").count(), 2, "both parts on one page");
    assert!(page.contains("before the resume") && page.contains("after the resume"));
    assert_eq!(pages_in(&pages).len(), 2);
}
