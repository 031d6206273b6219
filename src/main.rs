//! The `agentnorm` command: inputs, output buffering, exit status. All normalizing is the
//! library's; this file only moves bytes and maps outcomes to exit codes (see `--help`).

mod cli;

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentnorm::normalize::TypeFilter;
use agentnorm::{Dialect, Event, NdjsonSink, Normalizer, Options};
use anyhow::{Context, Result};
use clap::Parser as _;

use cli::{Cli, Command, NormalizeArgs};

/// Output is written in blocks of this size when the input keeps coming.
const WRITE_BLOCK: usize = 256 << 10;
/// Input is read in chunks of this size.
const READ_CHUNK: usize = 1 << 20;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("agentnorm: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Some(Command::Schema) => {
            let schema = serde_json::to_string_pretty(&Event::json_schema())?;
            writeln!(io::stdout().lock(), "{schema}")?;
            Ok(0)
        }
        Some(Command::Detect { paths }) => detect(&paths),
        None => normalize(cli.norm),
    }
}

/// One input: stdin or a file path.
enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_owned(),
            Input::File(p) => p.display().to_string(),
        }
    }
}

/// Expands the paths: "-" is stdin, a folder is walked (hidden folders included, sorted) for
/// `*.jsonl` and `*.ndjson`. Problems are reported on stderr and make the exit status 2.
fn inputs(paths: &[PathBuf], failed: &mut bool) -> Vec<Input> {
    if paths.is_empty() {
        return vec![Input::Stdin];
    }
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            out.push(Input::Stdin);
        } else if p.is_dir() {
            for entry in walkdir::WalkDir::new(p).follow_links(false).sort_by_file_name() {
                match entry {
                    Ok(e) if e.file_type().is_file() && has_log_extension(e.path()) => {
                        out.push(Input::File(e.into_path()))
                    }
                    Ok(_) => {}
                    Err(err) => {
                        eprintln!("agentnorm: {err}");
                        *failed = true;
                    }
                }
            }
        } else {
            out.push(Input::File(p.clone()));
        }
    }
    out
}

fn has_log_extension(p: &Path) -> bool {
    matches!(p.extension().and_then(|e| e.to_str()), Some("jsonl" | "ndjson"))
}

fn open(input: &Input) -> io::Result<Box<dyn Read>> {
    Ok(match input {
        Input::Stdin => Box::new(io::stdin().lock()),
        Input::File(p) => {
            let f = File::open(p)?;
            if f.metadata()?.is_dir() {
                return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory"));
            }
            Box::new(f)
        }
    })
}

fn detect(paths: &[PathBuf]) -> Result<u8> {
    let mut failed = false;
    let mut stdout = io::stdout().lock();
    for input in inputs(paths, &mut failed) {
        match open(&input).and_then(|r| agentnorm::detect::first_dialect(BufReader::new(r))) {
            Ok(d) => writeln!(stdout, "{}\t{}", d.map_or("unknown", Dialect::as_str), input.name())?,
            Err(e) => {
                eprintln!("agentnorm: {}: {e}", input.name());
                failed = true;
            }
        }
    }
    Ok(if failed { 2 } else { 0 })
}

fn normalize(args: NormalizeArgs) -> Result<u8> {
    let mut filter = if args.only.is_empty() { TypeFilter::all() } else { TypeFilter::only(&args.only)? };
    filter = filter.exclude(&args.exclude)?;
    let dialect = args.dialect.as_deref().and_then(Dialect::from_name);
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
        .context("installing the SIGINT handler")?;

    let mut failed_input = false;
    let (mut any_unknown, mut any_failed) = (false, false);
    let mut sink = NdjsonSink::default();
    let mut out = io::stdout().lock();
    for input in inputs(&args.paths, &mut failed_input) {
        let mut reader = match open(&input) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("agentnorm: {}: {e}", input.name());
                failed_input = true;
                continue;
            }
        };
        let source = match &input {
            Input::Stdin => None,
            Input::File(p) => Some(p.display().to_string()),
        };
        let opts = Options {
            dialect,
            source,
            observed_at: !args.no_observed_at,
            raw: args.raw,
            filter,
            max_line_bytes: args.max_line_bytes,
        };
        let mut norm = Normalizer::new(opts);
        let fd = match &input {
            Input::Stdin => Some(0),
            Input::File(_) => None,
        };
        let read_error = pump(&mut reader, fd, &mut norm, &mut sink, &mut out, &interrupted)?;
        if let Some(e) = read_error {
            eprintln!("agentnorm: {}: {e}", input.name());
            failed_input = true;
        }
        let summary = norm.finish(&mut sink);
        out.write_all(&sink.buf)?;
        sink.buf.clear();
        out.flush()?;
        any_unknown |= summary.unknown > 0;
        any_failed |= summary.turn_failed || summary.turn_open;
        if interrupted.load(Ordering::Relaxed) {
            return Ok(130);
        }
    }
    let mut code = 0;
    if args.strict && any_unknown {
        code = 1;
    }
    if failed_input {
        code = 2;
    }
    if args.fail_on_error && any_failed {
        code = 3;
    }
    Ok(code)
}

/// Reads one input to its end, feeding the normalizer and writing its output. Output is written
/// in large blocks, and whenever the input has nothing more ready, so live consumers see each
/// event at once. A read error ends the input (returned); a write error ends the run.
fn pump(
    reader: &mut dyn Read,
    fd: Option<i32>,
    norm: &mut Normalizer,
    sink: &mut NdjsonSink,
    out: &mut impl Write,
    interrupted: &AtomicBool,
) -> Result<Option<io::Error>> {
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                if interrupted.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                continue;
            }
            Err(e) => return Ok(Some(e)),
        };
        norm.feed(&buf[..n], sink);
        if sink.buf.len() >= WRITE_BLOCK || !more_ready(fd) {
            out.write_all(&sink.buf)?;
            out.flush()?;
            sink.buf.clear();
        }
        if interrupted.load(Ordering::Relaxed) {
            return Ok(None);
        }
    }
}

/// Whether the input has more bytes ready right now (files always do).
fn more_ready(fd: Option<i32>) -> bool {
    let Some(fd) = fd else { return true };
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
