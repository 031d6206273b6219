//! Times the stages of normalizing one file apart: split, decode, fold, write.
//!
//! It exists to show how much of the work the all-cores path can spread over cores: `decode`
//! (scan a line, detect its dialect, map it with the adapters) keeps no stream state and runs on
//! every worker, while the fold (the stream's state, in input order) and the writing of events
//! (serialized in the fold's turn) run one chunk at a time. The file is read into memory first
//! (not timed); then each round runs the one-thread pipeline line by line, as the normalizer's
//! splitter does, with a clock read around each stage of each line (a few dozen ns each; lines
//! average ~3 KB on the reference workload):
//!
//! - `decode`: `Fold::decode_next` of the line (mapped as the dialect the fold will pick, as one
//!   thread decodes);
//! - `write`: the time inside the NDJSON writer (timed per event; its buffer drained every MiB,
//!   as the binary drains it to its output);
//! - `fold`: `Fold::apply` minus the writing inside it (it also frees the decode);
//! - `split`: the rest (memchr for the line ends, the loop).
//!
//! `untimed` is [`agentnorm::Normalizer::feed`] on the whole file into the same writer, without
//! clocks: the sum of the stages should be close to it.
//!
//! Usage: `cargo run --release --features internals --example stages -- FILE [ROUNDS]` (median of ROUNDS, default 5;
//! `AGENTNORM_SIMD` forces a scanner level as for the binary). Prints each stage's median time,
//! its share of the sum, and Amdahl's projection for 2, 8 and 16 cores with decode parallel and
//! the rest serial.

use std::hint::black_box;
use std::time::{Duration, Instant};

use agentnorm::internals::{Decoded, Fold};
use agentnorm::{Event, NdjsonSink, Normalizer, Options, Sink};

/// The NDJSON writer, drained every MiB as the binary drains it to its output, with the time
/// spent in it.
struct Timed {
    out: NdjsonSink,
    bytes: u64,
    events: u64,
    spent: Duration,
}

impl Sink for Timed {
    fn event(&mut self, ev: &Event) {
        let t0 = Instant::now();
        self.out.event(ev);
        if self.out.buf.len() >= 1 << 20 {
            self.bytes += self.out.buf.len() as u64;
            black_box(&self.out.buf);
            self.out.buf.clear();
        }
        self.events += 1;
        self.spent += t0.elapsed();
    }
}

fn opts() -> Options {
    Options::default().observed_at(false)
}

/// One round: the stages' times (split, decode, fold, write), events and bytes written.
fn round(data: &[u8]) -> ([Duration; 4], u64, u64) {
    let mut out = Timed { out: NdjsonSink::default(), bytes: 0, events: 0, spent: Duration::ZERO };
    let (mut dec, mut apply) = (Duration::ZERO, Duration::ZERO);
    let t0 = Instant::now();
    let mut fold = Fold::new(opts());
    fold.start(&mut out);
    let (mut start, mut n) = (0, 0);
    while start < data.len() {
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |p| start + p);
        let line = &data[start..end];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        start = end + 1;
        n += 1;
        let ta = Instant::now();
        let d: Decoded = fold.decode_next(line);
        let tb = Instant::now();
        fold.apply(d, n, line, &mut out);
        apply += tb.elapsed();
        dec += tb - ta;
    }
    black_box(fold.finish(data.ends_with(b"\n"), &mut out));
    let total = t0.elapsed();
    let write = out.spent;
    let fold = apply.saturating_sub(write);
    ([total.saturating_sub(dec + apply), dec, fold, write], out.events, out.bytes + out.out.buf.len() as u64)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: stages FILE [ROUNDS]");
        std::process::exit(2);
    };
    let rounds: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5).max(1);
    match agentnorm::simd::from_env() {
        Ok(c) => {
            if let Some(note) = c.note {
                eprintln!("stages: {note}");
            }
            agentnorm::simd::force(c.level);
        }
        Err(e) => {
            eprintln!("stages: {e}");
            std::process::exit(2);
        }
    }
    let data = std::fs::read(path)?;
    let mut stages: [Vec<Duration>; 4] = Default::default();
    let mut untimed = Vec::new();
    let (mut events, mut bytes_out) = (0, 0);
    for _ in 0..rounds {
        let (t, e, b) = round(&data);
        for (v, t) in stages.iter_mut().zip(t) {
            v.push(t);
        }
        (events, bytes_out) = (e, b);
        let mut out = Timed { out: NdjsonSink::default(), bytes: 0, events: 0, spent: Duration::ZERO };
        let t0 = Instant::now();
        let mut n = Normalizer::new(opts());
        n.feed(&data, &mut out);
        black_box(n.finish(&mut out));
        untimed.push(t0.elapsed());
    }
    let [split, dec, fold, write] = stages.map(median);
    let total = median(untimed);
    let sum = split + dec + fold + write;
    let s = |d: Duration| d.as_secs_f64();
    println!(
        "file: {path}, {:.1} MB, {} lines, {events} events, {:.1} MB written; scanner level {}; median of {rounds}",
        data.len() as f64 / 1e6,
        memchr::memchr_iter(b'\n', &data).count(),
        bytes_out as f64 / 1e6,
        agentnorm::simd::level()
    );
    for (name, d) in [("split", split), ("decode", dec), ("fold", fold), ("write", write)] {
        println!("  {name:<7} {:7.3} s  {:5.1} %", s(d), 100.0 * s(d) / s(sum));
    }
    println!("  sum     {:7.3} s   (untimed, Normalizer::feed on one thread: {:.3} s)", s(sum), s(total));
    let serial = s(split + fold + write) / s(sum);
    println!("Amdahl, decode on every core and split + fold + write serial ({:.1} % of the sum):", 100.0 * serial);
    for cores in [2.0, 8.0, 16.0] {
        let speedup = 1.0 / (serial + (1.0 - serial) / cores);
        println!("  {cores:>2} cores: {speedup:.2}x one thread (ceiling with infinite cores {:.2}x)", 1.0 / serial);
    }
    Ok(())
}
