//! agentnorm in a real terminal: tmux runs it in a pane of a known size, as a person would from a
//! shell (no `COLUMNS` exported), and the test reads what it wrote.
//!
//! Needs `tmux` (Debian: `apt-get install tmux`). Without it the tests show as ignored, with the
//! reason (this file has its own harness, libtest-mimic, which can decide that at run time),
//! unless `AGENTNORM_REQUIRE_TMUX=1` (CI sets it), where they fail. Each test has its own tmux
//! server (`-L`), killed at the end.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use unicode_width::UnicodeWidthStr;

mod common;

/// How long a pane's command may take.
const TIMEOUT: Duration = Duration::from_secs(60);

fn find_tmux() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("tmux")).find(|p| p.is_file())
}

/// A tmux server of the test's own, killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(name: &str) -> Tmux {
        Tmux { socket: format!("agentnorm-test-{}-{name}", std::process::id()) }
    }

    fn cmd(&self) -> Command {
        let mut c =
            Command::new(find_tmux().expect("AGENTNORM_REQUIRE_TMUX=1 but no tmux on PATH (apt-get install tmux)"));
        c.args(["-L", &self.socket, "-f", "/dev/null"]);
        c
    }

    /// Starts `script` (bash) in a detached pane of `cols` × 24.
    fn start(&self, cols: u16, script: &str) {
        let st = self
            .cmd()
            .args([
                "new-session",
                "-d",
                "-x",
                &cols.to_string(),
                "-y",
                "24",
                "bash",
                "--norc",
                "--noprofile",
                "-c",
                script,
            ])
            .env_remove("COLUMNS")
            .env_remove("LINES")
            .status()
            .expect("starting tmux");
        assert!(st.success(), "tmux new-session failed");
    }

    fn send_keys(&self, keys: &[&str]) {
        let st = self.cmd().arg("send-keys").args(keys).status().expect("tmux send-keys");
        assert!(st.success());
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").stderr(std::process::Stdio::null()).status();
    }
}

/// Waits until `path` exists (the pane's script writes it last).
fn wait_for_file(path: &Path) {
    let deadline = Instant::now() + TIMEOUT;
    while !path.exists() {
        assert!(Instant::now() < deadline, "{} not written within {TIMEOUT:?}", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', "'\\''"))
}

const LONG_TEXT: &str = "The quick brown fox jumps over the lazy dog while the build runs, and then it jumps \
back again because the tests are still not green and someone has to keep an eye on them all afternoon.";

/// `--format pretty` into a pipe from a shell in an 80-column terminal wraps at 80: the width
/// comes from the controlling terminal when stdout is not one and `COLUMNS` is not exported.
fn piped_pretty_is_as_wide_as_the_controlling_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("s.jsonl");
    std::fs::write(
        &input,
        format!(
            "{{\"type\":\"thread.started\",\"thread_id\":\"t1\"}}\n{{\"type\":\"turn.started\"}}\n{}\n",
            serde_json::json!({"type":"item.completed","item":{"id":"i0","type":"agent_message","text":LONG_TEXT}})
        ),
    )
    .unwrap();
    let (out, done) = (dir.path().join("out.txt"), dir.path().join("done"));
    let tmux = Tmux::new("width");
    tmux.start(
        80,
        &format!(
            "unset COLUMNS; {} --format pretty --color never {} | cat > {}; touch {}",
            quote(Path::new(env!("CARGO_BIN_EXE_agentnorm"))),
            quote(&input),
            quote(&out),
            quote(&done)
        ),
    );
    wait_for_file(&done);
    let text = std::fs::read_to_string(&out).unwrap();
    let widest = text.lines().map(UnicodeWidthStr::width).max().unwrap_or(0);
    assert!(widest <= 80, "a row of {widest} columns in an 80-column terminal:\n{text}");
    assert!(widest > 60, "the text is wrapped at 80, not narrower:\n{text}");
    assert!(text.lines().filter(|l| l.contains("fox") || l.contains("afternoon")).count() >= 2, "{text}");
}

/// Plain `agentnorm` with stdin a terminal says on stderr what it is waiting for, and still
/// reads: a line typed then Ctrl-D is normalized.
fn a_terminal_stdin_gets_a_one_line_hint_and_is_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let (out, err, done) = (dir.path().join("out"), dir.path().join("err"), dir.path().join("done"));
    let tmux = Tmux::new("stdin");
    tmux.start(
        100,
        &format!(
            "{} --no-observed-at > {} 2> {}; touch {}",
            quote(Path::new(env!("CARGO_BIN_EXE_agentnorm"))),
            quote(&out),
            quote(&err),
            quote(&done)
        ),
    );
    let deadline = Instant::now() + TIMEOUT;
    while std::fs::read_to_string(&err).map_or(true, |e| e.is_empty()) {
        assert!(Instant::now() < deadline, "no hint on stderr");
        std::thread::sleep(Duration::from_millis(50));
    }
    tmux.send_keys(&["-l", "{\"type\":\"turn.started\"}"]);
    tmux.send_keys(&["Enter"]);
    tmux.send_keys(&["C-d"]);
    wait_for_file(&done);
    let err = std::fs::read_to_string(&err).unwrap();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains("terminal") && err.contains("Ctrl-D"), "{err}");
    let evs = common::parse(std::fs::read_to_string(&out).unwrap().as_bytes());
    assert!(evs.iter().any(|e| e["type"] == "turn_started"), "the typed line was read: {evs:?}");
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let required = std::env::var("AGENTNORM_REQUIRE_TMUX").as_deref() == Ok("1");
    let absent = find_tmux().is_none() && !required;
    if absent {
        eprintln!(
            "ignoring the tmux tests: no tmux on PATH (Debian: apt-get install tmux; AGENTNORM_REQUIRE_TMUX=1 makes this a failure)"
        );
    }
    let tests: [(&str, fn()); 2] = [
        ("piped_pretty_is_as_wide_as_the_controlling_terminal", piped_pretty_is_as_wide_as_the_controlling_terminal),
        (
            "a_terminal_stdin_gets_a_one_line_hint_and_is_still_read",
            a_terminal_stdin_gets_a_one_line_hint_and_is_still_read,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, f)| {
            libtest_mimic::Trial::test(name, move || {
                std::panic::catch_unwind(f).map_err(|p| {
                    p.downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_else(|| "panicked".to_owned())
                        .into()
                })
            })
            .with_ignored_flag(absent)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}
