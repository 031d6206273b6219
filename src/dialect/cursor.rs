//! Not built yet: every frame of this dialect comes out as `unknown` `unrecognized_frame`.

use super::Mapped;
use crate::event::UnknownReason;
use crate::frame::Val;

/// Maps one frame.
pub fn map(f: Val<'_>, m: &mut Mapped) {
    m.frame = f.string_at("type").unwrap_or_default();
    m.unknown(UnknownReason::UnrecognizedFrame, None);
}
