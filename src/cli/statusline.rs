//! `agentnorm statusline`: the one line Claude Code shows under its prompt.
//!
//! Claude Code runs the `statusLine` command of its settings after each message, with a JSON
//! object on stdin (`session_id`, `transcript_path`, `model.{id,display_name}`,
//! `cost.total_cost_usd`, `context_window`, …), and shows the first line it prints. This prints
//! the model, the session's cost, today's cost, the active 5-hour block's cost and time left,
//! the context used, and the rate-limit headroom, from the same report as `agentnorm usage`.
//! Only logs modified in the last 24 hours (or since the start of today) are read: the older
//! ones hold no request of today or of an active block. Their usage is kept in a cache of its
//! own, `statusline.bin`, with `usage`'s behind it ([`super::cache::UsageCache::open_recent`]).

use std::io::{self, Read as _, Write as _};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use agentnorm::Sink;
use agentnorm::sink::report::{GroupBy, Report, ReportOptions, Row};
use agentnorm::{Event, Options};
use anyhow::{Context as _, Result};
use serde_json::Value;

use super::StatuslineArgs;
use super::input::{self, Input};

/// The last main-thread request's context size (and window, where the log names it).
#[derive(Default)]
struct LastContext {
    context: Option<u64>,
    window: Option<u64>,
}

impl Sink for LastContext {
    fn event(&mut self, ev: &Event) {
        if let Event::Usage { usage, context_window, .. } = ev {
            let env = ev.env();
            if env.parent_tool_id.is_none() && env.sidechain != Some(true) && usage.context.is_some() {
                self.context = usage.context;
                self.window = context_window.or(self.window);
            }
        }
    }
}

pub fn run(args: StatuslineArgs) -> Result<u8> {
    let mut text = String::new();
    // At most 1 MiB: the object is small; a runaway writer is not waited for.
    io::stdin().lock().take(1 << 20).read_to_string(&mut text).context("reading the status JSON on stdin")?;
    let status: Value = serde_json::from_str(text.trim()).unwrap_or(Value::Null);
    let tz = match args.timezone.as_deref() {
        None => jiff::tz::TimeZone::system(),
        Some(name) => jiff::tz::TimeZone::get(name).with_context(|| format!("--timezone {name:?}"))?,
    };
    let now_ms = match args.now.as_deref() {
        Some(s) => agentnorm::sink::report::parse_bound_in(s, false, &tz).with_context(|| format!("--now {s:?}"))?,
        None => SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64),
    };
    let today = jiff::Timestamp::from_millisecond(now_ms)
        .ok()
        .map(|t| t.to_zoned_datetime(tz.clone()).date().to_string())
        .unwrap_or_default();

    // The logs that may hold today's or the active block's requests.
    let paths = if args.paths.is_empty() { super::usage::default_usage_paths() } else { args.paths.clone() };
    let mut failed = false;
    let horizon = {
        let day_start = agentnorm::sink::report::parse_bound_in(&today, false, &tz).unwrap_or(now_ms);
        day_start.min(now_ms - 24 * 3_600_000)
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    // A stat per log is most of a warm run (12,000 logs in a 2 GB home): on every core.
    let all = input::expand(&paths, &mut failed);
    let keep = super::exec::map_inputs(&all, threads, |i| match i {
        Input::File(p) => modified_ms(p).is_none_or(|m| m >= horizon),
        Input::Stdin => false,
    });
    let recent: Vec<Input> = all.into_iter().zip(keep).filter_map(|(i, k)| k.then_some(i)).collect();
    let mut cache = (!args.no_cache).then(super::cache::UsageCache::open_recent);
    let read = super::usage::read_usage(&recent, Default::default(), threads, false, &mut failed, cache.as_mut());
    if let Some(cache) = &mut cache {
        cache.keep_only(&input::files(&recent));
        super::usage::save_cache(cache);
    }
    let mut rep = Report::default();
    super::usage::add_all(read, &recent, Default::default(), &mut rep, &mut failed);
    let opts = |by| ReportOptions { by, tz: Some(tz.clone()), now_ms: Some(now_ms), ..ReportOptions::default() };
    let (days, _) = rep.rows(&opts(GroupBy::Day));
    let (blocks, _) = rep.rows(&opts(GroupBy::Block));

    let mut parts = Vec::new();
    let model = status
        .pointer("/model/display_name")
        .and_then(Value::as_str)
        .or_else(|| status.pointer("/model/id").and_then(Value::as_str))
        .unwrap_or("?");
    parts.push(model.to_owned());
    let session_id = status.get("session_id").and_then(Value::as_str);
    let session_cost =
        status.pointer("/cost/total_cost_usd").and_then(Value::as_f64).map(|c| (c, true)).or_else(|| {
            // Only where Claude Code passed no cost: a session row for each log is work.
            let session_id = session_id?;
            let (sessions, _) = rep.rows(&opts(GroupBy::Session));
            let row = sessions.iter().find(|r| r.session_id.as_deref() == Some(session_id))?;
            Some((row.cost_usd?, false))
        });
    if let Some((c, reported)) = session_cost {
        parts.push(format!("session {}${c:.2}", if reported { "" } else { "~" }));
    }
    let today_row = days.iter().find(|r| r.day.as_deref() == Some(today.as_str()));
    parts.push(format!("today {}", money(today_row)));
    match blocks.iter().find(|r| r.active) {
        Some(b) => {
            let left = b.burn.as_ref().map_or(0, |x| x.minutes_left);
            parts.push(format!("block {} ({}h{:02}m left)", money(Some(b)), left / 60, left % 60));
        }
        None => parts.push("no active block".to_owned()),
    }
    if let Some(ctx) = context(&status) {
        parts.push(ctx);
    }
    if let Some(limits) = headroom(&status, &rep) {
        parts.push(limits);
    }
    let line = agentnorm::sink::safe::printable(&parts.join(" · ")).into_owned();
    let mut out = super::stdout::lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(0)
}

/// `~$1.23`, `$1.23` (reported), `~$1.23*` (partial), `$0.00` when nothing was used.
fn money(row: Option<&Row>) -> String {
    let Some(r) = row else { return "$0.00".to_owned() };
    let reported = r.cost_source == Some(agentnorm::sink::report::CostSource::Reported);
    let partial = if r.cost_partial { "*" } else { "" };
    match r.cost_usd {
        Some(c) => format!("{}${c:.2}{partial}", if reported { "" } else { "~" }),
        None => format!("-{partial}"),
    }
}

/// `ctx 45% (90k/200k)`: the context window's use, from the status JSON where Claude Code gives
/// it, else from the transcript's last main-thread request.
fn context(status: &Value) -> Option<String> {
    let from_status = status.pointer("/context_window/current_usage").and_then(|u| {
        let f = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
        let n = f("input_tokens") + f("cache_read_input_tokens") + f("cache_creation_input_tokens");
        (n > 0).then_some(n)
    });
    let mut last = LastContext::default();
    let used = match from_status {
        Some(n) => n,
        None => {
            let path = PathBuf::from(status.get("transcript_path").and_then(Value::as_str)?);
            last = last_context(&path);
            last.context?
        }
    };
    let model_id = status.pointer("/model/id").and_then(Value::as_str).unwrap_or("");
    let window = status
        .pointer("/context_window/context_window_size")
        .and_then(Value::as_u64)
        .or(last.window)
        .unwrap_or(if model_id.contains("[1m]") { 1_000_000 } else { 200_000 });
    let pct = used as f64 * 100.0 / window.max(1) as f64;
    Some(format!(
        "ctx {pct:.0}% ({}/{})",
        agentnorm::sink::report::short_number(used),
        agentnorm::sink::report::short_number(window)
    ))
}

/// The bytes of a transcript's end read first for its last request's context
/// ([`last_context`]); four times more at each try that finds none.
const TAIL_BYTES: u64 = 256 << 10;

/// The last main-thread request's context in the transcript at `path`, read from its end: its
/// last [`TAIL_BYTES`] from the first line that starts in them, then four times as many, until a
/// request is found or the whole file was read (a transcript of tens of MB is not decoded whole
/// at every message). A file that is not plain text (compressed) is read whole.
fn last_context(path: &std::path::Path) -> LastContext {
    use super::cache::read_at;
    let options = Options::default().observed_at(false);
    let whole = || {
        let mut last = LastContext::default();
        let _ = super::exec::feed_input(&Input::File(path.to_owned()), &options, None, &mut last);
        last
    };
    let Ok(file) = std::fs::File::open(path) else { return whole() };
    let len = file.metadata().map_or(0, |m| m.len());
    if !read_at(&file, 0, len.min(16)).is_ok_and(|head| agentnorm::files::is_plain(&head)) {
        return whole();
    }
    let mut tail = TAIL_BYTES;
    while tail < len {
        let Ok(bytes) = read_at(&file, len - tail, tail) else { return whole() };
        // The first line that starts in the tail (the byte before the tail may end a line: the
        // partial first line is dropped either way, at worst one whole line).
        let start = memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |i| i + 1);
        let mut last = LastContext::default();
        let mut norm = agentnorm::Normalizer::new(options.clone());
        norm.feed(&bytes[start..], &mut last);
        norm.finish(&mut last);
        if last.context.is_some() {
            return last;
        }
        tail = tail.saturating_mul(4);
    }
    whole()
}

/// `5h 20% used, 7d 4% used`: the status JSON's `rate_limits` where Claude Code gives them,
/// else the latest `rate_limit` readings of the logs.
fn headroom(status: &Value, rep: &Report) -> Option<String> {
    let mut out = Vec::new();
    if let Some(obj) = status.get("rate_limits").and_then(Value::as_object) {
        for (name, v) in obj {
            let pct = v
                .get("used_percentage")
                .or_else(|| v.get("used_percent"))
                .and_then(Value::as_f64)
                .or_else(|| v.get("utilization").and_then(Value::as_f64).map(|u| u * 100.0));
            if let Some(p) = pct {
                out.push(format!("{} {p:.0}% used", short_window(name)));
            }
        }
    }
    if out.is_empty() {
        for r in rep.latest_rate_limits() {
            if let Some(p) = r.used_percent {
                out.push(format!("{} {p:.0}% used", short_window(&r.window)));
            }
        }
    }
    (!out.is_empty()).then(|| out.join(", "))
}

fn short_window(name: &str) -> &str {
    match name {
        "five_hour" => "5h",
        "seven_day" => "7d",
        n => n,
    }
}

/// When the log last changed: a database's own time or its write-ahead log's, the later.
fn modified_ms(p: &std::path::Path) -> Option<i64> {
    let ms = |p: &std::path::Path| -> Option<i64> {
        let m = std::fs::metadata(p).ok()?.modified().ok()?;
        Some(m.duration_since(SystemTime::UNIX_EPOCH).unwrap_or(Duration::ZERO).as_millis() as i64)
    };
    let own = ms(p)?;
    Some(agentnorm::files::write_ahead_log(p).and_then(|w| ms(&w)).map_or(own, |w| w.max(own)))
}
