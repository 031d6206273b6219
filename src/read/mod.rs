//! The reading layer: bytes to JSON frames, below every dialect.
//!
//! [`lines`] cuts bytes into lines (the one set of line rules), [`scan`] finds the strings and structure of a line (SIMD where the CPU has it), [`frame`] is
//! the zero-copy view of one parsed line that every adapter reads through, and [`time`] turns the
//! CLIs' timestamps into RFC 3339. Nothing here knows a CLI's frames; [`files`] knows where
//! CLIs keep their sessions and in what kind of file, to open them.

pub mod files;
pub mod frame;
pub(crate) mod lines;
pub(crate) mod scan;
pub mod simd;
pub mod time;
