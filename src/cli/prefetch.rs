//! Asking the kernel for the files the workers will read next.
//!
//! It exists because a folder of logs read cold (not in the page cache) is bound by the disk's
//! latency, not its bandwidth: with two workers each reading one file at a time, two requests are
//! in flight, and reading the 1.9 GB benchmark home took 5.8 s (`cat` of every file, one after
//! the other) where 16 readers at once took 1.5 s. One thread that keeps a window of the next
//! files announced to the kernel (`posix_fadvise(POSIX_FADV_WILLNEED)`, which starts the reads
//! and returns) keeps the disk's queue full while the workers decode, without a thread per file.
//!
//! It is a hint: a file that changes or goes away meanwhile is read by the worker as it is then.
//! On systems without `posix_fadvise` it does nothing.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

/// Files announced ahead of the one a worker takes next.
const AHEAD_FILES: usize = 64;
/// Bytes announced ahead, at most (so that a small machine's page cache is not flooded).
const AHEAD_BYTES: u64 = 256 << 20;

/// Announces `paths[i]` for the `i` at or after `next` (the index the workers take next, which
/// they advance), within [`AHEAD_FILES`] files and [`AHEAD_BYTES`] bytes of it, until every path
/// is announced or `done` is set, waiting until woken ([`taken`]) while the window is full.
/// `wanted` says whether a path will be read at all (a file the usage cache holds is not).
pub fn ahead<'a>(
    paths: impl Iterator<Item = Option<&'a Path>>,
    next: &AtomicUsize,
    done: &AtomicBool,
    wanted: &(dyn Fn(&Path) -> bool + Sync),
) {
    // The announced files' sizes, by index, to keep the window's bytes.
    let mut window: std::collections::VecDeque<(usize, u64)> = std::collections::VecDeque::new();
    for (i, path) in paths.enumerate() {
        loop {
            if done.load(Ordering::Relaxed) {
                return;
            }
            let taken = next.load(Ordering::Relaxed);
            while window.front().is_some_and(|&(j, _)| j < taken) {
                window.pop_front();
            }
            let bytes: u64 = window.iter().map(|&(_, b)| b).sum();
            if i < taken + AHEAD_FILES && bytes < AHEAD_BYTES {
                break;
            }
            // Woken when a worker takes a file ([`taken`]); the timeout only bounds a wake-up
            // that was missed.
            std::thread::park_timeout(Duration::from_millis(5));
        }
        if i < next.load(Ordering::Relaxed) {
            continue; // a worker has it already
        }
        if let Some(p) = path.filter(|p| wanted(p)) {
            window.push_back((i, announce(p)));
        }
    }
}

/// Tells the thread running [`ahead`] that a worker took a file (or that it is done), so that
/// it announces the next ones: a wake-up per file taken instead of polling (polling every
/// 200 µs was 29,000 wake-ups for the 12,000 logs of a 2 GB home).
pub fn taken(ahead: Option<&std::thread::Thread>) {
    if let Some(t) = ahead {
        t.unpark();
    }
}

/// Starts reading `path` into the page cache; its size (0 when it cannot be opened).
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn announce(path: &Path) -> u64 {
    use std::os::fd::AsRawFd as _;
    let Ok(f) = std::fs::File::open(path) else { return 0 };
    let len = f.metadata().map_or(0, |m| m.len());
    // SAFETY: a hint on a descriptor this function owns; it reads no memory of ours.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_WILLNEED) };
    len
}

/// Without `posix_fadvise`, nothing is announced.
#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn announce(_path: &Path) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announces_only_what_is_wanted_and_stops_when_done() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<_> = (0..5).map(|i| dir.path().join(format!("{i}.jsonl"))).collect();
        for p in &paths {
            std::fs::write(p, b"{}\n").unwrap();
        }
        let asked = std::sync::Mutex::new(Vec::new());
        let wanted = |p: &Path| {
            asked.lock().unwrap().push(p.to_path_buf());
            !p.ends_with("2.jsonl")
        };
        let (next, done) = (AtomicUsize::new(1), AtomicBool::new(false));
        ahead(paths.iter().map(|p| Some(p.as_path())), &next, &done, &wanted);
        // Index 0 was taken before the thread began: not announced (nor asked about).
        assert_eq!(*asked.lock().unwrap(), paths[1..].to_vec());

        // Done: returns at once, however far behind the workers are.
        let (next, done) = (AtomicUsize::new(0), AtomicBool::new(true));
        asked.lock().unwrap().clear();
        ahead(paths.iter().map(|p| Some(p.as_path())), &next, &done, &wanted);
        assert!(asked.lock().unwrap().is_empty());
    }
}
