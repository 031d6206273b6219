//! The `agentnorm` command: inputs, output buffering, exit status. All normalizing is the
//! library's; the binary moves bytes (`input`, `exec`) and maps outcomes to exit codes (see
//! `--help`).

mod cli;
mod exec;
mod input;
mod pipes;
mod readahead;

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agentnorm::coalesce::Coalescer;
use agentnorm::normalize::TypeFilter;
use agentnorm::{Dialect, Event, NdjsonSink, Normalizer, Options};
use anyhow::{Context, Result};
use clap::Parser as _;

use cli::{Cli, Command, DiagnosticsArgs, NormalizeArgs, UsageArgs};
use input::Input;

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
        Some(Command::Diagnostics(args)) => diagnostics(&args),
        Some(Command::Usage(args)) => usage(args),
        None => normalize(cli.norm),
    }
}

fn detect(paths: &[PathBuf]) -> Result<u8> {
    let mut failed = false;
    let mut stdout = io::stdout().lock();
    for input in input::expand(paths, &mut failed) {
        match input::open(&input).and_then(agentnorm::detect::first_dialect) {
            Ok(d) => writeln!(stdout, "{}\t{}", d.map_or("unknown", Dialect::as_str), input.name())?,
            Err(e) => {
                eprintln!("agentnorm: {}: {e}", input.name());
                failed = true;
            }
        }
    }
    Ok(if failed { 2 } else { 0 })
}

/// `agentnorm diagnostics`: the inputs in order, one normalizer each (only `diagnostic` events
/// let through), all feeding one coalescer whose events are written at the end.
fn diagnostics(args: &DiagnosticsArgs) -> Result<u8> {
    let mut failed = false;
    let filter = TypeFilter::only(&["diagnostic".to_owned()])?;
    let mut coalescer = Coalescer::new();
    let mut buf = vec![0u8; 1 << 20];
    'inputs: for input in input::expand(&args.paths, &mut failed) {
        let mut reader = match input::open(&input) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("agentnorm: {}: {e}", input.name());
                failed = true;
                continue;
            }
        };
        let mut norm = Normalizer::new(Options {
            dialect: args.dialect.as_deref().and_then(Dialect::from_name),
            source: input.source(),
            observed_at: false,
            filter,
            ..Options::default()
        });
        let mut fed = false;
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    fed = true;
                    norm.feed(&buf[..n], &mut coalescer);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("agentnorm: {}: {e}", input.name());
                    failed = true;
                    if !fed {
                        continue 'inputs;
                    }
                    break;
                }
            }
        }
        norm.finish(&mut coalescer);
    }
    let mut sink = NdjsonSink::default();
    coalescer.finish_into(&mut sink);
    let mut stdout = io::stdout().lock();
    stdout.write_all(&sink.buf)?;
    stdout.flush()?;
    Ok(if failed { 2 } else { 0 })
}

fn normalize(args: NormalizeArgs) -> Result<u8> {
    let mut filter = if args.only.is_empty() { TypeFilter::all() } else { TypeFilter::only(&args.only)? };
    filter = filter.exclude(&args.exclude)?;
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
        .context("installing the SIGINT handler")?;
    let mut input_failed = false;
    let inputs = input::expand(&args.paths, &mut input_failed);
    if args.follow && (inputs.len() != 1 || matches!(inputs[0], Input::Stdin)) {
        anyhow::bail!("--follow takes exactly one file");
    }
    let settings = exec::Settings {
        options: Options {
            dialect: args.dialect.as_deref().and_then(Dialect::from_name),
            source: None,
            observed_at: !args.no_observed_at,
            raw: args.raw,
            filter,
            max_line_bytes: args.max_line_bytes,
        },
        threads: args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        follow: args.follow,
        interrupted,
    };
    pipes::enlarge_std_pipes();
    let outcome = exec::run(inputs, &settings, &mut io::stdout().lock())?;
    let mut code = 0;
    if args.strict && outcome.unknown {
        code = 1;
    }
    if input_failed || outcome.input_failed {
        code = 2;
    }
    if args.fail_on_error && outcome.turn_failed {
        code = 3;
    }
    if outcome.interrupted {
        code = 130;
    }
    Ok(code)
}

/// Where `agentnorm usage` looks when given no path: the saved sessions of Claude Code and Codex
/// (`$CLAUDE_CONFIG_DIR/projects` or `~/.claude/projects`, `$CODEX_HOME/sessions` or
/// `~/.codex/sessions`), those that exist.
fn default_usage_paths() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let dir =
        |var: &str, dot: &str| std::env::var_os(var).map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(dot)));
    [
        dir("CLAUDE_CONFIG_DIR", ".claude").map(|d| d.join("projects")),
        dir("CODEX_HOME", ".codex").map(|d| d.join("sessions")),
    ]
    .into_iter()
    .flatten()
    .filter(|p| p.is_dir())
    .collect()
}

fn usage(args: UsageArgs) -> Result<u8> {
    use agentnorm::report::{self, Collector, GroupBy, Report, ReportOptions};
    let bound = |s: &Option<String>, end: bool, flag: &str| -> Result<Option<i64>> {
        s.as_deref()
            .map(|s| report::parse_bound(s, end).with_context(|| format!("{flag} {s:?}: not RFC 3339 or YYYY-MM-DD")))
            .transpose()
    };
    let opts = ReportOptions {
        by: match args.by.as_str() {
            "model" => GroupBy::Model,
            "day" => GroupBy::Day,
            _ => GroupBy::Session,
        },
        since_ms: bound(&args.since, false, "--since")?,
        until_ms: bound(&args.until, true, "--until")?,
    };
    let paths = if args.paths.is_empty() {
        let found = default_usage_paths();
        if found.is_empty() {
            anyhow::bail!("no PATH given and neither ~/.claude/projects nor ~/.codex/sessions exists");
        }
        found
    } else {
        args.paths
    };
    let mut failed = false;
    let inputs = input::expand(&paths, &mut failed);
    let dialect = args.dialect.as_deref().and_then(Dialect::from_name);
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let collected = exec::map_inputs(&inputs, threads, |input| -> Result<report::InputUsage, String> {
        let mut reader = input::open(input).map_err(|e| format!("{}: {e}", input.name()))?;
        let options = Options { dialect, source: input.source(), observed_at: false, ..Options::default() };
        let mut norm = Normalizer::new(options);
        let mut collector = Collector::new(input.source());
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => norm.feed(&buf[..n], &mut collector),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("{}: {e}", input.name())),
            }
        }
        norm.finish(&mut collector);
        Ok(collector.finish())
    });
    let mut rep = Report::default();
    for c in collected {
        match c {
            Ok(u) => rep.add(u),
            Err(why) => {
                eprintln!("agentnorm: {why}");
                failed = true;
            }
        }
    }
    let (rows, totals) = rep.rows(&opts);
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        report::write_json(&mut out, &rows, &totals)?;
    } else if args.csv {
        report::write_csv(&mut out, opts.by, &rows, &totals)?;
    } else {
        report::write_table(&mut out, opts.by, &rows, &totals)?;
    }
    out.flush()?;
    Ok(if failed { 2 } else { 0 })
}
