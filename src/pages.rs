//! `--format html`: every input in order into one HTML collector, then one page on stdout or one
//! page per session in `--output-dir`, whose paths are printed.
//!
//! It exists apart from `main` for three guarantees the plain loop did not give (issue 14):
//!
//! - Ctrl-C writes the page of what was read (exit 130): the inputs are read on a thread of their
//!   own, and on SIGINT the collector is taken from it (after a moment for the reader to end the
//!   input it is in), so a read blocked on a pipe that stays open cannot keep the page from being
//!   written.
//! - The pages are the output, the list of their paths is secondary: when the reader of stdout
//!   goes away (`… | head -1`), every page is still written, and the exit status is as without
//!   the list.
//! - A page is created without following links: it is written to a new file of its own in DIR
//!   (`create_new`, which refuses to go through any link) and then renamed over its name, so a
//!   symbolic link planted at a page's path is replaced by the page, and the file it pointed to
//!   (inside DIR or out of it) is left as it was.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead as _, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agentnorm::html::HtmlSink;
use agentnorm::{Event, Normalizer, Options, Sink};
use anyhow::{Context, Result};

use crate::input::{self, Input};

/// How long the reader has after SIGINT to end the input it is in (`run_ended`).
const GRACE: Duration = Duration::from_millis(300);

/// What the reading thread found, for the exit status.
#[derive(Debug, Default, Clone, Copy)]
pub struct Found {
    /// An input could not be read (wholly or in part).
    pub input_failed: bool,
    /// A line ended as `unknown`.
    pub unknown: bool,
    /// A turn failed or a stream ended with one open.
    pub turn_failed: bool,
    /// SIGINT came before the end of input.
    pub interrupted: bool,
}

/// A sink that locks the shared collector for each event.
struct Shared<'a>(&'a Mutex<HtmlSink>);

impl Sink for Shared<'_> {
    fn event(&mut self, ev: &Event) {
        if let Ok(mut s) = self.0.lock() {
            s.event(ev);
        }
    }
}

/// Reads every input into one collector and writes the page(s).
pub fn run(
    inputs: Vec<Input>,
    options: Options,
    output_dir: Option<&Path>,
    interrupted: &Arc<AtomicBool>,
) -> Result<Found> {
    let sink = Arc::new(Mutex::new(HtmlSink::new()));
    let found = Arc::new(Mutex::new(Found::default()));
    let (done_tx, done_rx) = channel::<()>();
    {
        let (sink, found, interrupted) = (Arc::clone(&sink), Arc::clone(&found), Arc::clone(interrupted));
        std::thread::spawn(move || {
            for input in &inputs {
                if interrupted.load(Ordering::Relaxed) {
                    break;
                }
                let f = feed(input, &options, &sink, &interrupted);
                if let Ok(mut all) = found.lock() {
                    all.input_failed |= f.input_failed;
                    all.unknown |= f.unknown;
                    all.turn_failed |= f.turn_failed;
                }
            }
            let _ = done_tx.send(());
        });
    }
    let mut deadline = None;
    loop {
        match done_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
            Err(RecvTimeoutError::Timeout) => {
                if interrupted.load(Ordering::Relaxed)
                    && Instant::now() >= *deadline.get_or_insert_with(|| Instant::now() + GRACE)
                {
                    break;
                }
            }
        }
    }
    let mut found = found.lock().map(|f| *f).unwrap_or_default();
    found.interrupted = interrupted.load(Ordering::Relaxed);
    // Taken out from under the reader (if it is still blocked in a read, it finds it empty).
    let transcript = std::mem::take(&mut *sink.lock().unwrap_or_else(|e| e.into_inner())).finish();
    let mut stdout = crate::stdout::lock();
    match output_dir {
        None => {
            transcript.write_all(&mut stdout)?;
            stdout.flush()?;
        }
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            let mut listing = true;
            for page in transcript.pages() {
                let path = dir.join(&page.file_name);
                write_page(dir, &path, |w| transcript.write_page(w, &page.sections))?;
                if listing {
                    match writeln!(stdout, "{}", path.display()).and_then(|()| stdout.flush()) {
                        Ok(()) => {}
                        // The list's reader went away: the pages are still written.
                        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => listing = false,
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
    }
    Ok(found)
}

/// Normalizes one input into the shared collector, stopping at SIGINT.
fn feed(input: &Input, options: &Options, sink: &Mutex<HtmlSink>, interrupted: &AtomicBool) -> Found {
    let mut found = Found::default();
    let mut reader = match input::open(input, options.max_line_bytes) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("agentnorm: {}: {}", input.name(), agentnorm::safe::printable(&e.to_string()));
            found.input_failed = true;
            return found;
        }
    };
    let mut norm = Normalizer::new(Options { source: input.source(), ..options.clone() });
    let mut shared = Shared(sink);
    loop {
        if interrupted.load(Ordering::Relaxed) {
            break;
        }
        let n = match reader.fill_buf() {
            Ok([]) => break,
            Ok(chunk) => {
                norm.feed(chunk, &mut shared);
                chunk.len()
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("agentnorm: {}: {}", input.name(), agentnorm::safe::printable(&e.to_string()));
                found.input_failed = true;
                break;
            }
        };
        reader.consume(n);
    }
    let summary = norm.finish(&mut shared);
    found.unknown = summary.unknown > 0;
    found.turn_failed = summary.turn_failed || summary.turn_open;
    found
}

/// Writes `path` (in `dir`) without following a link: into a new file of its own beside it, then
/// renamed over the name (which replaces a link there, never its target).
fn write_page(dir: &Path, path: &Path, write: impl FnOnce(&mut io::BufWriter<File>) -> io::Result<()>) -> Result<()> {
    let (tmp, file) = new_file(dir).with_context(|| format!("creating a page in {}", dir.display()))?;
    let written = (|| -> io::Result<()> {
        let mut w = io::BufWriter::new(file);
        write(&mut w)?;
        w.flush()?;
        w.get_ref().sync_data().or(Ok(()))
    })();
    let result = written
        .with_context(|| format!("writing {}", path.display()))
        .and_then(|()| std::fs::rename(&tmp, path).with_context(|| format!("creating {}", path.display())));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// A new file in `dir` with a name of its own: `create_new` (O_CREAT | O_EXCL) fails on any
/// existing name, a link included, so nothing outside DIR can be written through it.
fn new_file(dir: &Path) -> io::Result<(PathBuf, File)> {
    let pid = std::process::id();
    for n in 0u32.. {
        let tmp = dir.join(format!(".agentnorm-{pid}-{n}.tmp"));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 10_000 => {}
            Err(e) => return Err(e),
        }
    }
    unreachable!("the loop returns")
}
