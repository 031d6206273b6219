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
//! - With `--output-dir`, each input's pages are written as soon as that input is read, and its
//!   sessions are then let go: memory is that of one input, not of the whole folder. A session
//!   that a later input continues (the same session id: a resumed session) is rendered again
//!   from all of its inputs, read again from their files, and its page rewritten in place (its
//!   path printed once); when one of those inputs is stdin, which cannot be read twice, or
//!   when its files hold more than [`REREAD_MAX`] bytes, the later part gets a page of its own
//!   (`<id>-2.html`).
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

use std::collections::{HashMap, HashSet};

use agentnorm::view::html::{HtmlSink, Transcript};
use agentnorm::{Event, Normalizer, Options, Sink};
use anyhow::{Context, Result};

use crate::cli::input::{self, Input};

/// A resumed session is rendered again from its files while they hold at most this many bytes
/// (many files of one session id would otherwise be read again and again); past it, the later
/// part gets a page of its own.
const REREAD_MAX: u64 = 64 << 20;

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
    if let Some(dir) = output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let pages = Arc::new(Mutex::new(output_dir.map(|dir| Pages::new(dir, inputs.clone(), options.clone()))));
    let (done_tx, done_rx) = channel::<Result<()>>();
    {
        let (sink, found, interrupted, pages) =
            (Arc::clone(&sink), Arc::clone(&found), Arc::clone(interrupted), Arc::clone(&pages));
        std::thread::spawn(move || {
            let mut result = Ok(());
            for (i, input) in inputs.iter().enumerate() {
                if interrupted.load(Ordering::Relaxed) {
                    break;
                }
                let f = feed(input, &options, &sink, &interrupted, true);
                if let Ok(mut all) = found.lock() {
                    all.input_failed |= f.input_failed;
                    all.unknown |= f.unknown;
                    all.turn_failed |= f.turn_failed;
                }
                // With --output-dir: this input's pages now, and its sessions let go.
                let mut pages = pages.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(pages) = pages.as_mut() {
                    let transcript = std::mem::take(&mut *sink.lock().unwrap_or_else(|e| e.into_inner())).finish();
                    if let Err(e) = pages.write(&transcript, Some(i)) {
                        result = Err(e);
                        break;
                    }
                }
            }
            let _ = done_tx.send(result);
        });
    }
    let mut deadline = None;
    loop {
        match done_rx.recv_timeout(Duration::from_millis(50)) {
            Ok(result) => {
                result?;
                break;
            }
            Err(RecvTimeoutError::Disconnected) => break,
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
    // The one page, or (with --output-dir) the pages of an input cut short by SIGINT.
    let mut pages = pages.lock().unwrap_or_else(|e| e.into_inner());
    match pages.as_mut() {
        Some(pages) => pages.write(&transcript, None)?,
        None => {
            let mut stdout = crate::cli::stdout::lock();
            transcript.write_all(&mut stdout)?;
            stdout.flush()?;
        }
    }
    Ok(found)
}

/// The pages of `--output-dir` written so far.
struct Pages {
    dir: PathBuf,
    inputs: Vec<Input>,
    options: Options,
    /// Session id → its page's file name and the inputs it came from.
    written: HashMap<String, (String, Vec<usize>)>,
    /// File names in use (lower-cased: file systems that fold case).
    taken: HashSet<String>,
    /// Whether the paths are still printed (false once their reader went away).
    listing: bool,
}

impl Pages {
    fn new(dir: &Path, inputs: Vec<Input>, options: Options) -> Pages {
        Pages { dir: dir.to_path_buf(), inputs, options, written: HashMap::new(), taken: HashSet::new(), listing: true }
    }

    /// Writes the pages of `transcript`, read from input `input` (`None`: an input cut short).
    fn write(&mut self, transcript: &Transcript, input: Option<usize>) -> Result<()> {
        for page in transcript.pages() {
            let sid = transcript.session_id(&page).map(str::to_owned);
            let earlier = sid.as_ref().and_then(|s| self.written.get(s)).cloned();
            if let (Some(sid), Some((file, mut from)), Some(i)) = (&sid, earlier, input)
                && from.iter().chain([&i]).all(|&k| matches!(self.inputs[k], Input::File(_)))
                && self.size_of(&from, i) <= REREAD_MAX
            {
                // A resumed session: rendered again from all of its inputs, its page rewritten.
                from.push(i);
                let again = self.reread(&from);
                if let Some(p) = again.pages().into_iter().find(|p| again.session_id(p) == Some(sid.as_str())) {
                    write_page(&self.dir, &self.dir.join(&file), |w| again.write_page(w, &p.sections))?;
                }
                self.written.insert(sid.clone(), (file, from));
                continue;
            }
            let file = self.free_name(&page.file_name);
            let path = self.dir.join(&file);
            write_page(&self.dir, &path, |w| transcript.write_page(w, &page.sections))?;
            if let (Some(sid), Some(i)) = (sid, input) {
                self.written.entry(sid).or_insert((file, vec![i]));
            }
            if self.listing {
                let mut stdout = crate::cli::stdout::lock();
                match writeln!(stdout, "{}", path.display()).and_then(|()| stdout.flush()) {
                    Ok(()) => {}
                    // The list's reader went away: the pages are still written.
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => self.listing = false,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// The bytes of the files `from` and `i` (what rendering their session again reads).
    fn size_of(&self, from: &[usize], i: usize) -> u64 {
        from.iter()
            .chain([&i])
            .map(|&k| match &self.inputs[k] {
                Input::File(p) => std::fs::metadata(p).map_or(u64::MAX, |m| m.len()),
                Input::Stdin => u64::MAX,
            })
            .fold(0u64, u64::saturating_add)
    }

    /// `name`, or `<stem>-2.html`, `-3`, … when an earlier input's page has it.
    fn free_name(&mut self, name: &str) -> String {
        let stem = name.strip_suffix(".html").unwrap_or(name);
        (1u32..)
            .map(|n| if n == 1 { name.to_owned() } else { format!("{stem}-{n}.html") })
            .find(|c| self.taken.insert(c.to_ascii_lowercase()))
            .unwrap_or_else(|| name.to_owned())
    }

    /// The inputs `which` read again, into one transcript (their errors were said the first
    /// time).
    fn reread(&self, which: &[usize]) -> Transcript {
        let sink = Mutex::new(HtmlSink::new());
        let never = AtomicBool::new(false);
        for &k in which {
            let _ = feed(&self.inputs[k], &self.options, &sink, &never, false);
        }
        sink.into_inner().unwrap_or_else(|e| e.into_inner()).finish()
    }
}

/// Normalizes one input into the shared collector, stopping at SIGINT; `say`: its read errors
/// on stderr.
fn feed(input: &Input, options: &Options, sink: &Mutex<HtmlSink>, interrupted: &AtomicBool, say: bool) -> Found {
    let mut found = Found::default();
    let mut reader = match input::open(input, options.max_line_bytes) {
        Ok(r) => r,
        Err(e) => {
            if say {
                eprintln!("agentnorm: {}: {}", input.name(), agentnorm::sink::safe::printable(&e.to_string()));
            }
            found.input_failed = true;
            return found;
        }
    };
    let mut norm = Normalizer::new(options.clone().source(input.source()));
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
                if say {
                    eprintln!("agentnorm: {}: {}", input.name(), agentnorm::sink::safe::printable(&e.to_string()));
                }
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
