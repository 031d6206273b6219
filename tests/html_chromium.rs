//! The HTML view as a person sees it: pages written by `agentnorm --format html` loaded in real
//! headless Chromium. The DOM Chromium built (`--dump-dom`) must hold every tool call of the
//! fixtures (one per dialect, on one page with a section each) and, for the hostile session, only
//! the writer's own elements and attributes with the title unchanged (no script ran, no markup was
//! injected); a screenshot of a fixture session is taken, and saved as `docs/screenshot-html.png` with
//! `UPDATE_GOLDEN=1`.
//!
//! Needs the Debian package `chromium` (or `AGENTNORM_CHROMIUM=/path/to/browser`). Without one the
//! tests show as ignored, with the reason (the file has its own harness, libtest-mimic, which
//! can decide that at run time), unless `AGENTNORM_REQUIRE_CHROMIUM=1` (CI sets it), where they
//! fail. Each browser run has a fresh profile, no network use and a timeout.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use agentnorm::view::html::anchor;

mod common;
use common::{
    assert_inert_page, assert_success, bin, decode_entities, fixture, hostile_session, of_type, page_title, run_path,
    run_raw,
};

/// How long one browser run may take.
const TIMEOUT: Duration = Duration::from_secs(120);

/// One fixture per dialect, each with tool calls.
const FIXTURES: [(&str, &str); 8] = [
    ("claude", "todo_and_question"),
    ("claude-transcript", "sidechain_task"),
    ("codex", "exec_commands"),
    ("codex-legacy", "exec_session_tools"),
    ("codex-rollout", "v0104_tasks_unified_exec"),
    ("gemini", "stream_deltas_tools"),
    ("opencode", "tool_errors_and_todos"),
    ("cursor", "tools_every_kind"),
];

/// The fixture of the screenshot.
const SCREENSHOT_FIXTURE: (&str, &str) = ("claude", "markdown_and_long_output");

/// The screenshot must stay small enough to commit.
const SCREENSHOT_MAX_BYTES: u64 = 200 << 10;

/// One browser at a time: the machines are small.
static BROWSER: Mutex<()> = Mutex::new(());

/// The browser to use, if there is one.
fn find_chromium() -> Option<PathBuf> {
    std::env::var_os("AGENTNORM_CHROMIUM").map(PathBuf::from).or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .flat_map(|d| ["chromium", "chromium-browser", "google-chrome"].map(|n| d.join(n)))
            .find(|p| p.is_file())
    })
}

/// The browser the tests run (the harness runs them only when there is one, or when it is
/// required, where its absence fails them).
fn chromium() -> PathBuf {
    find_chromium().expect("AGENTNORM_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)")
}

/// The tests of this file: ignored with the reason when there is no browser and none is
/// required.
fn main() {
    let args = libtest_mimic::Arguments::from_args();
    let required = std::env::var("AGENTNORM_REQUIRE_CHROMIUM").as_deref() == Ok("1");
    let absent = find_chromium().is_none() && !required;
    if absent {
        eprintln!(
            "ignoring the Chromium tests: no chromium on PATH (Debian: apt-get install chromium; \
             AGENTNORM_REQUIRE_CHROMIUM=1 makes this a failure)"
        );
    }
    let tests: [(&str, fn()); 4] = [
        ("chromium_shows_every_tool_call_of_every_dialect", chromium_shows_every_tool_call_of_every_dialect),
        ("chromium_runs_nothing_from_agent_text", chromium_runs_nothing_from_agent_text),
        ("chromium_screenshot_of_a_fixture_session", chromium_screenshot_of_a_fixture_session),
        (
            "chromium_page_does_not_scroll_sideways_at_phone_width",
            chromium_page_does_not_scroll_sideways_at_phone_width,
        ),
    ];
    let trials = tests
        .into_iter()
        .map(|(name, f)| {
            libtest_mimic::Trial::test(name, move || std::panic::catch_unwind(f).map_err(panic_message))
                .with_ignored_flag(absent)
        })
        .collect();
    libtest_mimic::run(&args, trials).exit();
}

/// A test's panic as its failure message.
fn panic_message(p: Box<dyn std::any::Any + Send>) -> libtest_mimic::Failed {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "panicked".to_owned())
        .into()
}

/// Runs headless Chromium on `page` with `args`, with a fresh profile and a timeout; returns its
/// stdout.
fn run_chromium(browser: &Path, page: &Path, args: &[&str]) -> String {
    let _one = BROWSER.lock().unwrap_or_else(|e| e.into_inner());
    let profile = tempfile::tempdir().expect("profile folder");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", browser.display()));
    let mut stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for chromium") {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within {TIMEOUT:?} on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = reader.join().expect("reading chromium's output");
    assert!(status.success(), "chromium exited with {status} on {}", page.display());
    out
}

/// Writes `html` to a file in `dir` and returns its path.
fn save(dir: &Path, name: &str, html: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, html).expect("writing the page");
    p
}

/// The DOM as Chromium serialized it, checked to be a whole page.
fn dom(browser: &Path, page: &Path) -> String {
    let dom = run_chromium(browser, page, &["--dump-dom"]);
    assert!(dom.contains("</html>"), "no DOM from chromium for {}: {dom:.200}", page.display());
    dom
}

fn chromium_shows_every_tool_call_of_every_dialect() {
    let browser = chromium();
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = FIXTURES.iter().map(|(d, n)| fixture(d, n)).collect();
    let out = bin().args(["--format", "html", "--no-observed-at"]).args(&paths).output().unwrap();
    assert_success(&out);
    let html = String::from_utf8(out.stdout).unwrap();
    let dom = dom(&browser, &save(dir.path(), "dialects.html", &html));
    assert_inert_page(&dom);
    assert_eq!(dom.matches("<section class=\"session\"").count(), FIXTURES.len(), "a section per input");
    assert_eq!(decode_entities(page_title(&dom)), decode_entities(page_title(&html)), "the title is as written");
    let mut ids = Vec::new();
    for t in common::html_tags(&dom) {
        ids.extend(t.attrs.into_iter().filter(|(a, _)| a == "id").map(|(_, v)| v));
    }
    for (i, p) in paths.iter().enumerate() {
        let evs = run_path(p);
        let started = of_type(&evs, "tool_started");
        assert!(!started.is_empty(), "{}: a fixture with tool calls", p.display());
        for ev in started {
            let id = format!("call-{i}-{}", anchor(ev["tool_id"].as_str().unwrap()));
            assert!(ids.contains(&id), "{}: tool call {id} not in the DOM", p.display());
        }
        let completed = of_type(&evs, "tool_completed").len();
        let results = ids.iter().filter(|id| id.starts_with(&format!("result-{i}-"))).count();
        assert_eq!(results, completed, "{}: every result in the DOM", p.display());
    }
}

fn chromium_runs_nothing_from_agent_text() {
    let browser = chromium();
    let dir = tempfile::tempdir().unwrap();
    let out = run_raw(&["--format", "html", "--no-observed-at"], hostile_session().as_bytes());
    assert_success(&out);
    let html = String::from_utf8(out.stdout).unwrap();
    let dom = dom(&browser, &save(dir.path(), "hostile.html", &html));
    // Only the writer's elements and attributes: no <script>, <img>, <svg>, no on… handler.
    assert_inert_page(&dom);
    // No script changed the title, none added or removed an element.
    let title = decode_entities(page_title(&dom));
    assert_eq!(title, decode_entities(page_title(&html)));
    assert!(title.starts_with("agentnorm · s-</title><script>document.title='pwned'"), "{title}");
    let (written, built) = (common::html_tags(&html), common::html_tags(&dom));
    let names = |tags: &[common::Tag]| tags.iter().map(|t| t.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&built), names(&written), "Chromium built the elements that were written, no other");
    assert!(dom.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"), "the payload is shown as text");
}

fn chromium_screenshot_of_a_fixture_session() {
    let browser = chromium();
    let dir = tempfile::tempdir().unwrap();
    let (d, n) = SCREENSHOT_FIXTURE;
    let out = bin().args(["--format", "html", "--no-observed-at"]).arg(fixture(d, n)).output().unwrap();
    assert_success(&out);
    let page = save(dir.path(), "fixture.html", &String::from_utf8(out.stdout).unwrap());
    let shot = dir.path().join("shot.png");
    run_chromium(&browser, &page, &[&format!("--screenshot={}", shot.display()), "--window-size=1000,1400"]);
    let png = std::fs::read(&shot).expect("chromium wrote the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    assert!((png.len() as u64) < SCREENSHOT_MAX_BYTES, "screenshot of {} bytes", png.len());
    // The README's picture is rewritten like the golden files, only when asked: a test run
    // leaves the work tree as it found it.
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        let docs = common::root().join("docs");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::write(docs.join("screenshot-html.png"), &png).unwrap();
    }
}

/// At a phone's width (420 CSS px) the page is no wider than its window: no sideways scrolling.
/// Headless Chromium's windows are at least 500 px wide, so the page is shown in a 420 px frame of
/// a page of the test's own; a probe of the test's (the page itself runs no script: its copy
/// goes without its policy) posts the page's scroll width and the frame's width to the outer
/// page, whose title `--dump-dom` shows.
fn chromium_page_does_not_scroll_sideways_at_phone_width() {
    let browser = chromium();
    let dir = tempfile::tempdir().unwrap();
    let mut paths: Vec<PathBuf> = FIXTURES.iter().map(|(d, n)| fixture(d, n)).collect();
    paths.push(fixture(SCREENSHOT_FIXTURE.0, SCREENSHOT_FIXTURE.1));
    let out = bin().args(["--format", "html", "--no-observed-at"]).args(&paths).output().unwrap();
    assert_success(&out);
    let html = String::from_utf8(out.stdout).unwrap();
    let probe = "<script>addEventListener('load',()=>{parent.postMessage('W='+document.documentElement.scrollWidth+' '+innerWidth,'*')})</script>";
    let probed: String =
        html.lines().filter(|l| !l.contains("Content-Security-Policy")).map(|l| format!("{l}\n")).collect();
    save(dir.path(), "phone.html", &probed.replacen("</body>", &format!("{probe}</body>"), 1));
    let outer = save(
        dir.path(),
        "frame.html",
        "<!DOCTYPE html><html><head><title>none</title><style>body{margin:0}</style></head><body>\
         <iframe src=\"phone.html\" style=\"width:420px;height:2400px;border:0\"></iframe>\
         <script>addEventListener('message',e=>{document.title=e.data})</script></body></html>",
    );
    let dom = run_chromium(&browser, &outer, &["--dump-dom", "--window-size=500,900", "--virtual-time-budget=3000"]);
    let title = page_title(&dom);
    let (scroll, inner) = title
        .strip_prefix("W=")
        .and_then(|t| t.split_once(' '))
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .unwrap_or_else(|| panic!("the probe did not run: title {title:?}"));
    assert_eq!(inner, 420, "the frame is a phone's width");
    if let Some(shot) = std::env::var_os("AGENTNORM_PHONE_SCREENSHOT") {
        let shot = format!("--screenshot={}", Path::new(&shot).display());
        run_chromium(&browser, &outer, &[&shot, "--window-size=500,2400", "--virtual-time-budget=3000"]);
    }
    assert!(scroll <= inner, "the page is {scroll} px wide in a {inner} px window: it scrolls sideways");
}
