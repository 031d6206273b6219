//! The registry's list (`src/dialects.rs`) expanded into the adapter dispatch: the dialect
//! detection over every adapter, mapping with one, and the per-stream states of all.
//!
//! Nothing here is written by hand per dialect: a new line in the registry adds its module,
//! its claim to frames, its mapping, its own pieces and its state.

use super::{Adapter, Claim, Cx, Mapped};
use crate::dialect::detect::Fit;
use crate::event::Dialect;
use crate::read::frame::Val;

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

        /// The dialects that claim `frame` most strongly (SPEC §2).
        pub(crate) fn fit(frame: Val<'_>) -> Fit {
            let ty = frame.str_at("type");
            let mut best = Claim::No;
            let mut fit = Fit::NONE;
            // Each dialect's claim, for the dialects that share an earlier one's.
            let mut claims = [Claim::No; Dialect::ALL.len()];
            $(
                let c = match <super::$module::$adapter as Adapter>::CLAIMS_LIKE {
                    Some(like) if like.index() < Dialect::$variant.index() => {
                        <super::$module::$adapter as Adapter>::own_claim(frame, ty).unwrap_or(claims[like.index()])
                    }
                    _ => <super::$module::$adapter as Adapter>::claim(frame, ty),
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

/// [`Fit`] is a bit set over the registry: a compile-time check that it holds every dialect.
const _: () = assert!(Dialect::ALL.len() <= Fit::CAPACITY, "detect::Fit needs a wider word");
