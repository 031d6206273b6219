//! The conventions people expect of a command-line tool: shell completions, man pages, no
//! progress line where no person is watching (stderr a pipe), examples in `--help`.

use std::process::Output;

mod common;
use common::{all_fixtures, assert_success, bin, parse};

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("running agentnorm")
}

fn stdout_of(args: &[&str]) -> String {
    let out = run(args);
    assert_success(&out);
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn completions_for_every_shell_know_the_options_and_subcommands() {
    let bash = stdout_of(&["completions", "bash"]);
    for word in ["--dialect", "--redact", "--only", "usage", "diagnostics", "claude-transcript", "complete -F"] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    assert!(stdout_of(&["completions", "zsh"]).starts_with("#compdef agentnorm"));
    assert!(stdout_of(&["completions", "fish"]).contains("complete -c agentnorm"));
    assert!(stdout_of(&["completions", "elvish"]).contains("edit:completion:arg-completer[agentnorm]"));
    assert!(stdout_of(&["completions", "powershell"]).contains("Register-ArgumentCompleter"));
    let bad = run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn man_pages_are_roff_with_options_and_examples() {
    let page = stdout_of(&["man"]);
    assert!(page.contains(".TH agentnorm 1"), "{page}");
    for part in
        [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS", "\\-\\-redact", "\\-\\-dialect", "Examples:"]
    {
        assert!(page.contains(part), "man page lacks {part}");
    }
    let usage = stdout_of(&["man", "usage"]);
    assert!(usage.contains(".TH agentnorm\\-usage 1") || usage.contains(".TH agentnorm-usage 1"), "{usage}");
    assert!(usage.contains("\\-\\-since"));
    let bad = run(&["man", "nope"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no subcommand"));
}

#[test]
fn help_has_examples() {
    let help = stdout_of(&["--help"]);
    let examples = help.split("Examples:").nth(1).expect("an Examples: section");
    for shown in [
        "agentnorm diagnostics",
        "agentnorm usage",
        "agentnorm --redact",
        "| agentnorm",
        "completions",
        "agentnorm man",
    ] {
        assert!(examples.contains(shown), "no example with {shown}");
    }
}

/// Folder runs and `usage` over many files draw progress only on a terminal: into a pipe (as
/// here) stderr stays empty and stdout is the plain output.
#[test]
fn no_progress_line_when_stderr_is_a_pipe() {
    let out = run(&["--no-observed-at", "-j", "2", "fixtures"]);
    assert_success(&out);
    assert!(out.stderr.is_empty(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let evs = parse(&out.stdout);
    let runs = evs.iter().filter(|e| e["type"] == "run_ended").count();
    assert_eq!(runs, all_fixtures().len());

    let out = run(&["usage", "fixtures"]);
    assert_success(&out);
    assert!(out.stderr.is_empty(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(!table.contains('\r') && !table.contains("files,"), "{table}");
}
