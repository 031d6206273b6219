//! A progress line on stderr for runs over many files (`agentnorm usage`, folders), so that a
//! person waiting at a terminal sees that work is being done and how much is left.
//!
//! It is drawn only when stderr is a terminal (never into a pipe or a file, so scripts and tests
//! see no trace of it), by one thread at most ten times a second from two counters the workers
//! bump (files done, bytes read), only once the run has lasted a moment, and it is erased when
//! the run ends, before anything else is written.

use std::io::{self, IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often the line is redrawn.
const TICK: Duration = Duration::from_millis(100);
/// Runs shorter than this never draw it (no flicker on quick runs).
const FIRST_DRAW_TICKS: u32 = 3;
/// Moves to the start of the line and erases it (also written before a message printed while the
/// line is shown).
pub const CLEAR: &str = "\r\x1b[K";

/// What the workers report.
#[derive(Debug, Default)]
pub struct Counters {
    /// Inputs finished (read to their end or failed).
    pub done: AtomicUsize,
    /// Bytes read (decompressed).
    pub bytes: AtomicU64,
}

impl Counters {
    /// Counts `n` bytes read.
    pub fn read(&self, n: usize) {
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Counts one input finished.
    pub fn file_done(&self) {
        self.done.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one input finished when the guard is dropped, however its work ends.
    pub fn done_on_drop(&self) -> FileDone<'_> {
        FileDone(self)
    }
}

/// Counts one input finished when dropped ([`Counters::done_on_drop`]).
pub struct FileDone<'a>(&'a Counters);

impl Drop for FileDone<'_> {
    fn drop(&mut self) {
        self.0.file_done();
    }
}

/// The progress line of one run; erased when finished or dropped.
pub struct Progress {
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts drawing progress over `total` inputs when `wanted` and stderr is a terminal;
    /// otherwise only counts.
    pub fn start(total: usize, wanted: bool) -> Progress {
        let counters = Arc::new(Counters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let thread = (wanted && io::stderr().is_terminal()).then(|| {
            let (counters, stop) = (Arc::clone(&counters), Arc::clone(&stop));
            std::thread::spawn(move || draw_until_stopped(total, &counters, &stop))
        });
        Progress { counters, stop, thread }
    }

    /// The counters the workers bump, when a line is drawn.
    pub fn counters(&self) -> Option<Arc<Counters>> {
        self.thread.is_some().then(|| Arc::clone(&self.counters))
    }

    /// Stops drawing and erases the line.
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn draw_until_stopped(total: usize, counters: &Counters, stop: &AtomicBool) {
    let mut ticks = 0u32;
    let mut shown = String::new();
    let mut stderr = io::stderr();
    while !stop.load(Ordering::Relaxed) {
        std::thread::park_timeout(TICK);
        ticks += 1;
        if stop.load(Ordering::Relaxed) || ticks < FIRST_DRAW_TICKS {
            continue;
        }
        let line = line(counters.done.load(Ordering::Relaxed), total, counters.bytes.load(Ordering::Relaxed));
        if line != shown {
            let _ = write!(stderr, "{CLEAR}{line}");
            let _ = stderr.flush();
            shown = line;
        }
    }
    if !shown.is_empty() {
        let _ = write!(stderr, "{CLEAR}");
        let _ = stderr.flush();
    }
}

/// The text of the line: `agentnorm: 12/340 files, 48.1 MB read`.
fn line(done: usize, total: usize, bytes: u64) -> String {
    format!("agentnorm: {done}/{total} files, {} read", human_bytes(bytes))
}

/// Bytes in decimal units with one decimal (`950 B`, `1.2 kB`, `48.1 MB`, `3.0 GB`).
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["kB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1000.0;
    let mut unit = 0;
    while v >= 999.95 && unit + 1 < UNITS.len() {
        v /= 1000.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_reads_files_and_bytes() {
        assert_eq!(line(12, 340, 48_149_000), "agentnorm: 12/340 files, 48.1 MB read");
        assert_eq!(human_bytes(950), "950 B");
        assert_eq!(human_bytes(1_000), "1.0 kB");
        assert_eq!(human_bytes(999_999), "1.0 MB");
        assert_eq!(human_bytes(3_000_000_000), "3.0 GB");
    }

    #[test]
    fn nothing_is_counted_or_drawn_unless_wanted() {
        let mut p = Progress::start(3, false);
        assert!(p.counters().is_none());
        p.finish();
    }
}
