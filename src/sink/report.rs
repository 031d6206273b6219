//! The usage report behind `agentnorm usage` (SPEC §5): deduplicated token totals and costs per
//! session, model or day, across every dialect.
//!
//! People budget on these numbers, so each figure comes from the session's most complete source
//! and is counted once:
//!
//! 1. Each input is normalized on its own; a [`Collector`] (a [`Sink`]) cuts its events into
//!    turns per session: the turn's `usage` events (one per model request) and its end
//!    (`turn_completed` / `turn_failed`). Counters that are running totals are turned into
//!    per-turn deltas here, per input (a process's counter): Codex exec's `usage_scope: "session"`
//!    totals, and Claude's `total_cost_usd`, which is a running total for the process (the
//!    corpus captures `three-turns-one-process` and `manual-compaction` report 0.0103, 0.0200,
//!    0.0297, … while each turn costs about 0.0097). A total lower than the last one starts a new
//!    counter (a new process), and so does a `model_usage` (Claude `result.modelUsage`, per-model
//!    running totals) in which a model of the last one is missing or a counter went down, even
//!    when the total still went up (`three-turns-one-process` line 18: 0.0103 → 0.0123, the
//!    haiku model gone and sonnet's `outputTokens` 4 → 3: the new process's own 0.0123).
//! 2. One [`Report`] folds every input's turns in input order (deterministic whatever the thread
//!    count): a request whose `(session_id, message_id)` was already counted (transcript extracts
//!    copy lines of the full session; a sidechain replays its parent's message) is not counted
//!    again. A turn's figures are its aggregate (`turn_completed.usage`: Claude stream-json,
//!    Gemini, Cursor, OpenCode; the Codex exec delta) or, without one, the sum of its requests
//!    (transcripts, rollouts, legacy Codex); where both exist the larger wins figure by figure
//!    (an interrupted Claude turn reports zeros although its request was billed). Subagent and
//!    sidechain requests (`parent_tool_id`, `sidechain`) are not in Claude's `result.usage`
//!    (`claude-2.1.283-background-agent`: the aggregates equal the main-thread requests), so
//!    they are added to the turn. A turn whose requests were all counted already is a replay
//!    and counts nothing.
//! 3. Costs: what the CLI reported (`cost_source: "reported"`: Claude `total_cost_usd` deltas,
//!    OpenCode per-turn `cost`), else an estimate from [`crate::sink::prices`] by the request's model
//!    (`estimated`); a group that holds tokens of a model the table does not know gets no cost.
//!
//! ```
//! use agentnorm::{Normalizer, Options};
//! use agentnorm::sink::report::{Collector, GroupBy, Report, ReportOptions};
//! let input = br#"{"type":"thread.started","thread_id":"t1"}
//! {"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":4,"output_tokens":3}}
//! {"type":"turn.completed","usage":{"input_tokens":30,"cached_input_tokens":20,"output_tokens":5}}
//! "#;
//! let mut collector = Collector::new(Some("run.jsonl".into()));
//! let mut n = Normalizer::new(Options::default());
//! n.feed(input, &mut collector);
//! n.finish(&mut collector);
//! let mut report = Report::default();
//! report.add(collector.finish());
//! let (rows, totals) = report.rows(&ReportOptions::default());
//! assert_eq!(rows.len(), 1);
//! // The last running total, not the sum of the two.
//! assert_eq!((totals.usage.input, totals.usage.cache_read, totals.usage.output), (Some(10), Some(20), Some(5)));
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};

use serde::Serialize;

use crate::dialect::usage::{self, add};
use crate::event::sink::Sink;
use crate::event::{Dialect, Event, ModelUsage, Usage, UsageScope};
use crate::sink::prices;

/// One model request's usage, as read from a `usage` event.
#[derive(Debug, Clone)]
struct Request {
    message_id: Option<String>,
    model: Option<String>,
    at: Option<String>,
    usage: Usage,
    subagent: bool,
}

/// The end of a turn, with its per-turn figures (running totals already turned into deltas).
#[derive(Debug, Clone)]
struct TurnEnd {
    usage: Option<Usage>,
    cost: Option<f64>,
    at: Option<String>,
}

/// One turn of one session of one input.
#[derive(Debug, Clone)]
struct Turn {
    session: Option<String>,
    dialect: Option<Dialect>,
    /// The session's model when the turn ended (session_started, else the last request's).
    model: Option<String>,
    /// The last time seen in the session up to the turn's end.
    last_at: Option<String>,
    requests: Vec<Request>,
    end: Option<TurnEnd>,
}

#[derive(Debug, Default)]
struct SessionState {
    dialect: Option<Dialect>,
    model: Option<String>,
    last_at: Option<String>,
    open: Option<usize>,
    last_total: Option<Usage>,
    /// Claude's running cost total, read into per-turn costs.
    cost: usage::RunningCost,
}

/// What one input contributed, before the dedupe across inputs: its turns in order.
#[derive(Debug, Clone, Default)]
pub struct InputUsage {
    source: Option<String>,
    turns: Vec<Turn>,
}

/// A [`Sink`] that collects one input's usage by session and turn. Feed it every event of one
/// input (one `Normalizer`), then [`Collector::finish`] it and give the result to a [`Report`].
#[derive(Debug, Default)]
pub struct Collector {
    source: Option<String>,
    sessions: HashMap<Option<String>, SessionState>,
    turns: Vec<Turn>,
}

impl Collector {
    /// A collector for the input named `source` (the file; `None` for stdin).
    pub fn new(source: Option<String>) -> Collector {
        Collector { source, ..Collector::default() }
    }

    /// The collected turns (a turn left open at the end of input is kept as it is).
    pub fn finish(self) -> InputUsage {
        InputUsage { source: self.source, turns: self.turns }
    }

    fn open_turn(&mut self, session: &Option<String>) -> usize {
        let st = self.sessions.entry(session.clone()).or_default();
        if let Some(i) = st.open {
            return i;
        }
        self.turns.push(Turn {
            session: session.clone(),
            dialect: st.dialect,
            model: None,
            last_at: None,
            requests: Vec::new(),
            end: None,
        });
        st.open = Some(self.turns.len() - 1);
        self.turns.len() - 1
    }

    fn end_turn(
        &mut self,
        ev: &Event,
        usage: Option<Usage>,
        scope: Option<UsageScope>,
        cost: Option<f64>,
        models: Option<&BTreeMap<String, ModelUsage>>,
    ) {
        let env = ev.env();
        let i = self.open_turn(&env.session_id);
        let st = self.sessions.entry(env.session_id.clone()).or_default();
        let usage = match (usage, scope) {
            (Some(total), Some(UsageScope::Session)) => {
                let delta = match st.last_total {
                    Some(prev) if usage::covers(&total, &prev) => usage::minus(total, prev),
                    _ => total,
                };
                st.last_total = Some(total);
                Some(delta)
            }
            (u, _) => u,
        };
        // A running total over the turns of one process (Claude's `total_cost_usd`,
        // `cost_scope: session`) gives each turn the difference (usage::RunningCost).
        let cost = if ev.cost_scope() == Some(UsageScope::Session) { st.cost.turn(cost, models) } else { cost };
        st.open = None;
        let (model, last_at) = (st.model.clone(), st.last_at.clone());
        let turn = &mut self.turns[i];
        turn.dialect = turn.dialect.or(env.dialect);
        turn.model = model;
        turn.last_at = last_at;
        turn.end = Some(TurnEnd { usage, cost, at: env.at.clone() });
    }
}

impl Sink for Collector {
    fn event(&mut self, ev: &Event) {
        let env = ev.env();
        {
            let st = self.sessions.entry(env.session_id.clone()).or_default();
            if st.dialect.is_none() {
                st.dialect = env.dialect;
            }
            if env.at.is_some() {
                st.last_at.clone_from(&env.at);
            }
        }
        match ev {
            Event::SessionStarted { model: Some(m), .. } => {
                self.sessions.entry(env.session_id.clone()).or_default().model = Some(m.clone());
            }
            Event::Usage { usage, model, message_id, .. } => {
                let subagent = env.parent_tool_id.is_some() || env.sidechain == Some(true);
                let i = self.open_turn(&env.session_id);
                let st = self.sessions.entry(env.session_id.clone()).or_default();
                if model.is_some() && !subagent {
                    st.model.clone_from(model);
                }
                let (smodel, last_at) = (st.model.clone(), st.last_at.clone());
                let turn = &mut self.turns[i];
                turn.dialect = turn.dialect.or(env.dialect);
                turn.model = smodel;
                turn.last_at = last_at;
                turn.requests.push(Request {
                    message_id: message_id.clone(),
                    model: model.clone(),
                    at: env.at.clone(),
                    usage: Usage { context: None, ..*usage },
                    subagent,
                });
            }
            Event::TurnCompleted { usage, usage_scope, cost_usd, model_usage, .. }
            | Event::TurnFailed { usage, usage_scope, cost_usd, model_usage, .. } => {
                self.end_turn(ev, *usage, *usage_scope, *cost_usd, model_usage.as_ref());
            }
            _ => {}
        }
    }
}

/// Where a part's cost comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cost {
    /// The CLI reported it.
    Reported(f64),
    /// Included in a cost the CLI reported for the turn (a Claude subagent's requests).
    Covered,
    /// Estimated from the price table.
    Estimated(f64),
    /// No tokens, so nothing to pay.
    Free,
    /// Tokens of a model the table does not know.
    Unknown,
}

/// One counted piece of usage, after the dedupe: what rows are made of.
#[derive(Debug, Clone)]
struct Part {
    session: usize,
    model: Option<String>,
    at_ms: Option<i64>,
    usage: Usage,
    requests: Option<u64>,
    cost: Cost,
}

#[derive(Debug, Clone)]
struct SessionInfo {
    id: Option<String>,
    dialect: Option<Dialect>,
    source: Option<String>,
}

/// How rows are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GroupBy {
    /// One row per session (default).
    #[default]
    Session,
    /// One row per model.
    Model,
    /// One row per UTC day.
    Day,
}

/// What to report.
#[derive(Debug, Clone, Default)]
pub struct ReportOptions {
    /// Grouping.
    pub by: GroupBy,
    /// Count only usage at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Count only usage at or before this time (ms since the epoch).
    pub until_ms: Option<i64>,
}

/// Where a row's cost comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// Every part of it was reported by the CLI.
    Reported,
    /// Some or all of it was estimated from the price table.
    Estimated,
}

/// One row of the report (or the totals row). Absent figures were never reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Row {
    /// True on the totals row.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub totals: bool,
    /// The session (with `--by session`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The model (with `--by model`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The UTC day `YYYY-MM-DD` (with `--by day`), `unknown` for usage without a time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub day: Option<String>,
    /// The session's dialect (with `--by session`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Dialect>,
    /// The figures (`context` is never set).
    #[serde(flatten)]
    pub usage: Usage,
    /// `input + cache_read + cache_write + output`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Model requests counted, where the CLI reports per-request usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// Cost in USD, when every part of the row has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// Where the cost comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_source: Option<CostSource>,
    /// The file the session was first read from (with `--by session`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The fold over all inputs: the cross-file dedupe and the counted parts.
#[derive(Debug, Default)]
pub struct Report {
    counted: HashSet<(String, String)>,
    sessions: Vec<SessionInfo>,
    session_index: HashMap<String, usize>,
    parts: Vec<Part>,
}

impl Report {
    /// Folds one input's usage in; call it in input order.
    pub fn add(&mut self, input: InputUsage) {
        let mut anonymous: HashMap<Option<Dialect>, usize> = HashMap::new();
        for turn in input.turns {
            let session = self.session(&turn, &input.source, &mut anonymous);
            self.add_turn(turn, session);
        }
    }

    fn session(
        &mut self,
        turn: &Turn,
        source: &Option<String>,
        anonymous: &mut HashMap<Option<Dialect>, usize>,
    ) -> usize {
        let info = SessionInfo { id: turn.session.clone(), dialect: turn.dialect, source: source.clone() };
        let slot = match &turn.session {
            Some(id) => self.session_index.get(id).copied(),
            None => anonymous.get(&turn.dialect).copied(),
        };
        if let Some(i) = slot {
            if self.sessions[i].dialect.is_none() {
                self.sessions[i].dialect = turn.dialect;
            }
            return i;
        }
        self.sessions.push(info);
        let i = self.sessions.len() - 1;
        match &turn.session {
            Some(id) => {
                self.session_index.insert(id.clone(), i);
            }
            None => {
                anonymous.insert(turn.dialect, i);
            }
        }
        i
    }

    fn add_turn(&mut self, turn: Turn, session: usize) {
        let sid = turn.session.clone().unwrap_or_default();
        let mut had_ids = false;
        let mut fresh = Vec::new();
        for r in turn.requests {
            if let Some(mid) = &r.message_id {
                had_ids = true;
                if !self.counted.insert((sid.clone(), mid.clone())) {
                    continue;
                }
            }
            fresh.push(r);
        }
        let at_of = |at: &Option<String>| at.as_deref().and_then(crate::read::time::parse_rfc3339_ms);
        let Some(end) = turn.end.filter(|e| e.usage.is_some() || e.cost.is_some()) else {
            // No aggregate: the sum of the requests, each its own part.
            for r in fresh {
                let cost = estimate(&r.model, &r.usage);
                self.parts.push(Part {
                    session,
                    model: r.model.or_else(|| turn.model.clone()),
                    at_ms: at_of(&r.at).or_else(|| at_of(&turn.last_at)),
                    usage: r.usage,
                    requests: Some(1),
                    cost,
                });
            }
            return;
        };
        if had_ids && fresh.is_empty() {
            // Every request of the turn was counted already: a replay of a turn seen elsewhere.
            return;
        }
        let (sub, main): (Vec<Request>, Vec<Request>) = fresh.into_iter().partition(|r| r.subagent);
        let main_sum = main.iter().fold(Usage::default(), |a, r| add(a, r.usage));
        let usage = match end.usage {
            Some(agg) => usage::max_each(agg, main_sum),
            None => main_sum,
        };
        let model = main.iter().rev().find_map(|r| r.model.clone()).or_else(|| turn.model.clone());
        let at = at_of(&end.at).or_else(|| main.last().and_then(|r| at_of(&r.at))).or_else(|| at_of(&turn.last_at));
        let cost = match end.cost {
            Some(c) => Cost::Reported(c),
            None => estimate(&model, &usage),
        };
        let reported = matches!(cost, Cost::Reported(_));
        self.parts.push(Part {
            session,
            model,
            at_ms: at,
            usage,
            requests: (!main.is_empty()).then_some(main.len() as u64),
            cost,
        });
        for r in sub {
            let cost = if reported { Cost::Covered } else { estimate(&r.model, &r.usage) };
            self.parts.push(Part {
                session,
                model: r.model.or_else(|| turn.model.clone()),
                at_ms: at_of(&r.at).or(at),
                usage: r.usage,
                requests: Some(1),
                cost,
            });
        }
    }

    /// The rows (sessions in first-seen order, models by name, days ascending) and the totals row.
    pub fn rows(&self, opts: &ReportOptions) -> (Vec<Row>, Row) {
        let mut groups: BTreeMap<(usize, String), Acc> = BTreeMap::new();
        let mut total = Acc::default();
        for part in &self.parts {
            if opts.since_ms.is_some() || opts.until_ms.is_some() {
                let Some(t) = part.at_ms else { continue };
                if opts.since_ms.is_some_and(|s| t < s) || opts.until_ms.is_some_and(|u| t > u) {
                    continue;
                }
            }
            let key = match opts.by {
                GroupBy::Session => (part.session, String::new()),
                // Unknown models sort last.
                GroupBy::Model => part.model.as_ref().map_or((1, String::new()), |m| (0, m.clone())),
                GroupBy::Day => part.at_ms.map_or((1, "unknown".to_owned()), |ms| {
                    (0, crate::read::time::rfc3339_millis(ms)[..10].to_owned())
                }),
            };
            groups.entry(key).or_default().push(part);
            total.push(part);
        }
        let rows = groups
            .into_iter()
            .map(|((i, name), acc)| {
                let mut row = acc.row();
                match opts.by {
                    GroupBy::Session => {
                        let s = &self.sessions[i];
                        row.session_id.clone_from(&s.id);
                        row.dialect = s.dialect;
                        row.source.clone_from(&s.source);
                    }
                    GroupBy::Model => row.model = (i == 0).then_some(name),
                    GroupBy::Day => row.day = Some(name),
                }
                row
            })
            .collect();
        let mut totals = total.row();
        totals.totals = true;
        (rows, totals)
    }
}

fn estimate(model: &Option<String>, u: &Usage) -> Cost {
    let (i, r, w, o) =
        (u.input.unwrap_or(0), u.cache_read.unwrap_or(0), u.cache_write.unwrap_or(0), u.output.unwrap_or(0));
    if i == 0 && r == 0 && w == 0 && o == 0 {
        return Cost::Free;
    }
    match model.as_deref().and_then(prices::price) {
        Some(p) => Cost::Estimated(prices::cost(p, i, r, w, o)),
        None => Cost::Unknown,
    }
}

#[derive(Debug, Default)]
struct Acc {
    usage: Usage,
    requests: Option<u64>,
    cost: f64,
    unknown: bool,
    estimated: bool,
    reported: bool,
}

impl Acc {
    fn push(&mut self, p: &Part) {
        self.usage = add(self.usage, p.usage);
        if let Some(n) = p.requests {
            self.requests = Some(self.requests.unwrap_or(0) + n);
        }
        match p.cost {
            Cost::Reported(c) => {
                self.cost += c;
                self.reported = true;
            }
            Cost::Covered => self.reported = true,
            Cost::Estimated(c) => {
                self.cost += c;
                self.estimated = true;
            }
            Cost::Free => {}
            Cost::Unknown => self.unknown = true,
        }
    }

    fn row(&self) -> Row {
        let u = self.usage;
        let parts = [u.input, u.cache_read, u.cache_write, u.output];
        let total = parts.iter().any(Option::is_some).then(|| parts.iter().map(|x| x.unwrap_or(0)).sum());
        let source = if self.unknown {
            None
        } else if self.estimated {
            Some(CostSource::Estimated)
        } else if self.reported {
            Some(CostSource::Reported)
        } else if total.is_some() {
            // Only zero-token parts: nothing to pay, by the table.
            Some(CostSource::Estimated)
        } else {
            None
        };
        Row {
            usage: Usage { context: None, ..u },
            total,
            requests: self.requests,
            cost_usd: source.map(|_| (self.cost * 1e6).round() / 1e6),
            cost_source: source,
            ..Row::default()
        }
    }
}

/// Parses a `--since` / `--until` bound: RFC 3339, or `YYYY-MM-DD` (UTC; the day's start, or
/// with `end_of_day` its last millisecond).
pub fn parse_bound(s: &str, end_of_day: bool) -> Option<i64> {
    if let Some(ms) = crate::read::time::parse_rfc3339_ms(s) {
        return Some(ms);
    }
    if s.len() == 10 {
        let start = crate::read::time::parse_rfc3339_ms(&format!("{s}T00:00:00Z"))?;
        return Some(if end_of_day { start + 86_400_000 - 1 } else { start });
    }
    None
}

/// Writes the rows and the totals row as NDJSON, one object per row.
pub fn write_json(w: &mut impl Write, rows: &[Row], totals: &Row) -> io::Result<()> {
    for row in rows.iter().chain(std::iter::once(totals)) {
        serde_json::to_writer(&mut *w, row)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

const COLUMNS: [&str; 9] =
    ["input", "cache_read", "cache_write", "output", "reasoning", "total", "requests", "cost_usd", "cost_source"];

fn key_columns(by: GroupBy) -> &'static [&'static str] {
    match by {
        GroupBy::Session => &["session_id", "dialect"],
        GroupBy::Model => &["model"],
        GroupBy::Day => &["day"],
    }
}

fn numbers(row: &Row) -> [Option<u64>; 7] {
    let u = row.usage;
    [u.input, u.cache_read, u.cache_write, u.output, u.reasoning, row.total, row.requests]
}

fn cost_source(row: &Row) -> &'static str {
    match row.cost_source {
        Some(CostSource::Reported) => "reported",
        Some(CostSource::Estimated) => "estimated",
        None => "",
    }
}

/// Writes the rows and the totals row as CSV (RFC 4180 quoting; absent cells empty; the last
/// column `totals` is `true` on the totals row).
pub fn write_csv(w: &mut impl Write, by: GroupBy, rows: &[Row], totals: &Row) -> io::Result<()> {
    let mut header: Vec<&str> = key_columns(by).to_vec();
    header.extend(COLUMNS);
    if by == GroupBy::Session {
        header.push("source");
    }
    header.push("totals");
    writeln!(w, "{}", header.join(","))?;
    for row in rows.iter().chain(std::iter::once(totals)) {
        let mut cells: Vec<String> = keys(by, row).into_iter().map(|k| csv_cell(&k.unwrap_or_default())).collect();
        cells.extend(numbers(row).iter().map(|n| n.map(|n| n.to_string()).unwrap_or_default()));
        cells.push(row.cost_usd.map(|c| format!("{c}")).unwrap_or_default());
        cells.push(cost_source(row).to_owned());
        if by == GroupBy::Session {
            cells.push(csv_cell(row.source.as_deref().unwrap_or("")));
        }
        cells.push(if row.totals { "true".into() } else { String::new() });
        writeln!(w, "{}", cells.join(","))?;
    }
    Ok(())
}

fn keys(by: GroupBy, row: &Row) -> Vec<Option<String>> {
    match by {
        GroupBy::Session => vec![row.session_id.clone(), row.dialect.map(|d| d.as_str().to_owned())],
        GroupBy::Model => vec![row.model.clone()],
        GroupBy::Day => vec![row.day.clone()],
    }
}

fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_owned() }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Writes the rows and the totals row as an aligned table: numbers with thousands separators,
/// `-` where a figure was never reported, costs as `$0.0123` (reported) or `~$0.0123`
/// (estimated).
pub fn write_table(w: &mut impl Write, by: GroupBy, rows: &[Row], totals: &Row) -> io::Result<()> {
    let mut header: Vec<String> = key_columns(by).iter().map(|s| s.to_uppercase()).collect();
    header.extend(
        ["INPUT", "CACHE_READ", "CACHE_WRITE", "OUTPUT", "REASONING", "TOTAL", "REQUESTS", "COST"].map(String::from),
    );
    if by == GroupBy::Session {
        header.push("SOURCE".into());
    }
    let nkeys = key_columns(by).len();
    let mut lines = vec![header];
    for row in rows.iter().chain(std::iter::once(totals)) {
        let mut cells: Vec<String> = if row.totals {
            let mut k = vec!["TOTAL".to_owned()];
            k.resize(nkeys, String::new());
            k
        } else {
            keys(by, row).into_iter().map(|k| k.unwrap_or_else(|| "-".into())).collect()
        };
        cells.extend(numbers(row).iter().map(|n| n.map_or_else(|| "-".into(), thousands)));
        cells.push(match (row.cost_usd, row.cost_source) {
            (Some(c), Some(CostSource::Reported)) => format!("${c:.4}"),
            (Some(c), _) => format!("~${c:.4}"),
            (None, _) => "-".into(),
        });
        if by == GroupBy::Session {
            cells.push(if row.totals { String::new() } else { row.source.clone().unwrap_or_else(|| "-".into()) });
        }
        // Session ids, models and paths come from the agent's files: shown, never obeyed.
        lines.push(cells.into_iter().map(|c| crate::sink::safe::printable(&c).into_owned()).collect());
    }
    let ncols = lines[0].len();
    let widths: Vec<usize> =
        (0..ncols).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
    let last = ncols - 1;
    for line in &lines {
        let mut out = String::new();
        for (c, cell) in line.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            // Keys and the source left-aligned, figures right-aligned.
            let left = c < nkeys || (by == GroupBy::Session && c == last);
            if c > 0 {
                out.push_str("  ");
            }
            if left {
                out.push_str(cell);
                if c != last {
                    out.extend(std::iter::repeat_n(' ', pad));
                }
            } else {
                out.extend(std::iter::repeat_n(' ', pad));
                out.push_str(cell);
            }
        }
        writeln!(w, "{}", out.trim_end())?;
    }
    Ok(())
}
