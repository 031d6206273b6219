//! The command line as a user meets it: exit codes, broken pipe, line endings, inputs.

use std::io::{Read, Write};
use std::process::{Output, Stdio};

mod common;
use common::{bin, output_events as events, output_text, run_raw as run, stdout_lines};

const CODEX_OK: &str = r#"{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"done"}}
{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":3}}
"#;

#[test]
fn success_is_exit_0_and_every_line_is_named() {
    let out = run(&["--no-observed-at"], CODEX_OK.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty());
    let evs = events(&out);
    assert_eq!(evs.first().unwrap()["type"], "run_started");
    let end = evs.last().unwrap();
    assert_eq!(end["type"], "run_ended");
    assert_eq!(end["lines"], 4);
    assert_eq!(end["complete"], true);
    for n in 1..=4 {
        assert!(evs.iter().any(|e| e["line"] == n), "line {n} named");
    }
    assert!(evs.iter().all(|e| e.get("observed_at").is_none()));
}

#[test]
fn observed_at_is_written_by_default() {
    let out = run(&[], CODEX_OK.as_bytes());
    let evs = events(&out);
    let at = evs[1]["observed_at"].as_str().unwrap();
    assert!(at.ends_with('Z') && at.len() == 24, "{at}");
}

#[test]
fn strict_exits_1_on_unknown_lines() {
    let input = format!("{CODEX_OK}not json at all\n");
    assert_eq!(run(&[], input.as_bytes()).status.code(), Some(0));
    let out = run(&["--strict"], input.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let evs = events(&out);
    let unknown = evs.iter().find(|e| e["type"] == "unknown").unwrap();
    assert_eq!(unknown["reason"], "not_json");
    assert_eq!(unknown["dialect"], "codex", "a non-JSON line carries the stream's dialect");
    assert_eq!(evs.last().unwrap()["unknown"], 1);
}

#[test]
fn fail_on_error_exits_3_on_failed_or_open_turns() {
    let failed = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.started\"}\n{\"type\":\"turn.failed\",\"error\":{\"message\":\"boom\"}}\n";
    assert_eq!(run(&[], failed.as_bytes()).status.code(), Some(0));
    assert_eq!(run(&["--fail-on-error"], failed.as_bytes()).status.code(), Some(3));
    let open = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.started\"}\n";
    let out = run(&["--fail-on-error"], open.as_bytes());
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(events(&out).last().unwrap()["complete"], false);
    assert_eq!(run(&["--fail-on-error"], CODEX_OK.as_bytes()).status.code(), Some(0));
}

#[test]
fn bad_usage_exits_2() {
    let out = run(&["--only", "no_such_type"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no_such_type"));
    assert_eq!(run(&["--dialect", "klingon"], b"").status.code(), Some(2));
}

#[test]
fn unreadable_input_exits_2_and_the_others_are_processed() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.jsonl");
    std::fs::write(&good, CODEX_OK).unwrap();
    let missing = dir.path().join("missing.jsonl");
    let out = run(&["--no-observed-at", missing.to_str().unwrap(), good.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.jsonl"));
    let evs = events(&out);
    assert_eq!(evs.iter().filter(|e| e["type"] == "run_started").count(), 1);
    assert_eq!(evs[0]["source"], good.to_str().unwrap());
}

#[test]
fn broken_pipe_is_a_normal_end() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.jsonl");
    let mut f = std::fs::File::create(&big).unwrap();
    for i in 0..100_000 {
        writeln!(
            f,
            r#"{{"type":"item.completed","item":{{"id":"i{i}","type":"agent_message","text":"some text {i}"}}}}"#
        )
        .unwrap();
    }
    drop(f);
    let mut child = bin().arg(&big).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    stdout.read_exact(&mut first).unwrap();
    drop(stdout); // like `| head -c 64`
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(stderr, "");
}

#[test]
fn crlf_blank_lines_and_a_missing_last_newline() {
    let input = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\r\n\r\n   \n{\"type\":\"turn.started\"}";
    let out = run(&["--no-observed-at"], input.as_bytes());
    let evs = events(&out);
    assert_eq!(evs[1]["type"], "session_started");
    assert_eq!(evs[1]["session_id"], "t", "the \\r is not part of the frame");
    assert_eq!(evs[2]["type"], "turn_started");
    assert_eq!(evs[2]["line"], 4);
    let end = evs.last().unwrap();
    assert_eq!(end["lines"], 4);
    assert_eq!(end["complete"], false, "no final newline");
    assert_eq!(evs.len(), 4, "blank lines yield nothing");
}

#[test]
fn a_bom_is_skipped() {
    let out = run(&["--no-observed-at"], b"\xEF\xBB\xBF{\"type\":\"turn.started\"}\n");
    assert_eq!(events(&out)[1]["type"], "turn_started");
}

#[test]
fn only_and_exclude_filter_every_type() {
    let out = run(&["--no-observed-at", "--only", "output_delta,run_ended"], CODEX_OK.as_bytes());
    let types: Vec<_> = events(&out).iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect();
    assert_eq!(types, ["output_delta", "run_ended"]);
    assert_eq!(events(&out).last().unwrap()["events"], 1, "events counts what was written");
    let out = run(&["--no-observed-at", "--exclude", "run_started,run_ended"], CODEX_OK.as_bytes());
    assert!(events(&out).iter().all(|e| e["type"] != "run_started" && e["type"] != "run_ended"));
}

#[test]
fn raw_adds_the_source_line() {
    let out = run(&["--no-observed-at", "--raw"], CODEX_OK.as_bytes());
    let evs = events(&out);
    let first_line = CODEX_OK.lines().next().unwrap();
    assert_eq!(evs[1]["raw"], first_line);
}

#[test]
fn max_line_bytes_bounds_a_line() {
    let long =
        format!("{{\"type\":\"turn.started\",\"pad\":\"{}\"}}\n{{\"type\":\"turn.started\"}}\n", "x".repeat(5000));
    let out = run(&["--no-observed-at", "--max-line-bytes", "1000"], long.as_bytes());
    let evs = events(&out);
    assert_eq!(evs[1]["type"], "unknown");
    assert_eq!(evs[1]["reason"], "line_too_long");
    assert_eq!(evs[1]["line"], 1);
    assert!(evs[1].get("raw").is_none());
    assert_eq!(evs[2]["type"], "turn_started");
    assert_eq!(evs[2]["line"], 2);
}

#[test]
fn dialect_can_be_forced() {
    let out = run(&["--no-observed-at", "--dialect", "claude"], CODEX_OK.as_bytes());
    let evs = events(&out);
    assert!(evs.iter().filter(|e| e.get("line").is_some()).all(|e| e["type"] == "unknown"));
}

#[test]
fn folders_are_walked_in_sorted_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".hidden/2026")).unwrap();
    std::fs::write(dir.path().join("b.jsonl"), CODEX_OK).unwrap();
    std::fs::write(dir.path().join(".hidden/2026/a.ndjson"), CODEX_OK).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not a log").unwrap();
    let out = run(&["--no-observed-at", dir.path().to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0));
    let sources: Vec<String> = events(&out)
        .iter()
        .filter(|e| e["type"] == "run_started")
        .map(|e| e["source"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sources.len(), 2);
    assert!(sources[0].ends_with(".hidden/2026/a.ndjson"));
    assert!(sources[1].ends_with("b.jsonl"));
}

#[test]
fn detect_names_each_input() {
    let dir = tempfile::tempdir().unwrap();
    let codex = dir.path().join("c.jsonl");
    std::fs::write(&codex, CODEX_OK).unwrap();
    let claude = dir.path().join("k.jsonl");
    std::fs::write(
        &claude,
        "Reading prompt...\n{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\",\"tools\":[]}\n",
    )
    .unwrap();
    let empty = dir.path().join("e.jsonl");
    std::fs::write(&empty, "").unwrap();
    let out = bin().args(["detect"]).args([&codex, &claude, &empty]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("codex\t{}", codex.display()));
    assert_eq!(lines[1], format!("claude\t{}", claude.display()));
    assert_eq!(lines[2], format!("unknown\t{}", empty.display()));
}

#[test]
fn schema_names_every_event_type() {
    let out = bin().arg("schema").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    for t in agentnorm::Event::TYPE_NAMES {
        assert!(text.contains(&format!("\"{t}\"")), "{t} in schema");
    }
    assert!(schema.is_object());
}

#[test]
fn stderr_lines_become_diagnostics() {
    let input = format!(
        "{}2026-04-09T14:20:45.537513Z  WARN codex_core::plugins::manager: failed to load plugin: plugin is not installed plugin=\"github@openai-curated\" path=/tmp/plugin\n",
        CODEX_OK
    );
    let out = run(&["--no-observed-at"], input.as_bytes());
    let evs = events(&out);
    let d = evs.iter().find(|e| e["type"] == "diagnostic").unwrap();
    assert_eq!(d["code"], "codex.plugin.not-installed");
    assert_eq!(d["dedupe_key"], "codex.plugin.not-installed|github@openai-curated");
    assert_eq!(d["plugins"], serde_json::json!(["github@openai-curated"]));
    assert_eq!(d["level"], "warning");
    assert_eq!(d["count"], 1);
    assert_eq!(d["line"], 5);
    assert_eq!(d["dialect"], "codex");
}

#[test]
fn live_input_is_flushed_line_by_line() {
    let mut child = bin()
        .arg("--no-observed-at")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let rx = stdout_lines(&mut child);
    // The writer keeps the pipe open: the event must arrive without waiting for more input.
    stdin.write_all(b"{\"type\":\"thread.started\",\"thread_id\":\"live\"}\n").unwrap();
    stdin.flush().unwrap();
    let timeout = std::time::Duration::from_secs(10);
    assert!(rx.recv_timeout(timeout).unwrap().contains("run_started"));
    assert!(rx.recv_timeout(timeout).unwrap().contains("\"session_id\":\"live\""));
    stdin.write_all(b"{\"type\":\"turn.started\"}\n").unwrap();
    stdin.flush().unwrap();
    assert!(rx.recv_timeout(timeout).unwrap().contains("turn_started"));
    drop(stdin);
    assert!(rx.recv_timeout(timeout).unwrap().contains("run_ended"));
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn a_pretty_printed_document_is_one_frame() {
    let doc = "\n{\n  \"type\": \"result\",\n  \"subtype\": \"success\",\n  \"is_error\": false,\n  \"result\": \"hi\",\n  \"session_id\": \"s\"\n}\n{\"type\":\"turn.started\"}\n";
    let out = run(&["--no-observed-at"], doc.as_bytes());
    let evs = events(&out);
    assert_eq!(evs[1]["type"], "turn_completed");
    assert_eq!((evs[1]["line"].as_u64(), evs[1]["line_end"].as_u64()), (Some(2), Some(8)));
    assert_eq!(evs[2]["type"], "turn_started");
    assert_eq!(evs[2]["line"], 9);
    assert!(evs[2].get("line_end").is_none());
    assert_eq!(evs.last().unwrap()["lines"], 9);
}

#[test]
fn an_unfinished_document_is_read_line_by_line() {
    let doc = "{\n  \"type\": \"result\",\n";
    let out = run(&["--no-observed-at"], doc.as_bytes());
    let evs = events(&out);
    let lines: Vec<u64> = evs.iter().filter_map(|e| e["line"].as_u64()).collect();
    assert_eq!(lines, [1, 2]);
    assert_eq!((evs[1]["type"].as_str(), evs[1]["reason"].as_str()), (Some("unknown"), Some("invalid_json")));
    assert_eq!((evs[2]["type"].as_str(), evs[2]["reason"].as_str()), (Some("unknown"), Some("not_json")));
}

#[test]
fn folder_runs_read_nested_hidden_and_compressed_logs_and_report_unreadable_ones() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".codex/sessions/2026/11/30")).unwrap();
    std::fs::create_dir_all(root.join("z")).unwrap();
    std::fs::write(root.join(".codex/sessions/2026/11/30/rollout-1.jsonl"), CODEX_OK).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(CODEX_OK.as_bytes()).unwrap();
    std::fs::write(root.join("a.jsonl.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(root.join("b.ndjson.zst"), zstd::encode_all(CODEX_OK.as_bytes(), 3).unwrap()).unwrap();
    // Gzip's magic bytes, then garbage: unreadable whoever runs the test (root included).
    std::fs::write(root.join("c.jsonl.gz"), b"\x1f\x8b\x08\x00garbage that is not deflate").unwrap();
    std::fs::write(root.join("z/d.jsonl"), CODEX_OK).unwrap();
    std::fs::write(root.join("z/notes.md"), "# not a log").unwrap();
    for threads in ["1", "2", "8"] {
        let out = run(&["--no-observed-at", "-j", threads, root.to_str().unwrap()], b"");
        assert_eq!(out.status.code(), Some(2), "an unreadable file makes the exit status 2");
        assert!(String::from_utf8_lossy(&out.stderr).contains("c.jsonl.gz"));
        let evs = events(&out);
        let sources: Vec<String> = evs
            .iter()
            .filter(|e| e["type"] == "run_started")
            .map(|e| e["source"].as_str().unwrap().strip_prefix(root.to_str().unwrap()).unwrap().to_owned())
            .collect();
        assert_eq!(
            sources,
            ["/.codex/sessions/2026/11/30/rollout-1.jsonl", "/a.jsonl.gz", "/b.ndjson.zst", "/z/d.jsonl"]
        );
        assert_eq!(evs.iter().filter(|e| e["type"] == "output_delta").count(), 4, "each readable file read whole");
        // Each file is its own stream: run_ended follows its own run_started.
        let types: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types.iter().filter(|t| **t == "run_ended").count(), 4);
    }
}

#[test]
fn output_order_does_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..12 {
        let body = CODEX_OK.replace("done", &format!("file {i} ").repeat(1 + i * 500));
        std::fs::write(dir.path().join(format!("f{i:02}.jsonl")), body).unwrap();
    }
    let one = run(&["--no-observed-at", "-j", "1", dir.path().to_str().unwrap()], b"");
    let many = run(&["--no-observed-at", "-j", "4", dir.path().to_str().unwrap()], b"");
    assert_eq!(one.status.code(), Some(0));
    assert_eq!(one.stdout, many.stdout);
}

#[test]
fn follow_reads_a_growing_file_until_interrupted() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.jsonl");
    std::fs::write(&path, "{\"type\":\"thread.started\",\"thread_id\":\"f\"}\n").unwrap();
    let mut child = bin().args(["--no-observed-at", "--follow"]).arg(&path).stdout(Stdio::piped()).spawn().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let timeout = std::time::Duration::from_secs(10);
    assert!(rx.recv_timeout(timeout).unwrap().contains("run_started"));
    assert!(rx.recv_timeout(timeout).unwrap().contains("session_started"));
    let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
    f.write_all(b"{\"type\":\"turn.started\"}\n").unwrap();
    assert!(rx.recv_timeout(timeout).unwrap().contains("turn_started"));
    // SIGINT: the output so far is flushed, run_ended written, exit 130.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    assert!(rx.recv_timeout(timeout).unwrap().contains("run_ended"));
    assert_eq!(child.wait().unwrap().code(), Some(130));
}

#[test]
fn follow_takes_one_file() {
    let out = run(&["--follow"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--follow"));
}

#[test]
fn sigint_while_stdin_is_blocked_exits_130_with_the_output_flushed() {
    use std::io::BufRead;
    let mut child = bin().arg("--no-observed-at").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"type\":\"thread.started\",\"thread_id\":\"x\"}\n").unwrap();
    stdin.flush().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let timeout = std::time::Duration::from_secs(10);
    assert!(rx.recv_timeout(timeout).unwrap().contains("run_started"));
    assert!(rx.recv_timeout(timeout).unwrap().contains("session_started"));
    // The writer keeps stdin open: the read blocks, and SIGINT must still end the run.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let start = std::time::Instant::now();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    drop(stdin);
}

#[test]
fn deltas_without_a_message_start_are_not_repeated_by_the_whole_message() {
    let input = r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}},"session_id":"s","uuid":"u1"}
{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" there"}},"session_id":"s","uuid":"u1"}
{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"text","text":"Hi there"}],"usage":{"input_tokens":1,"output_tokens":1}},"session_id":"s","uuid":"u2"}
{"type":"assistant","message":{"id":"m2","model":"x","content":[{"type":"text","text":"Next"}],"usage":{"input_tokens":1,"output_tokens":1}},"session_id":"s","uuid":"u3"}
"#;
    let out = run(&["--no-observed-at"], input.as_bytes());
    let text: String = events(&out)
        .iter()
        .filter(|e| e["type"] == "output_delta")
        .map(|e| e["text"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(text, "Hi thereNext");
}

#[test]
fn hostile_numbers_never_become_null_or_wrap() {
    let input = r#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","rateLimitType":"five_hour","utilization":1e305},"session_id":"s"}
{"type":"assistant","session_id":"s","message":{"id":"m1","model":"x","content":[],"usage":{"input_tokens":18446744073709551615,"cache_read_input_tokens":5}}}
"#;
    let out = run(&["--no-observed-at"], input.as_bytes());
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(!text.contains("null"), "{text}");
    let evs = events(&out);
    let usage = evs.iter().find(|e| e["type"] == "usage").unwrap();
    assert!(usage["usage"].get("context").is_none(), "an overflowing sum is left out");
}

fn output_text_of(out: &Output) -> String {
    output_text(&events(out))
}

#[test]
fn whole_messages_without_streamed_fragments_are_never_dropped_as_repeats() {
    // Cursor without partial output: each flush is the only copy of its text.
    let input = r#"{"type":"system","subtype":"init","apiKeySource":"login","cwd":"/w","session_id":"c1","model":"m","permissionMode":"default"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Running the tests now. Done."}]},"session_id":"c1","model_call_id":"mc1","timestamp_ms":1774272397614}
{"type":"tool_call","subtype":"started","call_id":"t1","tool_call":{"shellToolCall":{"args":{"command":"ls"}}},"session_id":"c1"}
{"type":"tool_call","subtype":"completed","call_id":"t1","tool_call":{"shellToolCall":{"args":{"command":"ls"},"result":{"success":{"exitCode":0,"stdout":"a"}}}},"session_id":"c1"}
{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."}]},"session_id":"c1"}
"#;
    assert_eq!(output_text_of(&run(&["--no-observed-at"], input.as_bytes())), "Running the tests now. Done.Done.");
}

#[test]
fn a_whole_message_repeating_deltas_up_to_white_space_is_written_once() {
    let input = r#"{"type":"init","session_id":"g1","model":"gemini"}
{"type":"message","role":"assistant","content":"Hello ","delta":true}
{"type":"message","role":"assistant","content":"world\n","delta":true}
{"type":"message","role":"assistant","content":"Hello world"}
"#;
    assert_eq!(output_text_of(&run(&["--no-observed-at"], input.as_bytes())), "Hello world\n");
}

#[test]
fn a_forced_dialect_does_not_turn_any_object_into_a_turn() {
    let out = run(&["--no-observed-at", "--dialect", "gemini"], b"{}\n{\"foo\":1}\n");
    let evs = events(&out);
    assert!(evs[1..3].iter().all(|e| e["type"] == "unknown"), "{evs:?}");
}

#[test]
fn timestamps_are_rfc3339_utc_or_left_out() {
    let input = r#"{"timestamp":"2026-01-01T05:00:00+05:00","type":"event_msg","payload":{"type":"agent_message","message":"hi"}}
{"timestamp":"2026-99-99 whatever","type":"event_msg","payload":{"type":"agent_message","message":"ho"}}
{"timestamp":"2026-01-01T00:00:01.5Z","type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{"primary":{"used_percent":5.0,"window_minutes":300,"resets_at":"soon"}}}}
"#;
    let evs = events(&run(&["--no-observed-at"], input.as_bytes()));
    assert_eq!(evs[1]["at"], "2026-01-01T00:00:00.000Z");
    assert!(evs[2].get("at").is_none());
    assert_eq!(evs[3]["at"], "2026-01-01T00:00:01.500Z");
    assert!(evs[3].get("resets_at").is_none(), "{}", evs[3]);
}

#[test]
fn no_null_outside_tool_input_even_in_questions() {
    let input = r#"{"type":"assistant","message":{"id":"m1","model":"x","content":[{"type":"tool_use","id":"t1","name":"AskUserQuestion","input":{"questions":[{"question":"Q?","header":null,"options":[null,"a"]}]}}]},"session_id":"s","uuid":"u"}
"#;
    let out = run(&["--no-observed-at"], input.as_bytes());
    let evs = events(&out);
    let ask = evs.iter().find(|e| e["type"] == "needs_input").unwrap();
    assert_eq!(ask["questions"], serde_json::json!([{"question": "Q?", "options": ["a"]}]));
    let started = evs.iter().find(|e| e["type"] == "tool_started").unwrap();
    assert!(started["input"]["questions"][0]["header"].is_null(), "the CLI's own arguments keep their nulls");
}

#[test]
fn a_call_completes_once() {
    let input = r#"{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"ls","status":"in_progress"}}
{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"ls","aggregated_output":"a","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"ls","aggregated_output":"a","exit_code":0,"status":"completed"}}
"#;
    let evs = events(&run(&["--no-observed-at"], input.as_bytes()));
    assert_eq!(evs.iter().filter(|e| e["type"] == "tool_completed").count(), 1);
    assert_eq!(
        evs.iter().filter(|e| e["line"] == 3).map(|e| e["type"].as_str().unwrap()).collect::<Vec<_>>(),
        ["heartbeat"]
    );
}

#[test]
fn an_empty_session_id_is_no_session() {
    let input = "{\"type\":\"thread.started\",\"thread_id\":\"\"}\n{\"type\":\"turn.started\"}\n";
    let evs = events(&run(&["--no-observed-at"], input.as_bytes()));
    assert!(evs.iter().all(|e| e.get("session_id").is_none_or(|s| s != "")), "{evs:?}");
}

/// A multi-MB stream with the splitter's edge cases scattered through it: every fixture
/// repeated (several dialects, CRLF fixtures included), a BOM at the start, BOMs and `\r` inside,
/// blank lines, a line longer than a chunk (over `--max-line-bytes` in one run), non-JSON text,
/// no final newline.
fn big_mixed_stream() -> Vec<u8> {
    let mut all = Vec::new();
    for dir in ["claude", "claude-transcript", "codex", "codex-legacy", "codex-rollout", "cursor", "opencode"] {
        for f in common::fixtures(dir) {
            let mut b = std::fs::read(common::root().join(f)).unwrap();
            if b.last() != Some(&b'\n') {
                b.push(b'\n');
            }
            all.extend(b);
        }
    }
    let mut s = b"\xEF\xBB\xBF".to_vec();
    let long = format!("{{\"type\":\"turn.started\",\"pad\":\"{}\"}}\n", "x".repeat(700_000));
    let mut i = 0;
    while s.len() < 5 << 20 {
        i += 1;
        s.extend_from_slice(&all);
        s.extend_from_slice(b"\n  \n\xEF\xBB\xBF{\"type\":\"turn.started\"}\r\nplain stderr text\r\n");
        s.extend_from_slice(
            b"{\"type\":\"result\",\"api_key\":\"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\"}\n",
        );
        if i % 5 == 2 {
            s.extend_from_slice(long.as_bytes());
        }
    }
    s.extend_from_slice(b"{\"type\":\"turn.started\"}\r");
    s
}

#[test]
fn all_cores_on_one_large_file_give_one_threads_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("big.jsonl");
    let data = big_mixed_stream();
    std::fs::write(&plain, &data).unwrap();
    let gz = dir.path().join("big.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&data).unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    // A pretty-printed document first, long enough to span chunks, then the same stream.
    let doc = dir.path().join("doc.jsonl");
    let mut d = b"{\n  \"session_id\": \"s\",\n  \"response\": \"ok\",\n  \"stats\": {}".to_vec();
    for i in 0..9000 {
        d.extend_from_slice(format!(",\n  \"pad{i}\": \"{}\"", "y".repeat(40)).as_bytes());
    }
    d.extend_from_slice(b"\n}\n");
    d.extend_from_slice(&data[3..]);
    std::fs::write(&doc, d).unwrap();
    let variants: [&[&str]; 4] =
        [&[], &["--max-line-bytes", "500000", "--raw"], &["--redact"], &["--format", "pretty", "--color", "never"]];
    for path in [&plain, &gz, &doc] {
        let p = path.to_str().unwrap();
        for extra in variants {
            let args = |j: &'static str| [&["--no-observed-at", "-j", j, p][..], extra].concat();
            let one = run(&args("1"), b"");
            assert_eq!(one.status.code(), Some(0), "{}", String::from_utf8_lossy(&one.stderr));
            assert!(one.stdout.len() > 64 << 10, "{extra:?}: {} bytes", one.stdout.len());
            for j in ["2", "3"] {
                let many = run(&args(j), b"");
                assert_eq!(many.status.code(), Some(0));
                assert!(one.stdout == many.stdout, "{p} {extra:?}: -j1 and -j{j} differ");
            }
        }
    }
    // The document was read as one frame (its events carry line_end).
    let evs = events(&run(&["--no-observed-at", "-j", "2", doc.to_str().unwrap()], b""));
    assert_eq!(evs[1]["line_end"].as_u64(), Some(9005), "{}", evs[1]);
}

#[test]
fn large_and_small_files_together_keep_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let data = big_mixed_stream();
    for (i, name) in ["a.jsonl", "c.jsonl"].iter().enumerate() {
        std::fs::write(dir.path().join(name), &data[i..]).unwrap();
    }
    for name in ["b.jsonl", "d.jsonl", "e.jsonl"] {
        std::fs::write(dir.path().join(name), CODEX_OK).unwrap();
    }
    let d = dir.path().to_str().unwrap();
    let one = run(&["--no-observed-at", "-j", "1", d], b"");
    assert_eq!(one.status.code(), Some(0));
    for j in ["2", "4"] {
        assert!(one.stdout == run(&["--no-observed-at", "-j", j, d], b"").stdout, "-j{j} differs");
    }
    let sources: Vec<String> = events(&one)
        .iter()
        .filter(|e| e["type"] == "run_started")
        .map(|e| e["source"].as_str().unwrap().rsplit('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(sources, ["a.jsonl", "b.jsonl", "c.jsonl", "d.jsonl", "e.jsonl"]);
}
