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
//! - A re-run over the same DIR renders only what changed: DIR keeps `.agentnorm-pages.json`
//!   ([`manifest`](crate::cli::manifest)), what each input read whole was (size, times, inode)
//!   and which pages it wrote. An input that is the same file, unchanged, whose pages are all
//!   still there as they were left (plain files, same size and time), whose pages no input
//!   that changed contributed to, and at which the run is where the last one was (the same
//!   earlier inputs of its sessions, the same names free) keeps its pages without being read:
//!   their paths are printed as if written, its `unknown` lines and failed turns count for the
//!   exit status as they did. Other options, another build, or `--rerender` render everything.
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
use crate::cli::manifest::{self, InputRecord, Manifest, PageEntry, PageRecord, Stamp};

/// A resumed session is rendered again from its files while they hold at most this many bytes
/// (many files of one session id would otherwise be read again and again); past it, the later
/// part gets a page of its own.
const REREAD_MAX: u64 = 64 << 20;

/// A file modified less than this before it was read is not recorded as read (the next run
/// reads it again): a write in the same tick of the file system's clock as the read would not
/// move its modification time.
const RACY: Duration = Duration::from_secs(2);

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
    rerender: bool,
    interrupted: &Arc<AtomicBool>,
) -> Result<Found> {
    let sink = Arc::new(Mutex::new(HtmlSink::new()));
    let found = Arc::new(Mutex::new(Found::default()));
    if let Some(dir) = output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let pages = Arc::new(Mutex::new(output_dir.map(|dir| Pages::new(dir, inputs.clone(), options.clone(), rerender))));
    let (done_tx, done_rx) = channel::<Result<()>>();
    {
        let (sink, found, interrupted, pages) =
            (Arc::clone(&sink), Arc::clone(&found), Arc::clone(interrupted), Arc::clone(&pages));
        let recording = output_dir.is_some();
        std::thread::spawn(move || {
            let mut result = Ok(());
            for (i, input) in inputs.iter().enumerate() {
                if interrupted.load(Ordering::Relaxed) {
                    break;
                }
                // With --output-dir: an input unchanged since the last run keeps its pages.
                let kept = match pages.lock().unwrap_or_else(|e| e.into_inner()).as_mut().map(|p| p.keep(i)) {
                    Some(Ok(kept)) => kept,
                    Some(Err(e)) => {
                        result = Err(e);
                        break;
                    }
                    None => None,
                };
                if let Some(f) = kept {
                    if let Ok(mut all) = found.lock() {
                        all.unknown |= f.unknown;
                        all.turn_failed |= f.turn_failed;
                    }
                    continue;
                }
                let before = if recording { stamp(input) } else { None };
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
                    match pages.write(&transcript, Some(i)) {
                        Ok(entries) => pages.record(i, before, &f, entries),
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
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
        Some(pages) => {
            pages.write(&transcript, None)?;
            // A cache: when it cannot be written, the next run renders everything again.
            if let Err(e) = pages.save() {
                eprintln!(
                    "agentnorm: {}: {}",
                    pages.dir.join(manifest::MANIFEST).display(),
                    agentnorm::sink::safe::printable(&format!("{e:#}"))
                );
            }
        }
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
    /// The last run's record and this run's.
    cache: Cache,
}

/// The last run's record ([`manifest`]) as this run uses it, and the one this run leaves.
#[derive(Default)]
struct Cache {
    /// This build ([`manifest::build`]).
    build: String,
    /// The options the pages are rendered with.
    key: String,
    /// The last run's inputs, by path.
    inputs: HashMap<String, InputRecord>,
    /// The last run's pages, by file name.
    pages: HashMap<String, PageRecord>,
    /// The paths of this run's inputs that are the files the last run read, unchanged (each
    /// named once in this run).
    unchanged: HashSet<String>,
    /// This run's inputs read whole or kept, in order, for the next run.
    now: Vec<InputRecord>,
    /// Page file name → the inputs it was rendered from in this run.
    from: HashMap<String, Vec<usize>>,
}

/// An input's path as a record names it (`None`: stdin, or a path that is not UTF-8, which is
/// never recorded).
fn path_key(input: &Input) -> Option<&str> {
    match input {
        Input::File(p) => p.to_str(),
        Input::Stdin => None,
    }
}

/// A file's stamp before it is read, and when it was taken (`None`: not a plain file).
fn stamp(input: &Input) -> Option<(Stamp, std::time::SystemTime)> {
    let Input::File(p) = input else { return None };
    let m = std::fs::metadata(p).ok().filter(std::fs::Metadata::is_file)?;
    Some((Stamp::of(&m), std::time::SystemTime::now()))
}

impl Pages {
    fn new(dir: &Path, inputs: Vec<Input>, options: Options, rerender: bool) -> Pages {
        let mut cache = Cache { build: manifest::build(), key: format!("{options:?}"), ..Cache::default() };
        let before = if rerender { None } else { manifest::load(dir, &cache.build, &cache.key) };
        // What the record says stops being true of DIR as soon as this run writes a page: it is
        // gone until this run leaves its own (a run that fails half way leaves none).
        let _ = std::fs::remove_file(dir.join(manifest::MANIFEST));
        if let Some(before) = before {
            let mut named = HashMap::<&str, usize>::new();
            for key in inputs.iter().filter_map(path_key) {
                *named.entry(key).or_default() += 1;
            }
            cache.inputs = before.inputs.into_iter().map(|r| (r.path.clone(), r)).collect();
            cache.pages = before.pages.into_iter().map(|p| (p.file.clone(), p)).collect();
            for input in &inputs {
                let (Some(key), Input::File(p)) = (path_key(input), input) else { continue };
                let Some(record) = cache.inputs.get(key) else { continue };
                let same = named.get(key) == Some(&1)
                    && std::fs::metadata(p).is_ok_and(|m| m.is_file() && Stamp::of(&m) == record.stamp);
                if same {
                    cache.unchanged.insert(key.to_owned());
                }
            }
        }
        Pages {
            dir: dir.to_path_buf(),
            inputs,
            options,
            written: HashMap::new(),
            taken: HashSet::new(),
            listing: true,
            cache,
        }
    }

    /// The inputs `from` as a record names them (`-` for stdin).
    fn labels(&self, from: &[usize]) -> Vec<String> {
        from.iter()
            .map(|&k| match &self.inputs[k] {
                Input::File(p) => p.to_string_lossy().into_owned(),
                Input::Stdin => "-".to_owned(),
            })
            .collect()
    }

    /// When input `i` can keep the pages the last run wrote for it, keeps them (replays what
    /// writing them did to the run's names and sessions, prints their paths) and returns what
    /// it found for the exit status; `None`: it is to be read and rendered.
    ///
    /// It can when it is a file the last run read whole, unchanged since; every input its pages
    /// were rendered from (and the earlier inputs of its sessions) is unchanged too; every page
    /// is still a plain file of the size and time the last run left; and the run is where the
    /// last one was when it came to this input: each session had the same earlier inputs, and
    /// each new page's name resolves to the same file.
    fn keep(&mut self, i: usize) -> Result<Option<Found>> {
        let Some(key) = path_key(&self.inputs[i]) else { return Ok(None) };
        if !self.cache.unchanged.contains(key) {
            return Ok(None);
        }
        let Some(record) = self.cache.inputs.get(key) else { return Ok(None) };
        // What keeping it does to the names and sessions, applied only when every page can stay.
        let mut taken = Vec::<String>::new();
        let mut sessions = HashMap::<&str, (String, Vec<usize>)>::new();
        for e in &record.pages {
            if !manifest::is_page_name(&e.file) {
                return Ok(None);
            }
            let now = e.session.as_deref().and_then(|s| sessions.get(s).or_else(|| self.written.get(s)));
            if now.map(|(_, from)| self.labels(from)) != e.earlier {
                return Ok(None);
            }
            let Some(page) = self.cache.pages.get(&e.file) else { return Ok(None) };
            let all_unchanged = |paths: &[String]| paths.iter().all(|p| self.cache.unchanged.contains(p));
            if !all_unchanged(&page.from) || !e.earlier.as_deref().is_none_or(all_unchanged) {
                return Ok(None);
            }
            let intact = std::fs::symlink_metadata(self.dir.join(&e.file))
                .is_ok_and(|m| m.is_file() && m.len() == page.size && manifest::modified_ns(&m) == page.mtime_ns);
            if !intact {
                return Ok(None);
            }
            match (e.resumed, &e.session, now) {
                (true, Some(sid), Some((file, from))) if *file == e.file => {
                    let mut from = from.clone();
                    from.push(i);
                    sessions.insert(sid, (file.clone(), from));
                }
                (false, sid, now) => {
                    let free = |c: &str| {
                        let c = c.to_ascii_lowercase();
                        !self.taken.contains(&c) && !taken.contains(&c)
                    };
                    if !manifest::is_page_name(&e.name) || name_for(&e.name, free) != e.file {
                        return Ok(None);
                    }
                    taken.push(e.file.to_ascii_lowercase());
                    if let (Some(sid), None) = (sid, now) {
                        sessions.insert(sid, (e.file.clone(), vec![i]));
                    }
                }
                _ => return Ok(None),
            }
        }
        let record = record.clone();
        self.taken.extend(taken);
        for (sid, (file, from)) in sessions {
            self.cache.from.insert(file.clone(), from.clone());
            self.written.insert(sid.to_owned(), (file, from));
        }
        for e in &record.pages {
            if !e.resumed {
                self.cache.from.insert(e.file.clone(), vec![i]);
                self.list(&self.dir.join(&e.file))?;
            }
        }
        let found = Found { unknown: record.unknown, turn_failed: record.turn_failed, ..Found::default() };
        self.cache.now.push(record);
        Ok(Some(found))
    }

    /// Records input `i`, read whole into `pages`, for the next run: when it is a plain file,
    /// read without error, the same after as `before` it was read, and not modified in the
    /// [`RACY`] moment before.
    fn record(&mut self, i: usize, before: Option<(Stamp, std::time::SystemTime)>, f: &Found, pages: Vec<PageEntry>) {
        let (Some((stamp, at)), Some(path), Input::File(p)) = (before, path_key(&self.inputs[i]), &self.inputs[i])
        else {
            return;
        };
        if f.input_failed || f.interrupted {
            return;
        }
        let after = std::fs::metadata(p).ok().filter(std::fs::Metadata::is_file).map(|m| Stamp::of(&m));
        let settled = at
            .checked_sub(RACY)
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .is_some_and(|t| i128::from(stamp.mtime_ns) < t.as_nanos() as i128);
        if after.as_ref() == Some(&stamp) && settled {
            let (unknown, turn_failed) = (f.unknown, f.turn_failed);
            self.cache.now.push(InputRecord { path: path.to_owned(), stamp, unknown, turn_failed, pages });
        }
    }

    /// Leaves this run's record in DIR for the next run.
    fn save(&self) -> Result<()> {
        let mut named = HashMap::<&str, usize>::new();
        for key in self.inputs.iter().filter_map(path_key) {
            *named.entry(key).or_default() += 1;
        }
        let inputs: Vec<InputRecord> =
            self.cache.now.iter().filter(|r| named.get(r.path.as_str()) == Some(&1)).cloned().collect();
        if inputs.is_empty() {
            // Nothing a next run could keep (stdin only, say): no record.
            return Ok(());
        }
        let mut pages = std::collections::BTreeMap::new();
        for e in inputs.iter().flat_map(|r| &r.pages) {
            if pages.contains_key(&e.file) {
                continue;
            }
            let (Some(from), Ok(m)) = (self.cache.from.get(&e.file), std::fs::symlink_metadata(self.dir.join(&e.file)))
            else {
                continue;
            };
            if m.is_file() {
                let (size, mtime_ns) = (m.len(), manifest::modified_ns(&m));
                pages.insert(
                    e.file.clone(),
                    PageRecord { file: e.file.clone(), from: self.labels(from), size, mtime_ns },
                );
            }
        }
        let m = Manifest {
            agentnorm: self.cache.build.clone(),
            key: self.cache.key.clone(),
            inputs,
            pages: pages.into_values().collect(),
        };
        write_page(&self.dir, &self.dir.join(manifest::MANIFEST), |w| {
            serde_json::to_writer(w, &m).map_err(io::Error::other)
        })
    }

    /// Prints a page's path while the list has a reader.
    fn list(&mut self, path: &Path) -> Result<()> {
        if self.listing {
            let mut stdout = crate::cli::stdout::lock();
            match writeln!(stdout, "{}", path.display()).and_then(|()| stdout.flush()) {
                Ok(()) => {}
                // The list's reader went away: the pages are still written.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => self.listing = false,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Writes the pages of `transcript`, read from input `input` (`None`: an input cut short),
    /// and returns what it wrote, for the record.
    fn write(&mut self, transcript: &Transcript, input: Option<usize>) -> Result<Vec<PageEntry>> {
        let mut entries = Vec::new();
        for page in transcript.pages() {
            let sid = transcript.session_id(&page).map(str::to_owned);
            let earlier = sid.as_ref().and_then(|s| self.written.get(s)).cloned();
            let earlier_labels = earlier.as_ref().map(|(_, from)| self.labels(from));
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
                self.cache.from.insert(file.clone(), from.clone());
                entries.push(PageEntry {
                    session: Some(sid.clone()),
                    name: page.file_name.clone(),
                    file: file.clone(),
                    resumed: true,
                    earlier: earlier_labels,
                });
                self.written.insert(sid.clone(), (file, from));
                continue;
            }
            let file = self.free_name(&page.file_name);
            let path = self.dir.join(&file);
            write_page(&self.dir, &path, |w| transcript.write_page(w, &page.sections))?;
            self.cache.from.insert(file.clone(), input.into_iter().collect());
            entries.push(PageEntry {
                session: sid.clone(),
                name: page.file_name.clone(),
                file: file.clone(),
                resumed: false,
                earlier: earlier_labels,
            });
            if let (Some(sid), Some(i)) = (sid, input) {
                self.written.entry(sid).or_insert((file, vec![i]));
            }
            self.list(&path)?;
        }
        Ok(entries)
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
        let file = name_for(name, |c| !self.taken.contains(&c.to_ascii_lowercase()));
        self.taken.insert(file.to_ascii_lowercase());
        file
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

/// `name`, or the first of `<stem>-2.html`, `-3`, … that is `free`.
fn name_for(name: &str, free: impl Fn(&str) -> bool) -> String {
    let stem = name.strip_suffix(".html").unwrap_or(name);
    (1u32..)
        .map(|n| if n == 1 { name.to_owned() } else { format!("{stem}-{n}.html") })
        .find(|c| free(c))
        .unwrap_or_else(|| name.to_owned())
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
    let mut norm = Normalizer::new(input.options(options));
    let mut shared = Shared(sink);
    loop {
        if interrupted.load(Ordering::Relaxed) {
            found.interrupted = true;
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
