//! The normalizer with `--dialect` forced to Gemini CLI saved sessions: every frame goes through its adapter.
#![no_main]

use agentnorm::Dialect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| agentnorm_fuzz::check(data, Some(Dialect::GeminiSession), false));
