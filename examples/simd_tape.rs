//! Anchor for `scripts/bench.sh`: a bare simd-json tape parse of every line of a file.
//!
//! It exists to measure what a full parse costs on the same machine and file, with nothing else:
//! the file is read in 1 MiB blocks, split at newlines with memchr, each line copied into a
//! padded buffer and parsed into a reused tape (simd-json's fastest safe entry point); nothing is
//! written. agentnorm's one-thread normalization, which also detects, maps and writes every
//! line, should be faster than this (issue 5).
//!
//! Usage: `cargo run --release --example simd_tape -- FILE` (prints lines parsed and invalid).
//! With `--lines` it only splits lines (the memchr framing ceiling).

use std::io::Read;

use simd_json::{Buffers, Tape};

fn main() -> std::io::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let split_only = args.first().is_some_and(|a| a == "--lines");
    if split_only {
        args.remove(0);
    }
    let Some(path) = args.first() else {
        eprintln!("usage: simd_tape [--lines] FILE");
        std::process::exit(2);
    };
    let mut file = std::fs::File::open(path)?;
    let mut buffers = Buffers::default();
    let mut tape = Tape::null().reset();
    let mut scratch: Vec<u8> = Vec::new();
    let (mut lines, mut invalid) = (0u64, 0u64);
    let mut parse = |line: &[u8]| {
        lines += 1;
        if split_only || line.is_empty() {
            return;
        }
        scratch.clear();
        scratch.extend_from_slice(line);
        scratch.resize(line.len() + simd_json::INPUT_PADDING, 0);
        let mut t = std::mem::replace(&mut tape, Tape::null().reset()).reset();
        if simd_json::fill_tape_padded(&mut scratch, line.len(), &mut buffers, &mut t).is_err() {
            invalid += 1;
        }
        std::hint::black_box(&t);
        tape = t.reset();
    };
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        let block = &buf[..n];
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', block) {
            if carry.is_empty() {
                parse(&block[start..end]);
            } else {
                carry.extend_from_slice(&block[start..end]);
                parse(&carry);
                carry.clear();
            }
            start = end + 1;
        }
        carry.extend_from_slice(&block[start..]);
    }
    if !carry.is_empty() {
        parse(&carry);
    }
    println!("{lines} lines, {invalid} not parsed");
    Ok(())
}
