//! The binary's own I/O, apart from the library: its arguments, how inputs are opened and read
//! (read-ahead, memory maps, pipes), the run over all inputs and the progress line, stdout and
//! its write errors, the pages `--output-dir` writes, the `usage` and `statusline` commands'
//! reading and output, the OTLP/HTTP sender of `--otlp-endpoint` and the files of `agentnorm
//! export`.
//!
//! Nothing in the library imports from here: the library does no I/O of its own.

pub mod args;
pub mod cache;
pub mod exec;
pub mod export;
pub mod input;
pub mod manifest;
pub mod mmap;
pub mod otlp;
pub mod pages;
pub mod pipes;
pub mod prefetch;
pub mod progress;
pub mod readahead;
pub mod statusline;
pub mod stdout;
pub mod survey;
pub mod usage;

pub use args::*;
