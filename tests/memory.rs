//! Memory on one line of very many content blocks, counted by this test binary's own allocator
//! (bytes live at the peak, above what was live before): no timing and no RSS, so the figure
//! is the same on every run. Issue 14: within a small multiple of the line whatever it holds
//! (before, an adapter built every event of the line before the first was written: 35 to 60
//! times the line).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use agentnorm::{Event, NdjsonSink, Normalizer, Options, Sink};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as the caller promised `System`.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as the caller promised `System`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as the caller promised `System`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                let now = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size - layout.size();
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// One test at a time, from the making of its input on: the counters are the whole binary's.
static ONE: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Serializes each event as the CLI does and drops the bytes (a pipe's reader takes them).
#[derive(Default)]
struct Discard {
    json: NdjsonSink,
    bytes: usize,
    events: usize,
}

impl Sink for Discard {
    fn event(&mut self, ev: &Event) {
        self.json.event(ev);
        self.bytes += self.json.buf.len();
        self.events += 1;
        self.json.buf.clear();
    }
}

/// The bytes live at the peak of normalizing `input` with `opts`, above those live before, and
/// the events written.
fn peak_of(input: &[u8], opts: Options) -> (usize, usize) {
    let mut sink = Discard::default();
    let mut norm = Normalizer::new(opts);
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    norm.feed(input, &mut sink);
    norm.finish(&mut sink);
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert!(sink.bytes > input.len(), "the events were written ({} bytes)", sink.bytes);
    (peak, sink.events)
}

/// `n` content blocks: `text` ones, or text and tool calls in turn.
fn blocks(n: usize, mixed: bool) -> String {
    (0..n)
        .map(|i| {
            if mixed && i % 2 == 1 {
                format!(r#"{{"type":"tool_use","id":"toolu_{i}","name":"Bash","input":{{"command":"ls {i}"}}}}"#)
            } else {
                format!(r#"{{"type":"text","text":"w{i}"}}"#)
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

const N: usize = 100_000;
/// What the issue asks of the default output: at most this many times the longest line.
const BOUND: usize = 8;

fn assert_bounded(what: &str, input: &str, opts: Options) {
    let (peak, events) = peak_of(input.as_bytes(), opts);
    let ratio = peak as f64 / input.len() as f64;
    eprintln!("{what}: {} bytes in, {events} events, peak {peak} bytes live ({ratio:.1}x)", input.len());
    assert!(events > N / 2, "{what}: {events} events");
    assert!(peak <= BOUND * input.len(), "{what}: {peak} bytes live at the peak, {ratio:.1}x the line");
}

#[test]
fn a_stream_json_message_of_very_many_blocks_costs_a_small_multiple_of_its_line() {
    let _alone = alone();
    let init = r#"{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":[]}"#;
    for mixed in [false, true] {
        let msg = format!(
            r#"{{"type":"assistant","message":{{"id":"msg_1","model":"m","content":[{}],"usage":{{"input_tokens":1,"output_tokens":1}}}},"session_id":"s1"}}"#,
            blocks(N, mixed)
        );
        let input = format!("{init}\n{msg}\n");
        assert_bounded(if mixed { "stream-json, text and tools" } else { "stream-json, text" }, &input, opts());
    }
}

#[test]
fn a_transcript_message_of_very_many_blocks_costs_a_small_multiple_of_its_line() {
    let _alone = alone();
    for mixed in [false, true] {
        let input = format!(
            "{}\n",
            format_args!(
                r#"{{"type":"assistant","uuid":"u1","parentUuid":null,"sessionId":"s1","timestamp":"2026-01-01T00:00:01Z","message":{{"id":"msg_1","model":"m","content":[{}],"usage":{{"input_tokens":1,"output_tokens":1}}}}}}"#,
                blocks(N, mixed)
            )
        );
        assert_bounded(if mixed { "transcript, text and tools" } else { "transcript, text" }, &input, opts());
    }
}

#[test]
fn a_user_line_of_very_many_tool_results_costs_a_small_multiple_of_its_line() {
    let _alone = alone();
    let results: Vec<String> =
        (0..N).map(|i| format!(r#"{{"type":"tool_result","tool_use_id":"toolu_{i}","content":"ok {i}"}}"#)).collect();
    let results = results.join(",");
    let input = format!(
        "{}\n",
        format_args!(r#"{{"type":"user","message":{{"role":"user","content":[{results}]}},"session_id":"s1"}}"#)
    );
    assert_bounded("stream-json, tool results", &input, opts());
    // A transcript's: with a word of the user's after them (the message held before is ended
    // first).
    let input = format!(
        "{}\n",
        format_args!(
            r#"{{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","timestamp":"2026-01-01T00:00:01Z","message":{{"role":"user","content":[{results},{{"type":"text","text":"go on"}}]}}}}"#
        )
    );
    assert_bounded("transcript, tool results and text", &input, opts());
}

fn opts() -> Options {
    Options::default().observed_at(false)
}
