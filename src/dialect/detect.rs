//! Dialect detection from the structure of each frame (SPEC §2), never from a model name.
//!
//! [`fit`] is stateless: it says which dialects a frame could belong to and whether it
//! belongs to one of them only. [`Detector`] holds the per-stream stickiness: the first frame that
//! decides fixes the dialect for the ambiguous frames after it, and a frame that clearly belongs
//! to another dialect switches.

use crate::event::Dialect;
use crate::read::frame::Val;

/// A set of dialects a frame fits: one bit per registry line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fit(u64);

impl Fit {
    /// No dialect.
    pub const NONE: Fit = Fit(0);
    /// How many dialects a set can hold (checked against the registry at compile time).
    pub const CAPACITY: usize = u64::BITS as usize;

    fn bit(d: Dialect) -> u64 {
        1 << d.index()
    }

    /// The set holding `d` only.
    pub fn only(d: Dialect) -> Fit {
        Fit(Fit::bit(d))
    }

    /// This set plus `d`.
    pub fn with(self, d: Dialect) -> Fit {
        Fit(self.0 | Fit::bit(d))
    }

    /// The dialects of both sets.
    pub fn union(self, other: Fit) -> Fit {
        Fit(self.0 | other.0)
    }

    /// Whether `d` is in the set.
    pub fn contains(self, d: Dialect) -> bool {
        self.0 & Fit::bit(d) != 0
    }

    /// True for the empty set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The dialect when the set holds exactly one.
    pub fn single(self) -> Option<Dialect> {
        (self.0.count_ones() == 1).then(|| self.iter().next()).flatten()
    }

    /// The dialects in the set, in registry order (the preferred one first).
    pub fn iter(self) -> impl Iterator<Item = Dialect> {
        Dialect::ALL.iter().copied().filter(move |d| self.contains(*d))
    }
}

/// Which dialects a frame fits, from its structure alone: those whose adapters claim it most
/// strongly ([`super::Adapter::claim`]).
pub(crate) fn fit(frame: Val<'_>) -> Fit {
    super::registry::fit(frame)
}

/// What [`Detector::decide`] makes of `frame` in a stream whose dialect so far is exactly
/// `current` (the fold's own detector, not a guess), as a fit: only `current` when its adapter
/// claims the frame with its whole envelope (the strongest claim, so the detector keeps it
/// whatever ties with it; the other adapters are not asked), else [`fit`].
pub(crate) fn fit_in(frame: Val<'_>, current: Option<Dialect>) -> Fit {
    match current {
        Some(d) if super::registry::claims_envelope(d, frame) => Fit::only(d),
        _ => fit(frame),
    }
}

/// What a decoder ahead of the fold knows, or guesses, of the stream's [`Detector`]: the dialects
/// it may have fixed, and whether it may have fixed none yet.
///
/// A line is mapped only by the adapters of the dialects the detector may pick for it
/// ([`Possible::decide`]), not by every adapter its frame fits: a Claude frame ties with Qwen
/// Code's (which writes the same frames), and mapping it twice was a fifth of the work of a
/// Claude stream. The fold still decides with the [`Detector`] itself, and maps the line again
/// if the dialect it picks was not among them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Possible {
    fixed: Fit,
    undecided: bool,
}

impl Possible {
    /// Nothing is known: any dialect, or none yet (a chunk decoded on another thread).
    pub const ANY: Possible = Possible { fixed: Fit(u64::MAX), undecided: true };

    /// Exactly the state of `detector` (the fold's own, on one thread).
    pub fn of(detector: &Detector) -> Possible {
        Possible::state(detector.current)
    }

    /// The one state of a detector whose dialect so far is `current` (known, or guessed: a
    /// worker takes the stream's dialect as of the last chunk folded).
    pub fn state(current: Option<Dialect>) -> Possible {
        match current {
            Some(d) => Possible { fixed: Fit::only(d), undecided: false },
            None => Possible { fixed: Fit::NONE, undecided: true },
        }
    }

    /// The dialects [`Detector::decide`] may answer for a frame that fits `fit`, from any state
    /// this holds; this becomes the states it may leave.
    pub fn decide(&mut self, fit: Fit) -> Fit {
        let Some(first) = fit.iter().next() else { return Fit::NONE };
        if fit.single().is_some() {
            *self = Possible { fixed: fit, undecided: false };
            return fit;
        }
        // A state the frame fits is kept; any other (or none) gives way to the preferred one.
        let mut out = Fit(self.fixed.0 & fit.0);
        if self.undecided || self.fixed.0 & !fit.0 != 0 {
            out = out.with(first);
        }
        *self = Possible { fixed: out, undecided: false };
        out
    }
}

/// Per-stream dialect stickiness.
#[derive(Debug, Clone, Default)]
pub struct Detector {
    forced: Option<Dialect>,
    current: Option<Dialect>,
}

impl Detector {
    /// A detector that always answers `forced` when given.
    pub fn new(forced: Option<Dialect>) -> Detector {
        Detector { forced, current: forced }
    }

    /// The dialect fixed so far.
    pub fn current(&self) -> Option<Dialect> {
        self.current
    }

    /// Decides the dialect of a frame that fits `fit`, updating the stream's dialect.
    pub fn decide(&mut self, fit: Fit) -> Option<Dialect> {
        if self.forced.is_some() {
            return self.forced;
        }
        if let Some(d) = fit.single() {
            self.current = Some(d);
            return Some(d);
        }
        match self.current {
            Some(cur) if fit.contains(cur) => Some(cur),
            _ => {
                let d = fit.iter().next()?;
                self.current = Some(d);
                Some(d)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::frame::Parser;

    fn fit_of(line: &str) -> Fit {
        Parser::default().with_frame(line.as_bytes(), |v| fit(v.unwrap()))
    }

    #[test]
    fn structure_decides() {
        assert_eq!(fit_of(r#"{"type":"thread.started","thread_id":"t"}"#).single(), Some(Dialect::Codex));
        // A bare error fits Codex (preferred), Gemini, droid and Grok: a stream of any of them
        // keeps its dialect.
        let bare = fit_of(r#"{"type":"error","message":"Reconnecting... 1/5"}"#);
        assert_eq!(bare.iter().collect::<Vec<_>>(), [Dialect::Codex, Dialect::Gemini, Dialect::Droid, Dialect::Grok]);
        let gemini = r#"{"type":"error","timestamp":"2026-11-29T08:30:00.101Z","message":"Quota exceeded"}"#;
        assert_eq!(fit_of(gemini).single(), Some(Dialect::Gemini));
        // Claude's marked frames tie with Qwen Code's (which writes the same frames): Claude is
        // preferred, a Qwen stream keeps its dialect.
        let claude = [Dialect::Claude, Dialect::Qwen];
        assert_eq!(fit_of(r#"{"type":"stream_event","event":{}}"#).iter().collect::<Vec<_>>(), claude);
        assert_eq!(fit_of(r#"{"type":"assistant","message":{},"uuid":"u"}"#).iter().collect::<Vec<_>>(), claude);
        let qwen = r#"{"type":"system","subtype":"init","session_id":"s","tools":[],"qwen_code_version":"0.25.0"}"#;
        assert_eq!(fit_of(qwen).single(), Some(Dialect::Qwen));
        assert_eq!(fit_of(r#"{"type":"system","subtype":"init","apiKeySource":"x"}"#).single(), Some(Dialect::Cursor));
        let both = fit_of(r#"{"type":"assistant","message":{}}"#);
        assert!(both.contains(Dialect::Claude) && both.contains(Dialect::Cursor));
        assert!(fit_of(r#"{"type":"nope"}"#).is_empty());
        assert_eq!(fit_of(r#"{"type":"result","status":"success","stats":{}}"#).single(), Some(Dialect::Gemini));
        assert_eq!(fit_of(r#"{"session_id":"s","response":"hi","stats":{}}"#).single(), Some(Dialect::Gemini));
        assert_eq!(fit_of(r#"{"model":"o3","provider":"openai"}"#).single(), Some(Dialect::CodexLegacy));
        assert_eq!(fit_of(r#"{"prompt":"do it"}"#).single(), Some(Dialect::CodexLegacy));
        // A key given twice counts with its last value.
        assert_eq!(fit_of(r#"{"prompt":1,"prompt":"do it"}"#).single(), Some(Dialect::CodexLegacy));
        assert!(fit_of(r#"{"prompt":"do it","prompt":1}"#).is_empty());
        assert_eq!(fit_of(r#"{"model":1,"model":"o3"}"#).single(), Some(Dialect::CodexLegacy));
        assert!(fit_of(r#"{"model":"o3","model":1}"#).is_empty());
        assert!(fit_of(r#"{"prompt":"do it","cwd":"/"}"#).is_empty());
        assert_eq!(fit_of(r#"{"id":"1","msg":{"type":"task_started"}}"#).single(), Some(Dialect::CodexLegacy));
        assert_eq!(
            fit_of(r#"{"timestamp":"t","type":"event_msg","payload":{}}"#).single(),
            Some(Dialect::CodexRollout)
        );
        assert_eq!(
            fit_of(r#"{"type":"user","parentUuid":null,"sessionId":"s"}"#).single(),
            Some(Dialect::ClaudeTranscript)
        );
        assert_eq!(fit_of(r#"{"type":"step_start","sessionID":"s","part":{}}"#).single(), Some(Dialect::Opencode));
        assert!(fit_of(r#"{"silly":"this"}"#).is_empty());
    }

    #[test]
    fn sticky_then_switch() {
        let mut d = Detector::new(None);
        let both = Fit::only(Dialect::Claude).with(Dialect::Cursor);
        assert_eq!(d.decide(Fit::only(Dialect::Cursor)), Some(Dialect::Cursor));
        assert_eq!(d.decide(both), Some(Dialect::Cursor), "ambiguous frames keep the stream's dialect");
        assert_eq!(d.decide(Fit::only(Dialect::Codex)), Some(Dialect::Codex), "a clear frame switches");
        assert_eq!(Detector::new(None).decide(both), Some(Dialect::Claude), "claude unless a cursor mark was seen");
        assert_eq!(Detector::new(Some(Dialect::Codex)).decide(both), Some(Dialect::Codex));
    }

    /// Every state a detector can be in, and sets of fits (all of one and two dialects, a few
    /// larger): from any state [`Possible`] holds, the detector's answer and the state it leaves
    /// are among those [`Possible::decide`] says, step after step.
    #[test]
    fn possible_covers_the_detector() {
        let all = Dialect::ALL;
        let mut fits = vec![Fit::NONE];
        for (i, &a) in all.iter().enumerate() {
            fits.push(Fit::only(a));
            for &b in &all[i + 1..] {
                fits.push(Fit::only(a).with(b));
            }
        }
        fits.push(all.iter().fold(Fit::NONE, |f, &d| f.with(d)));
        fits.push(Fit::only(Dialect::Codex).with(Dialect::Gemini).with(Dialect::Droid).with(Dialect::Grok));
        let states: Vec<Option<Dialect>> = std::iter::once(None).chain(all.iter().copied().map(Some)).collect();
        let holds = |p: &Possible, s: Option<Dialect>| match s {
            None => p.undecided,
            Some(d) => p.fixed.contains(d),
        };
        // Two steps from each start: the set after the first must still cover the detector.
        for start in [Possible::ANY]
            .into_iter()
            .chain(states.iter().map(|&s| Possible::of(&Detector { forced: None, current: s })))
        {
            for &f1 in &fits {
                for &f2 in &fits {
                    for &s in states.iter().filter(|&&s| holds(&start, s)) {
                        let mut p = start;
                        let mut d = Detector { forced: None, current: s };
                        for f in [f1, f2] {
                            let may = p.decide(f);
                            match d.decide(f) {
                                Some(got) => assert!(may.contains(got), "{f:?} from {s:?}: {got:?} not in {may:?}"),
                                None => assert!(f.is_empty()),
                            }
                            assert!(holds(&p, d.current()), "{f:?} from {s:?}: state {:?} not in {p:?}", d.current());
                        }
                    }
                }
            }
        }
        // Known exactly, one dialect: a Claude frame of a Claude stream is not a Qwen one.
        let tie = Fit::only(Dialect::Claude).with(Dialect::Qwen);
        let mut p = Possible::of(&Detector::new(None));
        assert_eq!(p.decide(tie), Fit::only(Dialect::Claude));
        let mut q = Detector::new(None);
        q.decide(Fit::only(Dialect::Qwen));
        assert_eq!(Possible::of(&q).decide(tie), Fit::only(Dialect::Qwen));
        let mut any = Possible::ANY;
        assert_eq!(any.decide(tie), tie, "a chunk's first frames are mapped as both");
        assert_eq!(any.decide(tie), tie);
        assert_eq!(any.decide(Fit::only(Dialect::Qwen)), Fit::only(Dialect::Qwen));
        assert_eq!(any.decide(tie), Fit::only(Dialect::Qwen), "then as the dialect a frame decided");
    }
}
