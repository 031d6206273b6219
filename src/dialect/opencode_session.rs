//! OpenCode's saved messages: what `agentnorm usage` reads of OpenCode, whose `run --format
//! json` stream is not kept anywhere.
//!
//! OpenCode keeps each message's metadata (its "info") as a JSON object: up to 1.1 one file per
//! message, `~/.local/share/opencode/storage/message/<session>/<message>.json` (pretty-printed,
//! read as one frame, SPEC §1); from 1.2 one row of the `message` table of
//! `~/.local/share/opencode/opencode.db`, whose `data` column holds the same object (the
//! database is read into such objects, one per line, by `agentnorm::files`).
//! The message's parts (text, tool calls) live elsewhere (`storage/part/`, the `part` table):
//! this dialect reads usage and sessions, not conversations.
//!
//! An info is `{id, sessionID, role, time: {created, completed}, …}`. An assistant message
//! carries its request's `tokens` (`input` without the cache, `output` without reasoning,
//! `reasoning`, `cache.read`, `cache.write`: the stream's `step_finish` figures, summed over
//! the message's steps), `modelID`, `providerID`, `path.cwd`, OpenCode's own `cost` and, when
//! the request failed, an `error` (`{name, data: {message}}`). A user info says nothing
//! countable: a heartbeat.
//!
//! As in the stream, a turn is several steps, here one assistant info each: `finish:
//! "tool-calls"` goes on in the next info, another `finish` ends the turn with a
//! `turn_completed` whose usage and `cost_usd` (OpenCode's own) are the sums over the turn's
//! infos, and an `error` ends it with a `turn_failed`. The sums are kept per session: a database
//! holds every session, a subagent's infos between its parent's.

use std::collections::HashMap;

use super::opencode::TurnSums;
use super::{Accepts, Adapter, Claim, Cx, Mapped, Own, Piece};
use crate::event::{Envelope, Event, FailureKind, UnknownReason};
use crate::read::frame::Val;

/// The `opencode-session` dialect.
pub(crate) struct OpencodeSession;

impl Adapter for OpencodeSession {
    type Piece = InfoPiece;
    type State = Turns;
    const SAVED_LOG: bool = true;

    const ACCEPTS: Accepts = Accepts::types(&[], Claim::Envelope).untyped();

    fn claim(f: Val<'_>, ty: Option<&str>) -> Claim {
        let info = ty.is_none()
            && f.get("sessionID").is_some_and(|v| v.is_str())
            && f.get("role").is_some_and(|v| v.is_str())
            && f.get("time").is_some_and(|v| v.is_object());
        if info { Claim::Envelope } else { Claim::No }
    }

    fn map(f: Val<'_>, m: &mut Mapped) {
        map(f, m)
    }

    fn fold(turns: &mut Turns, piece: InfoPiece, cx: &mut dyn Cx) {
        let InfoPiece { step, cost_usd, end } = piece;
        let sums = turns.0.entry(cx.session_id().unwrap_or_default().to_owned()).or_default();
        if let Some(Event::Usage { usage, .. }) = &step {
            sums.add(usage, cost_usd);
        }
        if let Some(ev) = step {
            cx.event(ev);
        }
        match end {
            Some(TurnEnd::Completed { stop_reason }) => cx.event(sums.turn_completed(stop_reason)),
            Some(TurnEnd::Failed { error, kind }) => cx.event(sums.turn_failed(error, kind)),
            None => {}
        }
    }
}

/// An assistant info: one step of a turn, and the turn's end when it is the last step.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InfoPiece {
    /// The step's `usage` event.
    step: Option<Event>,
    /// OpenCode's cost of the step.
    cost_usd: Option<f64>,
    /// How the turn ends here, when it does.
    end: Option<TurnEnd>,
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TurnEnd {
    /// The model stopped for a reason other than calling tools.
    Completed {
        /// The `finish` reason.
        stop_reason: Option<String>,
    },
    /// The request failed (the info's `error`).
    Failed {
        /// Its message.
        error: String,
        /// Its kind.
        kind: FailureKind,
    },
}

impl From<InfoPiece> for Piece {
    fn from(p: InfoPiece) -> Piece {
        Piece::Own(Own::OpencodeSession(p))
    }
}

/// The usage and cost of each session's turn so far: a database holds every session, and a
/// subagent's infos come between its parent's.
#[derive(Debug, Default)]
pub(crate) struct Turns(HashMap<String, TurnSums>);

/// Maps one message info.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.session_id = f.string_at("sessionID").filter(|s| !s.is_empty());
    let time = |k: &str| f.path(&["time", k]).and_then(|t| t.u64().map(|n| n.to_string()).or_else(|| t.str().map(str::to_owned)));
    // A request is dated when it ended (its usage is known then), else when it began.
    m.at = time("completed").or_else(|| time("created"));
    let Some(role) = f.str_at("role") else {
        return m.unknown(UnknownReason::MalformedFrame, None);
    };
    m.set_frame("message", role);
    match role {
        "assistant" => assistant(f, m),
        "user" => m.heartbeat(),
        _ => m.unknown(UnknownReason::UnrecognizedFrame, None),
    }
}

fn assistant(f: Val<'_>, m: &mut Mapped) {
    // The assistant's info is the one naming the folder and the model: the session starts here
    // (written once per session by the fold).
    m.push(Event::SessionStarted {
        env: Envelope::default(),
        model: f.string_at("modelID"),
        cwd: f.path(&["path", "cwd"]).and_then(|c| c.str()).map(str::to_owned),
        cli_version: None,
        permission_mode: None,
        tools: None,
        parent_session_id: None,
    });
    // A request that failed before the model answered reports zeros: nothing was used.
    let usage = f
        .get("tokens")
        .filter(|t| t.is_object())
        .map(super::opencode::counters)
        .filter(|u| [u.input, u.cache_read, u.cache_write, u.output].iter().any(|n| n.unwrap_or(0) > 0));
    let step = usage.map(|usage| Event::Usage {
        env: Envelope::default(),
        usage: super::usage::with_context(usage),
        model: f.string_at("modelID"),
        message_id: f.string_at("id"),
        context_window: None,
    });
    let finish = f.string_at("finish");
    let end = match f.get("error").filter(|e| e.is_object()) {
        Some(err) => {
            let (error, kind) = super::opencode::named_error(Some(err));
            Some(TurnEnd::Failed { error, kind })
        }
        // `tool-calls`: the turn goes on in the next info; none yet: still running.
        None if finish.is_some() && finish.as_deref() != Some("tool-calls") => {
            Some(TurnEnd::Completed { stop_reason: finish })
        }
        None => None,
    };
    m.push_piece(InfoPiece { step, cost_usd: f.f64_at("cost"), end });
}
