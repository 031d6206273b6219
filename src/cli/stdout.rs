//! Standard output that says so when it fails.
//!
//! It exists because Rust's `Stdout` treats a closed descriptor (`EBADF`) as a sink that accepts
//! everything, so `agentnorm >&-` exited 0 having written nothing; and because a bare
//! `No space left on device` does not say which file was full. [`check_open`] refuses a closed
//! stdout before any work, and [`Stdout`] names stdout in every write error it passes on (the
//! error's kind is kept, so a broken pipe is still told apart and exits 0).
//!
//! The runtime's start-up opens `/dev/null` on a closed descriptor 0, 1 or 2 before `main`, so
//! on Linux the check is made earlier, from an ELF constructor (`.init_array` entries run before
//! the runtime's start-up); elsewhere only what `main` sees can be checked.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether descriptor 1 was closed when the process started (set by [`CHECK_AT_START`]).
static CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Records whether descriptor 1 is open, before the runtime replaces a closed one.
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array")]
static CHECK_AT_START: extern "C" fn() = {
    extern "C" fn check() {
        // SAFETY: F_GETFD only reads the descriptor's flags; it touches no memory.
        if unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
            CLOSED_AT_START.store(true, Ordering::Relaxed);
        }
    }
    check
};

/// Fails when file descriptor 1 is not open (or was not when the process started).
pub fn check_open() -> io::Result<()> {
    // SAFETY: F_GETFD only reads the descriptor's flags; it touches no memory.
    if CLOSED_AT_START.load(Ordering::Relaxed) || unsafe { libc::fcntl(1, libc::F_GETFD) } == -1 {
        let e = io::Error::from_raw_os_error(libc::EBADF);
        return Err(io::Error::new(e.kind(), format!("stdout is not open: {e}")));
    }
    Ok(())
}

/// `e` with "writing stdout" in front, its kind kept.
pub fn named(e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("writing stdout: {e}"))
}

/// The locked standard output, its errors named.
pub struct Stdout(io::StdoutLock<'static>);

/// The locked standard output.
pub fn lock() -> Stdout {
    Stdout(io::stdout().lock())
}

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf).map_err(named)
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf).map_err(named)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush().map_err(named)
    }
}
