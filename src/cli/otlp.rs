//! The OTLP outputs of the binary: `--format otlp` (one `ExportTraceServiceRequest` per line on
//! stdout) and `--otlp-endpoint URL` (the same requests sent over OTLP/HTTP JSON while the
//! normal output goes on).
//!
//! Sending must never slow or break the event pipeline: the workers hand requests to a bounded
//! queue without waiting ([`Exporter::send`] drops and counts when it is full), and one
//! background thread batches them, POSTs them with retries and backoff, and gives up on a batch
//! after a bounded time. At exit the queue gets a bounded grace period to drain
//! ([`Exporting::finish`]); what could not be sent is said on stderr.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agentnorm::sink::otlp::{BATCH, Converter, OtlpOptions};
use agentnorm::{Event, Sink};
use serde_json::Value;

use crate::cli::exec::Output;

/// Requests that may wait for the sender thread; past that they are dropped (and counted).
const QUEUE: usize = 256;
/// Requests merged into one POST at most.
const MERGE: usize = 16;
/// Tries per batch, and the first backoff (doubled each time).
const TRIES: u32 = 4;
const BACKOFF: Duration = Duration::from_millis(250);
/// One POST's time limit.
const TIMEOUT: Duration = Duration::from_secs(5);
/// How long the exit waits for the queue to drain.
pub const GRACE: Duration = Duration::from_secs(5);

/// Figures of the sender, for the closing note on stderr.
#[derive(Debug, Default)]
pub struct Stats {
    /// Spans the endpoint accepted.
    pub sent: AtomicU64,
    /// Spans dropped: the queue was full, the endpoint refused them, or time ran out.
    pub dropped: AtomicU64,
    /// The last error the endpoint or the connection gave.
    pub last_error: Mutex<Option<String>>,
}

/// The workers' handle on the queue (cheap to clone).
#[derive(Clone)]
pub struct Exporter {
    tx: SyncSender<Value>,
    stats: Arc<Stats>,
}

impl std::fmt::Debug for Exporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Exporter")
    }
}

fn span_count(req: &Value) -> u64 {
    req["resourceSpans"]
        .as_array()
        .map(|rs| {
            rs.iter()
                .flat_map(|r| r["scopeSpans"].as_array().into_iter().flatten())
                .map(|ss| ss["spans"].as_array().map_or(0, Vec::len) as u64)
                .sum()
        })
        .unwrap_or(0)
}

impl Exporter {
    /// Queues a request without waiting: when the queue is full it is dropped and counted.
    pub fn send(&self, req: Value) {
        let n = span_count(&req);
        match self.tx.try_send(req) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.stats.dropped.fetch_add(n, Ordering::Relaxed);
            }
        }
    }
}

/// The running sender thread.
pub struct Exporting {
    closing: Arc<AtomicBool>,
    thread: JoinHandle<()>,
    stats: Arc<Stats>,
    url: String,
}

/// `URL` as given, with `/v1/traces` added when it names no path (as `OTEL_EXPORTER_OTLP_ENDPOINT`).
pub fn traces_url(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    if rest.trim_end_matches('/').contains('/') {
        url.to_owned()
    } else {
        format!("{}/v1/traces", url.trim_end_matches('/'))
    }
}

/// Starts the sender thread for `url` (plain `http://`).
pub fn start(url: &str) -> anyhow::Result<(Exporter, Exporting)> {
    if !url.starts_with("http://") {
        anyhow::bail!("--otlp-endpoint {url:?}: only http:// endpoints are supported (a local collector or agent)");
    }
    let url = traces_url(url);
    let (tx, rx) = sync_channel(QUEUE);
    let stats = Arc::new(Stats::default());
    let closing = Arc::new(AtomicBool::new(false));
    let thread = {
        let (stats, closing, url) = (Arc::clone(&stats), Arc::clone(&closing), url.clone());
        std::thread::Builder::new().name("otlp-export".into()).spawn(move || run(&url, &rx, &stats, &closing))?
    };
    Ok((Exporter { tx, stats: Arc::clone(&stats) }, Exporting { closing, thread, stats, url }))
}

fn run(url: &str, rx: &Receiver<Value>, stats: &Stats, closing: &AtomicBool) {
    let agent: ureq::Agent = ureq::Agent::config_builder().timeout_global(Some(TIMEOUT)).build().into();
    loop {
        let first = match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) if closing.load(Ordering::Relaxed) => return,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut batch = vec![first];
        while batch.len() < MERGE {
            match rx.try_recv() {
                Ok(v) => batch.push(v),
                Err(_) => break,
            }
        }
        let mut merged: Vec<Value> = Vec::new();
        for mut req in batch {
            if let Some(rs) = req["resourceSpans"].as_array_mut() {
                merged.append(rs);
            }
        }
        let body = serde_json::json!({ "resourceSpans": merged });
        let n = span_count(&body);
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let mut wait = BACKOFF;
        let mut ok = false;
        for attempt in 0..TRIES {
            match agent.post(url).header("Content-Type", "application/json").send(&bytes[..]) {
                Ok(_) => {
                    ok = true;
                    break;
                }
                Err(e) => {
                    let retry = match &e {
                        ureq::Error::StatusCode(code) => *code == 429 || *code >= 500,
                        _ => true,
                    };
                    if let Ok(mut last) = stats.last_error.lock() {
                        *last = Some(e.to_string());
                    }
                    // Once closing, a failing endpoint gets no more tries: the grace is bounded.
                    if !retry || attempt + 1 == TRIES || closing.load(Ordering::Relaxed) {
                        break;
                    }
                    std::thread::sleep(wait);
                    wait *= 2;
                }
            }
        }
        if ok {
            stats.sent.fetch_add(n, Ordering::Relaxed);
        } else {
            stats.dropped.fetch_add(n, Ordering::Relaxed);
        }
    }
}

impl Exporting {
    /// Lets the queue drain for at most `grace`, then says on stderr what was not sent.
    pub fn finish(self, exporter: Exporter, grace: Duration) {
        let deadline = Instant::now() + grace;
        drop(exporter);
        // The thread stops once the queue is empty and closing is set; it is not joined past
        // the deadline (a hung connection must not hold the exit).
        self.closing.store(true, Ordering::Relaxed);
        while !self.thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let dropped = self.stats.dropped.load(Ordering::Relaxed);
        let unsent = !self.thread.is_finished();
        if dropped > 0 || unsent {
            let why = self.stats.last_error.lock().ok().and_then(|l| l.clone()).unwrap_or_else(|| "queue full".into());
            let more = if unsent { " (and what was still queued at exit)" } else { "" };
            eprintln!("agentnorm: --otlp-endpoint {}: {dropped} spans not sent{more}: {why}", self.url);
        }
    }
}

/// `--format otlp`: one request per line, for each input at its end or every [`BATCH`] spans
/// (and, live, whenever the input has nothing more ready); also sent when an endpoint is given.
pub struct OtlpOut {
    conv: Converter,
    buf: Vec<u8>,
    exporter: Option<Exporter>,
}

impl OtlpOut {
    /// Writes requests to the output (and sends them to `exporter`).
    pub fn new(opts: OtlpOptions, exporter: Option<Exporter>) -> OtlpOut {
        OtlpOut { conv: Converter::new(opts), buf: Vec::new(), exporter }
    }
    fn drain(&mut self) {
        if let Some(req) = self.conv.take_request() {
            // A Value always serializes.
            let _ = serde_json::to_writer(&mut self.buf, &req);
            self.buf.push(b'\n');
            if let Some(x) = &self.exporter {
                x.send(req);
            }
        }
    }
}

impl Sink for OtlpOut {
    fn event(&mut self, ev: &Event) {
        self.conv.event(ev);
        if matches!(ev, Event::RunEnded { .. }) || self.conv.pending() >= BATCH {
            self.drain();
        }
    }
    fn idle(&mut self) {
        self.drain();
    }
}

impl Output for OtlpOut {
    fn buffered(&self) -> usize {
        self.buf.len()
    }
    fn take(&mut self, next: Vec<u8>) -> Vec<u8> {
        std::mem::replace(&mut self.buf, next)
    }
}

/// `--otlp-endpoint` beside another format: the events go to `inner` as usual, the spans to the
/// exporter.
pub struct Tee<S> {
    inner: S,
    conv: Converter,
    exporter: Exporter,
}

impl<S> Tee<S> {
    /// Sends the spans of the events `inner` gets.
    pub fn new(inner: S, opts: OtlpOptions, exporter: Exporter) -> Tee<S> {
        Tee { inner, conv: Converter::new(opts), exporter }
    }
    fn drain(&mut self) {
        if let Some(req) = self.conv.take_request() {
            self.exporter.send(req);
        }
    }
}

impl<S: Output> Sink for Tee<S> {
    fn event(&mut self, ev: &Event) {
        self.inner.event(ev);
        self.conv.event(ev);
        if matches!(ev, Event::RunEnded { .. }) || self.conv.pending() >= BATCH {
            self.drain();
        }
    }
    fn begin(&mut self, source: Option<&str>) {
        self.inner.begin(source);
    }
    fn idle(&mut self) {
        self.inner.idle();
        self.drain();
    }
    fn finish(&mut self) {
        self.inner.finish();
    }
}

impl<S: Output> Output for Tee<S> {
    fn buffered(&self) -> usize {
        self.inner.buffered()
    }
    fn take(&mut self, next: Vec<u8>) -> Vec<u8> {
        self.inner.take(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_traces_path_is_added_to_a_bare_endpoint_only() {
        assert_eq!(traces_url("http://127.0.0.1:4318"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(traces_url("http://127.0.0.1:4318/"), "http://127.0.0.1:4318/v1/traces");
        assert_eq!(traces_url("http://h:1/otlp/v1/traces"), "http://h:1/otlp/v1/traces");
    }
}
