//! `--format pretty` as a person sees it: snapshots of every fixture, checks that nothing is
//! lost, and the terminal conventions (`--color`, `NO_COLOR`, `COLUMNS`, live flushing).
//!
//! Every `fixtures/<dialect>/<name>.jsonl` has two snapshots beside it: `<name>.pretty` (plain,
//! `--color never`) and `<name>.pretty-color` (`--color always`), both 100 columns wide (from
//! `COLUMNS`). `UPDATE_GOLDEN=1 cargo test --test pretty` rewrites them
//! (`UPDATE_GOLDEN=<dialect>` only that folder's).
//!
//! Besides the byte comparison, every fixture's view is checked against its NDJSON events: each
//! finished tool call has a headline with its outcome (`✓` or `✗` and its activity), each turn
//! end a footer, every word of the assistant text, every diagnostic code and every line not
//! understood is there; no row is wider than the terminal, and the coloured view is the plain
//! one plus SGR codes and nothing else.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::Value;
use unicode_width::UnicodeWidthStr;

mod common;
use common::{
    all_dialects, bin, first_difference, fixtures, of_type, root, run_path, run_raw, stdout_lines, strip_sgr, ty,
};

const WIDTH: usize = 100;

/// Runs `--format pretty` on `path` with `COLUMNS=100` and `NO_COLOR` unset.
fn pretty(path: &Path, color: &str) -> String {
    let out = bin()
        .args(["--format", "pretty", "--color", color])
        .arg(path)
        .env("COLUMNS", WIDTH.to_string())
        .env_remove("NO_COLOR")
        .output()
        .expect("running agentnorm");
    assert!(out.status.success(), "{}: {}", path.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("pretty output is UTF-8")
}

fn snapshot_path(fixture: &Path, ext: &str) -> PathBuf {
    let stem = fixture.file_stem().expect("file name").to_string_lossy().into_owned();
    root().join(fixture.with_file_name(format!("{stem}.{ext}")))
}

#[test]
fn snapshots_of_every_fixture() {
    let mut failures = Vec::new();
    for dialect in all_dialects() {
        let update = std::env::var("UPDATE_GOLDEN").is_ok_and(|v| v == "1" || v == dialect);
        for fixture in fixtures(&dialect) {
            for (ext, color) in [("pretty", "never"), ("pretty-color", "always")] {
                let actual = pretty(&fixture, color);
                let file = snapshot_path(&fixture, ext);
                if update {
                    std::fs::write(&file, &actual).expect("writing snapshot");
                    continue;
                }
                match std::fs::read_to_string(&file) {
                    Ok(expected) if expected == actual => {}
                    Ok(expected) => {
                        failures.push(format!("{}: {}", file.display(), first_difference(&expected, &actual)))
                    }
                    Err(e) => failures.push(format!(
                        "cannot read {} ({e}); run UPDATE_GOLDEN=1 cargo test --test pretty",
                        file.display()
                    )),
                }
            }
        }
    }
    assert!(failures.is_empty(), "pretty output differs:\n\n{}", failures.join("\n\n"));
}

/// The row without the subagent guides (`│ `) in front.
fn unguided(row: &str) -> &str {
    let mut r = row;
    while let Some(rest) = r.strip_prefix("│ ") {
        r = rest;
    }
    r
}

/// The words (runs of letters and digits) of `s`.
fn words(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_owned).collect()
}

#[test]
fn every_fixture_shows_every_call_turn_word_and_problem() {
    let mut failures = Vec::new();
    for fixture in common::all_dialects().iter().flat_map(|d| fixtures(d)) {
        let name = fixture.display().to_string();
        let evs = run_path(&fixture);
        let plain = pretty(&fixture, "never");
        let colour = pretty(&fixture, "always");
        if strip_sgr(&colour) != plain {
            failures.push(format!("{name}: the coloured view is not the plain one plus SGR codes"));
        }
        if plain.contains('\x1b') {
            failures.push(format!("{name}: escape in the plain view"));
        }
        for row in plain.lines() {
            if row.width() > WIDTH {
                failures.push(format!("{name}: row wider than {WIDTH}: {row}"));
            }
        }
        let rows: Vec<&str> = plain.lines().map(unguided).collect();
        // Each finished call: one headline `✓ <activity>` or `✗ <activity>`.
        let mut calls: HashMap<&str, (&str, &str)> = HashMap::new();
        let mut expected: BTreeMap<String, usize> = BTreeMap::new();
        for e in &evs {
            match ty(e) {
                "session_started" => calls.clear(),
                "tool_started" => {
                    calls.insert(
                        e["tool_id"].as_str().unwrap(),
                        (e["kind"].as_str().unwrap(), e["name"].as_str().unwrap()),
                    );
                }
                "tool_completed" => {
                    let (kind, tool) = calls[e["tool_id"].as_str().unwrap()];
                    let kind: agentnorm::event::ToolKind = serde_json::from_value(Value::from(kind)).unwrap();
                    let label = match kind {
                        agentnorm::event::ToolKind::Other => tool.to_owned(),
                        k => agentnorm::view::activity_label(k).to_owned(),
                    };
                    let mark = if e["ok"] == Value::Bool(true) { "✓" } else { "✗" };
                    *expected.entry(format!("{mark} {label}")).or_default() += 1;
                }
                _ => {}
            }
        }
        for (headline, n) in &expected {
            let seen = rows
                .iter()
                .filter(|r| {
                    r.strip_prefix(headline.as_str())
                        .is_some_and(|t| t.is_empty() || t.starts_with("  ") || t.starts_with(" · "))
                })
                .count();
            if seen != *n {
                failures.push(format!("{name}: {n} calls `{headline}`, {seen} headlines"));
            }
        }
        // Each turn end: a footer, or the failure.
        for (t, footer) in [("turn_completed", "─ turn done"), ("turn_failed", "✗ turn failed")] {
            let (n, seen) = (of_type(&evs, t).len(), rows.iter().filter(|r| r.starts_with(footer)).count());
            if n != seen {
                failures.push(format!("{name}: {n} {t}, {seen} footers `{footer}`"));
            }
        }
        // Every word the assistant wrote, every diagnostic, every line not understood.
        // A word wider than a row is broken across full rows.
        let joined: String =
            plain.lines().map(|r| if r.width() == WIDTH { r.to_owned() } else { format!("{r}\n") }).collect();
        let shown: BTreeSet<String> = words(&joined).union(&words(&plain)).cloned().collect();
        // Deltas in a row are one text; anything else between them separates two.
        let mut said = String::new();
        for e in &evs {
            match ty(e) {
                "output_delta" => said += e["text"].as_str().unwrap(),
                "usage" | "heartbeat" => {}
                _ => said.push('\n'),
            }
        }
        // Markdown syntax is no text: a fence's info string, an entity's name.
        let said: String = said.lines().filter(|l| !l.trim_start().starts_with("```")).collect::<Vec<_>>().join("\n");
        let said = said.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">");
        let missing: Vec<String> = words(&said).difference(&shown).cloned().collect();
        if !missing.is_empty() {
            failures.push(format!("{name}: assistant words missing: {missing:?}"));
        }
        for d in of_type(&evs, "diagnostic") {
            if !plain.contains(d["code"].as_str().unwrap()) {
                failures.push(format!("{name}: diagnostic {} missing", d["code"]));
            }
        }
        for u in of_type(&evs, "unknown") {
            let at = format!("? line {} not understood", u["line"]);
            if !rows.iter().any(|r| r.starts_with(&at)) {
                failures.push(format!("{name}: no `{at}`"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

const CODEX: &str = r#"{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"i0","type":"command_execution","command":"cargo test","aggregated_output":"ok\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"i1","type":"agent_message","text":"All **green**: the quick brown fox jumps over the lazy dog, twice over, and then once more for luck."}}
{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"output_tokens":30}}
"#;

fn stdout_of(out: &Output) -> String {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn colour_is_auto_off_in_a_pipe_forced_by_always_and_never_with_never() {
    let run = |args: &[&str], no_color: Option<&str>| {
        let mut c = bin();
        c.args(["--format", "pretty"]).args(args).stdin(Stdio::piped()).stdout(Stdio::piped());
        match no_color {
            Some(v) => c.env("NO_COLOR", v),
            None => c.env_remove("NO_COLOR"),
        };
        let mut child = c.spawn().unwrap();
        child.stdin.take().unwrap().write_all(CODEX.as_bytes()).unwrap();
        stdout_of(&child.wait_with_output().unwrap())
    };
    let plain = run(&[], None);
    assert!(plain.contains("✓ Run  cargo test") && !plain.contains('\x1b'), "{plain}");
    assert_eq!(run(&["--color", "auto"], None), plain);
    assert_eq!(run(&["--color", "never"], None), plain);
    let forced = run(&["--color", "always"], Some("1"));
    assert!(forced.contains("\x1b[32m✓\x1b[0m"), "{forced:?}");
    assert_eq!(strip_sgr(&forced), plain);
}

#[test]
fn text_is_wrapped_to_columns_and_the_default_is_100() {
    let at = |columns: Option<&str>| {
        let mut c = bin();
        c.args(["--format", "pretty", "--color", "never", "-"]);
        match columns {
            Some(v) => c.env("COLUMNS", v),
            None => c.env_remove("COLUMNS"),
        };
        // No controlling terminal (a test run from one would be as wide as it: see
        // tests/terminal.rs for that case).
        use std::os::unix::process::CommandExt as _;
        // SAFETY: setsid(2) in the child before exec, async-signal-safe, touching no memory.
        unsafe {
            c.pre_exec(|| {
                libc::setsid();
                Ok(())
            })
        };
        let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(CODEX.as_bytes()).unwrap();
        stdout_of(&child.wait_with_output().unwrap())
    };
    let narrow = at(Some("40"));
    assert!(narrow.lines().all(|l| l.width() <= 40), "{narrow}");
    assert!(narrow.lines().any(|l| l.width() > 30), "{narrow}");
    let text_rows = |s: &str| s.lines().filter(|l| l.contains("fox") || l.contains("luck")).count();
    assert!(text_rows(&narrow) >= 2, "{narrow}");
    let wide = at(None);
    assert!(wide.lines().all(|l| l.width() <= 100), "{wide}");
    assert_eq!(text_rows(&wide), 1, "one row at 100 columns: {wide}");
    assert_eq!(at(Some("nonsense")), wide);
}

#[test]
fn a_call_still_running_is_shown_live_and_completed_when_its_result_comes() {
    let mut child = bin()
        .args(["--format", "pretty", "--color", "never"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let rx = stdout_lines(&mut child);
    let timeout = std::time::Duration::from_secs(10);
    // The writer keeps the pipe open: the call must show without waiting for its result.
    stdin.write_all(b"{\"type\":\"item.started\",\"item\":{\"id\":\"i0\",\"type\":\"command_execution\",\"command\":\"sleep 60\",\"status\":\"in_progress\"}}\n").unwrap();
    stdin.flush().unwrap();
    let running = rx.recv_timeout(timeout).unwrap();
    assert!(running.starts_with("… Run  sleep 60") && running.ends_with("running"), "{running}");
    stdin.write_all(b"{\"type\":\"item.completed\",\"item\":{\"id\":\"i0\",\"type\":\"command_execution\",\"command\":\"sleep 60\",\"aggregated_output\":\"\",\"exit_code\":0,\"status\":\"completed\"}}\n").unwrap();
    stdin.flush().unwrap();
    assert_eq!(rx.recv_timeout(timeout).unwrap(), "✓ Run  sleep 60");
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
}

#[test]
fn format_takes_only_known_names() {
    let out = run_raw(&["--format", "yaml"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pretty"));
}

#[test]
fn several_inputs_each_get_a_header_and_the_ndjson_default_is_unchanged() {
    let a = common::fixture("codex", "exec_commands");
    let b = common::fixture("claude", "partial_messages");
    let out = bin().args(["--format", "pretty", "--color", "never"]).arg(&a).arg(&b).output().unwrap();
    let text = stdout_of(&out);
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("── ")).collect();
    assert_eq!(headers, [format!("── {}", a.display()), format!("── {}", b.display())]);
    let ndjson = bin().arg("--no-observed-at").arg(&a).output().unwrap();
    assert_eq!(stdout_of(&ndjson), std::fs::read_to_string(root().join(a.with_extension("expected"))).unwrap());
}
