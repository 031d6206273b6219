//! `opencode run --format json`: one `{type, timestamp, sessionID, part | error}` object per line.
//!
//! OpenCode prints the parts of its main session as they finish: `step_start` / `step_finish`
//! around each model request, `text` and `reasoning` parts once complete, a `tool_use` part only
//! once the call has ended, `error` from a session error, and (newer builds) `done` when the
//! session goes idle. Its quirks:
//! - There is no `init` frame and no model name: every line carries `sessionID`, and the first
//!   line of a new id gives the `session_started` (the fold writes it once per id).
//! - `timestamp` is epoch milliseconds.
//! - A tool call has no start frame: its one `tool_use` line makes both `tool_started` and
//!   `tool_completed`, paired by `part.callID` (not `part.id`). Exit codes are in
//!   `state.metadata.exit` (or `exitCode` in some builds), the duration in `state.time`. OpenCode
//!   calls a command that ran `completed` whatever its exit code: a non-zero exit makes `ok`
//!   false, as for the other CLIs.
//! - A turn is several steps (one per model request). Every `step_finish` is a `usage` event; the
//!   one whose `reason` is not `tool-calls` (or that has no `reason`) ends the turn, and its
//!   `turn_completed` carries the usage and cost summed over the turn's steps
//!   ([`StepPiece::StepFinish`]). `done` completes a turn that has no `turn_completed` yet.
//! - `tokens.output` leaves reasoning out; SPEC §4 adds it back (`counters`).

use super::{Accepts, Adapter, Claim, Cx, Mapped, NO_ID, Outcome, Own, Piece, Verdict, content_text, failure_kind, one_line, summary, unlisted_kind};
use crate::dialect::usage;
use crate::event::{Envelope, Event, FailureKind, Level, ToolKind, UnknownReason, Usage};
use crate::read::frame::Val;

/// The `opencode` dialect.
pub(crate) struct Opencode;

impl Adapter for Opencode {
    type Piece = StepPiece;
    type State = Steps;

    const ACCEPTS: Accepts = Accepts::types(
        &[&["step_start", "step_finish", "text", "reasoning", "done", "tool_use", "error"]],
        Claim::Marked,
    );

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        let ours = f.get("sessionID").is_some() || f.get("part").is_some();
        match ty {
            Some("step_start" | "step_finish" | "text" | "reasoning" | "done") => Claim::Marked,
            // Gemini writes `tool_use` too, without OpenCode's `sessionID` / `part`.
            Some("tool_use") if ours => Claim::Marked,
            Some("error") if f.get("sessionID").is_some() || f.get("error").is_some_and(|e| e.is_object()) => {
                Claim::Marked
            }
            _ => Claim::No,
        }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(steps: &mut Steps, piece: StepPiece, cx: &mut dyn Cx) {
        match piece {
            StepPiece::StepStart => {
                if !cx.turn_started() {
                    cx.event(Event::TurnStarted { env: Envelope::default() });
                }
            }
            StepPiece::StepFinish { event, cost_usd, ends_turn, stop_reason } => {
                if let Event::Usage { usage, .. } = &event {
                    steps.sums.add(usage, cost_usd);
                }
                cx.event(event);
                if ends_turn {
                    cx.event(steps.sums.turn_completed(stop_reason));
                }
            }
            StepPiece::Done => {
                if cx.turn_open() || cx.turn_started() {
                    cx.event(steps.sums.turn_completed(None));
                }
            }
            StepPiece::Call { call_id, part_id, mut events } => {
                if let Some(id) = steps.calls.tool_id(call_id, part_id) {
                    for ev in &mut events {
                        if let Event::ToolStarted { tool_id, .. } | Event::ToolCompleted { tool_id, .. } = ev {
                            tool_id.clone_from(&id);
                        }
                    }
                }
                for ev in events {
                    cx.event(ev);
                }
            }
        }
    }

    fn turn_ended(steps: &mut Steps) {
        // The call ids seen outlive the turn: providers reuse theirs in later turns.
        let calls = std::mem::take(&mut steps.calls);
        *steps = Steps { calls, ..Steps::default() };
    }
}

/// OpenCode's own pieces: the steps of a multi-step turn.
// Pieces live a moment in a per-line list: boxing the large variant would cost a malloc each.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StepPiece {
    /// One step of a turn began (`step_start`): a `turn_started` when no turn is open yet.
    StepStart,
    /// One step of a turn ended with its usage (`step_finish`): a `usage` event for the step;
    /// when it ends the turn, a `turn_completed` whose usage and cost are the sums over the
    /// turn's steps.
    StepFinish {
        /// The `usage` event of the step.
        event: Event,
        /// The step's cost.
        cost_usd: Option<f64>,
        /// Whether the step ends the turn.
        ends_turn: bool,
        /// Why the step ended.
        stop_reason: Option<String>,
    },
    /// The agent went idle (`done`): a `turn_completed` when the turn has none yet.
    Done,
    /// A finished call's events (`tool_started`, its plan / question, `tool_completed`), keyed by
    /// `part.callID`; when another part already used that `callID` (providers whose ids are only
    /// unique within one response, `run_shell_command_0`, …), they are keyed by the part's own
    /// `part.id` instead, so the call is not taken for a repeat and keeps its outcome.
    Call {
        /// `part.callID`.
        call_id: Option<String>,
        /// `part.id`.
        part_id: Option<String>,
        /// The call's events, keyed by `call_id` (else `part_id`).
        events: Vec<Event>,
    },
}

impl From<StepPiece> for Piece {
    fn from(p: StepPiece) -> Piece {
        Piece::Own(Own::Opencode(p))
    }
}

/// The sums over a turn's steps, and the call ids of the stream.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    sums: TurnSums,
    calls: CallIds,
}

/// The usage and cost summed over the steps of one turn (OpenCode reports them per step).
#[derive(Debug, Default)]
pub(crate) struct TurnSums {
    usage: Option<Usage>,
    cost: Option<f64>,
}

/// Which part first used each `callID` in the stream.
#[derive(Debug, Default)]
struct CallIds(std::collections::HashMap<String, String>);

/// A bound on the `callID`s remembered (a long stream of unique ids would grow the map forever;
/// reuse happens within a session's recent turns).
const CALL_IDS_KEPT: usize = 1 << 14;

impl CallIds {
    /// The id a part's call is keyed by when it is not its `callID`: its own `part.id`, when
    /// another part already used the `callID`.
    fn tool_id(&mut self, call_id: Option<String>, part_id: Option<String>) -> Option<String> {
        let (call_id, part_id) = (call_id?, part_id?);
        match self.0.get(&call_id) {
            Some(first) if *first != part_id => Some(part_id),
            Some(_) => None,
            None => {
                if self.0.len() >= CALL_IDS_KEPT {
                    self.0.clear();
                }
                self.0.insert(call_id, part_id);
                None
            }
        }
    }
}

impl TurnSums {
    /// Adds one step.
    pub(crate) fn add(&mut self, u: &Usage, cost: Option<f64>) {
        self.usage = Some(usage::add(self.usage.unwrap_or_default(), *u));
        if let Some(c) = cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
    }

    /// The turn's `turn_completed`, with the sums; starts a new turn.
    pub(crate) fn turn_completed(&mut self, stop_reason: Option<String>) -> Event {
        Event::TurnCompleted {
            env: Envelope::default(),
            usage: self.usage.take(),
            usage_scope: None,
            cost_scope: None,
            cost_usd: self.cost.take(),
            duration_ms: None,
            num_turns: None,
            result: None,
            stop_reason,
            model_usage: None,
        }
    }

    /// The turn's `turn_failed`, with the sums; starts a new turn.
    pub(crate) fn turn_failed(&mut self, error: String, kind: FailureKind) -> Event {
        Event::TurnFailed {
            env: Envelope::default(),
            error,
            kind: Some(kind),
            usage: self.usage.take(),
            usage_scope: None,
            cost_scope: None,
            cost_usd: self.cost.take(),
            duration_ms: None,
            model_usage: None,
        }
    }
}

/// Maps one OpenCode frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.session_id = f.string_at("sessionID");
    m.at = f.get("timestamp").and_then(|t| {
        t.str().map(str::to_owned).or_else(|| t.u64().map(|n| n.to_string())).or_else(|| t.f64().map(|n| n.to_string()))
    });
    let Some(ty) = f.str_at("type") else {
        return m.unknown(UnknownReason::UnrecognizedFrame, None);
    };
    m.frame = ty.to_owned();
    if m.session_id.is_some() {
        // Written once per new id by the fold.
        m.push(super::session_started());
    }
    let part = f.get("part").filter(|p| p.is_object());
    match (ty, part) {
        ("step_start", _) => m.push_piece(StepPiece::StepStart),
        ("text", Some(p)) => match p.text_at("text") {
            // OpenCode prints a text part once, complete; an empty one says nothing.
            Some(text) if !text.is_empty() => {
                m.push(Event::OutputDelta { env: Envelope::default(), text, message_id: p.string_at("messageID") })
            }
            Some(_) => m.heartbeat(),
            None => m.unknown(UnknownReason::MalformedFrame, None),
        },
        ("reasoning", Some(p)) => {
            let text = p.text_at("text").filter(|t| !t.is_empty());
            m.push(Event::Reasoning { env: Envelope::default(), text });
        }
        ("tool_use", Some(p)) => tool_use(p, m),
        ("step_finish", Some(p)) => step_finish(p, m),
        ("error", _) => error(f, m),
        ("done", _) => {
            m.push_piece(StepPiece::Done);
            // Permissions `opencode run` auto-rejected (it asks nobody): `question`, `plan_enter`, …
            let rejected: Vec<String> =
                f.array_at("rejected").map(|a| a.filter_map(|r| r.str().map(str::to_owned)).collect()).unwrap_or_default();
            if !rejected.is_empty() {
                let mut names = rejected.clone();
                names.sort();
                names.dedup();
                let message = format!("permission auto-rejected: {}", names.join(", "));
                m.push(super::diagnostic(Level::Warning, "opencode.permission.rejected", message, rejected));
            }
        }
        ("text" | "reasoning" | "tool_use" | "step_finish", None) => m.unknown(UnknownReason::MalformedFrame, None),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

/// OpenCode's tool ids (`part.tool`) onto kinds (SPEC §3): its built-in tools, all lowercase
/// (`apply_patch` is what it gives GPT models instead of `edit`); `mcp__<server>__<tool>` is mcp.
fn tool_kind(name: &str) -> ToolKind {
    match name {
        "bash" => ToolKind::Shell,
        "read" | "list" | "todoread" => ToolKind::Read,
        "write" => ToolKind::Write,
        "edit" | "multiedit" | "patch" | "apply_patch" => ToolKind::Edit,
        "glob" | "grep" => ToolKind::Search,
        "webfetch" => ToolKind::Fetch,
        "websearch" | "codesearch" => ToolKind::WebSearch,
        "task" => ToolKind::Task,
        "todowrite" => ToolKind::Plan,
        "question" => ToolKind::Ask,
        n => unlisted_kind(n),
    }
}

fn tool_use(p: Val<'_>, m: &mut Mapped) {
    let (Some(name), Some(state)) = (p.str_at("tool"), p.get("state").filter(|s| s.is_object())) else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    let (call_id, part_id) = (p.string_at("callID"), p.string_at("id"));
    let tool_id = call_id.clone().or_else(|| part_id.clone()).unwrap_or_else(|| NO_ID.to_owned());
    let kind = tool_kind(name);
    let before = m.pieces.len();
    let input = state.get("input").filter(|v| !v.is_null());
    // The command, path, pattern, … as for every CLI (OpenCode spells paths `filePath`), else
    // the title OpenCode shows for the call.
    let summary = summary(kind, input)
        .or_else(|| input.and_then(|i| i.str_at("filePath")).and_then(one_line))
        .or_else(|| state.str_at("title").and_then(one_line));
    m.tool_started(tool_id.clone(), name, kind, input.map(|v| v.to_json()), summary);
    if let Some(extra) = super::call_extra(kind, input) {
        m.push(extra);
    }
    let meta = state.get("metadata");
    let exit_code = meta.and_then(|md| md.get("exit").or_else(|| md.get("exitCode"))).and_then(|c| c.i64());
    let verdict = match state.str_at("status") {
        // OpenCode calls a command that ran `completed` whatever its exit code; as for every
        // CLI, a non-zero exit is a failed call.
        Some("completed") => Verdict::Succeeded,
        Some("error") => Verdict::Failed,
        // `pending` / `running` (not printed by `opencode run`, which waits for the end): the
        // call has only started.
        _ => return,
    };
    let time = state.get("time");
    let duration_ms = match (time.and_then(|t| t.u64_at("start")), time.and_then(|t| t.u64_at("end"))) {
        (Some(s), Some(e)) => e.checked_sub(s),
        _ => None,
    };
    let done = Outcome {
        verdict: Some(verdict),
        exit_code,
        error: state.get("error").and_then(|e| e.str().or_else(|| e.str_at("message"))).map(str::to_owned),
        output: state.get("output").and_then(content_text),
        duration_ms,
        ..Outcome::new(tool_id)
    };
    m.push(done.event());
    // The call's events go through the fold together, which knows the `callID`s used so far.
    let events = m
        .pieces
        .drain(before..)
        .filter_map(|p| match p {
            Piece::Event(e) => Some(e),
            _ => None,
        })
        .collect();
    m.push_piece(StepPiece::Call { call_id, part_id, events });
}

fn step_finish(p: Val<'_>, m: &mut Mapped) {
    let reason = p.string_at("reason");
    let ends_turn = reason.as_deref() != Some("tool-calls");
    let figures = p.get("tokens").filter(|t| t.is_object()).map(counters).and_then(usage::non_empty);
    let event = match figures {
        Some(u) => Event::Usage {
            env: Envelope::default(),
            usage: usage::with_context(u),
            model: None,
            message_id: p.string_at("messageID"),
            context_window: None,
        },
        // A step without token counts still ends its step (and maybe its turn).
        None => Event::heartbeat("step_finish"),
    };
    m.push_piece(StepPiece::StepFinish { event, cost_usd: p.f64_at("cost"), ends_turn, stop_reason: reason });
}

fn error(f: Val<'_>, m: &mut Mapped) {
    let (message, kind) = named_error(f.get("error"));
    m.push(TurnSums::default().turn_failed(message, kind));
}

/// An OpenCode error (`{name, data: {message}}`, a message, a string): its message and kind.
/// OpenCode's named errors: `ProviderAuthError`, `MessageAbortedError`, `APIError`,
/// `MessageOutputLengthError`, `UnknownError`, …
pub(crate) fn named_error(err: Option<Val<'_>>) -> (String, FailureKind) {
    let name = err.and_then(|e| e.str_at("name"));
    let message = err
        .and_then(|e| {
            e.path(&["data", "message"])
                .and_then(|v| v.str())
                .or_else(|| e.str_at("message"))
                .or_else(|| e.str())
                .filter(|s| !s.is_empty())
        })
        .or(name)
        .unwrap_or("error")
        .to_owned();
    let kind = match name {
        Some("ProviderAuthError") => FailureKind::Auth,
        Some("MessageAbortedError") => FailureKind::Aborted,
        Some("APIError") => FailureKind::ApiError,
        _ => failure_kind(&message),
    };
    (message, kind)
}

/// OpenCode `step_finish.part.tokens`: `output + reasoning` is the output (its `output` leaves
/// reasoning out), `cache.read` / `cache.write`.
pub(crate) fn counters(t: Val<'_>) -> Usage {
    let reasoning = t.u64_at("reasoning");
    let output = t.u64_at("output");
    Usage {
        input: t.u64_at("input"),
        cache_read: t.path(&["cache", "read"]).and_then(|v| v.u64()),
        cache_write: t.path(&["cache", "write"]).and_then(|v| v.u64()),
        output: match (output, reasoning) {
            (None, None) => None,
            (o, r) => o.unwrap_or(0).checked_add(r.unwrap_or(0)),
        },
        reasoning,
        context: None,
        ..Usage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(line: &str, f: fn(crate::read::frame::Val<'_>) -> crate::event::Usage) -> crate::event::Usage {
        crate::read::frame::Parser::default().with_frame(line.as_bytes(), |v| f(v.unwrap()))
    }

    #[test]
    fn output_adds_reasoning_back() {
        let o = counted(r#"{"input":671,"output":8,"reasoning":3,"cache":{"read":21415,"write":0}}"#, counters);
        assert_eq!(
            (o.input, o.cache_read, o.cache_write, o.output, o.reasoning),
            (Some(671), Some(21415), Some(0), Some(11), Some(3))
        );
        assert_eq!(crate::dialect::usage::add(o, o).output, Some(22));
    }

    use crate::dialect::assert_kinds;

    #[test]
    fn opencode_tool_names() {
        use ToolKind::*;
        assert_kinds(
            tool_kind,
            &[
                ("bash", Shell),
                ("read", Read),
                ("list", Read),
                ("todoread", Read),
                ("write", Write),
                ("edit", Edit),
                ("multiedit", Edit),
                ("patch", Edit),
                ("apply_patch", Edit),
                ("glob", Search),
                ("grep", Search),
                ("webfetch", Fetch),
                ("websearch", WebSearch),
                ("codesearch", WebSearch),
                ("task", Task),
                ("todowrite", Plan),
                ("question", Ask),
                ("mcp__tracker__create_issue", Mcp),
                ("skill", Other),
                // Claude's, Codex's and Gemini's names.
                ("Bash", Other),
                ("shell", Other),
                ("read_file", Other),
                ("web_fetch", Other),
            ],
        );
    }
}
