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

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use std::io::{self, Write};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;

use crate::dialect::usage::{self, add};
use crate::event::sink::{Sink, Skim};
use crate::event::{Dialect, Event, ModelUsage, Usage, UsageScope};
use crate::sink::prices;

mod seen;
mod wire;
pub use wire::WireError;

/// One model request's usage, as read from a `usage` event. Kept compact (no strings of its
/// own: every input's requests are held until the inputs are put in order): the ids and times
/// the dedupe compares are kept as 64-bit hashes ([`h64`]), the times the rows need as ms.
#[derive(Debug, Clone)]
struct Request {
    /// The hash of the message id.
    message_id: Option<u64>,
    model: Option<Arc<str>>,
    /// The `usage` event's time (its last line's), in ms.
    at_ms: Option<i64>,
    /// The hash of that time as written (the identity of a request without an id).
    at_key: Option<u64>,
    /// The time of the request's first line, in ms.
    first_ms: Option<i64>,
    usage: Usage,
    subagent: bool,
}

/// The end of a turn, with its per-turn figures (running totals already turned into deltas).
#[derive(Debug, Clone)]
struct TurnEnd {
    usage: Option<Usage>,
    cost: Option<f64>,
    at_ms: Option<i64>,
    /// The hash of the end's time as written.
    at_key: Option<u64>,
}

/// One turn of one session of one input.
#[derive(Debug, Clone)]
struct Turn {
    session: Option<Arc<str>>,
    dialect: Option<Dialect>,
    /// The session's model when the turn ended (session_started, else the last request's).
    model: Option<Arc<str>>,
    /// The last time seen in the session up to the turn's end, in ms.
    last_ms: Option<i64>,
    /// The session's working folder, when named (the project).
    cwd: Option<Arc<str>>,
    requests: Vec<Request>,
    end: Option<TurnEnd>,
}

/// A 64-bit hash of `v`, the same in every run (the dedupe keeps these, not the ids).
fn h64(v: impl Hash) -> u64 {
    use std::hash::BuildHasher as _;
    foldhash::quality::FixedState::with_seed(0).hash_one(v)
}

/// How many requests ahead of the one counted the slot of an identity is asked for.
const PREFETCH_AHEAD: usize = 16;

/// The identity a request of `turn` is counted once by, across all inputs (`None`: counted
/// wherever it is).
fn request_key(turn: &Turn, r: &Request) -> Option<u64> {
    let sid = turn.session.as_deref().unwrap_or_default();
    let claude = matches!(turn.dialect, Some(Dialect::Claude | Dialect::ClaudeTranscript));
    match (r.message_id, r.at_key) {
        // Claude message ids are the API's, unique across sessions: a session forked or
        // resumed into a new file repeats its parent's messages under a new session id.
        (Some(mid), _) if claude => Some(h64((0u8, mid))),
        // A pi entry id is unique in its file only; a forked session copies its parent's
        // entries, ids and times as they were, into a file of a new session.
        (Some(mid), Some(at)) if turn.dialect == Some(Dialect::Pi) => Some(h64((4u8, mid, at))),
        (Some(mid), _) => Some(h64((1u8, sid, mid))),
        // No id (Codex rollouts): a copy of the same log (`archived_sessions`) repeats the same
        // line at the same time with the same figures.
        (None, Some(at)) if turn.session.is_some() => Some(h64((2u8, sid, figures_key(at, &r.usage)))),
        (None, _) => None,
    }
}

/// `at` in ms (`None` where absent or not RFC 3339).
fn ms_of(at: &Option<String>) -> Option<i64> {
    at.as_deref().and_then(crate::read::time::parse_rfc3339_ms)
}

#[derive(Debug, Default)]
struct SessionState {
    /// The session id, shared by its turns.
    id: Option<Arc<str>>,
    dialect: Option<Dialect>,
    model: Option<Arc<str>>,
    cwd: Option<Arc<str>>,
    last_at: Option<String>,
    open: Option<usize>,
    last_total: Option<Usage>,
    /// Claude's running cost total, read into per-turn costs.
    cost: usage::RunningCost,
    /// The time of the first model-side event (text, reasoning, tool call) since the last
    /// request, main thread and subagents apart: the first line of the next request.
    pending_first_at: [Option<String>; 2],
    /// Started in the part of the log read before ([`Collector::waiting_from`]): a
    /// `session_started` of it here is the start a reading of the whole log would not have
    /// written again (its folder may be another one, named by the line the part starts at).
    seeded: bool,
}

/// What one input contributed, before the dedupe across inputs: its turns in order.
#[derive(Debug, Clone, Default)]
pub struct InputUsage {
    source: Option<String>,
    /// The input's place in the order the inputs were given.
    order: usize,
    turns: Vec<Turn>,
    /// The latest reading of each window ([`keep_latest`]).
    rate_limits: Vec<RateReading>,
    /// Every session of the input as it stands at its end: the first times still waiting for
    /// the request they date (main thread, subagents) and the working folder it started with.
    /// What a reading of the rest of the same log on its own starts from
    /// ([`Collector::waiting_from`]).
    waiting: Vec<Waiting>,
}

/// A session at the end of an input: its id, its first times waiting for their requests
/// ([`SessionState::pending_first_at`]), and its working folder ([`SessionState::cwd`]).
type Waiting = (Option<Arc<str>>, [Option<String>; 2], Option<Arc<str>>);

impl InputUsage {
    /// Sets the input's place in the order the inputs were given: a session's `source` is the
    /// first of its files in that order, whatever order they are counted in.
    pub fn set_order(&mut self, order: usize) {
        self.order = order;
    }

    /// `later`, what the rest of the same input gave when read on its own (a log read in
    /// pieces), appended: its turns after these, its rate-limit readings kept where later.
    pub fn append(&mut self, later: InputUsage) {
        self.turns.extend(later.turns);
        for r in later.rate_limits {
            keep_latest(&mut self.rate_limits, r);
        }
        // `later` was read from what this left waiting ([`Collector::waiting_from`]).
        self.waiting = later.waiting;
    }

    /// The input as bytes, for a cache of inputs already read (`agentnorm usage` keeps one per
    /// log file): [`InputUsage::from_bytes`] gives the same input back (the name of the input
    /// is not kept: it is given again there).
    pub fn to_bytes(&self) -> Vec<u8> {
        wire::encode(self)
    }

    /// The input that [`InputUsage::to_bytes`] wrote, named `source`, at place 0 among the
    /// inputs; an error for bytes it did not write (another version's, or damaged).
    pub fn from_bytes(bytes: &[u8], source: Option<String>) -> Result<InputUsage, WireError> {
        wire::decode(bytes, source)
    }

    /// [`InputUsage::from_bytes`] without the turns, which are not decoded: the rate-limit
    /// readings, and what the input left waiting ([`Collector::waiting_from`]). What a reading
    /// of the rest of the same log starts from, when the whole is not needed.
    pub fn head_from_bytes(bytes: &[u8], source: Option<String>) -> Result<InputUsage, WireError> {
        wire::decode_head(bytes, source)
    }

    /// The earliest and latest times of its requests and turns (ms since the epoch).
    pub fn span_ms(&self) -> Option<(i64, i64)> {
        self.turns
            .iter()
            .flat_map(|t| {
                t.requests
                    .iter()
                    .flat_map(|r| [r.first_ms, r.at_ms])
                    .chain(std::iter::once(t.end.as_ref().and_then(|e| e.at_ms)))
            })
            .flatten()
            .fold(None, |acc: Option<(i64, i64)>, t| Some(acc.map_or((t, t), |(a, b)| (a.min(t), b.max(t)))))
    }
}

/// The saved sessions `agentnorm usage` reads when given no path, those that exist: Claude
/// Code's `projects` folder of every `$CLAUDE_CONFIG_DIR` entry (comma-separated; each a config
/// folder or its `projects`), else `~/.config/claude/projects` and `~/.claude/projects`; Codex's
/// `sessions` and `archived_sessions` of `$CODEX_HOME`, else of `~/.codex` (archived copies are
/// counted once by the report's dedupe); Gemini CLI's `~/.gemini/tmp` (its `chats` folders);
/// OpenCode's `storage/message` folder (up to 1.1) and `opencode.db` (from 1.2) in
/// `$XDG_DATA_HOME/opencode`, else `~/.local/share/opencode`; pi's `sessions` folder in
/// `$PI_CODING_AGENT_DIR`, else in `~/.pi/agent`. Folders, and that one file.
pub fn default_log_folders() -> Vec<std::path::PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let vars = LogVars {
        home: env("HOME").map(Into::into),
        claude_config: env("CLAUDE_CONFIG_DIR"),
        codex_home: env("CODEX_HOME"),
        xdg_data_home: env("XDG_DATA_HOME").map(Into::into),
        pi_agent_dir: env("PI_CODING_AGENT_DIR").map(Into::into),
    };
    log_folders(vars).into_iter().filter(|p| p.exists()).collect()
}

/// The environment [`default_log_folders`] reads.
struct LogVars {
    home: Option<std::path::PathBuf>,
    claude_config: Option<std::ffi::OsString>,
    codex_home: Option<std::ffi::OsString>,
    xdg_data_home: Option<std::path::PathBuf>,
    pi_agent_dir: Option<std::path::PathBuf>,
}

/// Where [`default_log_folders`] looks, for a message saying none was found.
pub const DEFAULT_LOG_PLACES: &str = "~/.claude/projects, ~/.config/claude/projects, $CLAUDE_CONFIG_DIR, ~/.codex/sessions, \
     ~/.codex/archived_sessions, $CODEX_HOME, ~/.gemini/tmp, $XDG_DATA_HOME/opencode or ~/.local/share/opencode, $PI_CODING_AGENT_DIR/sessions or \
     ~/.pi/agent/sessions";

/// [`default_log_folders`] of these variables, existing or not.
fn log_folders(vars: LogVars) -> Vec<std::path::PathBuf> {
    use std::path::PathBuf;
    let LogVars { home, claude_config, codex_home, xdg_data_home, pi_agent_dir } = vars;
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
    if let Some(h) = &home {
        out.push(h.join(".gemini/tmp"));
    }
    if let Some(data) = xdg_data_home.or_else(|| home.as_ref().map(|h| h.join(".local/share"))) {
        let opencode = data.join("opencode");
        out.push(opencode.join("storage/message"));
        out.push(opencode.join("opencode.db"));
    }
    if let Some(pi) = pi_agent_dir.or_else(|| home.as_ref().map(|h| h.join(".pi/agent"))) {
        out.push(pi.join("sessions"));
    }
    out.dedup();
    out
}

/// Puts inputs in the order the report counts them: by when each started, then by when it
/// ended (a fork or a resumed session starts with its parent's copied lines and goes on after
/// it), stable (input order among equals, as for an archived copy), so that a request repeated
/// in several logs counts for the session that made it first, whatever the paths are called.
pub fn by_first_time(inputs: &mut [InputUsage]) {
    inputs.sort_by_cached_key(|i| first_time_key(i.span_ms()));
}

/// The key [`by_first_time`] sorts by, of an input's [`span_ms`](InputUsage::span_ms): inputs
/// without a time last.
pub fn first_time_key(span: Option<(i64, i64)>) -> (i64, i64) {
    span.unwrap_or((i64::MAX, i64::MAX))
}

/// A [`Sink`] that collects one input's usage by session and turn. Feed it every event of one
/// input (one `Normalizer`), then [`Collector::finish`] it and give the result to a [`Report`].
#[derive(Debug, Default)]
pub struct Collector {
    source: Option<String>,
    /// The sessions seen, in first-seen order, found by id through `session_index`; `last` is
    /// the one the last event was of (almost every event is of the same session as the one
    /// before, and comparing its id is cheaper than hashing it).
    sessions: Vec<SessionState>,
    session_index: foldhash::HashMap<Option<String>, usize>,
    last: usize,
    turns: Vec<Turn>,
    /// The latest reading of each window ([`keep_latest`]).
    rate_limits: Vec<RateReading>,
    /// The model names and working folders seen, each held once.
    names: foldhash::HashSet<Arc<str>>,
    /// A request's first line (text, reasoning or a tool call) was seen since the last usage:
    /// until the next usage, the lines that carry only conversation are not needed ([`Sink::skims`]).
    first_seen: bool,
    /// [`Collector::reading_every_line`].
    every_line: bool,
}

impl Collector {
    /// A collector for the input named `source` (the file; `None` for stdin).
    pub fn new(source: Option<String>) -> Collector {
        Collector { source, ..Collector::default() }
    }

    /// Has every line of the input decoded in full. By default a collector lets the
    /// normalizer pass over the lines that carry only conversation once the current request's
    /// first line was seen ([`Sink::skims`]): the usage is the same, read faster where tool
    /// results are large. This is what checks that (`agentnorm usage --every-line`).
    #[must_use]
    pub fn reading_every_line(mut self) -> Collector {
        self.every_line = true;
        self
    }

    /// Starts from what `before`, the usage of the same log up to where this collector starts
    /// reading (a log read in pieces, cut where [`crate::Normalizer::at_rest`]), left waiting:
    /// the time of a text, reasoning or tool call that dates its session's next request.
    #[must_use]
    pub fn waiting_from(mut self, before: &InputUsage) -> Collector {
        for (id, first, cwd) in &before.waiting {
            let si = self.slot(&id.as_deref().map(str::to_owned));
            let st = &mut self.sessions[si];
            st.pending_first_at.clone_from(first);
            st.cwd.clone_from(cwd);
            st.seeded = true;
        }
        self
    }

    /// The collected turns (a turn left open at the end of input is kept as it is).
    pub fn finish(mut self) -> InputUsage {
        // A turn whose usage came before any model was named (a Codex `token_count` before the
        // rollout's `turn_context`) takes the model the session names next, else its last one.
        let mut next: HashMap<Option<Arc<str>>, Option<Arc<str>>> = HashMap::new();
        for turn in self.turns.iter_mut().rev() {
            let known = next.entry(turn.session.clone()).or_insert_with(|| {
                let id = turn.session.as_deref().map(str::to_owned);
                self.session_index.get(&id).and_then(|&i| self.sessions[i].model.clone())
            });
            match &turn.model {
                Some(m) => *known = Some(m.clone()),
                None => turn.model.clone_from(known),
            }
        }
        let waiting =
            self.sessions.iter().map(|st| (st.id.clone(), st.pending_first_at.clone(), st.cwd.clone())).collect();
        InputUsage { source: self.source, order: 0, turns: self.turns, rate_limits: self.rate_limits, waiting }
    }

    /// `name`, held once per input.
    fn name(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.names.get(name) {
            return n.clone();
        }
        let n: Arc<str> = Arc::from(name);
        self.names.insert(n.clone());
        n
    }

    /// The index of the session `id` in `sessions`, made on first sight.
    fn slot(&mut self, id: &Option<String>) -> usize {
        if self.sessions.get(self.last).is_some_and(|st| st.id.as_deref() == id.as_deref()) {
            return self.last;
        }
        let i = match self.session_index.get(id) {
            Some(&i) => i,
            None => {
                self.sessions.push(SessionState { id: id.as_deref().map(Arc::from), ..SessionState::default() });
                self.session_index.insert(id.clone(), self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        };
        self.last = i;
        i
    }

    fn open_turn(&mut self, session: usize) -> usize {
        let st = &mut self.sessions[session];
        if let Some(i) = st.open {
            return i;
        }
        self.turns.push(Turn {
            session: st.id.clone(),
            dialect: st.dialect,
            model: None,
            last_ms: None,
            cwd: st.cwd.clone(),
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
        let si = self.slot(&env.session_id);
        let i = self.open_turn(si);
        let st = &mut self.sessions[si];
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
        let (model, last_ms, cwd) = (st.model.clone(), ms_of(&st.last_at), st.cwd.clone());
        let turn = &mut self.turns[i];
        if turn.cwd.is_none() {
            turn.cwd = cwd;
        }
        turn.dialect = turn.dialect.or(env.dialect);
        turn.model = model;
        turn.last_ms = last_ms;
        turn.end = Some(TurnEnd { usage, cost, at_ms: ms_of(&env.at), at_key: env.at.as_deref().map(h64) });
    }
}

impl Sink for Collector {
    fn event(&mut self, ev: &Event) {
        let env = ev.env();
        let si = self.slot(&env.session_id);
        {
            let st = &mut self.sessions[si];
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
            let st = &mut self.sessions[si];
            let slot = &mut st.pending_first_at[usize::from(subagent)];
            if slot.is_none() {
                slot.clone_from(&env.at);
            }
            self.first_seen = true;
        }
        match ev {
            // A session started in the part of the log read before keeps what it started with.
            Event::SessionStarted { .. } if self.sessions[si].seeded => {}
            Event::SessionStarted { model, cwd, .. } => {
                let model = model.as_deref().map(|m| self.name(m));
                let cwd = cwd.as_deref().map(|c| self.name(c));
                let st = &mut self.sessions[si];
                if model.is_some() {
                    st.model = model;
                }
                if cwd.is_some() {
                    st.cwd = cwd;
                }
            }
            Event::RateLimit { window, window_minutes, status, used_percent, resets_at, .. } => {
                keep_latest(
                    &mut self.rate_limits,
                    RateReading {
                        window: window.clone(),
                        window_minutes: *window_minutes,
                        status: status.clone(),
                        used_percent: *used_percent,
                        resets_at: resets_at.clone(),
                        at: env.at.clone(),
                    },
                );
            }
            Event::Usage { usage, model, message_id, .. } => {
                self.first_seen = false;
                let i = self.open_turn(si);
                let model = model.as_deref().map(|m| self.name(m));
                let st = &mut self.sessions[si];
                let first_at = st.pending_first_at[usize::from(subagent)].take();
                if model.is_some() && !subagent {
                    st.model.clone_from(&model);
                }
                let (smodel, last_ms) = (st.model.clone(), ms_of(&st.last_at));
                let cwd = st.cwd.clone();
                let turn = &mut self.turns[i];
                turn.dialect = turn.dialect.or(env.dialect);
                turn.model = smodel;
                turn.last_ms = last_ms;
                if turn.cwd.is_none() {
                    turn.cwd = cwd;
                }
                turn.requests.push(Request {
                    message_id: message_id.as_deref().map(h64),
                    model,
                    at_ms: ms_of(&env.at),
                    at_key: env.at.as_deref().map(h64),
                    first_ms: ms_of(&first_at),
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

    fn skims(&self) -> Skim {
        match (self.every_line, self.first_seen) {
            (true, _) => Skim::Every,
            (false, false) => Skim::Usage,
            (false, true) => Skim::UsageStarted,
        }
    }
}

/// Where a part's cost comes from. Amounts are in [`Pico`] dollars: sums of them are exact, so a
/// row's cost does not depend on the order its parts were added in (nor on how they were
/// merged), and the totals are the sum of the rows.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cost {
    /// The CLI reported it.
    Reported(Pico),
    /// Included in a cost the CLI reported for the turn (a Claude subagent's requests).
    Covered,
    /// Estimated from the price table.
    Estimated(Pico),
    /// No tokens, so nothing to pay.
    Free,
    /// Tokens of a model the table does not know.
    Unknown,
}

/// Whether a request at `at_ms` counts between the bounds `since` and `until` (both included):
/// always without bounds, never without a time when there are some.
fn within(at_ms: Option<i64>, since: Option<i64>, until: Option<i64>) -> bool {
    if since.is_none() && until.is_none() {
        return true;
    }
    at_ms.is_some_and(|t| !(since.is_some_and(|s| t < s) || until.is_some_and(|u| t > u)))
}

/// An amount in 10⁻¹² USD (a dollar amount of up to 9.2 million).
type Pico = i64;

/// `usd` in [`Pico`] dollars (rounded; saturated beyond the range).
fn pico(usd: f64) -> Pico {
    (usd * 1e12).round() as Pico
}

impl Cost {
    /// `self` and `other` as one cost, when they are of the same kind.
    fn and(self, other: Cost) -> Option<Cost> {
        match (self, other) {
            (Cost::Reported(a), Cost::Reported(b)) => Some(Cost::Reported(a.saturating_add(b))),
            (Cost::Estimated(a), Cost::Estimated(b)) => Some(Cost::Estimated(a.saturating_add(b))),
            (Cost::Covered, Cost::Covered) => Some(Cost::Covered),
            (Cost::Free, Cost::Free) => Some(Cost::Free),
            (Cost::Unknown, Cost::Unknown) => Some(Cost::Unknown),
            _ => None,
        }
    }
}

/// One counted piece of usage, after the dedupe: what rows are made of. Requests of one session
/// and model, of the same kind of cost and in the same minute, are one part
/// ([`Report::push_part`]).
#[derive(Debug, Clone)]
struct Part {
    session: usize,
    model: Option<Arc<str>>,
    /// The time of its first request, in ms.
    at_ms: Option<i64>,
    /// The time of its last request (the same minute as `at_ms`).
    last_ms: Option<i64>,
    usage: Usage,
    requests: Option<u64>,
    cost: Cost,
}

impl Part {
    fn new(
        session: usize,
        model: Option<Arc<str>>,
        at_ms: Option<i64>,
        usage: Usage,
        requests: Option<u64>,
        cost: Cost,
    ) -> Part {
        Part { session, model, at_ms, last_ms: at_ms, usage, requests, cost }
    }

    /// What a part is merged by: its model, the kind of its cost and whether its requests are
    /// counted, with its session where that is kept and the time `bucket` it is in (`None`:
    /// untimed, apart from every timed part: the `unknown` rows).
    fn key(&self, keep_session: bool, bucket: Option<i64>) -> PartKey {
        PartKey {
            session: keep_session.then_some(self.session),
            model: self.model.clone(),
            bucket,
            cost: std::mem::discriminant(&self.cost),
            counted: self.requests.is_some(),
        }
    }

    /// Takes `p` in: a part of the same [`PartKey`] (so the same kind of cost).
    fn merge(&mut self, p: Part) {
        self.cost = self.cost.and(p.cost).unwrap_or(self.cost);
        self.usage = add(self.usage, p.usage);
        self.requests = self.requests.zip(p.requests).map(|(a, b)| a.saturating_add(b));
        self.at_ms = self.at_ms.min(p.at_ms);
        self.last_ms = self.last_ms.max(p.last_ms);
    }
}

/// What parts are merged by ([`Part::key`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PartKey {
    session: Option<usize>,
    model: Option<Arc<str>>,
    bucket: Option<i64>,
    cost: std::mem::Discriminant<Cost>,
    counted: bool,
}

/// What a [`Report`] keeps of the requests it counts: enough for the rows of every grouping
/// (parts of one session, model and minute), or for those of one ([`Report::for_rows`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Grain {
    #[default]
    Every,
    For(GroupBy),
}

impl Grain {
    /// Whether parts are kept apart by session.
    fn keeps_session(self) -> bool {
        match self {
            Grain::Every => true,
            Grain::For(by) => matches!(by, GroupBy::Session | GroupBy::Project),
        }
    }
}

/// The minute of `t` (ms): the bucket of a report that keeps everything.
fn minute(t: i64) -> i64 {
    t.div_euclid(60_000)
}

#[derive(Debug, Clone)]
struct SessionInfo {
    id: Option<String>,
    dialect: Option<Dialect>,
    source: Option<String>,
    /// The place of `source` among the inputs.
    order: usize,
    /// The working folder, else the folder of the file (Claude keeps a folder per project).
    project: Option<String>,
}

/// How rows are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum GroupBy {
    /// One row per session (default).
    #[default]
    Session,
    /// One row per project (the session's working folder, else its file's folder).
    Project,
    /// One row per model.
    Model,
    /// One row per day (in the report's time zone).
    Day,
    /// One row per week (from Monday, in the report's time zone).
    Week,
    /// One row per month (in the report's time zone).
    Month,
    /// One row per 5-hour billing block (from its first request, floored to the hour), with
    /// the gaps between blocks and, for the active block, its burn rate and projection.
    Block,
}

impl GroupBy {
    /// The grouping a `--by` value names.
    pub fn from_name(s: &str) -> Option<GroupBy> {
        Some(match s {
            "session" => GroupBy::Session,
            "project" => GroupBy::Project,
            "model" => GroupBy::Model,
            "day" => GroupBy::Day,
            "week" => GroupBy::Week,
            "month" => GroupBy::Month,
            "block" => GroupBy::Block,
            _ => return None,
        })
    }
}

/// The length of a billing block.
pub const BLOCK_MS: i64 = 5 * 3_600_000;

/// One `rate_limit` reading (the latest per window goes beside the active block).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct RateReading {
    /// `five_hour`, `seven_day`, `primary`, …
    pub window: String,
    /// The window's length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_minutes: Option<u64>,
    /// `allowed`, `allowed_warning`, `rejected`, …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// How much of the window is used, 0–100.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub used_percent: Option<f64>,
    /// When the window resets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resets_at: Option<String>,
    /// When it was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// The active block's pace and where it leads by the block's end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
pub struct Burn {
    /// Tokens per minute, from the block's first request to its last.
    pub tokens_per_minute: f64,
    /// USD per hour at that pace (of the priced part).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_hour: Option<f64>,
    /// Minutes left until the block ends.
    pub minutes_left: u64,
    /// Tokens by the block's end at this pace.
    pub projected_total: u64,
    /// USD by the block's end at this pace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projected_cost_usd: Option<f64>,
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
    /// The zone days, weeks, months and block times are in (`None`: UTC).
    pub tz: Option<jiff::tz::TimeZone>,
    /// Per-model rows inside each row (`models`).
    pub breakdown: bool,
    /// "Now", for the active block (`None`: the clock).
    pub now_ms: Option<i64>,
}

/// Where a row's cost comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CostSource {
    /// Every part of it was reported by the CLI.
    Reported,
    /// Some or all of it was estimated from the price table.
    Estimated,
}

/// One row of the report (or the totals row). Absent figures were never reported.
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
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
    /// The day `YYYY-MM-DD` (with `--by day`), `unknown` for usage without a time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub day: Option<String>,
    /// The project (with `--by project`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// The week's Monday `YYYY-MM-DD` (with `--by week`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub week: Option<String>,
    /// The month `YYYY-MM` (with `--by month`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub month: Option<String>,
    /// The block's (or gap's) start, RFC 3339 in the report's zone (with `--by block`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_start: Option<String>,
    /// The block's (or gap's) end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block_end: Option<String>,
    /// A gap between blocks: no usage.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub gap: bool,
    /// The block still running at "now".
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub active: bool,
    /// The active block's burn rate and projection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub burn: Option<Burn>,
    /// The latest `rate_limit` readings, per window (beside the active block).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rate_limits: Vec<RateReading>,
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
    /// Per model (with `--breakdown`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<Row>,
}

/// Tokens of a model the price table does not know (a row's `unpriced`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, JsonSchema)]
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

/// The JSON Schema of one `usage --json` row (`agentnorm schema usage`).
pub fn row_schema() -> schemars::Schema {
    schemars::schema_for!(Row)
}

/// The fold over all inputs: the cross-file dedupe and the counted parts.
#[derive(Debug, Default)]
pub struct Report {
    /// Ignore the costs the CLIs reported: estimate every request from the price table.
    estimate_only: bool,
    /// The latest reading of each window ([`keep_latest`]).
    rate_limits: Vec<RateReading>,
    /// The identities counted so far, hashed ([`h64`] of a tag, the session where the identity
    /// is the session's own, and the message id, or the time and figures).
    counted: seen::Seen,
    /// The identities of the requests of the input being added ([`request_key`]), each asked
    /// for a few requests ahead of its insert ([`seen::Seen::prefetch`]); kept between inputs.
    keys: Vec<Option<u64>>,
    sessions: Vec<SessionInfo>,
    session_index: foldhash::HashMap<String, usize>,
    parts: Vec<Part>,
    /// What the parts keep ([`Report::for_rows`]).
    grain: Grain,
    /// Where each key's part is in `parts` (with a grain other than [`Grain::Every`]).
    merged: foldhash::HashMap<PartKey, usize>,
    /// The zone of the days parts are kept by ([`Report::for_rows`]), and the last day's bounds
    /// in it (ms).
    zone: Option<jiff::tz::TimeZone>,
    day: Option<(i64, i64)>,
    /// `--since` / `--until` (ms), applied to each request as it is counted ([`Report::between`]).
    bounds: (Option<i64>, Option<i64>),
}

impl Report {
    /// A report that estimates every cost from the price table, ignoring what the CLIs reported
    /// (`usage --estimate`: what the usage would cost at list prices; checks the table).
    pub fn estimating() -> Report {
        Report { estimate_only: true, ..Report::default() }
    }

    /// A report that counts only the requests made from `since` to `until` (ms, both included).
    /// [`Report::rows`] filters by its options' bounds too, but parts there are whole minutes:
    /// bounds inside a minute are exact only when given here.
    pub fn between(mut self, since: Option<i64>, until: Option<i64>) -> Report {
        self.bounds = (since, until);
        self
    }

    /// A report that keeps only what the rows of `opts.by` need: a part per session and model
    /// (`session`, `project`), per model (`model`), per day of `opts.tz` and model (`day`,
    /// `week`, `month`), or per hour and model (`block`), whatever the number of requests.
    /// Its [`Report::rows`] for `opts` are those of a report that keeps everything; its bounds
    /// are those of [`Report::between`] only (the parts' times are gone where `by` needs none).
    pub fn for_rows(mut self, opts: &ReportOptions) -> Report {
        self.grain = Grain::For(opts.by);
        self.zone = Some(opts.tz.clone().unwrap_or(jiff::tz::TimeZone::UTC));
        self
    }

    /// The time bucket of a part at `at_ms` ([`Part::key`]): its minute, or for a report
    /// [`Report::for_rows`] the hour, the day (in the zone) or nothing, as the rows need.
    fn bucket(&mut self, at_ms: Option<i64>) -> Option<i64> {
        let t = at_ms?;
        Some(match self.grain {
            Grain::Every => minute(t),
            // Blocks start and end on the hour (UTC), and a block that starts after a gap starts
            // at the first request of its hour: an hour's requests are in one block.
            Grain::For(GroupBy::Block) => t.div_euclid(3_600_000),
            Grain::For(GroupBy::Day | GroupBy::Week | GroupBy::Month) => {
                // The day's start: the last day's bounds are kept (requests come in days).
                match self.day {
                    Some((start, end)) if (start..end).contains(&t) => start,
                    _ => match self.zone.as_ref().and_then(|tz| day_bounds(t, tz)) {
                        Some((start, end)) => {
                            self.day = Some((start, end));
                            start
                        }
                        None => minute(t),
                    },
                }
            }
            Grain::For(GroupBy::Session | GroupBy::Project | GroupBy::Model) => 0,
        })
    }

    /// Adds a part: into the last one when it has the same key (a session's requests come one
    /// after the other, so a report of 1.4 million requests, the 2 GB benchmark home, holds a
    /// fraction of that many parts), or, for a report [`Report::for_rows`], into the one of its
    /// key wherever that is.
    fn push_part(&mut self, mut p: Part) {
        if !within(p.at_ms, self.bounds.0, self.bounds.1) {
            return;
        }
        let keep_session = self.grain.keeps_session();
        if !keep_session {
            p.session = usize::MAX;
        }
        let key = p.key(keep_session, self.bucket(p.at_ms));
        let at = match self.grain {
            Grain::Every => self
                .parts
                .last()
                .filter(|last| last.key(true, last.at_ms.map(minute)) == key)
                .map(|_| self.parts.len() - 1),
            Grain::For(_) => self.merged.get(&key).copied(),
        };
        match at {
            Some(i) => self.parts[i].merge(p),
            None => {
                if self.grain != Grain::Every {
                    self.merged.insert(key, self.parts.len());
                }
                self.parts.push(p);
            }
        }
    }

    /// Folds one input's usage in; call it in input order.
    pub fn add(&mut self, input: InputUsage) {
        for r in input.rate_limits {
            keep_latest(&mut self.rate_limits, r);
        }
        let mut anonymous: HashMap<Option<Dialect>, usize> = HashMap::new();
        let mut here = foldhash::HashSet::default();
        let mut keys = std::mem::take(&mut self.keys);
        keys.clear();
        for turn in &input.turns {
            keys.extend(turn.requests.iter().map(|r| request_key(turn, r)));
        }
        for k in keys.iter().take(PREFETCH_AHEAD).flatten() {
            self.counted.prefetch(*k);
        }
        let mut first = 0;
        for turn in input.turns {
            let n = turn.requests.len();
            let session = self.session(&turn, &input.source, input.order, &mut anonymous, &mut here);
            self.add_turn(turn, session, &keys, first);
            first += n;
        }
        self.keys = keys;
    }

    /// The session of `turn`, made on first sight. A session's project is the working folder
    /// its first turn in each input names, the latest input's winning (one input's turns name
    /// the folder its session started in, however many pieces it was read in).
    fn session(
        &mut self,
        turn: &Turn,
        source: &Option<String>,
        order: usize,
        anonymous: &mut HashMap<Option<Dialect>, usize>,
        here: &mut foldhash::HashSet<usize>,
    ) -> usize {
        let slot = match &turn.session {
            Some(id) => self.session_index.get(&**id).copied(),
            None => anonymous.get(&turn.dialect).copied(),
        };
        if let Some(i) = slot {
            if self.sessions[i].dialect.is_none() {
                self.sessions[i].dialect = turn.dialect;
            }
            if order < self.sessions[i].order {
                self.sessions[i].order = order;
                self.sessions[i].source.clone_from(source);
            }
            if let Some(cwd) = &turn.cwd
                && here.insert(i)
                && self.sessions[i].project.as_deref() != Some(&**cwd)
            {
                // A working folder named later beats the file's folder.
                self.sessions[i].project = Some(cwd.to_string());
            }
            return i;
        }
        here.insert(self.sessions.len());
        let project = turn.cwd.as_deref().map(str::to_owned).or_else(|| {
            source.as_deref().and_then(|s| std::path::Path::new(s).parent()).map(|p| p.display().to_string())
        });
        let id = turn.session.as_deref().map(str::to_owned);
        self.sessions.push(SessionInfo { id, dialect: turn.dialect, source: source.clone(), order, project });
        let i = self.sessions.len() - 1;
        match &turn.session {
            Some(id) => {
                self.session_index.insert(id.to_string(), i);
            }
            None => {
                anonymous.insert(turn.dialect, i);
            }
        }
        i
    }

    /// Adds a turn of the input being added: `keys[first..]` are its requests' identities
    /// ([`request_key`]), and those of the input's later requests.
    fn add_turn(&mut self, turn: Turn, session: usize, keys: &[Option<u64>], first: usize) {
        let sid = turn.session.as_deref().unwrap_or_default();
        let mut had_ids = false;
        let requests = turn.requests.len();
        let mut fresh = Vec::new();
        for (i, r) in turn.requests.into_iter().enumerate() {
            if let Some(Some(ahead)) = keys.get(first + i + PREFETCH_AHEAD) {
                self.counted.prefetch(*ahead);
            }
            if let Some(key) = keys[first + i] {
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
            && let (Some(at), Some(u)) = (end.at_key, &end.usage)
            && !self.counted.insert(h64((3u8, sid, figures_key(at, u))))
        {
            return;
        }
        // Some of the turn's requests were counted already (a session forked in the middle of a
        // turn copies its first requests): its aggregate holds them too, so only the fresh
        // requests count, each on its own.
        let partial = fresh.len() < requests && !fresh.is_empty();
        let Some(end) = turn.end.filter(|e| !partial && (e.usage.is_some() || e.cost.is_some())) else {
            // No aggregate: the sum of the requests, each its own part.
            for r in fresh {
                let at_ms = request_ms(&r);
                let model = r.model.or_else(|| turn.model.clone());
                let cost = estimate(&model, &r.usage);
                self.push_part(Part::new(session, model, at_ms.or(turn.last_ms), r.usage, Some(1), cost));
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
        let at = end.at_ms.or_else(|| main.last().and_then(|r| r.at_ms)).or(turn.last_ms);
        let reported_cost = if self.estimate_only { None } else { end.cost };
        if reported_cost.is_none() && main.iter().any(|r| r.model.is_some()) {
            // Nothing reported: each request priced and grouped by its own model (a Gemini result
            // names several), and what the aggregate holds beyond them by the session's model.
            let rest = usage::minus(usage, main_sum);
            for r in main {
                let at_ms = request_ms(&r);
                let m = r.model.or_else(|| turn.model.clone());
                let cost = estimate(&m, &r.usage);
                self.push_part(Part::new(session, m, at_ms.or(at), r.usage, Some(1), cost));
            }
            if has_tokens(&rest) {
                let cost = estimate_with(&model, &rest, false);
                self.push_part(Part::new(session, model, at, rest, None, cost));
            }
        } else {
            let cost = match reported_cost {
                Some(c) => Cost::Reported(pico(c)),
                None => estimate_with(&model, &usage, main.len() == 1 && end.usage.is_none()),
            };
            let requests = (!main.is_empty()).then_some(main.len() as u64);
            self.push_part(Part::new(session, model, at, usage, requests, cost));
        }
        let reported = reported_cost.is_some();
        for r in sub {
            let at_ms = request_ms(&r);
            let model = r.model.or_else(|| turn.model.clone());
            let cost = if reported { Cost::Covered } else { estimate(&model, &r.usage) };
            self.push_part(Part::new(session, model, at_ms.or(at), r.usage, Some(1), cost));
        }
    }

    /// The rows (sessions and projects in first-seen order, models by name, days, weeks, months
    /// and blocks ascending, usage without a time last) and the totals row.
    pub fn rows(&self, opts: &ReportOptions) -> (Vec<Row>, Row) {
        let tz = opts.tz.clone().unwrap_or(jiff::tz::TimeZone::UTC);
        let parts: Vec<&Part> =
            self.parts.iter().filter(|part| within(part.at_ms, opts.since_ms, opts.until_ms)).collect();
        let mut total = Acc::default();
        let mut total_models: BTreeMap<(usize, String), Acc> = BTreeMap::new();
        for part in &parts {
            total.push(part);
            if opts.breakdown {
                total_models.entry(model_key(part)).or_default().push(part);
            }
        }
        let rows = if opts.by == GroupBy::Block {
            self.block_rows(&parts, opts, &tz)
        } else {
            let mut projects: HashMap<&str, usize> = HashMap::new();
            let mut groups: BTreeMap<GroupKey, (Acc, BTreeMap<GroupKey, Acc>)> = BTreeMap::new();
            for part in &parts {
                let time_key = |f: fn(jiff::civil::Date) -> String| {
                    part.at_ms.and_then(|ms| civil_date(ms, &tz)).map_or((1, "unknown".to_owned()), |d| (0, f(d)))
                };
                let key = match opts.by {
                    GroupBy::Session => (part.session, String::new()),
                    GroupBy::Project => match self.sessions.get(part.session).and_then(|s| s.project.as_deref()) {
                        Some(p) => {
                            let next = projects.len();
                            (*projects.entry(p).or_insert(next), p.to_owned())
                        }
                        None => (usize::MAX, String::new()),
                    },
                    // Unknown models sort last.
                    GroupBy::Model => model_key(part),
                    GroupBy::Day => time_key(|d| d.to_string()),
                    GroupBy::Week => time_key(|d| week_of(d).to_string()),
                    GroupBy::Month => time_key(|d| format!("{:04}-{:02}", d.year(), d.month())),
                    GroupBy::Block => unreachable!("blocks are grouped apart"),
                };
                let g = groups.entry(key).or_default();
                g.0.push(part);
                if opts.breakdown {
                    g.1.entry(model_key(part)).or_default().push(part);
                }
            }
            groups
                .into_iter()
                .map(|((i, name), (acc, models))| {
                    let mut row = acc.row();
                    row.models = breakdown_rows(models);
                    let known = (i == 0).then(|| name.clone());
                    match opts.by {
                        // No session where the report kept none ([`Report::for_rows`] of another grouping).
                        GroupBy::Session => {
                            if let Some(s) = self.sessions.get(i) {
                                row.session_id.clone_from(&s.id);
                                row.dialect = s.dialect;
                                row.source.clone_from(&s.source);
                            }
                        }
                        GroupBy::Project => row.project = (i != usize::MAX).then_some(name),
                        GroupBy::Model => row.model = known,
                        GroupBy::Day => row.day = Some(name),
                        GroupBy::Week => row.week = Some(name),
                        GroupBy::Month => row.month = Some(name),
                        GroupBy::Block => {}
                    }
                    row
                })
                .collect()
        };
        let mut totals = total.row();
        totals.totals = true;
        totals.models = breakdown_rows(total_models);
        (rows, totals)
    }

    /// The 5-hour blocks: a block starts at its first request's hour (UTC, as the vendors
    /// count) and holds every request until 5 hours after that, or until 5 hours pass without
    /// one; the time between blocks is a gap row.
    fn block_rows(&self, parts: &[&Part], opts: &ReportOptions, tz: &jiff::tz::TimeZone) -> Vec<Row> {
        let mut timed: Vec<(i64, &Part)> = parts.iter().filter_map(|p| p.at_ms.map(|t| (t, *p))).collect();
        timed.sort_by_key(|(t, _)| *t);
        struct Block<'a> {
            start: i64,
            first: i64,
            last: i64,
            acc: Acc,
            models: BTreeMap<(usize, String), Acc>,
            parts: Vec<&'a Part>,
        }
        let mut blocks: Vec<Block> = Vec::new();
        for (t, p) in timed {
            // A part is within one minute (or, for a report of blocks only, one hour: UTC), and
            // a block's bounds fall on the hour: the part is in one block, the same as its
            // requests one by one.
            let new = match blocks.last() {
                Some(b) => t >= b.start + BLOCK_MS || t - b.last >= BLOCK_MS,
                None => true,
            };
            if new {
                let start = t - t.rem_euclid(3_600_000);
                blocks.push(Block {
                    start,
                    first: t,
                    last: t,
                    acc: Acc::default(),
                    models: BTreeMap::new(),
                    parts: vec![],
                });
            }
            let b = blocks.last_mut().expect("a block");
            b.last = b.last.max(p.last_ms.unwrap_or(t));
            b.acc.push(p);
            if opts.breakdown {
                b.models.entry(model_key(p)).or_default().push(p);
            }
            b.parts.push(p);
        }
        let now = opts.now_ms.unwrap_or_else(now_ms);
        let stamp = |ms: i64| zoned_rfc3339(ms, tz);
        let mut rows = Vec::new();
        let mut prev_end: Option<i64> = None;
        for b in blocks {
            let end = b.start + BLOCK_MS;
            if let Some(pe) = prev_end
                && b.start > pe
            {
                rows.push(Row {
                    block_start: Some(stamp(pe)),
                    block_end: Some(stamp(b.start)),
                    gap: true,
                    ..Row::default()
                });
            }
            prev_end = Some(end);
            let mut row = b.acc.row();
            row.block_start = Some(stamp(b.start));
            row.block_end = Some(stamp(end));
            row.models = breakdown_rows(b.models);
            if now >= b.start && now < end && now - b.last < BLOCK_MS {
                row.active = true;
                let minutes = ((b.last - b.first) as f64 / 60_000.0).max(1.0);
                let total = row.total.unwrap_or(0);
                let rate = total as f64 / minutes;
                let left = ((end - now) as f64 / 60_000.0).max(0.0);
                let cost_rate = row.cost_usd.map(|c| c / minutes);
                row.burn = Some(Burn {
                    tokens_per_minute: (rate * 10.0).round() / 10.0,
                    cost_per_hour: cost_rate.map(|r| (r * 60.0 * 1e4).round() / 1e4),
                    minutes_left: left as u64,
                    projected_total: total.saturating_add((rate * left) as u64),
                    projected_cost_usd: row.cost_usd.zip(cost_rate).map(|(c, r)| ((c + r * left) * 1e4).round() / 1e4),
                });
                row.rate_limits = self.latest_rate_limits();
            }
            rows.push(row);
        }
        // Usage without a time: in no block, but counted.
        let untimed: Vec<&&Part> = parts.iter().filter(|p| p.at_ms.is_none()).collect();
        if !untimed.is_empty() {
            let mut acc = Acc::default();
            for p in untimed {
                acc.push(p);
            }
            let mut row = acc.row();
            row.block_start = Some("unknown".to_owned());
            rows.push(row);
        }
        rows
    }

    /// The latest `rate_limit` reading of each window, in window order.
    pub fn latest_rate_limits(&self) -> Vec<RateReading> {
        let mut latest = self.rate_limits.clone();
        latest.sort_by(|a, b| a.window.cmp(&b.window));
        latest
    }
}

/// Puts `r` in `latest` (the latest reading of each window): in place of its window's reading
/// unless that one is later (of two at the same time, the one read last). Kept as the readings
/// come, so an input holds a reading per window, not one per line that had some.
fn keep_latest(latest: &mut Vec<RateReading>, r: RateReading) {
    let t = |x: &RateReading| x.at.as_deref().and_then(crate::read::time::parse_rfc3339_ms);
    match latest.iter_mut().find(|old| old.window == r.window) {
        Some(old) if t(&r) >= t(old) => *old = r,
        Some(_) => {}
        None => latest.push(r),
    }
}

/// A row's sort key and name: `(0, name)` for named groups (sessions and projects: their
/// first-seen index), `(1, …)` or more for the unnamed, which sort last.
type GroupKey = (usize, String);

/// A part's `--by model` / `--breakdown` key: known models by name, the unnamed last.
fn model_key(part: &Part) -> (usize, String) {
    part.model.as_ref().map_or((1, String::new()), |m| (0, m.to_string()))
}

fn breakdown_rows(models: BTreeMap<(usize, String), Acc>) -> Vec<Row> {
    models
        .into_iter()
        .map(|((i, name), acc)| {
            let mut row = acc.row();
            row.model = (i == 0).then_some(name);
            row
        })
        .collect()
}

/// The civil date of `ms` in `tz`.
fn civil_date(ms: i64, tz: &jiff::tz::TimeZone) -> Option<jiff::civil::Date> {
    Some(jiff::Timestamp::from_millisecond(ms).ok()?.to_zoned_datetime(tz.clone()).date())
}

/// The start and end (ms) of the day of `ms` in `tz`.
fn day_bounds(ms: i64, tz: &jiff::tz::TimeZone) -> Option<(i64, i64)> {
    let start = jiff::Timestamp::from_millisecond(ms).ok()?.to_zoned_datetime(tz.clone()).start_of_day().ok()?;
    let end = start.tomorrow().ok()?.start_of_day().ok()?;
    Some((start.timestamp().as_millisecond(), end.timestamp().as_millisecond()))
}

/// The Monday of `d`'s week.
fn week_of(d: jiff::civil::Date) -> jiff::civil::Date {
    let back = i64::from(d.weekday().to_monday_zero_offset());
    d.checked_sub(jiff::Span::new().days(back)).unwrap_or(d)
}

/// `ms` as RFC 3339 in `tz` (`2026-05-01T10:00:00+02:00`).
pub fn zoned_rfc3339(ms: i64, tz: &jiff::tz::TimeZone) -> String {
    match jiff::Timestamp::from_millisecond(ms) {
        Ok(t) => t.to_zoned_datetime(tz.clone()).strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        Err(_) => crate::read::time::rfc3339_millis(ms),
    }
}

/// The clock, in ms since the epoch.
fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// When a request was made: its first line's time (ccusage dates requests so too), where that
/// is at most an hour before its last line's; else its last line's.
fn request_ms(r: &Request) -> Option<i64> {
    let last = r.at_ms;
    match (r.first_ms, last) {
        (Some(f), Some(l)) if f <= l && l - f <= 3_600_000 => Some(f),
        _ => last,
    }
}

/// A request's identity where the log gives it no id: its time (the hash of it as written) and
/// figures.
fn figures_key(at: u64, u: &Usage) -> (u64, [Option<u64>; 5]) {
    (at, [u.input, u.cache_read, u.cache_write, u.output, u.reasoning])
}

/// Whether any figure of `u` is above zero.
fn has_tokens(u: &Usage) -> bool {
    [u.input, u.cache_read, u.cache_write, u.output].iter().any(|x| x.unwrap_or(0) > 0)
}

/// The estimated cost of `u` by `model`'s price; `per_request` when `u` is one request's
/// (only then can the long-context tier apply).
fn estimate_with(model: &Option<Arc<str>>, u: &Usage, per_request: bool) -> Cost {
    if !has_tokens(u) {
        return Cost::Free;
    }
    match model.as_deref().and_then(|m| prices::table().entry(m)) {
        Some(e) => Cost::Estimated(pico(e.cost(u, per_request))),
        None => Cost::Unknown,
    }
}

/// One request's estimated cost.
fn estimate(model: &Option<Arc<str>>, u: &Usage) -> Cost {
    estimate_with(model, u, true)
}

#[derive(Debug, Default)]
struct Acc {
    usage: Usage,
    requests: Option<u64>,
    cost: i128,
    /// Tokens without a price, by model (`None`: no model named).
    unknown: BTreeMap<Option<Arc<str>>, Usage>,
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
                self.cost = self.cost.saturating_add(i128::from(c));
                self.reported = true;
                self.priced = true;
            }
            Cost::Covered => self.reported = true,
            Cost::Estimated(c) => {
                self.cost = self.cost.saturating_add(i128::from(c));
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
        // Saturated, never wrapped: hostile figures near u64::MAX must not sum to a small number.
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
            // Rounded to the micro-dollar, half away from zero.
            cost_usd: source.map(|_| (self.cost as f64 / 1e6).round() / 1e6),
            cost_source: source,
            cost_partial: !self.unknown.is_empty(),
            unpriced: self
                .unknown
                .iter()
                .map(|(m, u)| Unpriced {
                    model: m.as_deref().map(str::to_owned),
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
    parse_bound_in(s, end_of_day, &jiff::tz::TimeZone::UTC)
}

/// [`parse_bound`] with `YYYY-MM-DD` a day in `tz`.
pub fn parse_bound_in(s: &str, end_of_day: bool, tz: &jiff::tz::TimeZone) -> Option<i64> {
    if let Some(ms) = crate::read::time::parse_rfc3339_ms(s) {
        return Some(ms);
    }
    let date: jiff::civil::Date = s.parse().ok()?;
    let day_start = |d: jiff::civil::Date| -> Option<i64> {
        Some(d.to_zoned_datetime(tz.clone()).ok()?.timestamp().as_millisecond())
    };
    if end_of_day { Some(day_start(date.tomorrow().ok()?)? - 1) } else { day_start(date) }
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
        GroupBy::Project => &["project"],
        GroupBy::Model => &["model"],
        GroupBy::Day => &["day"],
        GroupBy::Week => &["week"],
        GroupBy::Month => &["month"],
        GroupBy::Block => &["block_start", "block_end", "status"],
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

fn block_status(row: &Row) -> &'static str {
    if row.gap {
        "gap"
    } else if row.active {
        "active"
    } else if row.block_end.is_some() {
        "ended"
    } else {
        ""
    }
}

/// Writes the rows and the totals row as CSV (RFC 4180 quoting; absent cells empty; the last
/// column `totals` is `true` on the totals row). With `breakdown`, each row is followed by its
/// per-model rows (the `model` column set).
pub fn write_csv(w: &mut impl Write, by: GroupBy, rows: &[Row], totals: &Row) -> io::Result<()> {
    let breakdown = rows.iter().chain(std::iter::once(totals)).any(|r| !r.models.is_empty());
    let mut header: Vec<&str> = key_columns(by).to_vec();
    if breakdown && by != GroupBy::Model {
        header.push("model");
    }
    header.extend(COLUMNS);
    if by == GroupBy::Session {
        header.push("source");
    }
    header.extend(["cost_partial", "unpriced"]);
    header.push("totals");
    writeln!(w, "{}", header.join(","))?;
    for row in rows.iter().chain(std::iter::once(totals)) {
        let subs = std::iter::once((row, None)).chain(row.models.iter().map(|m| (m, Some(m.model.clone()))));
        for (r, model) in subs {
            let mut cells: Vec<String> = keys(by, row).into_iter().map(|k| csv_cell(&k.unwrap_or_default())).collect();
            if breakdown && by != GroupBy::Model {
                cells.push(csv_cell(&model.flatten().unwrap_or_default()));
            }
            cells.extend(numbers(r).iter().map(|n| n.map(|n| n.to_string()).unwrap_or_default()));
            cells.push(r.cost_usd.map(|c| format!("{c}")).unwrap_or_default());
            cells.push(cost_source(r).to_owned());
            if by == GroupBy::Session {
                cells.push(csv_cell(row.source.as_deref().unwrap_or("")));
            }
            cells.push(if r.cost_partial { "true".into() } else { String::new() });
            cells.push(csv_cell(&unpriced_list(r)));
            cells.push(if row.totals { "true".into() } else { String::new() });
            writeln!(w, "{}", cells.join(","))?;
        }
    }
    Ok(())
}

fn keys(by: GroupBy, row: &Row) -> Vec<Option<String>> {
    match by {
        GroupBy::Session => vec![row.session_id.clone(), row.dialect.map(|d| d.as_str().to_owned())],
        GroupBy::Project => vec![row.project.clone()],
        GroupBy::Model => vec![row.model.clone()],
        GroupBy::Day => vec![row.day.clone()],
        GroupBy::Week => vec![row.week.clone()],
        GroupBy::Month => vec![row.month.clone()],
        GroupBy::Block => vec![
            row.block_start.clone(),
            row.block_end.clone(),
            (!row.totals).then(|| block_status(row).to_owned()).filter(|s| !s.is_empty()),
        ],
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

/// `1234567` → `1.2M`, `45300` → `45.3k`, `999` → `999`.
pub fn short_number(n: u64) -> String {
    let f = n as f64;
    if n >= 1_000_000_000 {
        format!("{:.1}G", f / 1e9)
    } else if n >= 1_000_000 {
        format!("{:.1}M", f / 1e6)
    } else if n >= 1_000 {
        format!("{:.1}k", f / 1e3)
    } else {
        n.to_string()
    }
}

/// Writes the rows and the totals row as an aligned table: numbers with thousands separators,
/// `-` where a figure was never reported, costs as `$0.0123` (reported) or `~$0.0123`
/// (estimated), `*` after a partial cost. Within `width` columns when given: sources shortened
/// to `~/…` and then to their file name, then a compact layout (cache read and write as one
/// column, short numbers, short session ids, no reasoning, requests or source), then the first
/// column cut.
pub fn write_table(
    w: &mut impl Write,
    by: GroupBy,
    rows: &[Row],
    totals: &Row,
    width: Option<usize>,
) -> io::Result<()> {
    let home = std::env::var_os("HOME").map(|h| h.to_string_lossy().into_owned()).filter(|h| h.len() > 1);
    let mut chosen = None;
    let widest = |lines: &[String]| lines.iter().map(|l| display_width(l)).max().unwrap_or(0);
    for layout in [Layout::Full(SourceForm::Home), Layout::Full(SourceForm::Name), Layout::Compact] {
        let lines = table_lines(by, rows, totals, layout, home.as_deref(), None);
        let fits = width.is_none_or(|wd| widest(&lines) <= wd);
        chosen = Some(lines);
        if fits {
            break;
        }
    }
    let mut lines = chosen.unwrap_or_default();
    if let Some(wd) = width
        && widest(&lines) > wd
    {
        // Still too wide: the first column (ids, projects, models) gives up what is missing.
        let first = lines.first().map_or(0, |h| display_width(h.split("  ").next().unwrap_or("")));
        let over = widest(&lines) - wd;
        let keep = lines.iter().map(|l| first_cell_width(l)).max().unwrap_or(first).saturating_sub(over).max(6);
        lines = table_lines(by, rows, totals, Layout::Compact, home.as_deref(), Some(keep));
    }
    if let Some(wd) = width {
        for l in &mut lines {
            if display_width(l) > wd {
                *l = cut_to_width(l, wd);
            }
        }
    }
    for l in &lines {
        writeln!(w, "{l}")?;
    }
    for line in notes(rows, totals) {
        let line = crate::sink::safe::printable(&line).into_owned();
        match width {
            Some(wd) if display_width(&line) > wd => writeln!(w, "{}", cut_to_width(&line, wd))?,
            _ => writeln!(w, "{line}")?,
        }
    }
    Ok(())
}

/// The lines under the table: the active block's burn rate, projection and rate limits, and
/// the models a partial cost leaves out.
fn notes(rows: &[Row], totals: &Row) -> Vec<String> {
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.active) {
        if let Some(b) = &r.burn {
            let cost = b.cost_per_hour.map(|c| format!(", ~${c:.2}/h")).unwrap_or_default();
            let proj = b.projected_cost_usd.map(|c| format!(", ~${c:.2}")).unwrap_or_default();
            out.push(format!(
                "active block: {}h{:02}m left; burn {} tokens/min{cost}; projected {} tokens{proj} by its end",
                b.minutes_left / 60,
                b.minutes_left % 60,
                thousands(b.tokens_per_minute.round() as u64),
                short_number(b.projected_total)
            ));
        }
        if !r.rate_limits.is_empty() {
            let list: Vec<String> = r
                .rate_limits
                .iter()
                .map(|l| {
                    let used = l.used_percent.map(|p| format!(" {p:.0}% used")).unwrap_or_default();
                    let status = l.status.as_deref().map(|s| format!(" {s}")).unwrap_or_default();
                    let reset = l.resets_at.as_deref().map(|t| format!(" (resets {t})")).unwrap_or_default();
                    format!("{}{used}{status}{reset}", l.window)
                })
                .collect();
            out.push(format!("rate limits: {}", list.join("; ")));
        }
    }
    if totals.cost_partial {
        out.push(format!("* partial cost: no price for {}; add them with --prices FILE", unpriced_list(totals)));
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum SourceForm {
    /// `~/…`
    Home,
    /// The file name.
    Name,
}

#[derive(Clone, Copy, PartialEq)]
enum Layout {
    Full(SourceForm),
    Compact,
}

fn display_width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// `s` cut to `width` display columns, ending in `…`.
fn cut_to_width(s: &str, width: usize) -> String {
    let mut out = String::new();
    let mut w = 0;
    for c in s.chars() {
        let cw = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if w + cw + 1 > width {
            break;
        }
        out.push(c);
        w += cw;
    }
    out.push('…');
    out
}

/// The display width of a table line's first cell (up to its two-space separator).
fn first_cell_width(line: &str) -> usize {
    display_width(line.split("  ").next().unwrap_or(""))
}

fn table_lines(
    by: GroupBy,
    rows: &[Row],
    totals: &Row,
    layout: Layout,
    home: Option<&str>,
    max_first: Option<usize>,
) -> Vec<String> {
    let compact = layout == Layout::Compact;
    let show_source = by == GroupBy::Session && !compact;
    let mut header: Vec<String> = match by {
        GroupBy::Block => vec!["BLOCK".into(), "STATUS".into()],
        GroupBy::Session if compact => vec!["SESSION".into(), "CLI".into()],
        _ => key_columns(by).iter().map(|s| s.to_uppercase()).collect(),
    };
    let nkeys = header.len();
    if compact {
        header.extend(["INPUT", "OUTPUT", "CACHE", "TOTAL", "COST"].map(String::from));
    } else {
        header.extend(
            ["INPUT", "CACHE_READ", "CACHE_WRITE", "OUTPUT", "REASONING", "TOTAL", "REQUESTS", "COST"]
                .map(String::from),
        );
    }
    if show_source {
        header.push("SOURCE".into());
    }
    let num = |n: Option<u64>| n.map_or_else(|| "-".into(), |n| if compact { short_number(n) } else { thousands(n) });
    let cost = |r: &Row| {
        let mut c = match (r.cost_usd, r.cost_source) {
            (Some(c), Some(CostSource::Reported)) => format!("${c:.4}"),
            (Some(c), _) => format!("~${c:.4}"),
            (None, _) if r.gap => String::new(),
            (None, _) => "-".into(),
        };
        if r.cost_partial {
            c.push('*');
        }
        c
    };
    let mut lines = vec![header];
    let mut push_row = |keys: Vec<String>, r: &Row, source: Option<String>| {
        let mut cells = keys;
        if r.gap {
            cells.extend(std::iter::repeat_n(String::new(), if compact { 4 } else { 7 }));
        } else if compact {
            let cache = match (r.usage.cache_read, r.usage.cache_write) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0).saturating_add(b.unwrap_or(0))),
            };
            cells.extend([num(r.usage.input), num(r.usage.output), num(cache), num(r.total)]);
        } else {
            cells.extend(numbers(r).iter().map(|n| num(*n)));
        }
        cells.push(cost(r));
        if show_source {
            cells.push(source.unwrap_or_default());
        }
        // Session ids, models and paths come from the agent's files: shown, never obeyed.
        let mut cells: Vec<String> = cells.into_iter().map(|c| crate::sink::safe::printable(&c).into_owned()).collect();
        if let Some(m) = max_first
            && display_width(&cells[0]) > m
        {
            cells[0] = cut_to_width(&cells[0], m);
        }
        lines.push(cells);
    };
    for row in rows.iter().chain(std::iter::once(totals)) {
        let keys: Vec<String> = if row.totals {
            let mut k = vec!["TOTAL".to_owned()];
            k.resize(nkeys, String::new());
            k
        } else {
            table_keys(by, row, compact)
        };
        let source = (!row.totals).then(|| {
            let s = row.source.clone().unwrap_or_else(|| "-".into());
            match layout {
                Layout::Full(SourceForm::Home) => match home {
                    Some(h) if s.starts_with(h) && s[h.len()..].starts_with('/') => format!("~{}", &s[h.len()..]),
                    _ => s,
                },
                _ => s.rsplit('/').next().unwrap_or(&s).to_owned(),
            }
        });
        push_row(keys, row, source);
        for m in &row.models {
            let name = m.model.as_deref().unwrap_or("(no model)");
            let name = if compact { crate::sink::prices::without_version(name) } else { name };
            let mut k = vec![format!("  └ {name}")];
            k.resize(nkeys, String::new());
            push_row(k, m, None);
        }
    }
    let ncols = lines[0].len();
    let widths: Vec<usize> =
        (0..ncols).map(|c| lines.iter().map(|l| display_width(&l[c])).max().unwrap_or(0)).collect();
    let last = ncols - 1;
    lines
        .iter()
        .map(|line| {
            let mut out = String::new();
            for (c, cell) in line.iter().enumerate() {
                let pad = widths[c] - display_width(cell);
                // Keys and the source left-aligned, figures right-aligned.
                let left = c < nkeys || (show_source && c == last);
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
            out.trim_end().to_owned()
        })
        .collect()
}

/// The key cells of a row in the table.
fn table_keys(by: GroupBy, row: &Row, compact: bool) -> Vec<String> {
    let dash = |k: &Option<String>| k.clone().unwrap_or_else(|| "-".into());
    match by {
        GroupBy::Session if compact => vec![
            row.session_id.as_deref().map_or_else(|| "-".into(), |s| s.chars().take(8).collect()),
            row.dialect.map_or_else(|| "-".into(), |d| d.as_str().split('-').next().unwrap_or("").to_owned()),
        ],
        GroupBy::Project if compact => vec![row.project.as_deref().map_or_else(
            || "-".into(),
            |p| {
                let parts: Vec<&str> = p.rsplit('/').take(2).collect();
                parts.into_iter().rev().collect::<Vec<_>>().join("/")
            },
        )],
        GroupBy::Block => {
            let when = |t: &Option<String>| {
                t.as_deref().map(|t| if t.len() >= 16 { format!("{} {}", &t[..10], &t[11..16]) } else { t.to_owned() })
            };
            let start = when(&row.block_start).unwrap_or_else(|| "-".into());
            let status = if row.gap {
                let span = match (row.block_start.as_deref(), row.block_end.as_deref()) {
                    (Some(a), Some(b)) => crate::read::time::parse_rfc3339_ms(b)
                        .zip(crate::read::time::parse_rfc3339_ms(a))
                        .map(|(b, a)| format!(" {}h{:02}m", (b - a) / 3_600_000, (b - a) % 3_600_000 / 60_000))
                        .unwrap_or_default(),
                    _ => String::new(),
                };
                format!("gap{span}")
            } else if row.active {
                "active".into()
            } else {
                String::new()
            };
            vec![start, status]
        }
        _ => keys(by, row).iter().map(dash).collect(),
    }
}
