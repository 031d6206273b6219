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
//!    OpenCode per-turn `cost`), else an estimate from [`crate::prices`] by the request's model
//!    (`estimated`); a group that holds tokens of a model the table does not know gets no cost.
//!
//! ```
//! use agentnorm::{Normalizer, Options};
//! use agentnorm::report::{Collector, GroupBy, Report, ReportOptions};
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

use crate::event::{Dialect, Event, ModelUsage, Usage, UsageScope};
use crate::prices;
use crate::sink::Sink;
use crate::usage::{self, add};

/// One model request's usage, as read from a `usage` event.
#[derive(Debug, Clone)]
struct Request {
    message_id: Option<String>,
    model: Option<String>,
    at: Option<String>,
    /// The time of the request's first line (the `usage` event's `at` is its last line's).
    first_at: Option<String>,
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
    /// The time of the first model-side event (text, reasoning, tool call) since the last
    /// request, main thread and subagents apart: the first line of the next request.
    pending_first_at: [Option<String>; 2],
}

/// What one input contributed, before the dedupe across inputs: its turns in order.
#[derive(Debug, Clone, Default)]
pub struct InputUsage {
    source: Option<String>,
    turns: Vec<Turn>,
}

impl InputUsage {
    /// The earliest and latest times of its requests and turns (ms since the epoch).
    pub fn span_ms(&self) -> Option<(i64, i64)> {
        let parse = |at: &Option<String>| at.as_deref().and_then(crate::time::parse_rfc3339_ms);
        self.turns
            .iter()
            .flat_map(|t| {
                t.requests
                    .iter()
                    .flat_map(|r| [parse(&r.first_at), parse(&r.at)])
                    .chain(std::iter::once(t.end.as_ref().and_then(|e| parse(&e.at))))
            })
            .flatten()
            .fold(None, |acc: Option<(i64, i64)>, t| Some(acc.map_or((t, t), |(a, b)| (a.min(t), b.max(t)))))
    }
}

/// Puts inputs in the order the report counts them: by when each started, then by when it
/// ended (a fork or a resumed session starts with its parent's copied lines and goes on after
/// it), stable (input order among equals, as for an archived copy), so that a request repeated
/// in several logs counts for the session that made it first, whatever the paths are called.
pub fn by_first_time(inputs: &mut [InputUsage]) {
    inputs.sort_by_cached_key(|i| i.span_ms().unwrap_or((i64::MAX, i64::MAX)));
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
    pub fn finish(mut self) -> InputUsage {
        // A turn whose usage came before any model was named (a Codex `token_count` before the
        // rollout's `turn_context`) takes the model the session names next, else its last one.
        let mut next: HashMap<Option<String>, Option<String>> = HashMap::new();
        for turn in self.turns.iter_mut().rev() {
            let known = next
                .entry(turn.session.clone())
                .or_insert_with(|| self.sessions.get(&turn.session).and_then(|st| st.model.clone()));
            match &turn.model {
                Some(m) => *known = Some(m.clone()),
                None => turn.model.clone_from(known),
            }
        }
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
        let claude = st.dialect == Some(Dialect::Claude) || env.dialect == Some(Dialect::Claude);
        // Claude's total_cost_usd is the process's running total (usage::RunningCost).
        let cost = if claude { st.cost.turn(cost, models) } else { cost };
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
        let subagent = env.parent_tool_id.is_some() || env.sidechain == Some(true);
        if matches!(ev, Event::OutputDelta { .. } | Event::Reasoning { .. } | Event::ToolStarted { .. })
            && env.at.is_some()
        {
            let st = self.sessions.entry(env.session_id.clone()).or_default();
            let slot = &mut st.pending_first_at[usize::from(subagent)];
            if slot.is_none() {
                slot.clone_from(&env.at);
            }
        }
        match ev {
            Event::SessionStarted { model: Some(m), .. } => {
                self.sessions.entry(env.session_id.clone()).or_default().model = Some(m.clone());
            }
            Event::Usage { usage, model, message_id, .. } => {
                let i = self.open_turn(&env.session_id);
                let st = self.sessions.entry(env.session_id.clone()).or_default();
                let first_at = st.pending_first_at[usize::from(subagent)].take();
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
                    first_at,
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
    /// Cost in USD of the row's priced parts (all of it unless `cost_partial`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// True when part of the row's tokens are of models without a price: `cost_usd` is then
    /// the priced part only, and `unpriced` names the others with their tokens.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub cost_partial: bool,
    /// The models without a price and their tokens (`model` absent where none was named).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<Unpriced>,
    /// Where the cost comes from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_source: Option<CostSource>,
    /// The file the session was first read from (with `--by session`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// Tokens of a model the price table does not know (a row's `unpriced`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Unpriced {
    /// The model, when one was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The figures.
    #[serde(flatten)]
    pub usage: Usage,
    /// `input + cache_read + cache_write + output`.
    pub total: u64,
}

/// The fold over all inputs: the cross-file dedupe and the counted parts.
#[derive(Debug, Default)]
pub struct Report {
    /// Ignore the costs the CLIs reported: estimate every request from the price table.
    estimate_only: bool,
    counted: HashSet<(String, String)>,
    sessions: Vec<SessionInfo>,
    session_index: HashMap<String, usize>,
    parts: Vec<Part>,
}

impl Report {
    /// A report that estimates every cost from the price table, ignoring what the CLIs reported
    /// (`usage --estimate`: what the usage would cost at list prices; checks the table).
    pub fn estimating() -> Report {
        Report { estimate_only: true, ..Report::default() }
    }

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
        let claude = matches!(turn.dialect, Some(Dialect::Claude | Dialect::ClaudeTranscript));
        let mut had_ids = false;
        let mut fresh = Vec::new();
        for r in turn.requests {
            let key = match (&r.message_id, &r.at) {
                // Claude message ids are the API's, unique across sessions: a session forked or
                // resumed into a new file repeats its parent's messages under a new session id.
                (Some(mid), _) if claude => Some((String::new(), mid.clone())),
                (Some(mid), _) => Some((sid.clone(), mid.clone())),
                // No id (Codex rollouts): a copy of the same log (`archived_sessions`) repeats
                // the same line at the same time with the same figures.
                (None, Some(at)) if turn.session.is_some() => Some((sid.clone(), figures_key(at, &r.usage))),
                (None, _) => None,
            };
            if let Some(key) = key {
                had_ids = true;
                if !self.counted.insert(key) {
                    continue;
                }
            }
            fresh.push(r);
        }
        // A turn with an aggregate and no requests (Codex exec): the same end, at the same
        // time with the same figures, is a copy.
        if fresh.is_empty()
            && !had_ids
            && turn.session.is_some()
            && let Some(end) = &turn.end
            && let (Some(at), Some(u)) = (&end.at, &end.usage)
            && !self.counted.insert((sid.clone(), format!("turn {}", figures_key(at, u))))
        {
            return;
        }
        let at_of = |at: &Option<String>| at.as_deref().and_then(crate::time::parse_rfc3339_ms);
        let Some(end) = turn.end.filter(|e| e.usage.is_some() || e.cost.is_some()) else {
            // No aggregate: the sum of the requests, each its own part.
            for r in fresh {
                let at_ms = request_ms(&r);
                let model = r.model.or_else(|| turn.model.clone());
                let cost = estimate(&model, &r.usage);
                self.parts.push(Part {
                    session,
                    model,
                    at_ms: at_ms.or_else(|| at_of(&turn.last_at)),
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
        let reported_cost = if self.estimate_only { None } else { end.cost };
        if reported_cost.is_none() && main.iter().any(|r| r.model.is_some()) {
            // Nothing reported: each request priced and grouped by its own model (a Gemini result
            // names several), and what the aggregate holds beyond them by the session's model.
            let rest = usage::minus(usage, main_sum);
            for r in main {
                let at_ms = request_ms(&r);
                let m = r.model.or_else(|| turn.model.clone());
                let cost = estimate(&m, &r.usage);
                self.parts.push(Part {
                    session,
                    model: m,
                    at_ms: at_ms.or(at),
                    usage: r.usage,
                    requests: Some(1),
                    cost,
                });
            }
            if has_tokens(&rest) {
                let cost = estimate_with(&model, &rest, false);
                self.parts.push(Part { session, model, at_ms: at, usage: rest, requests: None, cost });
            }
        } else {
            let cost = match reported_cost {
                Some(c) => Cost::Reported(c),
                None => estimate_with(&model, &usage, main.len() == 1 && end.usage.is_none()),
            };
            self.parts.push(Part {
                session,
                model,
                at_ms: at,
                usage,
                requests: (!main.is_empty()).then_some(main.len() as u64),
                cost,
            });
        }
        let reported = reported_cost.is_some();
        for r in sub {
            let at_ms = request_ms(&r);
            let model = r.model.or_else(|| turn.model.clone());
            let cost = if reported { Cost::Covered } else { estimate(&model, &r.usage) };
            self.parts.push(Part { session, model, at_ms: at_ms.or(at), usage: r.usage, requests: Some(1), cost });
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
                GroupBy::Day => part
                    .at_ms
                    .map_or((1, "unknown".to_owned()), |ms| (0, crate::time::rfc3339_millis(ms)[..10].to_owned())),
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

/// When a request was made: its first line's time (ccusage dates requests so too), where that
/// is at most an hour before its last line's; else its last line's.
fn request_ms(r: &Request) -> Option<i64> {
    let parse = |at: &Option<String>| at.as_deref().and_then(crate::time::parse_rfc3339_ms);
    let last = parse(&r.at);
    match (parse(&r.first_at), last) {
        (Some(f), Some(l)) if f <= l && l - f <= 3_600_000 => Some(f),
        _ => last,
    }
}

/// A request's identity where the log gives it no id: its time and figures.
fn figures_key(at: &str, u: &Usage) -> String {
    format!("{at} {:?} {:?} {:?} {:?} {:?}", u.input, u.cache_read, u.cache_write, u.output, u.reasoning)
}

/// Whether any figure of `u` is above zero.
fn has_tokens(u: &Usage) -> bool {
    [u.input, u.cache_read, u.cache_write, u.output].iter().any(|x| x.unwrap_or(0) > 0)
}

/// The estimated cost of `u` by `model`'s price; `per_request` when `u` is one request's
/// (only then can the long-context tier apply).
fn estimate_with(model: &Option<String>, u: &Usage, per_request: bool) -> Cost {
    if !has_tokens(u) {
        return Cost::Free;
    }
    match model.as_deref().and_then(|m| prices::table().entry(m)) {
        Some(e) => Cost::Estimated(e.cost(u, per_request)),
        None => Cost::Unknown,
    }
}

/// One request's estimated cost.
fn estimate(model: &Option<String>, u: &Usage) -> Cost {
    estimate_with(model, u, true)
}

#[derive(Debug, Default)]
struct Acc {
    usage: Usage,
    requests: Option<u64>,
    cost: f64,
    /// Tokens without a price, by model (`None`: no model named).
    unknown: BTreeMap<Option<String>, Usage>,
    priced: bool,
    estimated: bool,
    reported: bool,
}

impl Acc {
    fn push(&mut self, p: &Part) {
        self.usage = add(self.usage, p.usage);
        if let Some(n) = p.requests {
            self.requests = Some(self.requests.unwrap_or(0).saturating_add(n));
        }
        match p.cost {
            Cost::Reported(c) => {
                self.cost += c;
                self.reported = true;
                self.priced = true;
            }
            Cost::Covered => self.reported = true,
            Cost::Estimated(c) => {
                self.cost += c;
                self.estimated = true;
                self.priced = true;
            }
            Cost::Free => {}
            Cost::Unknown => {
                let u = self.unknown.entry(p.model.clone()).or_default();
                *u = add(*u, Usage { context: None, service_tier: None, ..p.usage });
            }
        }
    }

    fn row(&self) -> Row {
        let u = self.usage;
        let parts = [u.input, u.cache_read, u.cache_write, u.output];
        let total =
            parts.iter().any(Option::is_some).then(|| parts.iter().fold(0u64, |a, x| a.saturating_add(x.unwrap_or(0))));
        let source = if !self.unknown.is_empty() && !self.priced {
            None
        } else if self.estimated || !self.unknown.is_empty() {
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
            usage: Usage { context: None, service_tier: None, ..u },
            total,
            requests: self.requests,
            cost_usd: source.map(|_| (self.cost * 1e6).round() / 1e6),
            cost_source: source,
            cost_partial: !self.unknown.is_empty(),
            unpriced: self
                .unknown
                .iter()
                .map(|(m, u)| Unpriced {
                    model: m.clone(),
                    usage: *u,
                    total: [u.input, u.cache_read, u.cache_write, u.output]
                        .iter()
                        .fold(0u64, |a, x| a.saturating_add(x.unwrap_or(0))),
                })
                .collect(),
            ..Row::default()
        }
    }
}

/// Parses a `--since` / `--until` bound: RFC 3339, or `YYYY-MM-DD` (UTC; the day's start, or
/// with `end_of_day` its last millisecond).
pub fn parse_bound(s: &str, end_of_day: bool) -> Option<i64> {
    if let Some(ms) = crate::time::parse_rfc3339_ms(s) {
        return Some(ms);
    }
    if s.len() == 10 {
        let start = crate::time::parse_rfc3339_ms(&format!("{s}T00:00:00Z"))?;
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
    header.extend(["cost_partial", "unpriced"]);
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
        cells.push(if row.cost_partial { "true".into() } else { String::new() });
        cells.push(csv_cell(&unpriced_list(row)));
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

/// A CSV cell: RFC 4180 quoting, and text a spreadsheet would run as a formula (a cell starting
/// with `=`, `+`, `-`, `@`, a tab or a carriage return, OWASP's CSV-injection list) gets a
/// leading `'` so that it stays text. Session ids, models and paths come from the agent's files.
fn csv_cell(s: &str) -> String {
    let s = if s.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{s}") } else { s.to_owned() };
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s }
}

/// `model (N tokens); …` of a row's unpriced models.
fn unpriced_list(row: &Row) -> String {
    row.unpriced
        .iter()
        .map(|u| format!("{} ({} tokens)", u.model.as_deref().unwrap_or("no model named"), thousands(u.total)))
        .collect::<Vec<_>>()
        .join("; ")
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
        let mut c = match (row.cost_usd, row.cost_source) {
            (Some(c), Some(CostSource::Reported)) => format!("${c:.4}"),
            (Some(c), _) => format!("~${c:.4}"),
            (None, _) => "-".into(),
        };
        if row.cost_partial {
            // Partial: the priced part only (the footnote names the rest).
            c.push('*');
        }
        cells.push(c);
        if by == GroupBy::Session {
            cells.push(if row.totals { String::new() } else { row.source.clone().unwrap_or_else(|| "-".into()) });
        }
        // Session ids, models and paths come from the agent's files: shown, never obeyed.
        lines.push(cells.into_iter().map(|c| crate::safe::printable(&c).into_owned()).collect());
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
    if totals.cost_partial {
        let list = crate::safe::printable(&unpriced_list(totals)).into_owned();
        writeln!(w, "* partial cost: no price for {list}; add them with --prices FILE")?;
    }
    Ok(())
}
