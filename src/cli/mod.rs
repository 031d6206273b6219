//! The binary's own I/O, apart from the library: its arguments, how inputs are opened and read
//! (read-ahead, memory maps, pipes), the run over all inputs and the progress line, stdout and
//! its write errors, the pages `--output-dir` writes, and the `usage` and `statusline` commands'
//! reading and output.
//!
//! Nothing in the library imports from here: the library does no I/O of its own.

pub mod args;
pub mod exec;
pub mod input;
pub mod mmap;
pub mod pages;
pub mod pipes;
pub mod progress;
pub mod readahead;
pub mod statusline;
pub mod stdout;
pub mod survey;
pub mod usage;

pub use args::*;
