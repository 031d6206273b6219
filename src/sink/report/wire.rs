//! One input's collected usage as bytes and back: what the usage cache of `agentnorm usage`
//! keeps per log file, so that a re-run over unchanged logs reads none of them again.
//!
//! The input's name is not kept (a later run may name the same file otherwise). The form is
//! postcard (compact serde binary) over mirror types of [`InputUsage`] that skip no
//! field (the JSON types skip absent ones, which a format without field names cannot do), with
//! every string of an input (session ids, models, folders) held once and referred to by index:
//! decoded, an input shares one `Arc<str>` per name again, as the [`Collector`] made it.
//!
//! [`Collector`]: super::Collector

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{InputUsage, RateReading, Request, Turn, TurnEnd};
use crate::event::{Dialect, ServiceTier, Usage};

/// Why cached bytes could not be read back (another build's cache, or a damaged file).
#[derive(Debug, thiserror::Error)]
#[error("unreadable cached usage: {0}")]
pub struct WireError(#[from] postcard::Error);

/// `Usage` with no skipped field.
#[derive(Serialize, Deserialize)]
struct WUsage(
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<u64>,
    Option<ServiceTier>,
);

impl From<&Usage> for WUsage {
    fn from(u: &Usage) -> WUsage {
        let Usage { input, cache_read, cache_write, output, reasoning, context, cache_write_1h, service_tier } = *u;
        WUsage(input, cache_read, cache_write, output, reasoning, context, cache_write_1h, service_tier)
    }
}

impl From<WUsage> for Usage {
    fn from(w: WUsage) -> Usage {
        let WUsage(input, cache_read, cache_write, output, reasoning, context, cache_write_1h, service_tier) = w;
        Usage { input, cache_read, cache_write, output, reasoning, context, cache_write_1h, service_tier }
    }
}

#[derive(Serialize, Deserialize)]
struct WRequest {
    message_id: Option<u64>,
    model: Option<u32>,
    at_ms: Option<i64>,
    at_key: Option<u64>,
    first_ms: Option<i64>,
    usage: WUsage,
    subagent: bool,
}

#[derive(Serialize, Deserialize)]
struct WEnd {
    usage: Option<WUsage>,
    cost: Option<f64>,
    at_ms: Option<i64>,
    at_key: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct WTurn {
    session: Option<u32>,
    dialect: Option<Dialect>,
    model: Option<u32>,
    last_ms: Option<i64>,
    cwd: Option<u32>,
    requests: Vec<WRequest>,
    end: Option<WEnd>,
}

#[derive(Serialize, Deserialize)]
struct WRate {
    window: String,
    window_minutes: Option<u64>,
    status: Option<String>,
    used_percent: Option<f64>,
    resets_at: Option<String>,
    at: Option<String>,
}

/// The turns come last: [`decode_head`] reads what is before them ([`WHead`]) alone.
#[derive(Serialize, Deserialize)]
struct WInput {
    strings: Vec<String>,
    rate_limits: Vec<WRate>,
    waiting: Vec<WWaiting>,
    turns: Vec<WTurn>,
}

/// The fields of [`WInput`] before its turns.
#[derive(Deserialize)]
struct WHead {
    strings: Vec<String>,
    rate_limits: Vec<WRate>,
    waiting: Vec<WWaiting>,
}

/// A session at the end of an input ([`super::Waiting`]), its strings by index.
type WWaiting = (Option<u32>, [Option<String>; 2], Option<u32>);

/// Gives each distinct string an index, in first-seen order.
#[derive(Default)]
struct Strings<'a> {
    index: HashMap<&'a str, u32>,
    list: Vec<String>,
}

impl<'a> Strings<'a> {
    fn of(&mut self, s: &'a Option<Arc<str>>) -> Option<u32> {
        let s = s.as_deref()?;
        let next = self.list.len() as u32;
        Some(*self.index.entry(s).or_insert_with(|| {
            self.list.push(s.to_owned());
            next
        }))
    }
}

/// `input` as bytes ([`decode`] reads them back).
pub fn encode(input: &InputUsage) -> Vec<u8> {
    let mut strings = Strings::default();
    let turns = input
        .turns
        .iter()
        .map(|t| WTurn {
            session: strings.of(&t.session),
            dialect: t.dialect,
            model: strings.of(&t.model),
            last_ms: t.last_ms,
            cwd: strings.of(&t.cwd),
            requests: t
                .requests
                .iter()
                .map(|r| WRequest {
                    message_id: r.message_id,
                    model: strings.of(&r.model),
                    at_ms: r.at_ms,
                    at_key: r.at_key,
                    first_ms: r.first_ms,
                    usage: (&r.usage).into(),
                    subagent: r.subagent,
                })
                .collect(),
            end: t.end.as_ref().map(|e| WEnd {
                usage: e.usage.as_ref().map(WUsage::from),
                cost: e.cost,
                at_ms: e.at_ms,
                at_key: e.at_key,
            }),
        })
        .collect();
    let rate_limits = input
        .rate_limits
        .iter()
        .map(|r| WRate {
            window: r.window.clone(),
            window_minutes: r.window_minutes,
            status: r.status.clone(),
            used_percent: r.used_percent,
            resets_at: r.resets_at.clone(),
            at: r.at.clone(),
        })
        .collect();
    let waiting =
        input.waiting.iter().map(|(id, first, cwd)| (strings.of(id), first.clone(), strings.of(cwd))).collect();
    let w = WInput { strings: strings.list, rate_limits, waiting, turns };
    // Serializing plain structs into a Vec cannot fail.
    postcard::to_stdvec(&w).unwrap_or_default()
}

/// The input that [`encode`] wrote, read from `source` (its place among the inputs is set
/// again by the caller).
pub fn decode(bytes: &[u8], source: Option<String>) -> Result<InputUsage, WireError> {
    let w: WInput = postcard::from_bytes(bytes)?;
    assemble(WHead { strings: w.strings, rate_limits: w.rate_limits, waiting: w.waiting }, w.turns, source)
}

/// What [`decode`] gives without the turns (their bytes are not read): the input's rate-limit
/// readings and what it left waiting, which is what reading the rest of the same log on starts
/// from ([`super::Collector::waiting_from`]).
pub fn decode_head(bytes: &[u8], source: Option<String>) -> Result<InputUsage, WireError> {
    let (head, _turns) = postcard::take_from_bytes::<WHead>(bytes)?;
    assemble(head, Vec::new(), source)
}

/// The input of the strings, readings and waiting times of `w` and the turns `wturns`.
fn assemble(w: WHead, wturns: Vec<WTurn>, source: Option<String>) -> Result<InputUsage, WireError> {
    let strings: Vec<Arc<str>> = w.strings.into_iter().map(Arc::from).collect();
    let name = |i: Option<u32>| -> Result<Option<Arc<str>>, WireError> {
        match i {
            None => Ok(None),
            Some(i) => {
                strings.get(i as usize).cloned().map(Some).ok_or(WireError(postcard::Error::DeserializeBadEncoding))
            }
        }
    };
    let mut turns = Vec::with_capacity(wturns.len());
    for t in wturns {
        let mut requests = Vec::with_capacity(t.requests.len());
        for r in t.requests {
            requests.push(Request {
                message_id: r.message_id,
                model: name(r.model)?,
                at_ms: r.at_ms,
                at_key: r.at_key,
                first_ms: r.first_ms,
                usage: r.usage.into(),
                subagent: r.subagent,
            });
        }
        turns.push(Turn {
            session: name(t.session)?,
            dialect: t.dialect,
            model: name(t.model)?,
            last_ms: t.last_ms,
            cwd: name(t.cwd)?,
            requests,
            end: t.end.map(|e| TurnEnd {
                usage: e.usage.map(Usage::from),
                cost: e.cost,
                at_ms: e.at_ms,
                at_key: e.at_key,
            }),
        });
    }
    let rate_limits = w
        .rate_limits
        .into_iter()
        .map(|r| RateReading {
            window: r.window,
            window_minutes: r.window_minutes,
            status: r.status,
            used_percent: r.used_percent,
            resets_at: r.resets_at,
            at: r.at,
        })
        .collect();
    let waiting = w
        .waiting
        .into_iter()
        .map(|(id, first, cwd)| Ok((name(id)?, first, name(cwd)?)))
        .collect::<Result<_, WireError>>()?;
    Ok(InputUsage { source, order: 0, turns, rate_limits, waiting })
}
