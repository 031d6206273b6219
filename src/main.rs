//! The `agentnorm` command: inputs, output buffering, exit status. All normalizing is the
//! library's; the binary moves bytes (`input`, `exec`) and maps outcomes to exit codes (see
//! `--help`).

mod cli;
mod exec;
mod input;
mod mapped;
mod pipes;
mod progress;
mod readahead;
mod statusline;

use std::io::{self, IsTerminal as _, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use agentnorm::coalesce::Coalescer;
use agentnorm::html::HtmlSink;
use agentnorm::normalize::TypeFilter;
use agentnorm::render::{ColorMode, Terminal};
use agentnorm::{Dialect, Event, NdjsonSink, Options};
use anyhow::{Context, Result};
use clap::{CommandFactory as _, Parser as _};

use cli::{Cli, Command, DiagnosticsArgs, Format, NormalizeArgs, UsageArgs};
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
        Some(Command::Schema { of }) => {
            let schema = match of.as_deref() {
                Some("usage") => serde_json::to_string_pretty(&agentnorm::report::row_schema())?,
                _ => serde_json::to_string_pretty(&Event::json_schema())?,
            };
            writeln!(io::stdout().lock(), "{schema}")?;
            Ok(0)
        }
        Some(Command::Completions { shell }) => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "agentnorm", &mut script);
            io::stdout().lock().write_all(&script)?;
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
            io::stdout().lock().write_all(&page)?;
            Ok(0)
        }
        Some(Command::Detect { paths }) => detect(&paths),
        Some(Command::Diagnostics(args)) => diagnostics(&args),
        Some(Command::Usage(args)) => usage(args),
        Some(Command::Statusline(args)) => statusline::run(args),
        None => normalize(cli.norm),
    }
}

fn detect(paths: &[PathBuf]) -> Result<u8> {
    let mut failed = false;
    let mut stdout = io::stdout().lock();
    for input in input::expand(paths, &mut failed) {
        match input::open(&input, agentnorm::normalize::DEFAULT_MAX_LINE_BYTES)
            .and_then(agentnorm::detect::first_dialect)
        {
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
    let options = Options {
        dialect: args.dialect.as_deref().and_then(Dialect::from_name),
        observed_at: false,
        filter,
        redact: args.redact,
        ..Options::default()
    };
    for input in input::expand(&args.paths, &mut failed) {
        if let (_, Some(why)) = exec::feed_input(&input, &options, None, &mut coalescer) {
            eprintln!("agentnorm: {why}");
            failed = true;
        }
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
        cli::Format::Ndjson | cli::Format::Html => exec::Format::Ndjson,
        cli::Format::Pretty => exec::Format::Pretty(Terminal::detect(match args.color {
            cli::Color::Auto => ColorMode::Auto,
            cli::Color::Always => ColorMode::Always,
            cli::Color::Never => ColorMode::Never,
        })),
    };
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
    };
    pipes::enlarge_std_pipes();
    let outcome = exec::run(inputs, &settings, &mut io::stdout().lock())?;
    progress.finish();
    if outcome.interrupted {
        return Ok(130);
    }
    Ok(exit_code(&args, outcome.unknown, input_failed || outcome.input_failed, outcome.turn_failed))
}

/// The normalizer's options as the command line sets them (`source` is set per input).
fn options(args: &NormalizeArgs, filter: TypeFilter) -> Options {
    Options {
        dialect: args.dialect.as_deref().and_then(Dialect::from_name),
        source: None,
        observed_at: !args.no_observed_at,
        raw: args.raw,
        filter,
        max_line_bytes: args.max_line_bytes,
        redact: args.redact,
    }
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

/// `--format html`: every input in order into one HTML collector (one thread: the page is written
/// at the end of input anyway), then one page on stdout or one page per session in
/// `--output-dir`, whose paths are printed.
fn html(args: &NormalizeArgs, filter: TypeFilter) -> Result<u8> {
    if args.format != Format::Html {
        anyhow::bail!("--output-dir needs --format html");
    }
    if args.follow {
        anyhow::bail!("--follow does not go with --format html (the page is written at the end of input)");
    }
    let options = options(args, filter);
    let mut failed = false;
    let (mut unknown, mut turn_failed) = (false, false);
    let mut sink = HtmlSink::new();
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
    }
    let transcript = sink.finish();
    let mut stdout = io::stdout().lock();
    match &args.output_dir {
        None => transcript.write_all(&mut stdout)?,
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            for page in transcript.pages() {
                let path = dir.join(&page.file_name);
                let mut file = io::BufWriter::new(
                    std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?,
                );
                transcript.write_page(&mut file, &page.sections)?;
                file.flush().with_context(|| format!("writing {}", path.display()))?;
                writeln!(stdout, "{}", path.display())?;
            }
        }
    }
    stdout.flush()?;
    Ok(exit_code(args, unknown, failed, turn_failed))
}

/// Where `agentnorm usage` looks when given no path: the saved sessions of Claude Code and Codex,
/// those that exist.
fn default_usage_paths() -> Vec<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    usage_paths(env("HOME").map(PathBuf::from), env("CLAUDE_CONFIG_DIR"), env("CODEX_HOME"))
        .into_iter()
        .filter(|p| p.is_dir())
        .collect()
}

/// Claude Code: every `projects` folder of `$CLAUDE_CONFIG_DIR` (comma-separated), else
/// `~/.config/claude/projects` (newer builds) and `~/.claude/projects`; Codex: `sessions` and
/// `archived_sessions` of `$CODEX_HOME`, else of `~/.codex` (archived copies are counted once by
/// the report's dedupe).
fn usage_paths(
    home: Option<PathBuf>,
    claude_config: Option<std::ffi::OsString>,
    codex_home: Option<std::ffi::OsString>,
) -> Vec<PathBuf> {
    let mut out = Vec::new();
    match claude_config {
        Some(dirs) => {
            for d in dirs.to_string_lossy().split(',').map(str::trim).filter(|d| !d.is_empty()) {
                let d = PathBuf::from(d);
                // The variable may name the config folder or its projects folder.
                out.push(if d.ends_with("projects") { d } else { d.join("projects") });
            }
        }
        None => {
            if let Some(h) = &home {
                out.push(h.join(".config/claude/projects"));
                out.push(h.join(".claude/projects"));
            }
        }
    }
    let codex = codex_home.map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".codex")));
    if let Some(c) = codex {
        out.push(c.join("sessions"));
        out.push(c.join("archived_sessions"));
    }
    out.dedup();
    out
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

/// Reads every input into its usage (in parallel; the order of the result is the inputs'). An
/// input that could not be read whole is reported on stderr, sets `failed`, and is left out.
fn read_usage(
    inputs: &[Input],
    dialect: Option<Dialect>,
    threads: usize,
    show_progress: bool,
    failed: &mut bool,
) -> Vec<agentnorm::report::InputUsage> {
    use agentnorm::report::{Collector, InputUsage};
    let mut progress = progress::Progress::start(inputs.len(), show_progress);
    let counters = progress.counters();
    let collected = exec::map_inputs(inputs, threads, |input| -> Result<InputUsage, String> {
        let _done = counters.as_deref().map(progress::Counters::done_on_drop);
        let options = Options { dialect, observed_at: false, ..Options::default() };
        let mut collector = Collector::new(input.source());
        // A partly read input is not reported: its totals would be short.
        if let (_, Some(why)) = exec::feed_input(input, &options, counters.as_deref(), &mut collector) {
            return Err(why);
        }
        Ok(collector.finish())
    });
    progress.finish();
    let mut read = Vec::with_capacity(collected.len());
    for (order, c) in collected.into_iter().enumerate() {
        match c {
            Ok(mut u) => {
                u.set_order(order);
                read.push(u)
            }
            Err(why) => {
                eprintln!("agentnorm: {why}");
                *failed = true;
            }
        }
    }
    read
}

fn usage(args: UsageArgs) -> Result<u8> {
    use agentnorm::report::{self, GroupBy, Report, ReportOptions};
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
    if let Some(file) = &args.prices {
        let text = std::fs::read_to_string(file).with_context(|| format!("--prices {}", file.display()))?;
        let mut table = agentnorm::prices::Prices::embedded();
        table.merge_json(&text).with_context(|| format!("--prices {}", file.display()))?;
        agentnorm::prices::install(table);
    }
    let paths = if args.paths.is_empty() {
        let found = default_usage_paths();
        if found.is_empty() {
            anyhow::bail!(
                "no PATH given and no saved sessions found (~/.claude/projects, ~/.config/claude/projects, \
                 $CLAUDE_CONFIG_DIR, ~/.codex/sessions, ~/.codex/archived_sessions, $CODEX_HOME)"
            );
        }
        found
    } else {
        args.paths
    };
    let mut failed = false;
    let inputs = input::expand(&paths, &mut failed);
    let dialect = args.dialect.as_deref().and_then(Dialect::from_name);
    let threads = args.threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut rep = if args.estimate { Report::estimating() } else { Report::default() };
    let mut read = read_usage(&inputs, dialect, threads, true, &mut failed);
    report::by_first_time(&mut read);
    for u in read {
        rep.add(u);
    }
    let (rows, totals) = rep.rows(&opts);
    let mut out = io::BufWriter::new(io::stdout().lock());
    if args.json {
        report::write_json(&mut out, &rows, &totals)?;
    } else if args.csv {
        report::write_csv(&mut out, opts.by, &rows, &totals)?;
    } else {
        report::write_table(&mut out, opts.by, &rows, &totals, terminal_width())?;
    }
    out.flush()?;
    Ok(if failed { 2 } else { 0 })
}
