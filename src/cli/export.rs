//! `agentnorm export --parquet DIR PATH…`: the files of the typed tables that
//! [`agentnorm::sink::parquet`] builds. Each input is normalized on its own (up to `-j` at once)
//! and written as its own set of files (`DIR/<table>/<input>.parquet`, or
//! `DIR/<table>/day=YYYY-MM-DD/<input>.parquet` with `--partition day`, the Hive layout engines
//! prune by; a large input's later parts are `<input>.<n>.parquet`), so memory is bounded by
//! the largest input, not by the folder.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use agentnorm::Options;
use agentnorm::sink::parquet::{Part, PartWriter, Tables};
use anyhow::{Context, Result};

use crate::cli::{ExportArgs, exec, input, progress};

/// Where an input's tables go, and the files written there so far.
#[derive(Debug)]
struct Files {
    /// The `--parquet` folder.
    dir: PathBuf,
    /// The input's file name stem ([`stem`]).
    stem: String,
    written: Vec<PathBuf>,
}

impl PartWriter for Files {
    type Error = anyhow::Error;

    /// Writes one part: `<table>/[day=…/]<stem>[.<index>].parquet`.
    fn part(&mut self, part: Part<'_>) -> Result<()> {
        let mut d = self.dir.join(part.table);
        if let Some(day) = part.day {
            d = d.join(format!("day={day}"));
        }
        std::fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
        let name = match part.index {
            0 => format!("{}.parquet", self.stem),
            n => format!("{}.{n}.parquet", self.stem),
        };
        let path = d.join(name);
        let file = std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        part.write_parquet(file)
            .map_err(anyhow::Error::from)
            .and_then(|mut f| Ok(f.flush()?))
            .with_context(|| format!("writing {}", path.display()))?;
        self.written.push(path);
        Ok(())
    }
}

/// The file name of an input's tables: its path made safe, and a hash of the whole path so that
/// two inputs never share one.
fn stem(input: &str) -> String {
    let base = Path::new(input).file_name().map_or_else(|| "stdin".to_owned(), |n| n.to_string_lossy().into_owned());
    let safe = agentnorm::view::html::file_stem(&base).unwrap_or_else(|| "input".to_owned());
    format!("{safe}-{}", &agentnorm::sink::otlp::trace_id(input)[..12])
}

/// Runs `agentnorm export`; the exit status is 2 when an input could not be read or written.
pub fn run(args: &ExportArgs) -> Result<u8> {
    let mut failed = false;
    let inputs = input::expand(&args.paths, &mut failed);
    let options = Options::default().dialect(args.dialect).observed_at(false).redact(args.redact);
    let by_day = args.partition.as_deref() == Some("day");
    std::fs::create_dir_all(&args.parquet).with_context(|| format!("creating {}", args.parquet.display()))?;
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut progress = progress::Progress::start(inputs.len(), true);
    let counters = progress.counters();
    let results = exec::map_reading(&inputs, threads, &|_| true, |input| -> Result<usize, String> {
        let _done = counters.as_deref().map(progress::Counters::done_on_drop);
        let files = Files { dir: args.parquet.clone(), stem: stem(&input.name()), written: Vec::new() };
        let mut tables = Tables::new(files, by_day);
        let (summary, error) = exec::feed_input(input, &options, counters.as_deref(), &mut tables);
        if summary.is_none() {
            return Err(error.unwrap_or_default());
        }
        let files = tables.finish().map_err(|e| format!("{}: {e:#}", input.name()))?;
        match error {
            Some(why) => Err(why),
            None => Ok(files.written.len()),
        }
    });
    progress.finish();
    for r in results {
        if let Err(why) = r {
            eprintln!("agentnorm: {why}");
            failed = true;
        }
    }
    Ok(if failed { 2 } else { 0 })
}
