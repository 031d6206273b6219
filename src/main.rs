//! The `agentnorm` command: inputs, output buffering, exit status. All normalizing is the
//! library's; the binary moves bytes (`input`, `exec`) and maps outcomes to exit codes (see
//! `--help`).

mod cli;
mod exec;
mod input;

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

use cli::{Cli, Command, DiagnosticsArgs, NormalizeArgs};
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
