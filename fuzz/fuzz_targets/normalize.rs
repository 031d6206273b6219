//! The whole normalizer (detection, every adapter, the fold, the line splitter) on arbitrary
//! bytes, with a line limit that is sometimes small so that `line_too_long` is reached too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| agentnorm_fuzz::check(data, None, true));
