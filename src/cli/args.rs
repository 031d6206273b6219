//! The command line (SPEC §5), declared with clap derive: the `///` comments are the help text.

use std::path::PathBuf;

use agentnorm::Dialect;
use clap::{Args, Parser, Subcommand, ValueEnum};

const EXAMPLES: &str = "\
Examples:
  claude -p 'fix the tests' --output-format stream-json --verbose | agentnorm
  codex exec --json 'add a README' 2>&1 | agentnorm --only output_delta,tool_started
  agentnorm session.jsonl                    replay a saved stream
  claude -p 'x' --output-format stream-json --verbose | agentnorm --format pretty
                                             watch a session live as a coloured transcript
  agentnorm ~/logs/agents                    every *.jsonl / *.ndjson below a folder
  agentnorm --format html session.jsonl > session.html   a page to read or share
  agentnorm --format html --output-dir pages ~/.codex/sessions   one page per session
  agentnorm detect *.jsonl                   which CLI wrote each file
  codex exec --json 'x' 2>&1 | agentnorm diagnostics   each warning once, with its count
  agentnorm usage --by day                   token usage and cost from ~/.claude and ~/.codex
  agentnorm --redact --raw session.jsonl > to-share.ndjson   secrets masked as [REDACTED:kind]
  agentnorm --format otlp session.jsonl > spans.ndjson   OpenTelemetry GenAI traces (OTLP/JSON)
  agentnorm --otlp-endpoint http://127.0.0.1:4318 run.jsonl   the same spans sent to a collector
  agentnorm --format atif --output-dir traj ~/.codex/sessions   one ATIF trajectory per session
  agentnorm export --parquet tables --partition day ~/.claude/projects   tables for DuckDB / Spark
  agentnorm completions bash > ~/.local/share/bash-completion/completions/agentnorm
  agentnorm man > ~/.local/share/man/man1/agentnorm.1      also: agentnorm man usage

Exit status:
  0    success (also when the reader of stdout went away)
  1    --strict and a line ended as `unknown`
  2    bad usage, or an input could not be read (the others are still processed)
  3    --fail-on-error and a turn failed or a stream ended with a turn open
  130  interrupted (SIGINT); the output so far is flushed
  When several apply, the highest wins.";

/// Normalize the NDJSON streams of coding-agent CLIs into one event vocabulary.
#[derive(Debug, Parser)]
#[command(name = "agentnorm", version, after_help = EXAMPLES, args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// What to do besides normalizing.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Normalizer options.
    #[command(flatten)]
    pub norm: NormalizeArgs,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print "<dialect>\t<path>" for each input: the first dialect detected, `unknown` when none.
    Detect {
        /// Files or folders; none or "-" reads stdin.
        paths: Vec<PathBuf>,
    },
    /// Write only the diagnostics, one per `dedupe_key`, coalesced at the end of input.
    ///
    /// One `diagnostic` per `dedupe_key`, in first-seen order: `count` summed, `plugins` united,
    /// `raw` every distinct source line (joined with newlines), `first_line` / `last_line`, the
    /// highest `level`, and `source` when all came from one file. `observed_at` is never written
    /// in this view.
    Diagnostics(DiagnosticsArgs),
    /// Per dialect and CLI version, each frame type seen, its count, and how it is read.
    ///
    /// `mapped` (into events), `heartbeat` (recognised, nothing else worth an event) or
    /// `unknown` (a new frame type of a CLI release shows up here), with the first input line
    /// where it was seen. `--json` writes one object per row.
    Survey(SurveyArgs),
    /// Print the JSON Schema of the output events (or, with `usage`, of `usage --json` rows).
    Schema {
        /// `events` (default) or `usage`.
        #[arg(value_parser = ["events", "usage"])]
        of: Option<String>,
    },
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): agentnorm(1), or agentnorm-SUBCOMMAND(1) of the one named.
    Man {
        /// A subcommand whose page to print (detect, diagnostics, schema, completions, usage).
        subcommand: Option<String>,
    },
    /// Report deduplicated token usage and cost per session, model or day.
    #[command(after_help = USAGE_HELP)]
    Usage(UsageArgs),
    /// Write typed tables for query engines: `--parquet DIR` gives DIR/<table>/<input>.parquet
    /// for sessions, turns, requests, tool_calls, messages, rate_limits, diagnostics, unknown.
    Export(ExportArgs),
    /// One status line for Claude Code: model, session cost, today's cost, the 5-hour block's
    /// cost and time left, context used, rate-limit headroom.
    #[command(after_help = STATUSLINE_HELP)]
    Statusline(StatuslineArgs),
}

const STATUSLINE_HELP: &str = "Claude Code runs the statusLine command of its settings after each message, with a JSON
object on stdin, and shows the line it prints. Install it in ~/.claude/settings.json:

  {
    \"statusLine\": { \"type\": \"command\", \"command\": \"agentnorm statusline\", \"padding\": 0 }
  }

It prints, for example:
  Opus 4.6 · session $1.23 · today ~$8.40 · block ~$3.10 (2h14m left) · ctx 46% (92.0k/200.0k) · 5h 38% used

The session cost is the one Claude Code passes (cost.total_cost_usd), else the report's; today
and the block are read from the saved sessions modified in the last 24 hours (~ marks an
estimate, * a partial cost); the context is the status JSON's or the transcript's last request;
the rate limits are the status JSON's or the logs' latest readings.";

/// Options of `agentnorm statusline`.
#[derive(Debug, Args)]
pub struct StatuslineArgs {
    /// Logs to read instead of the saved sessions (the same defaults as `usage`).
    pub paths: Vec<PathBuf>,
    /// The time zone of "today" (default: the local zone).
    #[arg(long, value_name = "ZONE")]
    pub timezone: Option<String>,
    /// "Now" (RFC 3339; for tests).
    #[arg(long, value_name = "TIME", hide = true)]
    pub now: Option<String>,
    /// Read every recent log again instead of taking unchanged ones from the usage cache.
    #[arg(long)]
    pub no_cache: bool,
}

/// Options of `agentnorm export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Files or folders (walked for *.jsonl / *.ndjson, also .gz / .zst); none or "-" reads stdin.
    pub paths: Vec<PathBuf>,
    /// Write Parquet tables into DIR (created if missing), one set of files per input.
    #[arg(long, value_name = "DIR", required = true)]
    pub parquet: PathBuf,
    /// `day`: lay the files out as DIR/<table>/day=YYYY-MM-DD/ (UTC; `day=unknown` for rows
    /// without a time), the Hive layout engines prune by.
    #[arg(long, value_name = "BY", value_parser = ["day"])]
    pub partition: Option<String>,
    /// Force the input dialect instead of detecting it per frame.
    #[arg(long, value_name = "NAME", value_enum)]
    pub dialect: Option<Dialect>,
    /// Mask secrets in the tables, as the normalizer's --redact does.
    #[arg(long)]
    pub redact: bool,
    /// Read this many inputs at once (default: all cores); the files never depend on it.
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<usize>,
}

const USAGE_HELP: &str = concat!(
    "Each session's totals come from its most complete source: the turn aggregates where the CLI
reports them (Claude stream-json, Gemini, Cursor, OpenCode), the last running total (Codex exec),
else the sum of its per-request usage (transcripts, rollouts); a message already counted in
another file is not counted again; subagent and sidechain requests count.

Cost: what the CLI reported (Claude total_cost_usd, a running total per process; OpenCode cost),
cost_source \"reported\"; else estimated (cost_source \"estimated\") from an embedded snapshot
of LiteLLM's model_prices_and_context_window.json (list prices) dated ",
    agentnorm::prices_date!(),
    " (scripts/update-prices.sh
regenerates it; --prices FILE adds or overrides models in the same shape). Priced apart where
the log says so: Anthropic 1-hour cache writes, the long-context tier (the whole request at the
higher rate once its prompt passes the threshold), priority / flex service tiers.

Output: an aligned table (also when stdout is not a terminal), NDJSON with --json (one object
per row; the totals row has \"totals\": true), CSV with --csv. Absent figures were never reported.
Rows without a time count only when neither --since nor --until is given; --by day puts them
under \"unknown\".

Examples:
  agentnorm usage                          ~/.claude/projects and ~/.codex/sessions
  agentnorm usage --by day --since 2026-05-01 ~/.claude/projects
  agentnorm usage --json run.jsonl | jq 'select(.totals)'"
);

/// Options of `agentnorm survey`.
#[derive(Debug, Args)]
pub struct SurveyArgs {
    /// Files or folders (walked for *.jsonl / *.ndjson, also .gz / .zst); none or "-" reads stdin.
    pub paths: Vec<PathBuf>,
    /// One JSON object per row (`dialect`, `cli_version`, `frame`, `read_as`, `count`, `source`,
    /// `line`) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Force the input dialect instead of detecting it per frame.
    #[arg(long, value_name = "NAME", value_enum)]
    pub dialect: Option<Dialect>,
}

/// Options of `agentnorm diagnostics`.
#[derive(Debug, Args)]
pub struct DiagnosticsArgs {
    /// Files or folders (walked for *.jsonl / *.ndjson, also .gz / .zst); none or "-" reads stdin.
    pub paths: Vec<PathBuf>,
    /// Force the input dialect instead of detecting it per frame.
    #[arg(long, value_name = "NAME", value_enum)]
    pub dialect: Option<Dialect>,
    /// Accepted for symmetry with the normalizer; this view never writes `observed_at` (a
    /// coalesced event stands for many reads).
    #[arg(long)]
    pub no_observed_at: bool,
    /// Mask secrets in the diagnostics' messages and raw lines, as the normalizer's --redact does.
    #[arg(long)]
    pub redact: bool,
}

/// Options of `agentnorm usage`.
#[derive(Debug, Args)]
pub struct UsageArgs {
    /// Files or folders; none walks ~/.claude/projects, ~/.config/claude/projects,
    /// ~/.codex/sessions, ~/.codex/archived_sessions, ~/.gemini/tmp and OpenCode's
    /// ~/.local/share/opencode (storage/message, opencode.db) (those that exist;
    /// $CLAUDE_CONFIG_DIR, comma-separated, $CODEX_HOME and $XDG_DATA_HOME are honoured); "-"
    /// reads stdin.
    pub paths: Vec<PathBuf>,
    /// One row per session (default), project, day, week (from Monday), month, model, or
    /// 5-hour billing block (gaps shown; the active block with its burn rate, projection and
    /// the latest rate-limit readings).
    #[arg(long, value_name = "GROUP", default_value = "session",
          value_parser = ["session", "project", "day", "week", "month", "model", "block"])]
    pub by: String,
    /// The time zone of days, weeks, months, block times and YYYY-MM-DD bounds (an IANA name
    /// such as Europe/Paris, or UTC; default: the local zone).
    #[arg(long, value_name = "ZONE")]
    pub timezone: Option<String>,
    /// Per-model rows inside each row.
    #[arg(long)]
    pub breakdown: bool,
    /// Count only usage at or after this time (RFC 3339, or YYYY-MM-DD for that day's start).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Count only usage at or before this time (RFC 3339, or YYYY-MM-DD for that whole day).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// "Now" for the active block (RFC 3339; for reproducible reports and tests).
    #[arg(long, value_name = "TIME", hide = true)]
    pub now: Option<String>,
    /// Write NDJSON, one object per row, then the totals row.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Write CSV with a header line.
    #[arg(long)]
    pub csv: bool,
    /// Force the input dialect instead of detecting it per frame.
    #[arg(long, value_name = "NAME", value_enum)]
    pub dialect: Option<Dialect>,
    /// Read this many inputs at once (default: all cores); the result never depends on it.
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<usize>,
    /// Add or override model prices from a LiteLLM-shaped JSON file
    /// (`{"model": {"input_cost_per_token": 3e-6, "output_cost_per_token": 1.5e-5, …}}`).
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Ignore the costs the CLIs reported and estimate every request from the price table.
    #[arg(long)]
    pub estimate: bool,
    /// Read every log again instead of taking unchanged ones from the usage cache (which is
    /// then neither read nor written; see AGENTNORM_CACHE_DIR).
    #[arg(long)]
    pub no_cache: bool,
    /// Decode every line in full. By default the lines that carry only conversation (tool
    /// results, text already dated, snapshots) are passed over once they cannot date a
    /// request: the report is the same, read faster where tool results are large. This checks that.
    #[arg(long)]
    pub every_line: bool,
}

/// The output formats of the normalizer (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// One JSON event per line.
    Ndjson,
    /// A coloured transcript for a terminal.
    Pretty,
    /// One self-contained HTML page (no scripts, no external assets), a section per session;
    /// written at the end of input.
    Html,
    /// OpenTelemetry traces: one OTLP/JSON `ExportTraceServiceRequest` per line (GenAI
    /// semantic conventions), for each input at its end or every 512 spans.
    Otlp,
    /// ATIF v1.7 trajectories (Harbor's Agent Trajectory Interchange Format): one JSON document
    /// per session, one per line (or one file each with --output-dir).
    Atif,
}

/// When to colour human output (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// When stdout is a terminal and NO_COLOR is unset or empty.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// An event type of `--only` / `--exclude`: spaces around it ignored (`--only 'a, b'`), checked
/// against the contract's names, which shell completion offers.
#[derive(Debug, Clone, Copy)]
pub struct EventType;

impl clap::builder::TypedValueParser for EventType {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<String, clap::Error> {
        let name = value.to_str().map(str::trim).unwrap_or_default();
        if agentnorm::Event::TYPE_NAMES.contains(&name) {
            return Ok(name.to_owned());
        }
        let mut e = clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(cmd);
        use clap::error::{ContextKind, ContextValue};
        if let Some(arg) = arg {
            e.insert(ContextKind::InvalidArg, ContextValue::String(arg.to_string()));
        }
        e.insert(ContextKind::InvalidValue, ContextValue::String(value.to_string_lossy().into_owned()));
        let valid = agentnorm::Event::TYPE_NAMES.iter().map(|t| (*t).to_owned()).collect();
        e.insert(ContextKind::ValidValue, ContextValue::Strings(valid));
        Err(e)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(agentnorm::Event::TYPE_NAMES.iter().map(clap::builder::PossibleValue::new)))
    }
}

/// Options of the normalizer.
#[derive(Debug, Args)]
pub struct NormalizeArgs {
    /// Files or folders (walked for *.jsonl / *.ndjson, also .gz / .zst); none or "-" reads stdin.
    pub paths: Vec<PathBuf>,
    /// With --format html: write one page per session into DIR (created if missing; file names
    /// from the session ids, reduced to letters, digits, `.`, `_`, `-`) and print their paths.
    /// With --format atif: one `<session>.json` trajectory per session, likewise.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// With --format html --output-dir: render every page again, also of the inputs that have
    /// not changed since the last run over DIR (which keep their pages, recorded in
    /// DIR/.agentnorm-pages.json).
    #[arg(long)]
    pub rerender: bool,
    /// Force the input dialect instead of detecting it per frame.
    #[arg(long, value_name = "NAME", value_enum)]
    pub dialect: Option<Dialect>,
    /// Write only these event types (comma-separated; spaces around names ignored).
    #[arg(long, value_name = "TYPE,...", value_delimiter = ',', value_parser = EventType)]
    pub only: Vec<String>,
    /// Do not write these event types (comma-separated; spaces around names ignored).
    #[arg(long, value_name = "TYPE,...", value_delimiter = ',', value_parser = EventType)]
    pub exclude: Vec<String>,
    /// Leave out `observed_at` (reproducible output).
    #[arg(long)]
    pub no_observed_at: bool,
    /// `ndjson`: one event per line (the contract); `pretty`: a compact transcript for a person
    /// (one line per tool call with its outcome and duration, text wrapped, long output folded,
    /// plans as checklists, a usage line per turn); `html`: one self-contained page, a section per
    /// session, written at the end of input (see --output-dir).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Ndjson)]
    pub format: Format,
    /// Colour the pretty output: `auto` when stdout is a terminal and NO_COLOR is unset.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = Color::Auto)]
    pub color: Color,
    /// Add the source line to every event as `raw`.
    #[arg(long)]
    pub raw: bool,
    /// Exit 1 when any line ended as `unknown`.
    #[arg(long)]
    pub strict: bool,
    /// Exit 3 when a turn failed or a stream ended with a turn open.
    #[arg(long)]
    pub fail_on_error: bool,
    /// Threads (default: all cores): this many inputs at once, and a plain file of 4 MiB or more
    /// cut into chunks normalized on as many; the output never depends on it.
    #[arg(short = 'j', long = "threads", value_name = "N")]
    pub threads: Option<usize>,
    /// Keep reading the file as it grows, like `tail -f` (one uncompressed file; stop with Ctrl-C).
    #[arg(long)]
    pub follow: bool,
    /// Lines longer than this become `unknown` `line_too_long` (default 64 MiB).
    #[arg(long, value_name = "N", default_value_t = agentnorm::DEFAULT_MAX_LINE_BYTES)]
    pub max_line_bytes: usize,
    /// Mask secrets (API keys, tokens, Authorization headers, private keys, NAME=value
    /// assignments of secret-looking names) as [REDACTED:kind] in every event and `raw` line.
    #[arg(long)]
    pub redact: bool,
    /// With --format otlp or --otlp-endpoint: put message content into the spans (prompts,
    /// answers, tool arguments and results, error text), redacted with --redact. Off by default.
    #[arg(long)]
    pub otlp_content: bool,
    /// Also send the spans to this OTLP/HTTP (JSON) endpoint, e.g. http://127.0.0.1:4318
    /// (`/v1/traces` added when no path is given), while the output goes on as usual: batched,
    /// from a bounded queue, retried with backoff; a down endpoint never holds the output.
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    /// The `agentnorm …` part of an example line: after the last pipe, before the redirection
    /// and the description (three spaces or more), split like a shell would (single quotes).
    fn example_args(line: &str) -> Option<Vec<String>> {
        let cmd = line.trim().rsplit("| ").next()?;
        let cmd = cmd.split("   ").next()?;
        if !cmd.starts_with("agentnorm") {
            return None;
        }
        let mut args = Vec::new();
        for (i, part) in cmd.split('\'').enumerate() {
            if i % 2 == 1 {
                args.push(part.to_owned());
            } else {
                args.extend(part.split_whitespace().map(str::to_owned));
            }
        }
        Some(args.into_iter().take_while(|a| a != ">" && !a.starts_with("2>")).collect())
    }

    #[test]
    fn every_example_in_help_parses() {
        let examples: Vec<Vec<String>> = EXAMPLES
            .lines()
            .chain(USAGE_HELP.lines())
            .skip_while(|l| !l.starts_with("Examples:"))
            .filter_map(example_args)
            .collect();
        assert!(examples.len() >= 10, "{examples:?}");
        for args in examples {
            if let Err(e) = Cli::try_parse_from(&args) {
                panic!("{args:?}: {e}");
            }
        }
    }
}
