//! `agentnorm diagnostics`: the coalesced view of SPEC §5, as a user meets it — one event per
//! `dedupe_key` with the right count, plugins and raw lines, over stdin, files, folders and
//! compressed logs, with the normalizer's exit codes.

use std::io::Write;
use std::process::{Output, Stdio};

use serde_json::Value;

mod common;
use common::{bin, output_events as events, run_raw};

/// Runs `agentnorm diagnostics` with `args`, `input` on stdin.
fn run(args: &[&str], input: &[u8]) -> Output {
    run_raw(&[&["diagnostics"], args].concat(), input)
}

fn by_key<'a>(evs: &'a [Value], key: &str) -> &'a Value {
    evs.iter().find(|e| e["dedupe_key"] == key).unwrap_or_else(|| panic!("no {key} in {evs:#?}"))
}

const PLUGIN_A: &str = r#"2026-04-09T14:20:45.537513Z  WARN codex_core::plugins::manager: failed to load plugin: plugin is not installed plugin="github@openai-curated" path=/tmp/p"#;
const PLUGIN_A2: &str = r#"2026-04-09T14:20:46.000001Z  WARN codex_core::plugins::manager: failed to load plugin: plugin is not installed plugin="github@openai-curated" path=/tmp/p"#;
const PLUGIN_B: &str = "\u{1b}[2m2026-04-09T14:20:45.600000Z\u{1b}[0m \u{1b}[33m WARN\u{1b}[0m codex_core::plugins::manager: plugin is not installed plugin=browser-use";
const HELPER: &str =
    "WARNING: proceeding, even though we could not create PATH aliases: Operation not permitted (os error 1)";

/// A Codex stream with its stderr merged in (`2>&1`): the warnings repeat on every start.
fn codex_with_stderr() -> String {
    [
        PLUGIN_A,
        HELPER,
        r#"{"type":"thread.started","thread_id":"th-diag-1"}"#,
        r#"{"type":"turn.started"}"#,
        PLUGIN_A,
        PLUGIN_B,
        r#"{"type":"error","message":"Reconnecting... 1/5 (stream disconnected)"}"#,
        r#"{"type":"error","message":"Reconnecting... 2/5 (stream disconnected)"}"#,
        PLUGIN_A2,
        HELPER,
        r#"{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"done"}}"#,
        r#"{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":3}}"#,
    ]
    .join("\n")
        + "\n"
}

#[test]
fn repeated_warnings_become_one_event_per_key() {
    let out = run(&[], codex_with_stderr().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let evs = events(&out);
    let keys: Vec<&str> = evs.iter().map(|e| e["dedupe_key"].as_str().unwrap()).collect();
    assert_eq!(
        keys,
        [
            "codex.plugin.not-installed|github@openai-curated",
            "codex.path.helper-binary",
            "codex.plugin.not-installed|browser-use",
            "codex.reconnecting",
        ],
        "first-seen order, one per key"
    );
    assert!(evs.iter().all(|e| e["type"] == "diagnostic"));

    let a = by_key(&evs, "codex.plugin.not-installed|github@openai-curated");
    assert_eq!(a["count"], 3);
    assert_eq!(a["plugins"], serde_json::json!(["github@openai-curated"]));
    assert_eq!(a["raw"], format!("{PLUGIN_A}\n{PLUGIN_A2}"), "every distinct line once, in order");
    assert_eq!((a["first_line"].as_u64(), a["last_line"].as_u64()), (Some(1), Some(9)));
    assert_eq!(a["level"], "warning");
    assert_eq!(a["dialect"], "codex", "lines before the dialect was fixed do not disagree");

    let h = by_key(&evs, "codex.path.helper-binary");
    assert_eq!(h["count"], 2);
    assert_eq!(h["raw"], HELPER);
    assert_eq!((h["first_line"].as_u64(), h["last_line"].as_u64()), (Some(2), Some(10)));
    assert_eq!(h["plugins"], serde_json::json!([]));

    let b = by_key(&evs, "codex.plugin.not-installed|browser-use");
    assert_eq!(b["count"], 1);
    assert_eq!(b["raw"], PLUGIN_B, "raw is the line as read, escapes included");

    let r = by_key(&evs, "codex.reconnecting");
    assert_eq!(r["count"], 2);
    assert_eq!(r["message"], "Reconnecting... 1/5 (stream disconnected)", "the first message");
    assert_eq!(r["raw"].as_str().unwrap().lines().count(), 2);
    assert_eq!(r["session_id"], "th-diag-1");

    for e in &evs {
        assert!(e.get("observed_at").is_none(), "no observed_at in this view: {e}");
        assert!(e.get("line").is_none(), "first_line/last_line instead of line: {e}");
        assert!(e.get("source").is_none(), "stdin has no source: {e}");
        assert!(!e.to_string().contains("null"));
        // Reads back into the typed enum.
        serde_json::from_value::<agentnorm::Event>(e.clone()).unwrap();
    }
}

#[test]
fn account_trouble_lines_are_recognised_through_the_cli() {
    let input = "\u{1b}[31mYou\u{2019}ve hit your usage limit. Upgrade to Pro or try again in 4 days.\u{1b}[0m\n\
                 Claude AI usage limit reached|1750708800\n\
                 Invalid API key \u{b7} Please run /login\n\
                 Not logged in\n\
                 Credit balance is too low\n\
                 Logged in as someone@example.com\n";
    let out = run(&[], input.as_bytes());
    assert_eq!(out.status.code(), Some(0));
    let evs = events(&out);
    let keys: Vec<&str> = evs.iter().map(|e| e["dedupe_key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["usage.limit", "auth.login-required", "usage.credits"], "the ordinary line is no diagnostic");
    let limit = by_key(&evs, "usage.limit");
    assert_eq!(limit["count"], 2);
    assert_eq!(limit["level"], "error");
    assert!(limit["message"].as_str().unwrap().starts_with("You\u{2019}ve hit your usage limit"));
    assert_eq!(limit["raw"].as_str().unwrap().lines().count(), 2);
    assert_eq!(by_key(&evs, "auth.login-required")["count"], 2);
    assert_eq!(by_key(&evs, "usage.credits")["count"], 1);
}

#[test]
fn files_folders_and_compressed_logs() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    // a.jsonl: plugin A twice, helper once. b.jsonl.gz: plugin A once more. c.txt: not a log.
    std::fs::write(logs.join("a.jsonl"), format!("{PLUGIN_A}\n{HELPER}\n{PLUGIN_A}\n")).unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(format!("{{\"type\":\"turn.started\"}}\n{PLUGIN_A2}\n").as_bytes()).unwrap();
    std::fs::write(logs.join("b.jsonl.gz"), gz.finish().unwrap()).unwrap();
    std::fs::write(logs.join("c.txt"), format!("{HELPER}\n")).unwrap();

    let out = run(&["--no-observed-at", logs.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let evs = events(&out);
    assert_eq!(evs.len(), 2);
    let a = by_key(&evs, "codex.plugin.not-installed|github@openai-curated");
    assert_eq!(a["count"], 3);
    assert!(a.get("source").is_none(), "from two files: no source");
    assert_eq!((a["first_line"].as_u64(), a["last_line"].as_u64()), (Some(1), Some(2)), "lines of their own files");
    assert_eq!(a["raw"], format!("{PLUGIN_A}\n{PLUGIN_A2}"));
    let h = by_key(&evs, "codex.path.helper-binary");
    assert_eq!(h["count"], 1, "c.txt is not walked");
    assert_eq!(h["source"], logs.join("a.jsonl").display().to_string(), "from one file: its source");

    // Named files in order, stdin ("-") among them.
    let out = run(&[logs.join("b.jsonl.gz").to_str().unwrap(), "-"], format!("{HELPER}\n").as_bytes());
    let evs = events(&out);
    assert_eq!(evs.len(), 2);
    assert_eq!(evs[0]["dedupe_key"], "codex.plugin.not-installed|github@openai-curated");
    assert_eq!(evs[0]["source"], logs.join("b.jsonl.gz").display().to_string());
    assert!(evs[1].get("source").is_none());
}

#[test]
fn unreadable_input_is_exit_2_and_the_others_still_count() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.jsonl");
    std::fs::write(&good, format!("{HELPER}\n")).unwrap();
    let missing = dir.path().join("missing.jsonl");
    let out = run(&[missing.to_str().unwrap(), good.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("missing.jsonl"));
    let evs = events(&out);
    assert_eq!(evs.len(), 1);
    assert_eq!(evs[0]["dedupe_key"], "codex.path.helper-binary");
}

#[test]
fn no_diagnostics_is_no_output() {
    let out = run(&[], b"{\"type\":\"thread.started\",\"thread_id\":\"t\"}\nplain text nobody knows\n\n");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty());
    assert!(out.stderr.is_empty());
}

#[test]
fn dialect_option_is_checked() {
    let out = run(&["--dialect", "codex"], format!("{HELPER}\n").as_bytes());
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(events(&out)[0]["dialect"], "codex", "a forced dialect is known from the first line");
    let out = run(&["--dialect", "nope"], b"");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn broken_pipe_is_success() {
    // Many distinct keys (one tracing target each), so the output is far larger than a pipe.
    let input: String = (0..20_000)
        .map(|i| format!("2026-05-01T10:00:00.000000Z  WARN codex_core::target_{i}: something happened {i}\n"))
        .collect();
    let mut child =
        bin().arg("diagnostics").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn help_names_the_subcommand() {
    let out = bin().args(["diagnostics", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("dedupe_key") && help.contains("--dialect") && help.contains("--no-observed-at"), "{help}");
}
