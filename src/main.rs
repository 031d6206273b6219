//! The `agentnorm` command: inputs, output buffering, exit status. All normalizing is the
//! library's; the binary moves bytes (`input`, `exec`) and maps outcomes to exit codes (see
//! `--help`).

mod cli;

use cli::{exec, input, otlp, pages, pipes, progress, stdout};

use std::io::{self, IsTerminal as _, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agentnorm::TypeFilter;
use agentnorm::sink::coalesce::Coalescer;
use agentnorm::view::{ColorMode, Terminal};
use agentnorm::{Dialect, Event, NdjsonSink, Options};
use anyhow::{Context, Result};
use clap::{CommandFactory as _, Parser as _};

use cli::{Cli, Command, DiagnosticsArgs, Format, NormalizeArgs};
use input::Input;

fn main() -> ExitCode {
    if let Err(e) = stdout::check_open() {
        eprintln!("agentnorm: {e}");
        return ExitCode::from(2);
    }
    // AGENTNORM_SIMD, read once before anything is scanned (agentnorm::simd).
    match agentnorm::simd::from_env() {
        Ok(choice) => {
            if let Some(note) = &choice.note {
                eprintln!("agentnorm: {note}");
            }
            agentnorm::simd::force(choice.level);
        }
        Err(e) => {
            eprintln!("agentnorm: {e}");
            return ExitCode::from(2);
        }
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // --help and --version are "errors" that print to stdout: a failed print is a failure.
        Err(e) => {
            let code = e.exit_code();
            if let Err(w) = e.print().map_err(|w| if e.use_stderr() { w } else { stdout::named(w) })
                && w.kind() != io::ErrorKind::BrokenPipe
            {
                eprintln!("agentnorm: {w}");
                return ExitCode::from(2);
            }
            return ExitCode::from(code.clamp(0, 255) as u8);
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            // Agent-controlled text (a walked file's name) may be in it: escaped as the views do.
            eprintln!("agentnorm: {}", agentnorm::sink::safe::printable(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<io::Error>().is_some_and(|io| io.kind() == io::ErrorKind::BrokenPipe))
}

fn run(cli: Cli) -> Result<u8> {
    match cli.command {
        Some(Command::Schema { of }) => {
            let schema = match of.as_deref() {
                Some("usage") => serde_json::to_string_pretty(&agentnorm::sink::report::row_schema())?,
                _ => serde_json::to_string_pretty(&Event::json_schema())?,
            };
            writeln!(stdout::lock(), "{schema}")?;
            Ok(0)
        }
        Some(Command::Completions { shell }) => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "agentnorm", &mut script);
            stdout::lock().write_all(&script)?;
            Ok(0)
        }
        Some(Command::Man { subcommand }) => {
            let mut cmd = Cli::command();
            // Built, subcommands get their display names (`agentnorm-usage`) for their pages' titles.
            cmd.build();
            if let Some(name) = subcommand {
                cmd = cmd.find_subcommand(&name).cloned().with_context(|| format!("no subcommand {name:?}"))?;
            }
            let mut page = Vec::new();
            let source = concat!("agentnorm ", env!("CARGO_PKG_VERSION"));
            clap_mangen::Man::new(cmd).source(source).render(&mut page)?;
            stdout::lock().write_all(&page)?;
            Ok(0)
        }
        Some(Command::Detect { paths }) => detect(&paths),
        Some(Command::Survey(args)) => cli::survey::run(&args),
        Some(Command::Diagnostics(args)) => diagnostics(&args),
        Some(Command::Usage(args)) => cli::usage::run(args),
        Some(Command::Statusline(args)) => cli::statusline::run(args),
        Some(Command::Export(args)) => cli::export::run(&args),
        None => normalize(cli.norm),
    }
}

fn detect(paths: &[PathBuf]) -> Result<u8> {
    let mut failed = false;
    let mut stdout = stdout::lock();
    for input in input::expand(paths, &mut failed) {
        match input::open(&input, agentnorm::DEFAULT_MAX_LINE_BYTES).and_then(agentnorm::first_dialect) {
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
    let options = Options::default().dialect(args.dialect).observed_at(false).filter(filter).redact(args.redact);
    for input in input::expand(&args.paths, &mut failed) {
        if let (_, Some(why)) = exec::feed_input(&input, &options, None, &mut coalescer) {
            eprintln!("agentnorm: {why}");
            failed = true;
        }
    }
    let mut sink = NdjsonSink::default();
    coalescer.finish_into(&mut sink);
    let mut stdout = stdout::lock();
    stdout.write_all(&sink.buf)?;
    stdout.flush()?;
    Ok(if failed { 2 } else { 0 })
}

fn normalize(args: NormalizeArgs) -> Result<u8> {
    if let Some(both) = args.only.iter().find(|t| args.exclude.contains(t)) {
        anyhow::bail!("`{both}` is in both --only and --exclude: nothing of it would be written");
    }
    let (mut only, mut exclude) = (args.only.clone(), args.exclude.clone());
    if args.format != Format::Ndjson {
        // The views need the stream's start and end (a header, the flush of what is held, the
        // footer): the filter picks what they show, and never starves them of those.
        let structural = ["run_started", "run_ended"];
        exclude.retain(|t| !structural.contains(&t.as_str()));
        if !only.is_empty() {
            only.extend(structural.map(str::to_owned));
        }
    }
    let mut filter = if only.is_empty() { TypeFilter::all() } else { TypeFilter::only(&only)? };
    filter = filter.exclude(&exclude)?;
    if args.otlp_endpoint.is_some() && matches!(args.format, Format::Html | Format::Atif) {
        anyhow::bail!("--otlp-endpoint goes with --format ndjson, pretty or otlp");
    }
    if args.rerender && !(args.format == Format::Html && args.output_dir.is_some()) {
        anyhow::bail!("--rerender goes with --format html --output-dir");
    }
    if args.format == Format::Atif {
        return atif(&args, filter);
    }
    if args.format == Format::Html || args.output_dir.is_some() {
        return html(&args, filter);
    }
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
        .context("installing the SIGINT handler")?;
    let mut input_failed = false;
    let inputs = input::expand(&args.paths, &mut input_failed);
    if args.follow && (inputs.len() != 1 || matches!(inputs[0], Input::Stdin)) {
        anyhow::bail!("--follow takes exactly one file");
    }
    let format = match args.format {
        // Handled above.
        cli::Format::Ndjson | cli::Format::Html | cli::Format::Atif => exec::Format::Ndjson,
        cli::Format::Pretty => exec::Format::Pretty(Terminal::detect(match args.color {
            cli::Color::Auto => ColorMode::Auto,
            cli::Color::Always => ColorMode::Always,
            cli::Color::Never => ColorMode::Never,
        })),
        cli::Format::Otlp => exec::Format::Otlp(otlp_options(&args)),
    };
    let exporting = args.otlp_endpoint.as_deref().map(otlp::start).transpose()?;
    // Over many files into a pipe or a file: a progress line on a terminal's stderr.
    let many = inputs.len() > 1 && !args.follow && !io::stdout().is_terminal();
    let mut progress = progress::Progress::start(inputs.len(), many);
    let settings = exec::Settings {
        format,
        options: options(&args, filter),
        threads: args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        follow: args.follow,
        interrupted,
        progress: progress.counters(),
        export: exporting.as_ref().map(|(x, _)| (otlp_options(&args), x.clone())),
    };
    pipes::enlarge_std_pipes();
    let outcome = exec::run(inputs, &settings, &mut stdout::lock());
    progress.finish();
    if let Some((x, running)) = exporting {
        drop(settings);
        running.finish(x, otlp::GRACE);
    }
    let outcome = outcome?;
    if outcome.interrupted {
        return Ok(130);
    }
    Ok(exit_code(&args, outcome.unknown, input_failed || outcome.input_failed, outcome.turn_failed))
}

fn otlp_options(args: &NormalizeArgs) -> agentnorm::sink::otlp::OtlpOptions {
    agentnorm::sink::otlp::OtlpOptions { content: args.otlp_content }
}

/// The normalizer's options as the command line sets them (`source` is set per input).
fn options(args: &NormalizeArgs, filter: TypeFilter) -> Options {
    Options::default()
        .dialect(args.dialect)
        .observed_at(!args.no_observed_at)
        .raw(args.raw)
        .filter(filter)
        .max_line_bytes(args.max_line_bytes)
        .redact(args.redact)
}

/// The exit status of a finished run (see `--help`): the highest that applies of 1 (`--strict`
/// and an `unknown` line), 2 (an input could not be read), 3 (`--fail-on-error` and a failed or
/// open turn).
fn exit_code(args: &NormalizeArgs, unknown: bool, input_failed: bool, turn_failed: bool) -> u8 {
    if args.fail_on_error && turn_failed {
        3
    } else if input_failed {
        2
    } else if args.strict && unknown {
        1
    } else {
        0
    }
}

/// `--format html` (see `pages`): one page on stdout or one per session in `--output-dir`.
fn html(args: &NormalizeArgs, filter: TypeFilter) -> Result<u8> {
    if args.format != Format::Html {
        anyhow::bail!("--output-dir needs --format html or --format atif");
    }
    if args.follow {
        anyhow::bail!("--follow does not go with --format html (the page is written at the end of input)");
    }
    let interrupted = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))
        .context("installing the SIGINT handler")?;
    let mut failed = false;
    let inputs = input::expand(&args.paths, &mut failed);
    let found = pages::run(inputs, options(args, filter), args.output_dir.as_deref(), args.rerender, &interrupted)?;
    if found.interrupted {
        return Ok(130);
    }
    Ok(exit_code(args, found.unknown, failed || found.input_failed, found.turn_failed))
}

/// `--format atif`: every input in order into one trajectory collector; each session's
/// trajectory is written when the session ends (one JSON document per line on stdout, or one
/// `<session>.json` per session in `--output-dir`, whose paths are printed).
fn atif(args: &NormalizeArgs, filter: TypeFilter) -> Result<u8> {
    if args.follow {
        anyhow::bail!("--follow does not go with --format atif (a trajectory is written when its session ends)");
    }
    let options = options(args, filter);
    let mut failed = false;
    let (mut unknown, mut turn_failed) = (false, false);
    let mut sink = agentnorm::sink::atif::AtifSink::new();
    if let Some(dir) = &args.output_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut stdout = io::BufWriter::new(stdout::lock());
    let mut names = std::collections::HashMap::<String, usize>::new();
    for input in input::expand(&args.paths, &mut failed) {
        let (summary, error) = exec::feed_input(&input, &options, None, &mut sink);
        if let Some(why) = error {
            eprintln!("agentnorm: {why}");
            failed = true;
        }
        if let Some(s) = summary {
            unknown |= s.unknown > 0;
            turn_failed |= s.turn_failed || s.turn_open;
        }
        for (session, trajectory) in sink.take() {
            match &args.output_dir {
                None => {
                    serde_json::to_writer(&mut stdout, &trajectory)?;
                    stdout.write_all(b"\n")?;
                }
                Some(dir) => {
                    let stem = agentnorm::view::html::file_stem(&session).unwrap_or_else(|| "session".to_owned());
                    // A session seen again (resumed in another file) gets its own numbered file.
                    let n = names.entry(stem.clone()).or_default();
                    *n += 1;
                    let name = if *n == 1 { format!("{stem}.json") } else { format!("{stem}.{n}.json") };
                    let path = dir.join(name);
                    let mut file = io::BufWriter::new(
                        std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?,
                    );
                    serde_json::to_writer_pretty(&mut file, &trajectory)?;
                    file.write_all(b"\n")?;
                    file.flush().with_context(|| format!("writing {}", path.display()))?;
                    writeln!(stdout, "{}", path.display())?;
                }
            }
        }
        stdout.flush()?;
    }
    Ok(exit_code(args, unknown, failed, turn_failed))
}
