//! The registry's list (`src/dialects.rs`) expanded into the adapter dispatch: the dialect
//! detection over every adapter, mapping with one, and the per-stream states of all.
//!
//! Nothing here is written by hand per dialect: a new line in the registry adds its module,
//! its claim to frames, its mapping, its own pieces and its state.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use super::{Accepts, Adapter, Claim, Cx, Mapped};
use crate::dialect::detect::Fit;
use crate::event::Dialect;
use crate::read::frame::{KeyNames, Val};

macro_rules! define_registry {
    ($($variant:ident $module:ident::$adapter:ident $name:literal $doc:literal;)*) => {
        /// A piece only one dialect's fold resolves, tagged with its dialect.
        #[derive(Debug, Clone, PartialEq)]
        // Dialects without pieces of their own have an uninhabited variant.
        #[allow(missing_docs, dead_code)]
        pub(crate) enum Own {
            $($variant(<super::$module::$adapter as Adapter>::Piece),)*
        }

        /// The per-stream state of every dialect (each `Default` until its frames come).
        #[derive(Debug, Default)]
        #[allow(non_snake_case)]
        pub(crate) struct States {
            $($variant: <super::$module::$adapter as Adapter>::State,)*
        }

        /// Every adapter's declaration of the frames it claims, in registry order.
        const ACCEPTS: [(Dialect, Accepts); Dialect::ALL.len()] =
            [$((Dialect::$variant, <super::$module::$adapter as Adapter>::ACCEPTS),)*];

        /// The dialects that claim `frame` most strongly (SPEC §2). Only the adapters whose
        /// [`Accepts`] covers the frame are asked ([`Table::ask`]), and of those only the ones
        /// that can still claim it as strongly as an earlier one did.
        pub(crate) fn fit(frame: Val<'_>) -> Fit {
            let ty = frame.str_at("type");
            let ask = TABLE.ask(frame, ty);
            let mut best = Claim::No;
            let mut fit = Fit::NONE;
            // Each dialect's claim, for the dialects that share an earlier one's.
            let mut claims = [Claim::No; Dialect::ALL.len()];
            $(
                let asked = ask.contains(Dialect::$variant)
                    && <super::$module::$adapter as Adapter>::ACCEPTS.strongest >= best;
                // (Not asked: `No`, or weaker than `best` — either way out of the fit, and so is
                // a dialect claiming like it.)
                let c = if !asked {
                    Claim::No
                } else {
                    match <super::$module::$adapter as Adapter>::CLAIMS_LIKE {
                        Some(like) if like.index() < Dialect::$variant.index() => {
                            <super::$module::$adapter as Adapter>::own_claim(frame, ty).unwrap_or(claims[like.index()])
                        }
                        _ => <super::$module::$adapter as Adapter>::claim(frame, ty),
                    }
                };
                claims[Dialect::$variant.index()] = c;
                if c > best {
                    best = c;
                    fit = Fit::only(Dialect::$variant);
                } else if c == best && c != Claim::No {
                    fit = fit.with(Dialect::$variant);
                }
            )*
            let _ = (best, claims);
            fit
        }

        /// Whether the adapter of `d` claims `frame` with its whole envelope ([`Claim::Envelope`],
        /// the strongest claim): no dialect claims it more strongly, so `d` is among the ones it
        /// fits, and a stream already of `d` stays `d` (the detector keeps a dialect the frame
        /// fits) whatever others tie with it.
        pub(crate) fn claims_envelope(d: Dialect, frame: Val<'_>) -> bool {
            let ty = frame.str_at("type");
            match d {
                $(Dialect::$variant => <super::$module::$adapter as Adapter>::claim(frame, ty) == Claim::Envelope,)*
            }
        }

        /// [`fit`] asking every adapter about every frame: what the table must not change.
        #[cfg(test)]
        pub(crate) fn fit_asking_all(frame: Val<'_>) -> Fit {
            let ty = frame.str_at("type");
            let mut best = Claim::No;
            let mut fit = Fit::NONE;
            $(
                let c = <super::$module::$adapter as Adapter>::claim(frame, ty);
                if c > best {
                    best = c;
                    fit = Fit::only(Dialect::$variant);
                } else if c == best && c != Claim::No {
                    fit = fit.with(Dialect::$variant);
                }
            )*
            let _ = best;
            fit
        }

        /// Each adapter's claim on `frame`, asked whatever its declaration says.
        #[cfg(test)]
        pub(crate) fn every_claim(frame: Val<'_>) -> [(Dialect, Claim); Dialect::ALL.len()] {
            let ty = frame.str_at("type");
            [$((Dialect::$variant, <super::$module::$adapter as Adapter>::claim(frame, ty)),)*]
        }

        /// Maps one frame with the adapter of `d`.
        pub(crate) fn map(d: Dialect, frame: Val<'_>, m: &mut Mapped) {
            match d {
                $(Dialect::$variant => <super::$module::$adapter as Adapter>::map(frame, m),)*
            }
        }

        /// Maps one block of a [`super::Blocks`] with the adapter of its dialect.
        pub(crate) fn map_block(block: Val<'_>, of: &super::Blocks, m: &mut Mapped) {
            match of.dialect {
                $(Dialect::$variant => <super::$module::$adapter as Adapter>::map_block(block, of, m),)*
            }
        }

        /// Whether some dialect's fold may write an event of an earlier line ([`Adapter::DEFERS`]).
        pub(crate) const ANY_DEFERS: bool = false $(|| <super::$module::$adapter as Adapter>::DEFERS)*;

        impl Own {
            /// Whether folding this piece may write an event of an earlier line.
            pub(crate) fn defers(&self) -> bool {
                match self {
                    $(Own::$variant(_) => <super::$module::$adapter as Adapter>::DEFERS,)*
                }
            }
        }

        /// Whether `d` reads saved logs (SPEC §3 `complete`).
        pub(crate) fn is_saved_log(d: Dialect) -> bool {
            match d {
                $(Dialect::$variant => <super::$module::$adapter as Adapter>::SAVED_LOG,)*
            }
        }

        impl States {
            /// Resolves an own piece against its dialect's state.
            pub(crate) fn fold(&mut self, own: Own, cx: &mut dyn Cx) {
                match own {
                    $(Own::$variant(p) => <super::$module::$adapter as Adapter>::fold(&mut self.$variant, p, cx),)*
                }
            }

            /// Lets dialect `d` adjust the mapping of its line before it is folded.
            pub(crate) fn prepare(&mut self, d: Dialect, m: &mut Mapped, at: Option<&str>) {
                match d {
                    $(Dialect::$variant => <super::$module::$adapter as Adapter>::prepare(&mut self.$variant, m, at),)*
                }
            }

            /// A turn is about to end: every dialect writes what it held for it.
            pub(crate) fn turn_ending(&mut self, cx: &mut dyn Cx) {
                $(<super::$module::$adapter as Adapter>::turn_ending(&mut self.$variant, cx);)*
            }

            /// Whether dialect `d` passes over `line` when reading for usage only
            /// ([`Adapter::passes_over`]).
            pub(crate) fn passes_over(&mut self, d: Dialect, line: &[u8], skim: crate::Skim) -> bool {
                match d {
                    $(Dialect::$variant => <super::$module::$adapter as Adapter>::passes_over(&mut self.$variant, line, skim),)*
                }
            }

            /// Whether dialect `d`'s state is at rest between two lines ([`Adapter::at_rest`]).
            pub(crate) fn at_rest(&self, d: Dialect) -> bool {
                match d {
                    $(Dialect::$variant => <super::$module::$adapter as Adapter>::at_rest(&self.$variant),)*
                }
            }

            /// A turn ended.
            pub(crate) fn turn_ended(&mut self) {
                $(<super::$module::$adapter as Adapter>::turn_ended(&mut self.$variant);)*
            }

            /// The stream ended: every dialect writes what it still holds.
            pub(crate) fn finish(&mut self, cx: &mut dyn Cx) {
                $(<super::$module::$adapter as Adapter>::finish(&mut self.$variant, cx);)*
            }
        }
    };
}
dialects!(define_registry);

/// Which adapters to ask about a frame, built once from every adapter's [`Accepts`].
static TABLE: LazyLock<Table> = LazyLock::new(|| Table::new(&ACCEPTS));

/// The dispatch of [`fit`]: a frame's `type` (or its lack of one, or a root key) to the set of
/// adapters whose claims can take it.
#[derive(Debug)]
pub(crate) struct Table {
    /// Every declared `type`, with the adapters declaring it or a prefix of it.
    by_type: HashMap<&'static str, Fit, BuildHasherDefault<Fnv>>,
    /// Declared `type` prefixes, for the types not listed.
    prefixes: Vec<(&'static str, Fit)>,
    /// The adapters claiming frames without a string `type`.
    untyped: Fit,
    /// Root keys with which adapters claim a frame of any `type`.
    keyed: Vec<(&'static str, Fit)>,
    /// Those keys, looked for in one pass.
    keys: KeyNames,
}

impl Table {
    fn new(accepts: &[(Dialect, Accepts)]) -> Table {
        let mut t = Table {
            by_type: HashMap::default(),
            prefixes: Vec::new(),
            untyped: Fit::NONE,
            keyed: Vec::new(),
            keys: KeyNames::default(),
        };
        for &(d, a) in accepts {
            for &ty in a.types.iter().flat_map(|list| list.iter()) {
                let e = t.by_type.entry(ty).or_default();
                *e = e.with(d);
            }
            t.prefixes.extend(a.type_prefixes.iter().map(|&p| (p, Fit::only(d))));
            if a.untyped {
                t.untyped = t.untyped.with(d);
            }
            for &k in a.with_keys {
                match t.keyed.iter_mut().find(|(key, _)| *key == k) {
                    Some((_, fit)) => *fit = fit.with(d),
                    None => t.keyed.push((k, Fit::only(d))),
                }
            }
        }
        t.keys = KeyNames::new(&t.keyed.iter().map(|(k, _)| *k).collect::<Vec<_>>());
        for (ty, fit) in &mut t.by_type {
            *fit = fit
                .union(t.prefixes.iter().filter(|(p, _)| ty.starts_with(p)).fold(Fit::NONE, |f, (_, p)| f.union(*p)));
        }
        t
    }

    /// The adapters whose declarations cover `frame` (of `type` `ty`).
    pub(crate) fn ask(&self, frame: Val<'_>, ty: Option<&str>) -> Fit {
        let mut ask = match ty {
            None => self.untyped,
            Some(ty) => match self.by_type.get(ty) {
                Some(&fit) => fit,
                None => {
                    self.prefixes.iter().filter(|(p, _)| ty.starts_with(p)).fold(Fit::NONE, |f, (_, p)| f.union(*p))
                }
            },
        };
        let has = frame.root_has(&self.keys);
        if has != 0 {
            for (i, &(_, fit)) in self.keyed.iter().enumerate() {
                if has & 1 << i != 0 {
                    ask = ask.union(fit);
                }
            }
        }
        ask
    }
}

/// FNV-1a: the table's keys are a few short `type` strings, hashed once a frame (SipHash, the
/// standard one, costs more than the claims it spares).
#[derive(Debug, Clone, Copy)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// [`Fit`] is a bit set over the registry: a compile-time check that it holds every dialect.
const _: () = assert!(Dialect::ALL.len() <= Fit::CAPACITY, "detect::Fit needs a wider word");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::frame::Parser;

    /// The frames the declarations are held to: every line of every fixture, each also with
    /// every declared `type`, with types only a declared prefix covers, with an undeclared one,
    /// without `type` and with a `type` that is not a string.
    fn frames() -> Vec<String> {
        let mut files = Vec::new();
        let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("fixtures/") {
                let path = entry.expect("fixture entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    files.push(path);
                }
            }
        }
        assert!(files.len() > 50, "the fixtures were not found: {files:?}");
        let mut types: Vec<serde_json::Value> = Vec::new();
        for (_, a) in ACCEPTS {
            types.extend(a.types.iter().flat_map(|l| l.iter()).map(|t| serde_json::json!(t)));
            types.extend(a.type_prefixes.iter().map(|p| serde_json::json!(format!("{p}zz_new"))));
        }
        types.extend([serde_json::json!("zz_undeclared"), serde_json::json!(7), serde_json::Value::Null]);
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for path in files {
            let text = std::fs::read_to_string(&path).expect("fixture text");
            for line in text.lines() {
                let Ok(serde_json::Value::Object(obj)) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                let mut variants = vec![line.to_owned()];
                let mut without = obj.clone();
                without.remove("type");
                variants.push(serde_json::Value::Object(without).to_string());
                for ty in &types {
                    let mut o = obj.clone();
                    o.insert("type".to_owned(), ty.clone());
                    variants.push(serde_json::Value::Object(o).to_string());
                }
                out.extend(variants.into_iter().filter(|v| seen.insert(v.clone())));
            }
        }
        out
    }

    /// A stream's own dialect that claims a frame with its whole envelope decides it without
    /// asking the others ([`crate::dialect::detect::fit_in`]): for every frame the declarations
    /// are held to and every dialect a stream may be of so far, the detector picks what the whole
    /// fit makes it pick, and the frames of the fixtures are taken that way.
    #[test]
    fn a_frame_claimed_with_the_streams_own_envelope_is_decided_as_the_whole_fit_decides_it() {
        use crate::dialect::detect::{Detector, fit_in};
        let mut parser = Parser::default();
        let mut short = 0;
        for line in frames() {
            parser.with_frame(line.as_bytes(), |frame| {
                let Ok(frame) = frame else { return };
                let whole = fit(frame);
                for &d in Dialect::ALL {
                    let of = || {
                        let mut det = Detector::new(None);
                        det.decide(Fit::only(d));
                        det
                    };
                    let (mut a, mut b) = (of(), of());
                    let fast = fit_in(frame, Some(d));
                    assert_eq!((a.decide(fast), a.current()), (b.decide(whole), b.current()), "{d:?}: {line}");
                    short += usize::from(claims_envelope(d, frame));
                }
            });
        }
        assert!(short > 100, "the short way was never taken: {short}");
    }

    /// Every claim an adapter makes on a frame is covered by its declaration (its `type`, its
    /// lack of one, a prefix or a root key, and at most its strongest claim), so the table-driven
    /// fit is the fit of asking every adapter.
    #[test]
    fn declarations_cover_every_claim() {
        let mut parser = Parser::default();
        let frames = frames();
        let mut claimed = 0;
        for line in &frames {
            parser.with_frame(line.as_bytes(), |v| {
                let Ok(frame) = v else { return };
                let ask = TABLE.ask(frame, frame.str_at("type"));
                for (d, c) in every_claim(frame) {
                    if c == Claim::No {
                        continue;
                    }
                    claimed += 1;
                    let strongest = ACCEPTS[d.index()].1.strongest;
                    assert!(ask.contains(d), "{d:?} claims {c:?} on a frame its Accepts does not cover: {line}");
                    assert!(
                        c <= strongest,
                        "{d:?} claims {c:?}, stronger than its Accepts says ({strongest:?}): {line}"
                    );
                }
                assert_eq!(fit(frame), fit_asking_all(frame), "{line}");
            });
        }
        assert!(claimed > 10_000, "only {claimed} claims over {} frames", frames.len());
    }

    /// The declarations are what the table asks: a frame's type, prefix, lack of type and keys.
    #[test]
    fn the_table_asks_by_type_prefix_and_key() {
        let ask = |line: &str| {
            Parser::default().with_frame(line.as_bytes(), |v| {
                let v = v.unwrap();
                TABLE.ask(v, v.str_at("type")).iter().collect::<Vec<_>>()
            })
        };
        assert_eq!(ask(r#"{"type":"item.completed","item":{}}"#), [Dialect::Codex]);
        assert_eq!(ask(r#"{"type":"assistant"}"#), [Dialect::Claude, Dialect::Cursor, Dialect::Qwen]);
        assert_eq!(
            ask(r#"{"type":"assistant","parentUuid":null}"#),
            [Dialect::Claude, Dialect::ClaudeTranscript, Dialect::Cursor, Dialect::Qwen]
        );
        // `system.version` is Grok's, and a Copilot `system.` event.
        assert_eq!(ask(r#"{"type":"system.version"}"#), [Dialect::Copilot, Dialect::Grok]);
        assert_eq!(ask(r#"{"type":"session.new_thing"}"#), [Dialect::Copilot]);
        assert_eq!(ask(r#"{"type":"zz","parentId":"p"}"#), [Dialect::Copilot]);
        assert_eq!(
            ask(r#"{"prompt":"p"}"#),
            [
                Dialect::CodexLegacy,
                Dialect::Gemini,
                Dialect::Antigravity,
                Dialect::Grok,
                Dialect::GeminiSession,
                Dialect::OpencodeSession
            ]
        );
        // A saved Gemini session's `user` record is asked of both Claude's and Gemini's.
        assert_eq!(
            ask(r#"{"type":"user","id":"u","content":"hi"}"#),
            [Dialect::Claude, Dialect::Cursor, Dialect::Qwen, Dialect::GeminiSession]
        );
        assert!(ask(r#"{"type":"zz"}"#).is_empty());
    }
}
