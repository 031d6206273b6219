//! `agentnorm usage`: where the saved sessions are, reading every input into its usage (in
//! parallel, shared with `agentnorm statusline`), and writing the report as a table, NDJSON or
//! CSV. The counting and pricing are the library's (`agentnorm::sink::report`).

use std::io::{self, IsTerminal as _, Write as _};
use std::path::PathBuf;

use agentnorm::sink::report::{Collector, InputUsage, Report};
use agentnorm::{Dialect, Normalizer, Options};
use anyhow::{Context as _, Result};

use super::UsageArgs;
use super::cache::{Blob, FileId, Parts, Resume, Spool, UsageCache};
use super::input::Input;
use super::{exec, input, progress, stdout};

/// Where `agentnorm usage` looks when given no path ([`agentnorm::sink::report::default_log_folders`]).
pub fn default_usage_paths() -> Vec<PathBuf> {
    agentnorm::sink::report::default_log_folders()
}

/// The width the usage table must fit: `$COLUMNS` when set, else the terminal's when stdout is
/// one, else none (a file or a pipe gets the full table).
fn terminal_width() -> Option<usize> {
    if let Some(n) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()).filter(|&n| n > 0) {
        return Some(n);
    }
    if !io::stdout().is_terminal() {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills a winsize struct for the terminal on fd 1; nothing else is written.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// One input's usage as read: the bytes the cache keeps ([`InputUsage::to_bytes`]; for a log
/// read in pieces, those of the pieces before its last and of its last, [`Parts`]), in the
/// cache file or in the spool of what the run read ([`Spool`]), decoded only when the report
/// takes them ([`add_all`]): a report over a 2 GB home then holds one input's usage at a time,
/// not 12,000.
///
/// [`InputUsage::to_bytes`]: agentnorm::sink::report::InputUsage::to_bytes
pub struct Collected {
    /// The input's place among the inputs given.
    order: usize,
    span: Option<(i64, i64)>,
    parts: Parts,
}

/// How the inputs are read for their usage.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    /// `--dialect`.
    pub dialect: Option<Dialect>,
    /// `--every-line`: decode every line in full ([`Collector::reading_every_line`]).
    pub every_line: bool,
}

/// A log read in pieces ([`read_pieces`]) is cut at its first line at rest
/// ([`agentnorm::Normalizer::at_rest`]) once the piece holds this many bytes, so that a log that
/// grew is read again from the start of its last piece, not whole ([`UsageCache::resume`]).
/// A smaller log is one piece.
const PIECE_BYTES: u64 = 1 << 20;

/// What reading an input gave: for a log read in pieces, the usage before its last piece,
/// where that piece starts and the seed it was read from (what the cache keeps to read on from
/// there), and the last piece's usage; for any other input, its usage as `last`.
struct Gave {
    before: Option<InputUsage>,
    last_at: u64,
    seed: Vec<u8>,
    last: InputUsage,
}

/// Where a log that grew is read on from: the start of its last piece (a line's start), the
/// usage of the bytes before it, and the lines a reading from there reads first
/// ([`Normalizer::seeded`]).
struct ReadOn {
    at: u64,
    before: InputUsage,
    seed: Vec<u8>,
}

impl Gave {
    /// The input's whole usage.
    fn usage(self) -> InputUsage {
        match self.before {
            Some(mut before) => {
                before.append(self.last);
                before
            }
            None => self.last,
        }
    }
}

/// Reads `input` whole into its usage; why not, when it could not be read whole (its totals
/// would be short).
fn collect(input: &Input, how: Reading, counters: Option<&progress::Counters>) -> Result<InputUsage, String> {
    Ok(read(input, how, counters, None, PIECE_BYTES)?.usage())
}

/// Reads `input` into its usage: a plain log file in pieces of `piece` bytes or more
/// ([`read_pieces`]), from the start of its last piece when `resume` gives it with the usage
/// of the pieces before; any other input whole.
fn read(
    input: &Input,
    how: Reading,
    counters: Option<&progress::Counters>,
    resume: Option<ReadOn>,
    piece: u64,
) -> Result<Gave, String> {
    let options = input.options(&Options::default().dialect(how.dialect).observed_at(false));
    let collector = || {
        let c = Collector::new(input.source());
        if how.every_line { c.reading_every_line() } else { c }
    };
    let whole = || {
        let mut c = collector();
        if let (_, Some(why)) = exec::feed_input(input, &options, counters, &mut c) {
            return Err(why);
        }
        Ok(Gave { before: None, last_at: 0, seed: Vec::new(), last: c.finish() })
    };
    let path = match input {
        Input::File(p) if !options.document => p,
        _ => return whole(),
    };
    match read_pieces(path, resume, &options, counters, &collector, piece) {
        Ok(Some(gave)) => Ok(gave),
        Ok(None) => whole(),
        Err(e) => Err(format!("{}: {e}", input.name())),
    }
}

/// Reads the log at `path` from its start, or on from where `resume` says (a line's start, with
/// the usage of the bytes before it and the seed a reading from there reads first,
/// [`Normalizer::seeded`]), a new normalizer and collector for each piece: a piece ends at the first line's end at which the
/// normalizer is at rest ([`agentnorm::Normalizer::at_rest`]) once it holds `piece` bytes, so
/// where a piece ends depends on its bytes only, and the pieces of a log that grew are those it
/// had, its last one read on. A piece that ends is appended to the usage before it, the next
/// normalizer reads the seed the last one ended with, and the next collector starts from what
/// that left waiting ([`Collector::waiting_from`]). `None` for a file that is not read as it is
/// (compressed, a database: [`agentnorm::files::is_plain`]), which is read whole.
fn read_pieces(
    path: &std::path::Path,
    resume: Option<ReadOn>,
    options: &Options,
    counters: Option<&progress::Counters>,
    collector: &dyn Fn() -> Collector,
    piece: u64,
) -> io::Result<Option<Gave>> {
    use io::{BufRead as _, Seek as _};
    let (from, mut seed, mut before) = match resume {
        Some(r) => (r.at, r.seed, Some(r.before)),
        None => (0, Vec::new(), None),
    };
    let mut file = std::fs::File::open(path)?;
    if file.metadata()?.is_dir() {
        // Said as every reading says it.
        return Ok(None);
    }
    file.seek(io::SeekFrom::Start(from))?;
    let mut reader = io::BufReader::with_capacity(1 << 20, file);
    if from == 0 && !agentnorm::files::is_plain(reader.fill_buf()?) {
        return Ok(None);
    }
    let seeded = |before: Option<&InputUsage>| match before {
        Some(b) => collector().waiting_from(b),
        None => collector(),
    };
    let (mut norm, mut col) = (Normalizer::seeded(options.clone(), &seed), seeded(before.as_ref()));
    // Where the current piece starts, and where the buffer read starts in the file.
    let (mut start, mut base) = (from, from);
    // Bytes of the line being read were fed (it runs on past the buffer).
    let mut partial = false;
    loop {
        let buf = match reader.fill_buf() {
            Ok([]) => break,
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let n = buf.len();
        let mut i = 0;
        while let Some(j) = memchr::memchr(b'\n', &buf[i..]) {
            let end = i + j;
            if std::mem::take(&mut partial) {
                norm.feed(&buf[i..=end], &mut col);
            } else {
                norm.line(&buf[i..end], &mut col);
            }
            i = end + 1;
            let pos = base + i as u64;
            if pos - start >= piece && norm.at_rest() {
                norm.finish(&mut col);
                let done = col.finish();
                match &mut before {
                    Some(b) => b.append(done),
                    None => before = Some(done),
                }
                col = seeded(before.as_ref());
                seed = norm.seed();
                norm = Normalizer::seeded(options.clone(), &seed);
                start = pos;
            }
        }
        if i < n {
            norm.feed(&buf[i..], &mut col);
            partial = true;
        }
        reader.consume(n);
        base += n as u64;
        if let Some(p) = counters {
            p.read(n);
        }
    }
    norm.finish(&mut col);
    Ok(Some(Gave { before, last_at: start, seed, last: col.finish() }))
}

/// Reads every input into its usage (in parallel; the order of the result is the inputs').
/// An input that could not be read whole is reported on stderr, sets `failed`, and is left
/// out. With a `cache`, a file whose identity is the one the cache holds is not read (its usage
/// comes from the cache), and what the others gave is added to it.
pub fn read_usage(
    inputs: &[Input],
    how: Reading,
    threads: usize,
    show_progress: bool,
    failed: &mut bool,
    mut cache: Option<&mut UsageCache>,
) -> Vec<Collected> {
    let mut progress = progress::Progress::start(inputs.len(), show_progress);
    let counters = progress.counters();
    let known = cache.as_deref();
    let dialect = how.dialect;
    // What the cache holds is not read, so it is not read ahead either.
    let reads = |p: &std::path::Path| match known {
        Some(c) => FileId::of_path(p).is_none_or(|id| c.get(p, id, dialect).is_none()),
        None => true,
    };
    // A file read afresh: its identity, and where a reading of it grown can start.
    type Fresh = Option<(FileId, Option<Resume>)>;
    // What is read afresh goes to the next cache file, else to a temporary one (made when the
    // first input is read: a run that reads none writes none).
    let unnamed = std::sync::OnceLock::new();
    let spool = || known.and_then(UsageCache::spool).or_else(|| unnamed.get_or_init(|| Spool::unnamed().ok()).as_ref());
    let keep = |bytes: Vec<u8>| -> Blob {
        match spool() {
            Some(s) => s.keep(bytes),
            None => bytes.into(),
        }
    };
    let collected = exec::map_reading(inputs, threads, &reads, |input| -> Result<(Collected, Fresh), String> {
        let _done = counters.as_deref().map(progress::Counters::done_on_drop);
        // The identity is taken before the file is read: a file that grows meanwhile is read
        // again next time.
        let id = match (input, known) {
            (Input::File(p), Some(_)) => FileId::of_path(p),
            _ => None,
        };
        let cached = match (input, known, id) {
            (Input::File(p), Some(c), Some(id)) => Some((p, c, id)),
            _ => None,
        };
        if let Some((p, c, id)) = cached
            && let Some((span, parts)) = c.get(p, id, dialect)
        {
            return Ok((Collected { order: 0, span, parts }, None));
        }
        // A log that grew: read on from its last piece, from what the pieces before left
        // waiting (their turns are not decoded: their usage is kept as it is).
        let resume = cached.and_then(|(p, c, id)| {
            let r = c.resume(p, id, dialect)?;
            let head = InputUsage::head_from_bytes(&r.settled.read().ok()?, input.source()).ok()?;
            let seed = match &r.seed {
                Some(blob) => blob.read().ok()?,
                None => Vec::new(),
            };
            Some((r.clone(), ReadOn { at: r.at, before: head, seed }))
        });
        // `None`: the usage kept before the last piece could not be read whole, with pieces
        // ended since to join it (then the log is read whole).
        let on = |resume: Option<(Resume, ReadOn)>| -> Result<Option<(Collected, Fresh)>, String> {
            let (kept, from) = resume.unzip();
            let g = read(input, how, counters.as_deref(), from, PIECE_BYTES)?;
            // The seed the last piece was read from: the one kept while that piece grows.
            let seed = match &kept {
                Some(r) if g.last_at == r.at => r.seed.clone(),
                _ => (!g.seed.is_empty()).then(|| keep(g.seed)),
            };
            // The usage before the last piece: the one kept while that piece grows (a live
            // transcript's is not encoded again at every run); with pieces ended since, it and theirs.
            let before = match (kept, g.before) {
                (Some(r), Some(_)) if g.last_at == r.at => Some((r.settled, r.span)),
                (Some(r), Some(ended)) => {
                    let Some(mut all) =
                        r.settled.read().ok().and_then(|b| InputUsage::from_bytes(&b, input.source()).ok())
                    else {
                        return Ok(None);
                    };
                    all.append(ended);
                    Some((keep(all.to_bytes()), all.span_ms()))
                }
                (None, Some(before)) => Some((keep(before.to_bytes()), before.span_ms())),
                (_, None) => None,
            };
            // Where a reading of it grown will start: its last piece, after the usage before it.
            let resume = match (cached, &before) {
                (Some((p, _, _)), Some((settled, span))) => super::cache::check_before(p, g.last_at)
                    .ok()
                    .map(|check| Resume { at: g.last_at, check, settled: settled.clone(), seed, span: *span }),
                _ => None,
            };
            let span = join_spans(before.as_ref().and_then(|b| b.1), g.last.span_ms());
            let parts = Parts { settled: before.map(|b| b.0), rest: keep(g.last.to_bytes()) };
            Ok(Some((Collected { order: 0, span, parts }, cached.map(|(_, _, id)| (id, resume)))))
        };
        match on(resume)? {
            Some(done) => Ok(done),
            None => on(None)?.ok_or_else(|| format!("{}: not read", input.name())),
        }
    });
    progress.finish();
    let mut read = Vec::with_capacity(collected.len());
    for (order, (c, input)) in collected.into_iter().zip(inputs).enumerate() {
        match c {
            Ok((mut c, fresh)) => {
                if let (Some((id, resume)), Some(cache), Input::File(p)) = (fresh, cache.as_deref_mut(), input) {
                    cache.put(p, id, dialect, c.span, c.parts.rest.clone(), resume);
                }
                c.order = order;
                read.push(c)
            }
            Err(why) => {
                eprintln!("agentnorm: {why}");
                *failed = true;
            }
        }
    }
    read
}

/// Adds what [`read_usage`] read from `inputs` to `rep`, in the order the report counts inputs
/// ([`agentnorm::sink::report::by_first_time`]), each decoded just before it is added, on this
/// thread (decoded on another one, just ahead, a warm run was 15 % slower: handing 12,000
/// inputs over, and freeing on this thread what that one allocated, cost more than the
/// overlap gave). Cached bytes that cannot be decoded (a damaged cache) are replaced by reading
/// their file again.
pub fn add_all(mut read: Vec<Collected>, inputs: &[Input], how: Reading, rep: &mut Report, failed: &mut bool) {
    read.sort_by_key(|c| agentnorm::sink::report::first_time_key(c.span));
    for c in read {
        // Unreadable or damaged bytes: the file is read again.
        let source = || inputs[c.order].source();
        let part = |b: &Blob| b.read().map_err(drop).and_then(|b| InputUsage::from_bytes(&b, source()).map_err(drop));
        let decoded = match &c.parts.settled {
            Some(settled) => part(settled).and_then(|mut all| {
                all.append(part(&c.parts.rest)?);
                Ok(all)
            }),
            None => part(&c.parts.rest),
        };
        let u = match decoded {
            Ok(u) => Ok(u),
            Err(_) => collect(&inputs[c.order], how, None),
        };
        match u {
            Ok(mut u) => {
                u.set_order(c.order);
                rep.add(u);
            }
            Err(why) => {
                eprintln!("agentnorm: {why}");
                *failed = true;
            }
        }
    }
}

/// The span of two spans' times together.
fn join_spans(a: Option<(i64, i64)>, b: Option<(i64, i64)>) -> Option<(i64, i64)> {
    match (a, b) {
        (Some(a), Some(b)) => Some((a.0.min(b.0), a.1.max(b.1))),
        (x, None) | (None, x) => x,
    }
}

/// Writes the cache back; a cache that cannot be kept is said on stderr (the report stands).
pub fn save_cache(cache: &UsageCache) {
    if let Err(e) = cache.save() {
        eprintln!("agentnorm: the usage cache was not saved: {e}");
    }
}

pub fn run(args: UsageArgs) -> Result<u8> {
    use agentnorm::sink::report::{self, GroupBy, ReportOptions};
    let tz = match args.timezone.as_deref() {
        None => jiff::tz::TimeZone::system(),
        Some(name) => {
            jiff::tz::TimeZone::get(name).with_context(|| format!("--timezone {name:?}: not a known time zone"))?
        }
    };
    let bound = |s: &Option<String>, end: bool, flag: &str| -> Result<Option<i64>> {
        s.as_deref()
            .map(|s| {
                report::parse_bound_in(s, end, &tz).with_context(|| format!("{flag} {s:?}: not RFC 3339 or YYYY-MM-DD"))
            })
            .transpose()
    };
    let opts = ReportOptions {
        by: GroupBy::from_name(&args.by).unwrap_or_default(),
        since_ms: bound(&args.since, false, "--since")?,
        until_ms: bound(&args.until, true, "--until")?,
        now_ms: bound(&args.now, false, "--now")?,
        tz: Some(tz.clone()),
        breakdown: args.breakdown,
    };
    if let (Some(since), Some(until)) = (opts.since_ms, opts.until_ms)
        && since > until
    {
        anyhow::bail!("--since is later than --until: no usage could count");
    }
    if let Some(file) = &args.prices {
        let text = std::fs::read_to_string(file).with_context(|| format!("--prices {}", file.display()))?;
        let mut table = agentnorm::sink::prices::Prices::embedded();
        table.merge_json(&text).with_context(|| format!("--prices {}", file.display()))?;
        agentnorm::sink::prices::install(table);
    }
    let paths = if args.paths.is_empty() {
        let found = default_usage_paths();
        if found.is_empty() {
            anyhow::bail!("no PATH given and no saved sessions found ({})", report::DEFAULT_LOG_PLACES);
        }
        found
    } else {
        args.paths
    };
    let mut failed = false;
    let inputs = input::expand(&paths, &mut failed);
    let how = Reading { dialect: args.dialect, every_line: args.every_line };
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let rep = if args.estimate { Report::estimating() } else { Report::default() };
    // Only what the rows asked for is kept: the report's memory does not grow with the logs.
    let mut rep = rep.between(opts.since_ms, opts.until_ms).for_rows(&opts);
    let mut cache = (!args.no_cache).then(UsageCache::open);
    let read = read_usage(&inputs, how, threads, true, &mut failed, cache.as_mut());
    if let Some(cache) = &mut cache {
        cache.forget_missing(&paths, &input::files(&inputs));
        save_cache(cache);
    }
    add_all(read, &inputs, how, &mut rep, &mut failed);
    let (rows, totals) = rep.rows(&opts);
    let mut out = io::BufWriter::new(stdout::lock());
    if args.json {
        report::write_json(&mut out, &rows, &totals)?;
    } else if args.csv {
        report::write_csv(&mut out, opts.by, &rows, &totals)?;
    } else {
        report::write_table(&mut out, opts.by, &rows, &totals, terminal_width())?;
    }
    out.flush()?;
    // The process ends here: what the report holds (every request of every log, half a GB on a
    // 2 GB home) is left to the exit, not freed allocation by allocation.
    std::mem::forget((rep, rows, cache));
    Ok(if failed { 2 } else { 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentnorm::sink::report::{GroupBy, ReportOptions};

    /// The usage of `input` read whole, as bytes the cache would keep.
    fn collected(path: &std::path::Path) -> Vec<u8> {
        collect(&Input::File(path.to_path_buf()), Reading::default(), None).unwrap().to_bytes()
    }

    /// The output tokens of the report of `inputs` read with `cache`.
    fn totals(inputs: &[Input], cache: Option<&mut UsageCache>) -> Option<u64> {
        let mut failed = false;
        let read = read_usage(inputs, Reading::default(), 1, false, &mut failed, cache);
        let mut rep = Report::default();
        add_all(read, inputs, Reading::default(), &mut rep, &mut failed);
        assert!(!failed);
        rep.rows(&ReportOptions { by: GroupBy::Session, ..ReportOptions::default() }).1.usage.output
    }

    /// Every grouping of the report of `usages`, with `--breakdown`, in UTC, as JSON lines.
    fn all_reports(usages: &[InputUsage]) -> String {
        let mut out = Vec::new();
        for by in ["session", "project", "day", "week", "month", "model", "block"] {
            let opts = ReportOptions {
                by: GroupBy::from_name(by).unwrap(),
                breakdown: true,
                now_ms: Some(0),
                ..ReportOptions::default()
            };
            let mut rep = Report::default().for_rows(&opts);
            for (order, u) in usages.iter().enumerate() {
                let mut u = u.clone();
                u.set_order(order);
                rep.add(u);
            }
            let (rows, totals) = rep.rows(&opts);
            agentnorm::sink::report::write_json(&mut out, &rows, &totals).unwrap();
        }
        String::from_utf8(out).unwrap()
    }

    /// Every `.jsonl` fixture of the project.
    fn fixture_logs() -> Vec<PathBuf> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut logs: Vec<PathBuf> = std::fs::read_dir(&root)
            .unwrap()
            .flat_map(|d| std::fs::read_dir(d.unwrap().path()).into_iter().flatten())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        logs.sort();
        logs
    }

    #[test]
    fn a_log_cut_into_pieces_at_every_line_at_rest_gives_the_report_of_the_log_read_whole() {
        let (mut cut, mut transcripts) = (0, 0);
        let mut rollouts = Vec::new();
        for log in fixture_logs() {
            let input = Input::File(log.clone());
            let whole = read(&input, Reading::default(), None, None, u64::MAX).unwrap();
            // Pieces of 0 bytes: a new piece at every line at rest.
            let pieces = read(&input, Reading::default(), None, None, 0).unwrap();
            assert_eq!(
                all_reports(&[pieces.usage()]),
                all_reports(&[whole.usage()]),
                "{}: read in pieces, the report differs",
                log.display()
            );
            let options = input.options(&Options::default().observed_at(false));
            // Cut into more than one piece: there is usage before the last.
            let more = read_pieces(&log, None, &options, None, &|| Collector::new(input.source()), 0)
                .unwrap()
                .unwrap()
                .before
                .is_some();
            let of = |dialect: &str| log.parent().is_some_and(|d| d.ends_with(dialect));
            transcripts += usize::from(of("claude-transcript"));
            cut += usize::from(more && of("claude-transcript"));
            if more && of("codex-rollout") {
                rollouts.push(log.file_name().unwrap().to_string_lossy().into_owned());
            }
            // Only a Claude Code transcript and a Codex rollout come to rest: any other log is
            // one piece.
            assert!(!more || of("claude-transcript") || of("codex-rollout"), "{}", log.display());
        }
        assert!(transcripts >= 8 && cut == transcripts, "{cut} of {transcripts} transcripts were cut into pieces");
        // A rollout comes to rest after its own `turn_context`; the fork's only two are in the
        // history it copied, and the other fork's is before the copy ends (its first own
        // `token_count`); a rollout without one never rests.
        assert_eq!(
            rollouts,
            [
                "forked_subagent_parent.jsonl",
                "paginated_0_160.jsonl",
                "v0104_tasks_unified_exec.jsonl",
                "v040_no_task_frames.jsonl"
            ]
        );
    }

    #[test]
    fn pieces_keep_a_sessions_first_folder_and_the_time_a_message_of_no_request_left_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let same = |log: &std::path::Path| {
            let input = Input::File(log.to_path_buf());
            let whole = read(&input, Reading::default(), None, None, u64::MAX).unwrap();
            let pieces = read(&input, Reading::default(), None, None, 0).unwrap();
            let truth = all_reports(&[whole.usage()]);
            // Read on from the last piece, the usage before it as the cache keeps it (bytes).
            let (at, seed) = (pieces.last_at, pieces.seed.clone());
            // The last piece starts at a line's start.
            let bytes = std::fs::read(log).unwrap();
            assert!(at == 0 || bytes.get(at as usize - 1) == Some(&b'\n'), "{}: piece at {at}", log.display());
            let before = pieces.before.as_ref().unwrap_or_else(|| panic!("{}: not cut", log.display())).to_bytes();
            assert_eq!(all_reports(&[pieces.usage()]), truth, "{}", log.display());
            // Read on from what the pieces before left waiting (their turns not decoded), the
            // rest is what follows their usage.
            let head = InputUsage::head_from_bytes(&before, input.source()).unwrap();
            let from = ReadOn { at, before: head, seed };
            let rest = read(&input, Reading::default(), None, Some(from), 0).unwrap();
            let mut all = InputUsage::from_bytes(&before, input.source()).unwrap();
            all.append(rest.usage());
            assert_eq!(all_reports(&[all]), truth, "{}: read on from {at}", log.display());
        };
        // A session whose lines name another working folder from its third turn: its project
        // is the folder it started in, as read whole.
        let moved = dir.path().join("moved.jsonl");
        std::fs::write(&moved, transcript(0..2, 50) + &transcript(2..4, 50).replace(r#""cwd":"/w""#, r#""cwd":"/v""#))
            .unwrap();
        same(&moved);
        // A session that opens with a bookkeeping line (no folder) and moves to another folder
        // before its first answer: every piece reads it as the whole log does.
        let relocated = dir.path().join("relocated.jsonl");
        let opening = r#"{"type":"mode","mode":"normal","sessionId":"s1"}"#.to_owned() + "\n";
        let later = transcript(1..3, 50).replace(r#""cwd":"/w""#, r#""cwd":"/w/.claude/worktrees/x""#);
        let prompt = transcript(0..1, 50).lines().next().unwrap().to_owned() + "\n";
        std::fs::write(&relocated, opening + &prompt + &later).unwrap();
        same(&relocated);
        // A message of no request (model `<synthetic>`, no usage): its text dates the next
        // request (at 04:59, in the first 5-hour block, not at 05:02 in the next), in the next
        // piece too.
        let waiting = dir.path().join("waiting.jsonl");
        let line = |ty: &str, at: &str, body: &str| {
            format!(
                r#"{{"type":"{ty}","parentUuid":null,"isSidechain":false,"sessionId":"s1","cwd":"/w","timestamp":"2026-05-01T{at}:00.000Z",{body}}}"#
            )
        };
        let prompt = r#""message":{"role":"user","content":"go"}"#;
        let answer = |id: &str, model: &str| {
            format!(
                r#""message":{{"id":"{id}","role":"assistant","model":"{model}","content":[{{"type":"text","text":"ok"}}],"usage":{{"input_tokens":1,"output_tokens":1}}}}"#
            )
        };
        let lines = [
            line("user", "00:00", prompt),
            line("assistant", "00:01", &answer("msg_a", "claude-sonnet-4-5")),
            line("user", "00:02", prompt),
            line("assistant", "04:59", &answer("msg_s", "<synthetic>")),
            line("user", "05:01", prompt),
            line("assistant", "05:02", &answer("msg_b", "claude-sonnet-4-5")),
        ];
        std::fs::write(&waiting, lines.join("\n") + "\n").unwrap();
        same(&waiting);
        // Longer than the reading buffer (1 MiB): lines run on past it, and where the last
        // piece starts counts their bytes in the buffer before.
        let long = dir.path().join("long.jsonl");
        std::fs::write(&long, transcript(0..6000, 50)).unwrap();
        assert!(std::fs::metadata(&long).unwrap().len() > 3 << 20);
        same(&long);
        // A Codex rollout cut after every `turn_context` of its own, read on from the last: its
        // session, model, running total and rate limits come from the seed.
        let rollout = dir.path().join("rollout.jsonl");
        let meta = r#"{"timestamp":"2026-06-01T00:00:00.000Z","type":"session_meta","payload":{"id":"c1","cwd":"/w"}}"#;
        std::fs::write(&rollout, format!("{meta}\n") + &rollout_turns(0..40, 20)).unwrap();
        same(&rollout);
        // Every transcript fixture one after the other.
        let all = dir.path().join("all.jsonl");
        let mut bytes = Vec::new();
        for log in fixture_logs().iter().filter(|l| l.parent().is_some_and(|d| d.ends_with("claude-transcript"))) {
            bytes.extend(std::fs::read(log).unwrap());
        }
        std::fs::write(&all, bytes).unwrap();
        same(&all);
    }

    /// A transcript of `turns` prompts, each answered by a message of two lines (its usage
    /// growing from 10 to `output` tokens), of session `s1`, a minute apart from 2026-05-01.
    fn transcript(turns: std::ops::Range<usize>, output: u64) -> String {
        let mut log = String::new();
        for t in turns {
            let at = |s: usize| format!("2026-05-01T{:02}:{:02}:{:02}.000Z", t / 60 % 24, t % 60, s);
            let env = |s| {
                format!(
                    r#""parentUuid":null,"isSidechain":false,"sessionId":"s1","version":"2.1.0","cwd":"/w","timestamp":"{}""#,
                    at(s)
                )
            };
            log += &format!(
                "{{\"type\":\"user\",{},\"message\":{{\"role\":\"user\",\"content\":\"prompt {t} {}\"}}}}\n",
                env(0),
                "x".repeat(200)
            );
            for (s, out) in [(1, 10), (2, output)] {
                log += &format!(
                    "{{\"type\":\"assistant\",{},\"requestId\":\"req_{t}\",\"message\":{{\"id\":\"msg_{t}\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[{{\"type\":\"text\",\"text\":\"answer {t}\"}}],\"usage\":{{\"input_tokens\":100,\"cache_read_input_tokens\":1000,\"output_tokens\":{out}}}}}}}\n",
                    env(s)
                );
            }
        }
        log
    }

    /// The output tokens of the report of `path` read through `cache`.
    fn output_via(path: &std::path::Path, cache: &mut UsageCache) -> u64 {
        totals(&[Input::File(path.to_path_buf())], Some(cache)).unwrap()
    }

    /// `s.jsonl` in `dir`, of 4,000 turns of 50 output tokens (about 3 MB: three pieces of 1 MiB
    /// or more), read into a cache: its text, the cache, and where its last piece starts.
    fn read_into_a_cache(dir: &std::path::Path) -> (std::path::PathBuf, String, UsageCache, u64) {
        let log = dir.join("s.jsonl");
        let first = transcript(0..4000, 50);
        std::fs::write(&log, &first).unwrap();
        let mut cache = UsageCache::default();
        assert_eq!(output_via(&log, &mut cache), 4000 * 50);
        let id = FileId::of_path(&log).unwrap();
        let at = cache.resume(&log, id, None).expect("a resume point after the first pieces").at;
        assert!(at >= 2 * PIECE_BYTES && at < first.len() as u64, "{at}");
        (log, first, cache, at)
    }

    /// What `cache` holds for the log at `path` (of identity `id`), the usage before its last
    /// piece and that piece's, gives every report a cold reading of it gives.
    fn assert_cache_holds_a_cold_reading(path: &std::path::Path, id: FileId, cache: &UsageCache) {
        let (_, parts) = cache.get(path, id, None).unwrap();
        let input = Input::File(path.to_path_buf());
        let mut held = InputUsage::from_bytes(&parts.settled.unwrap().read().unwrap(), input.source()).unwrap();
        held.append(InputUsage::from_bytes(&parts.rest.read().unwrap(), input.source()).unwrap());
        let cold = collect(&input, Reading::default(), None).unwrap();
        assert_eq!(all_reports(&[held]), all_reports(&[cold]), "{}", path.display());
    }

    /// `text` appended to the file at `path`.
    fn append(path: &std::path::Path, text: &str) {
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        std::io::Write::write_all(&mut f, text.as_bytes()).unwrap();
    }

    #[test]
    fn a_log_that_grew_is_read_on_from_its_last_piece_and_one_changed_before_it_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (log, first, mut cache, _) = read_into_a_cache(dir.path());

        // Grown by 10 turns: what a cold reading of the grown log gives.
        let grown = first.clone() + &transcript(4000..4010, 50);
        std::fs::write(&log, &grown).unwrap();
        assert_eq!(output_via(&log, &mut cache), 4010 * 50);
        assert_eq!(totals(&[Input::File(log.clone())], None), Some(4010 * 50));

        // Changed in its first turn (far before the resume point, beyond what is checked) and
        // grown: read on from the resume point, so the change is not seen. This shows the
        // bytes before the point were not read again.
        let mut edited = grown.replacen(r#""output_tokens":50"#, r#""output_tokens":90"#, 1);
        edited += &transcript(4010..4011, 50);
        std::fs::write(&log, &edited).unwrap();
        assert_eq!(output_via(&log, &mut cache), 4011 * 50);
        assert_eq!(totals(&[Input::File(log.clone())], None), Some(4011 * 50 + 40), "a cold reading sees the change");

        // Changed just before the resume point: read whole.
        let id = FileId::of_path(&log).unwrap();
        let at = cache.resume(&log, id, None).unwrap().at;
        let before = edited[..at as usize].rfind(r#""output_tokens":50"#).unwrap();
        let mut near = edited.clone();
        near.replace_range(before..before + 18, r#""output_tokens":70"#);
        std::fs::write(&log, &near).unwrap();
        assert_eq!(output_via(&log, &mut cache), 4011 * 50 + 40 + 20);

        // Cut shorter than the resume point: read whole.
        let id = FileId::of_path(&log).unwrap();
        let at = cache.resume(&log, id, None).unwrap().at;
        let short = transcript(0..10, 50);
        assert!((short.len() as u64) < at);
        std::fs::write(&log, &short).unwrap();
        assert_eq!(output_via(&log, &mut cache), 10 * 50);

        // Replaced by another file (a new inode) that is longer: read whole.
        let other = dir.path().join("other.jsonl");
        std::fs::write(&other, transcript(0..4020, 60)).unwrap();
        std::fs::rename(&other, &log).unwrap();
        assert_eq!(output_via(&log, &mut cache), 4020 * 60);
    }

    #[test]
    fn a_log_that_grew_by_more_than_a_piece_is_read_on_and_counts_as_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _, mut cache, at) = read_into_a_cache(dir.path());
        // Grown by 3,000 turns (more than two pieces): the reading on ends pieces of its own,
        // whose usage joins the one kept before the old last piece.
        append(&log, &transcript(4000..7000, 60));
        assert_eq!(output_via(&log, &mut cache), 4000 * 50 + 3000 * 60);
        let id = FileId::of_path(&log).unwrap();
        let r = cache.resume(&log, id, None).unwrap();
        assert!(r.at > at + PIECE_BYTES, "the resume point moved on: {} after {at}", r.at);
        // What the cache holds, the usage before the new last piece and of that piece, is what
        // a cold reading gives; and it is read on from the new point.
        assert_cache_holds_a_cold_reading(&log, id, &cache);
        append(&log, &transcript(7000..7001, 70));
        assert_eq!(output_via(&log, &mut cache), 4000 * 50 + 3000 * 60 + 70);

        // The usage kept before the last piece damaged in its turns (what is read to read on is
        // before them): grown by more than a piece, the log is read whole, not short.
        let id = FileId::of_path(&log).unwrap();
        let (span, parts) = cache.get(&log, id, None).unwrap();
        let r = cache.resume(&log, id, None).unwrap().clone();
        let mut cut = r.settled.read().unwrap();
        cut.truncate(cut.len() - 10);
        assert!(InputUsage::head_from_bytes(&cut, None).is_ok() && InputUsage::from_bytes(&cut, None).is_err());
        cache.put(&log, id, None, span, parts.rest, Some(Resume { settled: cut.into(), ..r }));
        append(&log, &transcript(7001..9000, 80));
        assert_eq!(output_via(&log, &mut cache), 4000 * 50 + 3000 * 60 + 70 + 1999 * 80);
    }

    /// The lines of a Codex rollout's turns `turns` of session `c1`: each a `turn_context`, a
    /// prompt, a shell call and its output (2 KB), a second `turn_context` and an answer, each
    /// request followed by a `token_count` that gives only the running total (as Codex 0.40
    /// does) and the rate limits: every request adds 150 input tokens (50 of them cached) and
    /// `output` output tokens. A turn a second apart from 2026-06-01.
    fn rollout_turns(turns: std::ops::Range<u64>, output: u64) -> String {
        let mut log = String::new();
        for t in turns {
            let at = |s: u64| format!("2026-06-01T{:02}:{:02}:{:02}.{s:03}Z", t / 3600 % 24, t / 60 % 60, t % 60);
            let line = |s: u64, ty: &str, payload: String| {
                format!("{{\"timestamp\":\"{}\",\"type\":\"{ty}\",\"payload\":{payload}}}\n", at(s))
            };
            let context = r#"{"cwd":"/w","approval_policy":"never","model":"gpt-5.1-codex"}"#.to_owned();
            let count = |request: u64| {
                let n = request + 1;
                format!(
                    r#"{{"type":"token_count","info":{{"total_token_usage":{{"input_tokens":{},"cached_input_tokens":{},"output_tokens":{},"total_tokens":{}}}}},"rate_limits":{{"primary":{{"used_percent":{}.0,"window_minutes":300,"resets_at":1780000000}}}}}}"#,
                    150 * n,
                    50 * n,
                    output * n,
                    (150 + output) * n,
                    request % 100
                )
            };
            log += &line(0, "event_msg", r#"{"type":"task_started"}"#.to_owned());
            log += &line(1, "turn_context", context.clone());
            log += &line(2, "event_msg", format!(r#"{{"type":"user_message","message":"prompt {t}"}}"#));
            log += &line(
                3,
                "response_item",
                format!(
                    r#"{{"type":"function_call","name":"shell","arguments":"{{\"command\":[\"ls\"]}}","call_id":"call_{t}"}}"#
                ),
            );
            log += &line(4, "event_msg", count(2 * t));
            log += &line(
                5,
                "response_item",
                format!(r#"{{"type":"function_call_output","call_id":"call_{t}","output":"{}"}}"#, "x".repeat(2000)),
            );
            log += &line(6, "turn_context", context);
            log += &line(7, "event_msg", format!(r#"{{"type":"agent_message","message":"answer {t}"}}"#));
            log += &line(8, "event_msg", count(2 * t + 1));
            log += &line(9, "event_msg", r#"{"type":"task_complete"}"#.to_owned());
        }
        log
    }

    #[test]
    fn a_codex_rollout_that_grew_is_read_on_from_its_last_piece_with_its_session_model_and_total() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("rollout-2026-06-01T00-00-00-c1.jsonl");
        let meta = r#"{"timestamp":"2026-06-01T00:00:00.000Z","type":"session_meta","payload":{"id":"c1","cwd":"/w","cli_version":"0.40.0"}}"#;
        let first = format!("{meta}\n") + &rollout_turns(0..1200, 20);
        std::fs::write(&log, &first).unwrap();
        let mut cache = UsageCache::default();
        assert_eq!(output_via(&log, &mut cache), 2400 * 20);
        let id = FileId::of_path(&log).unwrap();
        let r = cache.resume(&log, id, None).expect("a resume point after the first pieces").clone();
        assert!(r.at >= 2 * PIECE_BYTES && r.at < first.len() as u64, "{}", r.at);
        // The last piece starts right after a `turn_context`, and its seed is the session's
        // line, that `turn_context` and the last `token_count` (the running total and limits).
        assert!(first[..r.at as usize].lines().last().unwrap().contains(r#""type":"turn_context""#));
        let seed = String::from_utf8(r.seed.as_ref().expect("a seed").read().unwrap()).unwrap();
        let lines: Vec<&str> = seed.lines().collect();
        assert_eq!(lines.len(), 3, "{seed}");
        assert_eq!(lines[0], meta);
        assert!(
            lines[1].contains(r#""type":"token_count""#) && lines[2].contains(r#""type":"turn_context""#),
            "{seed}"
        );

        // Grown by 10 turns: read on from the last piece, it gives what a cold reading gives,
        // in every report (the session, its folder, the model and its cost among them).
        append(&log, &rollout_turns(1200..1210, 20));
        assert_eq!(output_via(&log, &mut cache), 2420 * 20);
        let id = FileId::of_path(&log).unwrap();
        assert_cache_holds_a_cold_reading(&log, id, &cache);
        // The cache kept reading on from the same point and seed.
        let kept = cache.resume(&log, id, None).unwrap();
        assert_eq!((kept.at, kept.seed.as_ref().map(|s| s.read().unwrap())), (r.at, Some(seed.clone().into_bytes())));

        // Read on without its seed, the first running total after the point would count whole:
        // this is what the seed is for.
        let (span, parts) = cache.get(&log, id, None).unwrap();
        let unseeded = Resume { seed: None, ..cache.resume(&log, id, None).unwrap().clone() };
        cache.put(&log, id, None, span, parts.rest, Some(unseeded));
        append(&log, &rollout_turns(1210..1211, 20));
        assert_ne!(output_via(&log, &mut cache), 2422 * 20);
        assert_eq!(totals(&[Input::File(log.clone())], None), Some(2422 * 20));
    }

    #[test]
    fn an_unchanged_file_is_taken_from_the_cache_and_a_changed_one_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let log = dir.path().join("s.jsonl");
        std::fs::copy(root.join("fixtures/claude-transcript/growing_usage.jsonl"), &log).unwrap();
        let other = root.join("fixtures/codex-rollout/subagent_limits_compaction.jsonl");
        let inputs = [Input::File(log.clone())];
        let truth = totals(&inputs, None);

        // Planted: the file's identity now, with another file's usage. Taken as it is.
        let mut cache = UsageCache::default();
        let id = FileId::of(&std::fs::metadata(&log).unwrap());
        cache.put(&log, id, None, None, collected(&other).into(), None);
        let planted = totals(&inputs, Some(&mut cache));
        assert_ne!(planted, truth, "the two files must differ for this test to mean anything");
        let other_alone = totals(&[Input::File(other.clone())], None);
        assert_eq!(planted, other_alone, "the cached usage was used, the file was not read");

        // Damaged (cut in half): the file is read.
        let mut damaged = collected(&other);
        damaged.truncate(damaged.len() / 2);
        cache.put(&log, id, None, None, damaged.into(), None);
        assert_eq!(totals(&inputs, Some(&mut cache)), truth);

        // Touched: read again, and the cache now holds what it gave.
        let f = std::fs::File::options().append(true).open(&log).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
        drop(f);
        let reread = totals(&inputs, Some(&mut cache));
        assert_eq!(reread, truth);
        let id = FileId::of(&std::fs::metadata(&log).unwrap());
        assert_eq!(cache.get(&log, id, None).map(|(_, p)| p.rest.read().unwrap()), Some(collected(&log)));
    }
}
