//! The events as typed tables that DuckDB, Spark, Polars or pandas query directly (`agentnorm
//! export --parquet DIR PATH…`), so that thousands of sessions need no loader of one's own.
//!
//! Tables: `sessions`, `turns`, `requests` (one row per `usage` event), `tool_calls` (start and
//! outcome joined), `messages`, `rate_limits`, `diagnostics`, `unknown`. Every row carries
//! `source` and `session_id`, and the rows made from a line its `line`; `turn` (1-based, per
//! session and file) joins requests, tool calls and messages to their turn, `tool_id` tool calls
//! to their subagent's rows (`parent_tool_id`).
//!
//! [`Tables`] is a [`Sink`] over one input: it builds the rows and hands them out in [`Part`]s
//! to a [`PartWriter`] every [`PART_ROWS`] events and at the end, so memory stays bounded inside
//! a large input; [`Part::write_parquet`] encodes a part as one Parquet file (zstd) into any
//! writer. Where the files go (`DIR/<table>/[day=…/]<input>.parquet`) is the binary's.
//!
//! The columns are written with the `parquet` crate's column writers, not through Arrow: five
//! flat column types need none of Arrow's compute kernels, and leaving them out halves what the
//! formats add to a clean build. The types are the ones Arrow would write (strings as `STRING`,
//! counts as unsigned `INT64`), so DuckDB, Spark and pandas read the same schema.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::Arc;

use parquet::basic::{Compression, IntType, LogicalType, Repetition, Type as Physical};
use parquet::column::writer::ColumnWriter;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use crate::event::sink::Sink;
use crate::event::{Dialect, Event, Usage};

/// One value of a row.
#[derive(Debug, Clone)]
enum V {
    S(Option<String>),
    U(Option<u64>),
    I(Option<i64>),
    F(Option<f64>),
    B(Option<bool>),
}

fn st(v: impl Into<String>) -> V {
    V::S(Some(v.into()))
}
fn os(v: Option<&str>) -> V {
    V::S(v.map(str::to_owned))
}

/// The type of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    /// UTF-8 text (`STRING`).
    Str,
    /// An unsigned count (`INT64`, logical type unsigned 64-bit integer).
    U64,
    /// A signed integer (`INT64`).
    I64,
    /// `DOUBLE`.
    F64,
    /// `BOOLEAN`.
    Bool,
}

const U64: Ty = Ty::U64;
const STR: Ty = Ty::Str;

/// A table: its column names and types and its rows.
#[derive(Debug)]
struct Table {
    name: &'static str,
    cols: &'static [(&'static str, Ty)],
    rows: Vec<(String, Vec<V>)>,
}

impl Table {
    fn new(name: &'static str, cols: &'static [(&'static str, Ty)]) -> Table {
        Table { name, cols, rows: Vec::new() }
    }

    /// Adds a row, filed under the UTC day of `at` (for `--partition day`).
    fn push(&mut self, at: Option<&str>, row: Vec<V>) {
        debug_assert_eq!(row.len(), self.cols.len(), "{}", self.name);
        let day = at.filter(|a| a.len() >= 10).map_or_else(|| "unknown".to_owned(), |a| a[..10].to_owned());
        self.rows.push((day, row));
    }
}

/// The Parquet schema of a table: every column optional (absent values are nulls).
fn schema(cols: &[(&str, Ty)]) -> Result<Type, ParquetError> {
    let fields = cols
        .iter()
        .map(|(name, ty)| {
            let (physical, logical) = match ty {
                Ty::Str => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                Ty::U64 => (Physical::INT64, Some(LogicalType::Integer(IntType { bit_width: 64, is_signed: false }))),
                Ty::I64 => (Physical::INT64, None),
                Ty::F64 => (Physical::DOUBLE, None),
                Ty::Bool => (Physical::BOOLEAN, None),
            };
            let field = Type::primitive_type_builder(name, physical)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(logical)
                .build()?;
            Ok(Arc::new(field))
        })
        .collect::<Result<Vec<_>, ParquetError>>()?;
    Type::group_type_builder("schema").with_fields(fields).build()
}

/// The values of column `i` that are present, and the definition levels (1 present, 0 null).
fn column<T>(rows: &[&Vec<V>], i: usize, get: impl Fn(&V) -> Option<T>) -> (Vec<T>, Vec<i16>) {
    let mut values = Vec::with_capacity(rows.len());
    let mut levels = Vec::with_capacity(rows.len());
    for r in rows {
        match get(&r[i]) {
            Some(v) => {
                values.push(v);
                levels.push(1);
            }
            None => levels.push(0),
        }
    }
    (values, levels)
}

/// Columns every table starts with.
macro_rules! cols {
    ($($n:literal : $t:expr),* $(,)?) => {
        &[("source", STR), ("session_id", STR), $(($n, $t)),*]
    };
}

const SESSIONS: &[(&str, Ty)] = cols![
    "dialect": STR, "model": STR, "cwd": STR, "cli_version": STR, "parent_session_id": STR,
    "started_at": STR, "ended_at": STR, "turns": U64, "requests": U64, "tool_calls": U64,
    "input": U64, "cache_read": U64, "cache_write": U64, "output": U64, "reasoning": U64,
];
const TURNS: &[(&str, Ty)] = cols![
    "turn": U64, "line": U64, "started_at": STR, "ended_at": STR, "status": STR, "error": STR, "failure_kind": STR,
    "duration_ms": U64, "num_turns": U64, "cost_usd": Ty::F64, "usage_scope": STR,
    "cost_scope": STR,
    "input": U64, "cache_read": U64, "cache_write": U64, "output": U64, "reasoning": U64,
];
const REQUESTS: &[(&str, Ty)] = cols![
    "turn": U64, "line": U64, "at": STR, "day": STR, "dialect": STR, "model": STR, "message_id": STR,
    "parent_tool_id": STR, "sidechain": Ty::Bool,
    "input": U64, "cache_read": U64, "cache_write": U64, "output": U64, "reasoning": U64, "context": U64,
    "context_window": U64,
];
const TOOL_CALLS: &[(&str, Ty)] = cols![
    "turn": U64, "tool_id": STR, "name": STR, "kind": STR, "summary": STR, "parent_tool_id": STR,
    "start_line": U64, "end_line": U64, "started_at": STR, "ended_at": STR, "ok": Ty::Bool,
    "duration_ms": U64, "exit_code": Ty::I64, "error": STR, "synthetic": Ty::Bool,
];
const MESSAGES: &[(&str, Ty)] = cols![
    "turn": U64, "line": U64, "at": STR, "role": STR, "message_id": STR, "parent_tool_id": STR, "text": STR,
];
const RATE_LIMITS: &[(&str, Ty)] = cols![
    "line": U64, "at": STR, "window": STR, "window_minutes": U64, "status": STR,
    "used_percent": Ty::F64, "resets_at": STR, "overage_status": STR, "using_overage": Ty::Bool,
];
const DIAGNOSTICS: &[(&str, Ty)] = cols![
    "line": U64, "at": STR, "level": STR, "code": STR, "message": STR, "dedupe_key": STR, "count": U64,
    "subsystem": STR,
];
const UNKNOWN: &[(&str, Ty)] = cols!["line": U64, "at": STR, "reason": STR, "frame": STR, "sample": STR];

fn name<T: serde::Serialize>(v: &T) -> Option<String> {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(str::to_owned))
}

fn usage_cols(u: Option<&Usage>) -> [V; 5] {
    [
        V::U(u.and_then(|u| u.input)),
        V::U(u.and_then(|u| u.cache_read)),
        V::U(u.and_then(|u| u.cache_write)),
        V::U(u.and_then(|u| u.output)),
        V::U(u.and_then(|u| u.reasoning)),
    ]
}

/// What is known of a session while its events go by.
#[derive(Debug, Default)]
struct Sess {
    dialect: Option<Dialect>,
    model: Option<String>,
    cwd: Option<String>,
    cli_version: Option<String>,
    parent: Option<String>,
    started: Option<String>,
    ended: Option<String>,
    turn: u64,
    turn_open: bool,
    turn_started_at: Option<String>,
    awaits_prompt: bool,
    turns: u64,
    requests: u64,
    tools: u64,
    usage: Usage,
}

/// A tool call whose outcome has not come yet.
#[derive(Debug)]
struct OpenTool {
    session: String,
    row: Vec<V>,
}

/// Events after which the rows held are handed out as parts: memory stays bounded within a
/// large input.
pub const PART_ROWS: usize = 65_536;

/// Rows of one table, handed out together: every [`PART_ROWS`] events and at the end, one per
/// table that has rows (and, when the tables are split by day, one per day).
#[derive(Debug)]
pub struct Part<'a> {
    /// The table: `sessions`, `turns`, `requests`, `tool_calls`, `messages`, `rate_limits`,
    /// `diagnostics` or `unknown`.
    pub table: &'static str,
    /// The UTC day of the rows (`YYYY-MM-DD`, `unknown` for rows without a time), when the
    /// tables are split by day.
    pub day: Option<&'a str>,
    /// How many parts of this table were handed out before (0 for the first).
    pub index: usize,
    cols: &'static [(&'static str, Ty)],
    rows: Vec<&'a Vec<V>>,
}

impl Part<'_> {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether there are no rows (a part handed out always has some).
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Encodes the rows as one Parquet file (one row group, zstd) into `w`, and gives `w` back.
    pub fn write_parquet<W: Write + Send>(&self, w: W) -> Result<W, ParquetError> {
        let props = WriterProperties::builder().set_compression(Compression::ZSTD(Default::default())).build();
        let mut file = SerializedFileWriter::new(w, Arc::new(schema(self.cols)?), Arc::new(props))?;
        let mut group = file.next_row_group()?;
        let rows = &self.rows;
        let mut i = 0;
        while let Some(mut col) = group.next_column()? {
            match col.untyped() {
                ColumnWriter::ByteArrayColumnWriter(c) => {
                    let (v, d) = column(rows, i, |v| match v {
                        V::S(Some(s)) => Some(ByteArray::from(s.as_str())),
                        _ => None,
                    });
                    c.write_batch(&v, Some(&d), None)?;
                }
                ColumnWriter::Int64ColumnWriter(c) => {
                    // Unsigned counts are stored in INT64's bits, as the logical type says.
                    let (v, d) = column(rows, i, |v| match v {
                        V::U(x) => x.map(|x| x as i64),
                        V::I(x) => *x,
                        _ => None,
                    });
                    c.write_batch(&v, Some(&d), None)?;
                }
                ColumnWriter::DoubleColumnWriter(c) => {
                    let (v, d) = column(rows, i, |v| match v {
                        V::F(x) => *x,
                        _ => None,
                    });
                    c.write_batch(&v, Some(&d), None)?;
                }
                ColumnWriter::BoolColumnWriter(c) => {
                    let (v, d) = column(rows, i, |v| match v {
                        V::B(x) => *x,
                        _ => None,
                    });
                    c.write_batch(&v, Some(&d), None)?;
                }
                _ => return Err(ParquetError::General(format!("no writer for column {i}"))),
            }
            col.close()?;
            i += 1;
        }
        group.close()?;
        file.into_inner()
    }
}

/// Where the parts of [`Tables`] go (the binary writes them as files).
pub trait PartWriter {
    /// What writing a part can fail with.
    type Error;
    /// Takes one part.
    fn part(&mut self, part: Part<'_>) -> Result<(), Self::Error>;
}

/// Builds the tables of one input and hands them to a [`PartWriter`].
pub struct Tables<W: PartWriter> {
    out: W,
    by_day: bool,
    /// Parts handed out so far, per table; the first error.
    parts: Vec<usize>,
    error: Option<W::Error>,
    held: usize,
    source: Option<String>,
    sessions: BTreeMap<String, Sess>,
    order: Vec<String>,
    open_tools: HashMap<(String, String), OpenTool>,
    tables: Vec<Table>,
}

impl<W: PartWriter> std::fmt::Debug for Tables<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tables")
            .field("by_day", &self.by_day)
            .field("parts", &self.parts)
            .field("failed", &self.error.is_some())
            .field("held", &self.held)
            .finish_non_exhaustive()
    }
}

const T_TURNS: usize = 0;
const T_REQUESTS: usize = 1;
const T_TOOLS: usize = 2;
const T_MESSAGES: usize = 3;
const T_RATE: usize = 4;
const T_DIAG: usize = 5;
const T_UNKNOWN: usize = 6;
const T_SESSIONS: usize = 7;

impl<W: PartWriter> Tables<W> {
    /// Empty tables, handed to `out`; `by_day`: one part per UTC day of the rows (the time of
    /// their line, a session's start, a tool call's start).
    pub fn new(out: W, by_day: bool) -> Tables<W> {
        Tables {
            out,
            by_day,
            parts: vec![0; 8],
            error: None,
            held: 0,
            source: None,
            sessions: BTreeMap::new(),
            order: Vec::new(),
            open_tools: HashMap::new(),
            tables: vec![
                Table::new("turns", TURNS),
                Table::new("requests", REQUESTS),
                Table::new("tool_calls", TOOL_CALLS),
                Table::new("messages", MESSAGES),
                Table::new("rate_limits", RATE_LIMITS),
                Table::new("diagnostics", DIAGNOSTICS),
                Table::new("unknown", UNKNOWN),
                Table::new("sessions", SESSIONS),
            ],
        }
    }

    fn sess(&mut self, id: &str) -> &mut Sess {
        // Looked up without an owned key: this runs for most events.
        if !self.sessions.contains_key(id) {
            self.order.push(id.to_owned());
            self.sessions.insert(id.to_owned(), Sess::default());
        }
        self.sessions.get_mut(id).expect("inserted above")
    }

    /// Ends the session's current turn (opened here when none is) with its `turns` row: `end`
    /// holds the columns from the status to the cost scope.
    fn end_turn(
        &mut self,
        mut row: Vec<V>,
        id: &str,
        line: Option<u64>,
        at: Option<&str>,
        end: [V; 8],
        usage: Option<&Usage>,
    ) {
        let turn = self.activity(id, at);
        let s = self.sess(id);
        s.turn_open = false;
        s.turns += 1;
        let started = s.turn_started_at.clone();
        row.extend([V::U(Some(turn)), V::U(line), V::S(started), os(at)]);
        row.extend(end);
        row.extend(usage_cols(usage));
        self.tables[T_TURNS].push(at, row);
    }

    /// The session's current turn, opened by activity when none is.
    fn activity(&mut self, id: &str, at: Option<&str>) -> u64 {
        let s = self.sess(id);
        if !s.turn_open {
            s.turn += 1;
            s.turn_open = true;
            s.turn_started_at = at.map(str::to_owned);
        }
        s.turn
    }

    /// Hands out what is still held (the rows of what is open at the end of input too) and
    /// gives the writer back, or the first error.
    pub fn finish(mut self) -> Result<W, W::Error> {
        self.close();
        self.flush();
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.out),
        }
    }

    /// Hands the rows held out as parts (one per table, and per day with `by_day`), once
    /// [`PART_ROWS`] events are held and at the end.
    fn flush(&mut self) {
        if self.error.is_some() {
            return;
        }
        for i in 0..self.tables.len() {
            if self.tables[i].rows.is_empty() {
                continue;
            }
            let index = self.parts[i];
            self.parts[i] += 1;
            if let Err(e) = hand_out(&self.tables[i], self.by_day, index, &mut self.out) {
                self.error = Some(e);
                return;
            }
            self.tables[i].rows = Vec::new();
        }
        self.held = 0;
    }

    /// Rows of what is still open at the end of input: tool calls without outcome, sessions.
    fn close(&mut self) {
        let src = self.source.clone();
        let mut open: Vec<_> = self.open_tools.drain().collect();
        open.sort_by(|a, b| a.0.cmp(&b.0));
        for ((_, _), t) in open {
            let at = match &t.row[10] {
                V::S(a) => a.clone(),
                _ => None,
            };
            self.tables[T_TOOLS].push(at.as_deref(), t.row);
            let _ = t.session;
        }
        for id in std::mem::take(&mut self.order) {
            let Some(s) = self.sessions.remove(&id) else { continue };
            let u = s.usage;
            let mut row = vec![
                os(src.as_deref()),
                st(&id),
                V::S(s.dialect.map(|d| d.as_str().to_owned())),
                V::S(s.model),
                V::S(s.cwd),
                V::S(s.cli_version),
                V::S(s.parent),
                V::S(s.started.clone()),
                V::S(s.ended),
                V::U(Some(s.turns)),
                V::U(Some(s.requests)),
                V::U(Some(s.tools)),
            ];
            row.extend(usage_cols(Some(&u)));
            self.tables[T_SESSIONS].push(s.started.as_deref(), row);
        }
    }
}

/// Hands one part of a table out, or one per day with `by_day`.
fn hand_out<W: PartWriter>(t: &Table, by_day: bool, index: usize, out: &mut W) -> Result<(), W::Error> {
    let mut groups: BTreeMap<&str, Vec<&Vec<V>>> = BTreeMap::new();
    for (day, row) in &t.rows {
        groups.entry(if by_day { day.as_str() } else { "" }).or_default().push(row);
    }
    for (day, rows) in groups {
        out.part(Part { table: t.name, day: by_day.then_some(day), index, cols: t.cols, rows })?;
    }
    Ok(())
}

impl<W: PartWriter> Sink for Tables<W> {
    fn event(&mut self, ev: &Event) {
        self.held += 1;
        if self.held >= PART_ROWS {
            self.flush();
        }
        let env = ev.env();
        if let Event::RunStarted { .. } = ev {
            self.source = env.source.clone();
            return;
        }
        let Some(id) = env.session_id.clone() else {
            if let Event::Unknown { reason, frame, sample, .. } = ev {
                let row = vec![
                    os(self.source.as_deref()),
                    V::S(None),
                    V::U(env.line),
                    os(env.at.as_deref()),
                    V::S(name(reason)),
                    os(frame.as_deref()),
                    st(sample.as_str()),
                ];
                self.tables[T_UNKNOWN].push(env.at.as_deref(), row);
            }
            return;
        };
        let src = self.source.clone();
        let at = env.at.as_deref();
        let main = env.parent_tool_id.is_none() && env.sidechain != Some(true);
        {
            let s = self.sess(&id);
            if s.dialect.is_none() {
                s.dialect = env.dialect;
            }
            if s.started.is_none() {
                s.started = at.map(str::to_owned);
            }
            if at.is_some() {
                s.ended = at.map(str::to_owned);
            }
        }
        let head = |id: &str| vec![os(src.as_deref()), st(id)];
        // A `messages` row: the session's head, the turn, line and time, who spoke, the message
        // id, the subagent and the text.
        let message = |turn: u64, role: &str, message_id: Option<&str>, text: std::borrow::Cow<'_, str>| {
            let mut row = head(&id);
            row.extend([
                V::U(Some(turn)),
                V::U(env.line),
                os(at),
                st(role),
                os(message_id),
                os(env.parent_tool_id.as_deref()),
                st(text),
            ]);
            row
        };
        match ev {
            Event::SessionStarted { model, cwd, cli_version, parent_session_id, .. } => {
                let s = self.sess(&id);
                s.model = model.clone().or(s.model.take());
                s.cwd = cwd.clone().or(s.cwd.take());
                s.cli_version = cli_version.clone().or(s.cli_version.take());
                s.parent = parent_session_id.clone().or(s.parent.take());
            }
            Event::TurnStarted { .. } if main => {
                let s = self.sess(&id);
                s.turn += 1;
                s.turn_open = true;
                s.turn_started_at = at.map(str::to_owned);
                s.awaits_prompt = true;
            }
            Event::UserMessage { text, .. } => {
                if main {
                    let s = self.sess(&id);
                    if !s.awaits_prompt {
                        s.turn += 1;
                        s.turn_open = true;
                        s.turn_started_at = at.map(str::to_owned);
                    }
                    s.awaits_prompt = false;
                }
                let turn = self.activity(&id, at);
                let row = message(turn, "user", None, text.as_str());
                self.tables[T_MESSAGES].push(at, row);
            }
            Event::OutputDelta { text, message_id, .. } => {
                let turn = self.activity(&id, at);
                let row = message(turn, "assistant", message_id.as_deref(), text.as_str());
                self.tables[T_MESSAGES].push(at, row);
            }
            Event::Reasoning { text: Some(text), .. } => {
                let turn = self.activity(&id, at);
                let row = message(turn, "reasoning", None, text.as_str());
                self.tables[T_MESSAGES].push(at, row);
            }
            Event::Usage { usage, model, message_id, context_window, .. } => {
                let turn = self.activity(&id, at);
                let s = self.sess(&id);
                s.requests += 1;
                s.usage = add(s.usage, *usage);
                let model = model.clone().or_else(|| s.model.clone());
                let dialect = s.dialect.map(|d| d.as_str().to_owned());
                let mut row = head(&id);
                row.extend([
                    V::U(Some(turn)),
                    V::U(env.line),
                    os(at),
                    os(at.filter(|a| a.len() >= 10).map(|a| &a[..10])),
                    V::S(dialect),
                    V::S(model),
                    os(message_id.as_deref()),
                    os(env.parent_tool_id.as_deref()),
                    V::B(env.sidechain),
                ]);
                row.extend(usage_cols(Some(usage)));
                row.push(V::U(usage.context));
                row.push(V::U(*context_window));
                self.tables[T_REQUESTS].push(at, row);
            }
            Event::ToolStarted { tool_id, name: n, kind, summary, synthetic, .. } => {
                let turn = self.activity(&id, at);
                self.sess(&id).tools += 1;
                let mut row = head(&id);
                row.extend([
                    V::U(Some(turn)),
                    st(tool_id.as_str()),
                    st(n.as_str()),
                    V::S(name(kind)),
                    os(summary.as_deref()),
                    os(env.parent_tool_id.as_deref()),
                    V::U(env.line),
                    V::U(None),
                    os(at),
                    V::S(None),
                    V::B(None),
                    V::U(None),
                    V::I(None),
                    V::S(None),
                    V::B(*synthetic),
                ]);
                self.open_tools.insert((id.clone(), tool_id.clone()), OpenTool { session: id.clone(), row });
            }
            Event::ToolCompleted { tool_id, ok, exit_code, error, duration_ms, .. } => {
                let Some(mut t) = self.open_tools.remove(&(id.clone(), tool_id.clone())) else { return };
                t.row[9] = V::U(env.line);
                t.row[11] = os(at);
                t.row[12] = V::B(Some(*ok));
                t.row[13] = V::U(*duration_ms);
                t.row[14] = V::I(*exit_code);
                t.row[15] = os(error.as_deref());
                let started = match &t.row[10] {
                    V::S(a) => a.clone(),
                    _ => None,
                };
                self.tables[T_TOOLS].push(started.as_deref().or(at), t.row);
            }
            Event::TurnCompleted { usage, usage_scope, cost_usd, cost_scope, duration_ms, num_turns, .. } if main => {
                let end = [
                    st("completed"),
                    V::S(None),
                    V::S(None),
                    V::U(*duration_ms),
                    V::U(*num_turns),
                    V::F(*cost_usd),
                    V::S(usage_scope.as_ref().and_then(name)),
                    V::S(cost_scope.as_ref().and_then(name)),
                ];
                self.end_turn(head(&id), &id, env.line, at, end, usage.as_ref());
            }
            Event::TurnFailed { error, kind, usage, usage_scope, cost_usd, cost_scope, duration_ms, .. } if main => {
                let end = [
                    st("failed"),
                    st(error.as_str()),
                    V::S(kind.as_ref().and_then(name)),
                    V::U(*duration_ms),
                    V::U(None),
                    V::F(*cost_usd),
                    V::S(usage_scope.as_ref().and_then(name)),
                    V::S(cost_scope.as_ref().and_then(name)),
                ];
                self.end_turn(head(&id), &id, env.line, at, end, usage.as_ref());
            }
            Event::Interrupt { .. } if main => {
                let end = [
                    st("interrupted"),
                    V::S(None),
                    V::S(None),
                    V::U(None),
                    V::U(None),
                    V::F(None),
                    V::S(None),
                    V::S(None),
                ];
                self.end_turn(head(&id), &id, env.line, at, end, None);
            }
            Event::RateLimit {
                window,
                window_minutes,
                status,
                used_percent,
                resets_at,
                overage_status,
                using_overage,
                ..
            } => {
                let mut row = head(&id);
                row.extend([
                    V::U(env.line),
                    os(at),
                    st(window.as_str()),
                    V::U(*window_minutes),
                    os(status.as_deref()),
                    V::F(*used_percent),
                    os(resets_at.as_deref()),
                    os(overage_status.as_deref()),
                    V::B(*using_overage),
                ]);
                self.tables[T_RATE].push(at, row);
            }
            Event::Diagnostic { level, code, message, dedupe_key, count, subsystem, .. } => {
                let mut row = head(&id);
                row.extend([
                    V::U(env.line),
                    os(at),
                    V::S(name(level)),
                    st(code.as_str()),
                    st(message.as_str()),
                    st(dedupe_key.as_str()),
                    V::U(Some(*count)),
                    os(subsystem.as_deref()),
                ]);
                self.tables[T_DIAG].push(at, row);
            }
            Event::Unknown { reason, frame, sample, .. } => {
                let mut row = head(&id);
                row.extend([V::U(env.line), os(at), V::S(name(reason)), os(frame.as_deref()), st(sample.as_str())]);
                self.tables[T_UNKNOWN].push(at, row);
            }
            _ => {}
        }
    }
}

fn add(a: Usage, b: Usage) -> Usage {
    let f = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0) + y.unwrap_or(0)),
    };
    Usage {
        input: f(a.input, b.input),
        cache_read: f(a.cache_read, b.cache_read),
        cache_write: f(a.cache_write, b.cache_write),
        output: f(a.output, b.output),
        reasoning: f(a.reasoning, b.reasoning),
        cache_write_1h: f(a.cache_write_1h, b.cache_write_1h),
        context: None,
        service_tier: None,
    }
}
