//! `agentnorm usage`: where the saved sessions are, reading every input into its usage (in
//! parallel, shared with `agentnorm statusline`), and writing the report as a table, NDJSON or
//! CSV. The counting and pricing are the library's (`agentnorm::sink::report`).

use std::io::{self, IsTerminal as _, Write as _};
use std::path::PathBuf;

use agentnorm::sink::report::{Collector, InputUsage, Report};
use agentnorm::{Dialect, Options};
use anyhow::{Context as _, Result};

use super::UsageArgs;
use super::cache::{Blob, FileId, Spool, UsageCache};
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

/// One input's usage as read: the bytes the cache keeps ([`InputUsage::to_bytes`]), in the
/// cache file or in the spool of what the run read ([`Spool`]), decoded only when the report
/// takes them ([`add_all`]): a report over a 2 GB home then holds one input's usage at a time,
/// not 12,000.
///
/// [`InputUsage::to_bytes`]: agentnorm::sink::report::InputUsage::to_bytes
pub struct Collected {
    /// The input's place among the inputs given.
    order: usize,
    span: Option<(i64, i64)>,
    blob: Blob,
}

/// How the inputs are read for their usage.
#[derive(Debug, Clone, Copy, Default)]
pub struct Reading {
    /// `--dialect`.
    pub dialect: Option<Dialect>,
    /// `--every-line`: decode every line in full ([`Collector::reading_every_line`]).
    pub every_line: bool,
}

/// Reads `input` whole into its usage; why not, when it could not be read whole (its totals
/// would be short).
fn collect(input: &Input, how: Reading, counters: Option<&progress::Counters>) -> Result<InputUsage, String> {
    let options = Options::default().dialect(how.dialect).observed_at(false);
    let mut collector = Collector::new(input.source());
    if how.every_line {
        collector = collector.reading_every_line();
    }
    if let (_, Some(why)) = exec::feed_input(input, &options, counters, &mut collector) {
        return Err(why);
    }
    Ok(collector.finish())
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
    type Fresh = Option<FileId>;
    // What is read afresh goes to the next cache file, else to a temporary one (made when the
    // first input is read: a run that reads none writes none).
    let unnamed = std::sync::OnceLock::new();
    let spool = || known.and_then(UsageCache::spool).or_else(|| unnamed.get_or_init(|| Spool::unnamed().ok()).as_ref());
    let collected = exec::map_reading(inputs, threads, &reads, |input| -> Result<(Collected, Fresh), String> {
        let _done = counters.as_deref().map(progress::Counters::done_on_drop);
        // The identity is taken before the file is read: a file that grows meanwhile is read
        // again next time.
        let id = match (input, known) {
            (Input::File(p), Some(_)) => FileId::of_path(p),
            _ => None,
        };
        if let (Input::File(p), Some(c), Some(id)) = (input, known, id)
            && let Some((span, blob)) = c.get(p, id, dialect)
        {
            return Ok((Collected { order: 0, span, blob: blob.clone() }, None));
        }
        let u = collect(input, how, counters.as_deref())?;
        let bytes = u.to_bytes();
        let blob = match spool() {
            Some(s) => s.keep(bytes),
            None => bytes.into(),
        };
        Ok((Collected { order: 0, span: u.span_ms(), blob }, id))
    });
    progress.finish();
    let mut read = Vec::with_capacity(collected.len());
    for (order, (c, input)) in collected.into_iter().zip(inputs).enumerate() {
        match c {
            Ok((mut c, fresh)) => {
                if let (Some(id), Some(cache), Input::File(p)) = (fresh, cache.as_deref_mut(), input) {
                    cache.put(p, id, dialect, c.span, c.blob.clone());
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
/// ([`agentnorm::sink::report::by_first_time`]), decoding each on another thread just ahead of
/// the one being added. Cached bytes that cannot be decoded (a damaged cache) are replaced by
/// reading their file again.
pub fn add_all(mut read: Vec<Collected>, inputs: &[Input], how: Reading, rep: &mut Report, failed: &mut bool) {
    read.sort_by_key(|c| agentnorm::sink::report::first_time_key(c.span));
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        s.spawn(move || {
            for c in read {
                let source = inputs[c.order].source();
                // Unreadable or damaged bytes: the file is read again.
                let decoded =
                    c.blob.read().map_err(drop).and_then(|b| InputUsage::from_bytes(&b, source).map_err(drop));
                if tx.send((c.order, decoded)).is_err() {
                    break;
                }
            }
        });
        for (order, decoded) in rx {
            let u = match decoded {
                Ok(u) => Ok(u),
                Err(_) => collect(&inputs[order], how, None),
            };
            match u {
                Ok(mut u) => {
                    u.set_order(order);
                    rep.add(u);
                }
                Err(why) => {
                    eprintln!("agentnorm: {why}");
                    *failed = true;
                }
            }
        }
    });
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
        let found: Vec<PathBuf> =
            inputs.iter().filter_map(|i| if let Input::File(p) = i { Some(p.clone()) } else { None }).collect();
        cache.forget_missing(&paths, &found);
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
        cache.put(&log, id, None, None, collected(&other).into());
        let planted = totals(&inputs, Some(&mut cache));
        assert_ne!(planted, truth, "the two files must differ for this test to mean anything");
        let other_alone = totals(&[Input::File(other.clone())], None);
        assert_eq!(planted, other_alone, "the cached usage was used, the file was not read");

        // Damaged (cut in half): the file is read.
        let mut damaged = collected(&other);
        damaged.truncate(damaged.len() / 2);
        cache.put(&log, id, None, None, damaged.into());
        assert_eq!(totals(&inputs, Some(&mut cache)), truth);

        // Touched: read again, and the cache now holds what it gave.
        let f = std::fs::File::options().append(true).open(&log).unwrap();
        f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
        drop(f);
        let reread = totals(&inputs, Some(&mut cache));
        assert_eq!(reread, truth);
        let id = FileId::of(&std::fs::metadata(&log).unwrap());
        assert_eq!(cache.get(&log, id, None).map(|(_, b)| b.read().unwrap()), Some(collected(&log)));
    }
}
