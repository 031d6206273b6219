//! Runs the inputs: each one its own stream (its own `run_started` / `run_ended` and detection
//! state), up to `-j` of them at once on worker threads, their output written in input order so
//! that it never depends on the thread count.
//!
//! Each input has a bounded channel of output blocks; workers take inputs in order, so the one
//! the writer waits for is always being worked on, and memory stays bounded by the channels.
//! Live input is flushed block by block whenever it has nothing more ready.
//!
//! A large plain file (4 MiB or more; not stdin, not compressed, not `--follow`) also uses all
//! cores inside itself when `-j` is over 1: it is mapped ([`Mmap`]) and cut into chunks at
//! newlines, and `-j` threads each decode a chunk and then, in turn, fold it into the stream's
//! state and send its output on ([`agentnorm::normalize::parallel`]). The bytes written are the same as one
//! thread's. Stdin and followed files stay on one thread (a live stream wants each line's events
//! at once); compressed files are decompressed on one.

use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentnorm::sink::otlp::OtlpOptions;
use agentnorm::view::{PrettySink, Terminal};
use agentnorm::{NdjsonSink, Normalizer, Options, Sink, Summary};
use agentnorm::{fold_parallel, line_cut};
use anyhow::Result;

use crate::cli::input::{self, Input};
use crate::cli::mmap::Mmap;
use crate::cli::otlp::{Exporter, OtlpOut, Tee};
use crate::cli::prefetch;
use crate::cli::progress::Counters;

/// Output is handed to the writer in blocks of this size when the input keeps coming.
const WRITE_BLOCK: usize = 256 << 10;
/// Input is read in chunks of this size.
const READ_CHUNK: usize = 1 << 20;
/// Output blocks that may wait per input. Three keep the writer fed; eight let a slow reader
/// (blocks queued, each up to 256 KiB plus its last event) raise peak RSS from 29.6 to 37.9 MiB
/// on a 100 MB file, over issue 5's bound.
const QUEUE: usize = 3;
/// Drained output buffers kept for the workers to fill again.
const SPARES: usize = 2;
/// An output buffer that grew past this (for one huge event) is freed, not kept.
const SPARE_MAX: usize = 8 << 20;
/// Plain files at least this large are normalized on all threads (when `-j` is over 1).
const PARALLEL_MIN: u64 = 4 << 20;
/// The all-cores path cuts the file into chunks of about this size, at newlines (256 KiB was
/// faster than 128 KiB, 1 MiB and 4 MiB on the workload: a chunk's decodes stay in cache until its
/// fold, and the turns are still few).
const CHUNK: usize = 256 << 10;
/// The all-cores path gives the pages of a mapped file back to the kernel every this many bytes.
const RELEASE: usize = 8 << 20;
/// How often a followed file is checked for new bytes (and the writer for SIGINT).
const FOLLOW_POLL: Duration = Duration::from_millis(100);
/// How long the writer waits after SIGINT for the current input's last events.
const GRACE: Duration = Duration::from_millis(500);

/// What the output is.
#[derive(Debug, Clone, Copy)]
pub enum Format {
    /// NDJSON events.
    Ndjson,
    /// The pretty transcript, laid out for this terminal.
    Pretty(Terminal),
    /// OTLP/JSON trace requests, one per line.
    Otlp(OtlpOptions),
}

/// A sink whose output the worker hands to the writer in blocks.
pub(crate) trait Output: Sink {
    /// Bytes waiting.
    fn buffered(&self) -> usize;
    /// Takes the bytes waiting, going on in `next` (empty).
    fn take(&mut self, next: Vec<u8>) -> Vec<u8>;
}

impl Output for NdjsonSink {
    fn buffered(&self) -> usize {
        self.buf.len()
    }
    fn take(&mut self, next: Vec<u8>) -> Vec<u8> {
        std::mem::replace(&mut self.buf, next)
    }
}

impl Output for PrettySink {
    fn buffered(&self) -> usize {
        self.buf.len()
    }
    fn take(&mut self, next: Vec<u8>) -> Vec<u8> {
        std::mem::replace(&mut self.buf, next)
    }
}

/// How to run.
#[derive(Clone)]
pub struct Settings {
    /// The output format.
    pub format: Format,
    /// Normalizer options; `source` is set per input.
    pub options: Options,
    /// Worker threads.
    pub threads: usize,
    /// Keep reading the (single, uncompressed) file as it grows.
    pub follow: bool,
    /// Set by SIGINT.
    pub interrupted: Arc<AtomicBool>,
    /// Where files done and bytes read are counted for the progress line, when one is drawn.
    pub progress: Option<Arc<Counters>>,
    /// `--otlp-endpoint`: the spans of the events are also sent there.
    pub export: Option<(OtlpOptions, Exporter)>,
}

/// What happened, for the exit status.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Some line ended as `unknown`.
    pub unknown: bool,
    /// A turn failed or a stream ended with a turn open.
    pub turn_failed: bool,
    /// An input could not be read.
    pub input_failed: bool,
    /// SIGINT arrived.
    pub interrupted: bool,
}

/// Output buffers the writer has drained, for the workers to fill again: the next block is
/// written into a buffer that already grew to a block's size (the output of a 1 MiB read is
/// about 1 MiB), instead of a new one grown by copying each time.
#[derive(Default)]
struct Spares(Mutex<Vec<Vec<u8>>>);

impl Spares {
    /// An empty buffer to write the next block into.
    fn get(&self) -> Vec<u8> {
        let spare = self.0.lock().ok().and_then(|mut v| v.pop());
        // A new one starts with room for a whole block, not grown from nothing.
        spare.unwrap_or_else(|| Vec::with_capacity(2 * WRITE_BLOCK))
    }

    /// Keeps a written block's buffer for [`get`](Spares::get), unless enough are kept.
    fn put(&self, mut buf: Vec<u8>) {
        if buf.capacity() <= SPARE_MAX
            && let Ok(mut v) = self.0.lock()
            && v.len() < SPARES
        {
            buf.clear();
            v.push(buf);
        }
    }

    /// Sends the sink's bytes to the writer as one block, the sink going on in a spare buffer;
    /// false when the writer is gone.
    fn send(&self, tx: &SyncSender<Msg>, sink: &mut impl Output) -> bool {
        tx.send(Msg::Out(sink.take(self.get()))).is_ok()
    }
}

enum Msg {
    Out(Vec<u8>),
    Failed(String),
    Done(Summary),
}

/// Normalizes every input and writes the output in input order.
///
/// The workers are not joined: on SIGINT the writer returns once what was already read is
/// written, even while a worker is blocked reading a pipe that stays open.
pub fn run(inputs: Vec<Input>, settings: &Settings, out: &mut impl Write) -> Result<Outcome> {
    let n = inputs.len();
    let mut senders = Vec::with_capacity(n);
    let mut receivers = Vec::with_capacity(n);
    for _ in 0..n {
        let (tx, rx) = sync_channel::<Msg>(QUEUE);
        senders.push(Some(tx));
        receivers.push(rx);
    }
    let shared = Arc::new((inputs, Mutex::new(senders), AtomicUsize::new(0), Spares::default()));
    for _ in 0..settings.threads.clamp(1, n.max(1)) {
        let shared = Arc::clone(&shared);
        let settings = settings.clone();
        std::thread::spawn(move || {
            let (inputs, senders, next, spares) = &*shared;
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(tx) = senders.lock().ok().and_then(|mut s| s.get_mut(i).and_then(Option::take)) else {
                    break;
                };
                // A bug must not pass for success: a panicking worker's input fails (exit 2).
                let run = std::panic::AssertUnwindSafe(|| match mapped(&inputs[i], &settings) {
                    Some(map) => chunked_worker(&inputs[i], &settings, &tx, spares, map),
                    None => worker(&inputs[i], &settings, &tx, spares),
                });
                if std::panic::catch_unwind(run).is_err() {
                    let why = format!("{}: internal error, input abandoned (please report it)", inputs[i].name());
                    let _ = tx.send(Msg::Failed(why));
                }
                if let Some(p) = &settings.progress {
                    p.file_done();
                }
            }
        });
    }
    // On a write error the receivers are dropped and the workers stop at their next send.
    write_in_order(receivers, settings, &shared.3, out)
}

fn write_in_order(
    receivers: Vec<Receiver<Msg>>,
    settings: &Settings,
    spares: &Spares,
    out: &mut impl Write,
) -> Result<Outcome> {
    let mut outcome = Outcome::default();
    let mut deadline = None;
    for rx in receivers {
        loop {
            let msg = match rx.recv_timeout(FOLLOW_POLL) {
                Ok(msg) => msg,
                Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {
                    if settings.interrupted.load(Ordering::Relaxed) {
                        // Give the worker a moment to write run_ended; a blocked read gets none.
                        let d = *deadline.get_or_insert_with(|| Instant::now() + GRACE);
                        if Instant::now() >= d {
                            outcome.interrupted = true;
                            return Ok(outcome);
                        }
                    }
                    continue;
                }
            };
            match msg {
                Msg::Out(bytes) => {
                    out.write_all(&bytes)?;
                    out.flush()?;
                    spares.put(bytes);
                }
                Msg::Failed(why) => {
                    // On its own line, not after the progress line (redrawn at its next tick).
                    let clear = if settings.progress.is_some() { crate::cli::progress::CLEAR } else { "" };
                    eprintln!("{clear}agentnorm: {}", agentnorm::sink::safe::printable(&why));
                    outcome.input_failed = true;
                }
                Msg::Done(summary) => {
                    outcome.unknown |= summary.unknown > 0;
                    outcome.turn_failed |= summary.turn_failed || summary.turn_open;
                }
            }
        }
        if settings.interrupted.load(Ordering::Relaxed) {
            outcome.interrupted = true;
            break;
        }
    }
    Ok(outcome)
}

/// Normalizes one input into the sink of the output format.
fn worker(input: &Input, settings: &Settings, tx: &SyncSender<Msg>, spares: &Spares) {
    let x = settings.export.as_ref().map(|(o, x)| (*o, x.clone()));
    let (s, t, m) = (settings, tx, spares);
    match (settings.format, x) {
        (Format::Ndjson, None) => work(input, s, t, m, Spill::new(NdjsonSink::default(), t, m)),
        (Format::Pretty(term), None) => work(input, s, t, m, Spill::new(pretty_sink(term), t, m)),
        (Format::Otlp(o), x) => work(input, s, t, m, Spill::new(OtlpOut::new(o, x.map(|x| x.1)), t, m)),
        (Format::Ndjson, Some((o, x))) => work(input, s, t, m, Spill::new(Tee::new(NdjsonSink::default(), o, x), t, m)),
        (Format::Pretty(term), Some((o, x))) => {
            work(input, s, t, m, Spill::new(Tee::new(pretty_sink(term), o, x), t, m))
        }
    }
}

/// An output that sends its bytes on as soon as a block's worth is waiting, also in the middle of
/// a line: one line of many events (`--raw` writes the line again with each) must not gather all
/// of their output before any is written (memory stays a small multiple of the longest line).
struct Spill<'a, S> {
    inner: S,
    tx: &'a SyncSender<Msg>,
    spares: &'a Spares,
    gone: bool,
}

impl<'a, S: Output> Spill<'a, S> {
    fn new(inner: S, tx: &'a SyncSender<Msg>, spares: &'a Spares) -> Spill<'a, S> {
        Spill { inner, tx, spares, gone: false }
    }
}

impl<S: Output> Sink for Spill<'_, S> {
    fn event(&mut self, ev: &agentnorm::Event) {
        self.inner.event(ev);
        if !self.gone && self.inner.buffered() >= WRITE_BLOCK {
            self.gone = !self.spares.send(self.tx, &mut self.inner);
        }
    }
    fn begin(&mut self, source: Option<&str>) {
        self.inner.begin(source);
    }
    fn idle(&mut self) {
        self.inner.idle();
    }
    fn finish(&mut self) {
        self.inner.finish();
    }
}

impl<S: Output> Output for Spill<'_, S> {
    fn buffered(&self) -> usize {
        self.inner.buffered()
    }
    fn take(&mut self, next: Vec<u8>) -> Vec<u8> {
        self.inner.take(next)
    }
}

/// The pretty view for this terminal: a running call's row is replaced by its result only on a
/// real terminal.
fn pretty_sink(term: Terminal) -> PrettySink {
    let live = std::io::stdout().is_terminal() && std::env::var_os("TERM").is_none_or(|t| t != "dumb");
    PrettySink::new(term).rewrite_running(live)
}

/// Normalizes one input, sending its output blocks; returns when done or when the writer is gone.
fn work(input: &Input, settings: &Settings, tx: &SyncSender<Msg>, spares: &Spares, mut sink: impl Output) {
    let truncated = Arc::new(AtomicBool::new(false));
    let reader = if settings.follow {
        open_followed(input, settings, &truncated)
    } else {
        input::open(input, settings.options.max_line_bytes)
    };
    let mut reader = match reader {
        Ok(r) => r,
        Err(e) => {
            let _ = tx.send(Msg::Failed(format!("{}: {e}", input.name())));
            return;
        }
    };
    let opts = input.options(&settings.options);
    let mut norm = Normalizer::new(opts.clone());
    let stdin_fd = matches!(input, Input::Stdin).then_some(0);
    // A followed file that shrinks is a new stream: the old one ends (its `run_ended`), a new run
    // starts with line 1 at the file's new start, and stderr says so.
    loop {
        let mut fed = false;
        loop {
            if settings.interrupted.load(Ordering::Relaxed) {
                break;
            }
            // The reader's own buffer, fed without another copy.
            let chunk = match reader.fill_buf() {
                Ok([]) => break,
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = tx.send(Msg::Failed(format!("{}: {e}", input.name())));
                    if !fed {
                        // Unreadable from the start: no events for it.
                        return;
                    }
                    break;
                }
            };
            fed = true;
            let n = chunk.len();
            if let Some(p) = &settings.progress {
                p.read(n);
            }
            norm.feed(chunk, &mut sink);
            reader.consume(n);
            let idle = sink.buffered() < WRITE_BLOCK && !more_ready(stdin_fd, settings.follow);
            if idle {
                sink.idle();
            }
            if (idle || sink.buffered() >= WRITE_BLOCK) && sink.buffered() > 0 && !spares.send(tx, &mut sink) {
                return;
            }
        }
        let summary = norm.finish(&mut sink);
        if sink.buffered() > 0 && !spares.send(tx, &mut sink) {
            return;
        }
        let _ = tx.send(Msg::Done(summary));
        if !truncated.swap(false, Ordering::Relaxed) || settings.interrupted.load(Ordering::Relaxed) {
            return;
        }
        let clear = if settings.progress.is_some() { crate::cli::progress::CLEAR } else { "" };
        eprintln!(
            "{clear}agentnorm: {}: truncated; read again from its start as a new run (lines counted from 1)",
            input.name()
        );
        norm = Normalizer::new(opts.clone());
    }
}

/// The mapping of an input normalized with all cores: a large plain file (not stdin, not
/// compressed, not followed) when there is more than one thread. `None` sends it the usual way.
fn mapped(input: &Input, settings: &Settings) -> Option<Mmap> {
    let Input::File(path) = input else { return None };
    if settings.threads < 2 || settings.follow {
        return None;
    }
    // Looked at before it is opened: opening a FIFO to look would take a writer's first bytes
    // and, once closed, break its pipe before the worker opens it again.
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() < PARALLEL_MIN {
        return None;
    }
    let file = File::open(path).ok()?;
    let map = Mmap::new(file).ok()??;
    let head = map.bytes();
    agentnorm::files::is_plain(head).then_some(map)
}

/// Normalizes one mapped file on all threads into the sink of the output format.
fn chunked_worker(input: &Input, settings: &Settings, tx: &SyncSender<Msg>, spares: &Spares, map: Mmap) {
    let x = settings.export.as_ref().map(|(o, x)| (*o, x.clone()));
    let (s, t, m) = (settings, tx, spares);
    match (settings.format, x) {
        (Format::Ndjson, None) => fold_chunks(input, s, t, m, map, Spill::new(NdjsonSink::default(), t, m)),
        (Format::Pretty(term), None) => fold_chunks(input, s, t, m, map, Spill::new(pretty_sink(term), t, m)),
        (Format::Otlp(o), x) => fold_chunks(input, s, t, m, map, Spill::new(OtlpOut::new(o, x.map(|x| x.1)), t, m)),
        (Format::Ndjson, Some((o, x))) => {
            fold_chunks(input, s, t, m, map, Spill::new(Tee::new(NdjsonSink::default(), o, x), t, m));
        }
        (Format::Pretty(term), Some((o, x))) => {
            fold_chunks(input, s, t, m, map, Spill::new(Tee::new(pretty_sink(term), o, x), t, m));
        }
    }
}

/// Normalizes one mapped file with [`fold_parallel`], sending what [`work`] sends: chunks cut at
/// newlines, decoded and folded on `-j` threads, the output blocks sent in order from the fold's
/// turn, the pages behind it released. When another process wants to write or truncate the
/// file (its lease breaks: see `mapped`), the fold stops at the next chunk, the mapping is let
/// go, and the rest is read from there as a stream.
fn fold_chunks<S: Output + Send>(
    input: &Input,
    settings: &Settings,
    tx: &SyncSender<Msg>,
    spares: &Spares,
    map: Mmap,
    mut sink: S,
) {
    let opts = input.options(&settings.options);
    let mut norm = Normalizer::new(opts);
    let data = map.bytes();
    let (mut released, mut counted) = (0, 0);
    let (mut gone, mut broken, mut fed) = (false, false, 0);
    let mut cut = |pos| line_cut(data, pos, CHUNK);
    let mut deliver = |sink: &mut S, end: usize| {
        fed = end;
        if let Some(p) = &settings.progress {
            p.read(end - counted);
            counted = end;
        }
        if map.broken() {
            broken = true;
            return false;
        }
        if end - released >= RELEASE {
            released = map.release(released, end);
        }
        if sink.buffered() >= WRITE_BLOCK && !spares.send(tx, sink) {
            gone = true;
            return false;
        }
        !settings.interrupted.load(Ordering::Relaxed)
    };
    let ended = fold_parallel(&mut norm, &mut sink, data, settings.threads, &mut cut, &mut deliver);
    if let Err(e) = ended {
        panic!("{e}");
    }
    if gone {
        return;
    }
    if broken {
        // No thread touches the mapping any more: it goes, with the lease (the writer goes on).
        drop(map);
        match read_rest(input, fed, settings, tx, spares, &mut norm, &mut sink) {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => {
                let _ = tx.send(Msg::Failed(format!("{}: {e}", input.name())));
            }
        }
    }
    let summary = norm.finish(&mut sink);
    if sink.buffered() > 0 && !spares.send(tx, &mut sink) {
        return;
    }
    let _ = tx.send(Msg::Done(summary));
}

/// Reads a file from `pos` to its end as a stream into `norm` (the rest of a mapped file whose
/// lease broke); false when the writer is gone.
fn read_rest<S: Output>(
    input: &Input,
    pos: usize,
    settings: &Settings,
    tx: &SyncSender<Msg>,
    spares: &Spares,
    norm: &mut Normalizer,
    sink: &mut S,
) -> io::Result<bool> {
    let Input::File(path) = input else { return Ok(true) };
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(pos as u64))?;
    let mut reader = BufReader::with_capacity(READ_CHUNK, file);
    loop {
        if settings.interrupted.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let n = match reader.fill_buf() {
            Ok([]) => return Ok(true),
            Ok(chunk) => {
                norm.feed(chunk, sink);
                chunk.len()
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        reader.consume(n);
        if let Some(p) = &settings.progress {
            p.read(n);
        }
        if sink.buffered() >= WRITE_BLOCK && !spares.send(tx, sink) {
            return Ok(false);
        }
    }
}

/// Whether the input has more bytes ready right now (files always do; a followed file is
/// flushed after each read, since it is being watched live).
fn more_ready(stdin_fd: Option<i32>, follow: bool) -> bool {
    if follow {
        return false;
    }
    let Some(fd) = stdin_fd else { return true };
    #[cfg(unix)]
    {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: `p` is a valid pollfd for the duration of the call; a zero timeout never blocks.
        let r = unsafe { libc::poll(&mut p, 1, 0) };
        r > 0
    }
    #[cfg(not(unix))]
    {
        let _ = fd;
        false
    }
}

/// A file read like `tail -f`: at its end, waits for more instead of ending. A file that shrinks
/// (truncated or rotated in place) ends the read (`truncated` set) and is read again from its
/// start.
struct Followed {
    file: File,
    pos: u64,
    interrupted: Arc<AtomicBool>,
    truncated: Arc<AtomicBool>,
}

impl Read for Followed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.file.read(buf)?;
            if n > 0 {
                self.pos += n as u64;
                return Ok(n);
            }
            if self.interrupted.load(Ordering::Relaxed) {
                return Ok(0);
            }
            if self.file.metadata()?.len() < self.pos {
                // The end of this stream: the reader starts a new one from the file's start.
                self.pos = self.file.seek(SeekFrom::Start(0))?;
                self.truncated.store(true, Ordering::Relaxed);
                return Ok(0);
            }
            std::thread::sleep(FOLLOW_POLL);
        }
    }
}

fn open_followed(input: &Input, settings: &Settings, truncated: &Arc<AtomicBool>) -> io::Result<input::Reader> {
    let Input::File(path) = input else {
        return input::open(input, settings.options.max_line_bytes);
    };
    // A FIFO (or any file that is no regular file) cannot seek: it is read as the stream it is,
    // to the end its writers give it. Looked at before opening (opening a FIFO takes a writer).
    if !std::fs::metadata(path)?.is_file() {
        return input::open(input, settings.options.max_line_bytes);
    }
    let mut file = File::open(path)?;
    let mut magic = [0u8; 16];
    let n = file.read(&mut magic)?;
    if !agentnorm::files::is_plain(&magic[..n]) {
        return Err(io::Error::new(io::ErrorKind::Unsupported, "--follow reads uncompressed log files only"));
    }
    file.seek(SeekFrom::Start(0))?;
    Ok(Box::new(BufReader::with_capacity(
        READ_CHUNK,
        Followed { file, pos: 0, interrupted: Arc::clone(&settings.interrupted), truncated: Arc::clone(truncated) },
    )))
}

/// Normalizes one whole input into `sink` on the calling thread (the views that write at the end
/// of input: `diagnostics`, `--format html`, `usage`), counting the bytes read in `progress`.
/// Returns the summary, or `None` when the input could not be read from its start (it then gets
/// no events), and the read error to say on stderr.
pub fn feed_input(
    input: &Input,
    options: &Options,
    progress: Option<&Counters>,
    sink: &mut dyn Sink,
) -> (Option<Summary>, Option<String>) {
    let mut reader = match input::open(input, options.max_line_bytes) {
        Ok(r) => r,
        Err(e) => return (None, Some(format!("{}: {e}", input.name()))),
    };
    let mut norm = Normalizer::new(input.options(options));
    let mut fed = false;
    let mut failed = None;
    loop {
        // The reader's own buffer, fed without another copy.
        let n = match reader.fill_buf() {
            Ok([]) => break,
            Ok(chunk) => {
                norm.feed(chunk, sink);
                chunk.len()
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                failed = Some(format!("{}: {e}", input.name()));
                if !fed {
                    return (None, failed);
                }
                break;
            }
        };
        reader.consume(n);
        fed = true;
        if let Some(p) = progress {
            p.read(n);
        }
    }
    (Some(norm.finish(sink)), failed)
}

/// Runs `f` on every input on up to `threads` worker threads and returns the results in input
/// order (so that what is folded from them never depends on the thread count).
pub fn map_inputs<T: Send>(inputs: &[Input], threads: usize, f: impl Fn(&Input) -> T + Sync) -> Vec<T> {
    map_inputs_with(inputs, threads, None, f)
}

/// [`map_inputs`] for work that reads the files: the files a worker will take next and that
/// `reads` says it will read are announced to the kernel ahead of time ([`prefetch`]), on one
/// more thread.
pub fn map_reading<T: Send>(
    inputs: &[Input],
    threads: usize,
    reads: &(dyn Fn(&Path) -> bool + Sync),
    f: impl Fn(&Input) -> T + Sync,
) -> Vec<T> {
    map_inputs_with(inputs, threads, Some(reads), f)
}

fn map_inputs_with<T: Send>(
    inputs: &[Input],
    threads: usize,
    reads: Option<&(dyn Fn(&Path) -> bool + Sync)>,
    f: impl Fn(&Input) -> T + Sync,
) -> Vec<T> {
    let next = AtomicUsize::new(0);
    let done = AtomicBool::new(false);
    let results: Mutex<Vec<Option<T>>> = Mutex::new((0..inputs.len()).map(|_| None).collect());
    // The thread that announces files ahead, woken as workers take them.
    let ahead = std::sync::OnceLock::new();
    std::thread::scope(|s| {
        if let Some(reads) = reads.filter(|_| inputs.len() > 1) {
            let paths = inputs.iter().map(|i| match i {
                Input::File(p) => Some(p.as_path()),
                Input::Stdin => None,
            });
            let (next, done) = (&next, &done);
            let _ = ahead.set(s.spawn(move || prefetch::ahead(paths, next, done, reads)).thread().clone());
        }
        let workers: Vec<_> = (0..threads.clamp(1, inputs.len().max(1)))
            .map(|_| {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        prefetch::taken(ahead.get());
                        let Some(input) = inputs.get(i) else { break };
                        let r = f(input);
                        if let Ok(mut v) = results.lock() {
                            v[i] = Some(r);
                        }
                    }
                })
            })
            .collect();
        let joined: Vec<_> = workers.into_iter().map(|w| w.join()).collect();
        done.store(true, Ordering::Relaxed);
        prefetch::taken(ahead.get());
        for j in joined {
            if let Err(panic) = j {
                std::panic::resume_unwind(panic);
            }
        }
    });
    results.into_inner().unwrap_or_default().into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_buffers_come_back_empty_with_their_capacity() {
        let spares = Spares::default();
        let mut grown = Vec::with_capacity(3 * WRITE_BLOCK);
        grown.extend_from_slice(b"{\"type\":\"run_started\"}\n");
        let ptr = grown.as_ptr();
        spares.put(grown);
        let again = spares.get();
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), ptr);
        assert!(again.capacity() >= 3 * WRITE_BLOCK);
        // Nothing kept: a new buffer with room for a block.
        assert!(spares.get().capacity() >= 2 * WRITE_BLOCK);
    }

    #[test]
    fn only_a_few_buffers_of_bounded_size_are_kept() {
        let spares = Spares::default();
        spares.put(Vec::with_capacity(SPARE_MAX + 1));
        for _ in 0..SPARES + 3 {
            spares.put(Vec::with_capacity(WRITE_BLOCK));
        }
        let kept = spares.0.lock().unwrap();
        assert_eq!(kept.len(), SPARES);
        assert!(kept.iter().all(|b| b.capacity() <= SPARE_MAX));
    }
}
