//! The layer the Python and Node packages share over the agentnorm library, so that each of them
//! is only the conversion into its language's values.
//!
//! It exists because the bindings must say the same things as the CLI (the same options, the same
//! inputs, the same error messages) and must adapt in one place when the library's surface changes:
//! [`options`] is the only code that builds an [`agentnorm::Options`], [`Stream`] the only code
//! that drives an [`agentnorm::Normalizer`]. Events leave as JSON text written by the library's
//! own NDJSON sink (the contract's bytes), as one JSON array per batch: each language parses that
//! with its native JSON parser, which measured faster than building its objects one call at a
//! time (see the README's "Python and Node" section).
//!
//! Files are opened and told apart as the CLI does, by the library's `agentnorm::files`; only the
//! walk of a folder (an error where the CLI warns and goes on) is this crate's.

use std::io::{self, BufRead};
use std::path::{Path, PathBuf};

use agentnorm::sink::report::{self, Collector, GroupBy, Report, ReportOptions};
use agentnorm::{Dialect, Event, NdjsonSink, Normalizer, Options};

/// A failure, with the message the CLI prints for it (without its `agentnorm: ` prefix).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An input could not be opened or read: `PATH: reason`, as `agentnorm` says it.
    #[error("{name}: {source}")]
    Io {
        /// The input's name (its path as given or as found in a folder).
        name: String,
        /// What the system said.
        source: io::Error,
    },
    /// An argument the CLI would refuse.
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    fn io(name: &Path, source: io::Error) -> Error {
        Error::Io { name: name.display().to_string(), source }
    }
}

/// The normalizer's settings the bindings expose (the CLI's flags of the same names).
#[derive(Debug, Clone)]
pub struct Settings {
    /// `--dialect NAME`: force a dialect instead of detecting it per frame.
    pub dialect: Option<String>,
    /// `--redact`.
    pub redact: bool,
    /// `--raw`.
    pub raw: bool,
    /// The `source` written on every event (the CLI writes the input's path).
    pub source: Option<String>,
    /// `observed_at` on every event (the CLI's default; `--no-observed-at` turns it off).
    pub observed_at: bool,
    /// `--max-line-bytes`.
    pub max_line_bytes: Option<usize>,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { dialect: None, redact: false, raw: false, source: None, observed_at: true, max_line_bytes: None }
    }
}

/// Parses a dialect name as `--dialect` takes it.
pub fn dialect(name: Option<&str>) -> Result<Option<Dialect>, Error> {
    let Some(name) = name else { return Ok(None) };
    Dialect::from_name(name).map(Some).ok_or_else(|| {
        let names: Vec<&str> = Dialect::ALL.iter().map(|d| d.as_str()).collect();
        Error::Invalid(format!("invalid dialect {name:?} (possible values: {})", names.join(", ")))
    })
}

/// The library's options for these settings: the one place that builds them.
pub fn options(s: &Settings) -> Result<Options, Error> {
    let mut o = Options::default()
        .dialect(dialect(s.dialect.as_deref())?)
        .redact(s.redact)
        .raw(s.raw)
        .source(s.source.clone())
        .observed_at(s.observed_at);
    if let Some(n) = s.max_line_bytes {
        if n == 0 {
            return Err(Error::Invalid("max_line_bytes must be at least 1".into()));
        }
        o = o.max_line_bytes(n);
    }
    Ok(o)
}

/// A normalizer and the NDJSON sink it writes into; the events written are taken as one JSON
/// array text.
pub struct Stream {
    norm: Normalizer,
    sink: NdjsonSink,
    finished: bool,
}

impl Stream {
    /// A stream with these options.
    pub fn new(opts: Options) -> Stream {
        Stream { norm: Normalizer::new(opts), sink: NdjsonSink { buf: Vec::with_capacity(1 << 16) }, finished: false }
    }

    /// Feeds bytes (any chunking). After [`Stream::finish`] the bytes are ignored.
    pub fn feed(&mut self, bytes: &[u8]) {
        if !self.finished {
            self.norm.feed(bytes, &mut self.sink);
        }
    }

    /// Ends the input: the last partial line and `run_ended` are written. A second call does
    /// nothing.
    pub fn finish(&mut self) {
        if !self.finished {
            self.finished = true;
            self.norm.finish(&mut self.sink);
        }
    }

    /// Whether [`Stream::finish`] was called.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// How many bytes of events are waiting to be taken.
    pub fn pending(&self) -> usize {
        self.sink.buf.len()
    }

    /// The events written since the last take, as NDJSON (the CLI's bytes).
    pub fn take_ndjson(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.sink.buf)
    }

    /// The events written since the last take, as one JSON array text (`[]` when none).
    pub fn take_array(&mut self) -> String {
        ndjson_to_array(std::mem::take(&mut self.sink.buf))
    }
}

/// Turns NDJSON lines written by the library into one JSON array, in place: a JSON line holds no
/// raw newline, so each line's newline becomes the separator.
pub fn ndjson_to_array(mut buf: Vec<u8>) -> String {
    if buf.is_empty() {
        return "[]".to_owned();
    }
    for b in buf.iter_mut() {
        if *b == b'\n' {
            *b = b',';
        }
    }
    // The last newline's place takes the closing bracket; the opening one shifts the bytes in
    // place (no second buffer: a 50 MB event is not copied again).
    match buf.last_mut() {
        Some(last) if *last == b',' => *last = b']',
        _ => buf.push(b']'),
    }
    buf.insert(0, b'[');
    // The NDJSON sink writes UTF-8 only (bytes that are not are carried as `raw_base64`).
    String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// What a folder is walked for, as the CLI walks it ([`agentnorm::files::is_log_name`]).
pub use agentnorm::files::is_log_name;

/// The inputs of these paths, as the CLI expands them: a folder is walked recursively (links not
/// followed, sorted by name) for log files; a file is taken as it is. A path that does not exist
/// or a folder that cannot be walked is an error.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            for entry in walkdir::WalkDir::new(p).follow_links(false).sort_by_file_name() {
                let entry = entry.map_err(|e| {
                    let name = e.path().unwrap_or(p).to_path_buf();
                    Error::io(&name, e.into())
                })?;
                if entry.file_type().is_file() && is_log_name(entry.path()) {
                    out.push(entry.into_path());
                }
            }
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// A buffered reader of lines ([`agentnorm::files::Reader`]).
pub use agentnorm::files::Reader;

/// Opens a file as the CLI does ([`agentnorm::files::open`]: decompressed, a database read as lines).
pub fn open(path: &Path) -> Result<Reader, Error> {
    agentnorm::files::open(path).map_err(|e| Error::io(path, e))
}

/// The events of files and folders, pulled in batches: each input is read by its own normalizer
/// whose `source` is the input's path (unless the settings name one), as the CLI does.
pub struct Files {
    inputs: std::vec::IntoIter<PathBuf>,
    settings: Settings,
    current: Option<(PathBuf, Reader, Stream)>,
    pending_error: Option<Error>,
}

/// Batches are cut once this many bytes of events are waiting (or an input ends).
pub const BATCH_BYTES: usize = 256 << 10;

impl Files {
    /// The inputs of `paths` (expanded now: a missing path is an error here, not later).
    pub fn new(paths: &[PathBuf], settings: Settings) -> Result<Files, Error> {
        options(&settings)?;
        Ok(Files { inputs: expand(paths)?.into_iter(), settings, current: None, pending_error: None })
    }

    /// The next batch of events as NDJSON bytes, `None` at the end of the last input. An input
    /// that fails to open or read is an error (its events so far, and its `run_ended`, come first).
    pub fn next_ndjson(&mut self) -> Result<Option<Vec<u8>>, Error> {
        if let Some(e) = self.pending_error.take() {
            return Err(e);
        }
        loop {
            if self.current.is_none() {
                let Some(path) = self.inputs.next() else { return Ok(None) };
                let reader = open(&path)?;
                let mut s = self.settings.clone();
                s.source = s.source.or_else(|| Some(path.display().to_string()));
                let stream = Stream::new(options(&s)?.document(agentnorm::files::is_document_name(&path)));
                self.current = Some((path, reader, stream));
            }
            let Some((path, reader, stream)) = self.current.as_mut() else { continue };
            let mut failed = None;
            while stream.pending() < BATCH_BYTES {
                match reader.fill_buf() {
                    Ok([]) => {
                        stream.finish();
                        break;
                    }
                    Ok(chunk) => {
                        stream.feed(chunk);
                        let n = chunk.len();
                        reader.consume(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        failed = Some(Error::io(path, e));
                        stream.finish();
                        break;
                    }
                }
            }
            let done = stream.finished();
            let batch = stream.take_ndjson();
            if done {
                self.current = None;
            }
            if let Some(e) = failed {
                // The events before the failure (and its `run_ended`) come first, the error on
                // the next call.
                if !batch.is_empty() {
                    self.pending_error = Some(e);
                    return Ok(Some(batch));
                }
                return Err(e);
            }
            if !batch.is_empty() {
                return Ok(Some(batch));
            }
        }
    }
}

/// The groupings `usage` takes (`agentnorm usage --by`).
pub const GROUPINGS: [&str; 7] = ["session", "project", "model", "day", "week", "month", "block"];

/// The rows of `agentnorm usage --json` (the totals row last) as NDJSON, or the messages of the
/// inputs that could not be read. `by` is one of [`GROUPINGS`]; `since` / `until` are RFC 3339 or
/// `YYYY-MM-DD`, days in the system's time zone as the CLI's default. No path means the CLI's
/// default folders.
pub fn usage(
    paths: &[PathBuf],
    by: &str,
    since: Option<&str>,
    until: Option<&str>,
    dialect_name: Option<&str>,
) -> Result<Vec<u8>, Error> {
    let tz = jiff::tz::TimeZone::system();
    let bound = |s: Option<&str>, end: bool, flag: &str| -> Result<Option<i64>, Error> {
        s.map(|s| {
            report::parse_bound_in(s, end, &tz)
                .ok_or_else(|| Error::Invalid(format!("{flag} {s:?}: not RFC 3339 or YYYY-MM-DD")))
        })
        .transpose()
    };
    let opts = ReportOptions {
        by: GroupBy::from_name(by)
            .ok_or_else(|| Error::Invalid(format!("invalid by {by:?} (possible values: {})", GROUPINGS.join(", "))))?,
        since_ms: bound(since, false, "since")?,
        until_ms: bound(until, true, "until")?,
        tz: Some(tz.clone()),
        ..ReportOptions::default()
    };
    // As the CLI refuses it (exit 2): a window that is empty by construction.
    if let (Some(since), Some(until)) = (opts.since_ms, opts.until_ms)
        && since > until
    {
        return Err(Error::Invalid("since is later than until: no usage could count".into()));
    }
    let forced = dialect(dialect_name)?;
    let paths = if paths.is_empty() { default_usage_paths()? } else { paths.to_vec() };
    let mut read = Vec::new();
    for (order, path) in expand(&paths)?.into_iter().enumerate() {
        let mut reader = open(&path)?;
        let document = agentnorm::files::is_document_name(&path);
        let mut norm = Normalizer::new(Options::default().dialect(forced).observed_at(false).document(document));
        let mut collector = Collector::new(Some(path.display().to_string()));
        loop {
            match reader.fill_buf() {
                Ok([]) => break,
                Ok(chunk) => {
                    norm.feed(chunk, &mut collector);
                    let n = chunk.len();
                    reader.consume(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // A partly read input is not reported: its totals would be short.
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        norm.finish(&mut collector);
        let mut u = collector.finish();
        u.set_order(order);
        read.push(u);
    }
    // Counted in the CLI's order (by when each input started), so that a request repeated in a
    // fork, a resume or an archived copy counts once, for the session that made it first.
    report::by_first_time(&mut read);
    let mut rep = Report::default();
    for u in read {
        rep.add(u);
    }
    let (rows, totals) = rep.rows(&opts);
    let mut out = Vec::new();
    report::write_json(&mut out, &rows, &totals).map_err(|e| Error::Invalid(e.to_string()))?;
    Ok(out)
}

/// The CLI's folders for `usage` without a path
/// ([`agentnorm::sink::report::default_log_folders`]); none is an error.
fn default_usage_paths() -> Result<Vec<PathBuf>, Error> {
    let found = agentnorm::sink::report::default_log_folders();
    if found.is_empty() {
        return Err(Error::Invalid(format!(
            "no PATH given and no saved sessions found ({})",
            agentnorm::sink::report::DEFAULT_LOG_PLACES
        )));
    }
    Ok(found)
}

/// The first dialect detected in a file (what `agentnorm detect` prints), `None` for `unknown`.
pub fn detect(path: &Path) -> Result<Option<&'static str>, Error> {
    let reader = open(path)?;
    agentnorm::first_dialect(reader).map(|d| d.map(Dialect::as_str)).map_err(|e| Error::io(path, e))
}

/// The JSON Schema of the events (`agentnorm schema`), as JSON text.
pub fn schema() -> String {
    serde_json::to_string(&Event::json_schema()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ndjson_becomes_one_array() {
        assert_eq!(ndjson_to_array(Vec::new()), "[]");
        assert_eq!(ndjson_to_array(b"{\"a\":1}\n".to_vec()), "[{\"a\":1}]");
        assert_eq!(ndjson_to_array(b"{\"a\":\"x\\ny\"}\n{}\n".to_vec()), "[{\"a\":\"x\\ny\"},{}]");
    }

    #[test]
    fn a_stream_writes_what_the_cli_writes() {
        let mut s = Stream::new(Options::default().observed_at(false));
        s.feed(b"{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}\nnot json");
        s.finish();
        s.finish();
        let v: Vec<serde_json::Value> = serde_json::from_str(&s.take_array()).unwrap();
        let types: Vec<&str> = v.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["run_started", "session_started", "unknown", "run_ended"]);
    }

    #[test]
    fn names_and_errors_say_what_the_cli_says() {
        assert!(is_log_name(Path::new("a.jsonl.zst")) && !is_log_name(Path::new("a.json")));
        let e = Files::new(&[PathBuf::from("no/such.jsonl")], Settings::default()).err().unwrap();
        assert_eq!(e.to_string(), "no/such.jsonl: No such file or directory (os error 2)");
        assert!(matches!(dialect(Some("nope")), Err(Error::Invalid(_))));
        assert!(matches!(usage(&[], "fortnight", None, None, None), Err(Error::Invalid(_))));
        let e = usage(&[], "day", Some("2026-05-02"), Some("2026-05-01"), None).err().unwrap();
        assert_eq!(e.to_string(), "since is later than until: no usage could count");
    }
}
