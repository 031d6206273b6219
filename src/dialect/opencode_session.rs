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
//! the request failed, an `error` (`{name, data: {message}}`). A user message says nothing
//! countable: a heartbeat.

use super::{Accepts, Adapter, Claim, Mapped, diagnostic};
use crate::event::{Envelope, Event, Level, UnknownReason};
use crate::read::frame::Val;

/// The `opencode-session` dialect.
pub(crate) struct OpencodeSession;

impl Adapter for OpencodeSession {
    type Piece = std::convert::Infallible;
    type State = ();
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
}

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
    if let Some(usage) = usage {
        m.push(Event::Usage {
            env: Envelope::default(),
            usage: super::usage::with_context(usage),
            model: f.string_at("modelID"),
            message_id: f.string_at("id"),
            context_window: None,
        });
    }
    if let Some(err) = f.get("error").filter(|e| e.is_object()) {
        let name = err.str_at("name").unwrap_or("error");
        let message = err.path(&["data", "message"]).and_then(|v| v.str()).unwrap_or(name).to_owned();
        m.push(diagnostic(Level::Error, "opencode.message.error", message, Vec::new()));
    }
}

