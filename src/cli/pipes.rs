//! Larger pipe buffers for stdin and stdout.
//!
//! It exists because a pipe holds 64 KiB by default on Linux: in `cat FILE | agentnorm | cat`
//! every read from stdin returns at most 64 KiB and every write to stdout blocks once 64 KiB are
//! waiting, so both ends of each pipe switch threads (and agentnorm flushes a small block) about
//! 16 times per MiB. Asking for 1 MiB (`F_SETPIPE_SZ`, allowed to any user up to
//! `/proc/sys/fs/pipe-max-size`, 1 MiB by default) makes reads and writes 16× larger. Live
//! latency does not change: a reader still gets each byte as soon as it is written.

/// The pipe size asked for.
#[cfg(target_os = "linux")]
const PIPE_BYTES: libc::c_int = 1 << 20;

/// Enlarges stdin and stdout when they are pipes; anything else, or a refusal, leaves them as
/// they are (the size is only a hint for speed).
pub fn enlarge_std_pipes() {
    #[cfg(target_os = "linux")]
    for fd in [libc::STDIN_FILENO, libc::STDOUT_FILENO] {
        // SAFETY: fstat writes into a zeroed stat buffer we own; fcntl(F_SETPIPE_SZ) takes an int
        // and only resizes the pipe's buffer. Neither touches memory of ours otherwise.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) == 0 && (st.st_mode & libc::S_IFMT) == libc::S_IFIFO {
                let current = libc::fcntl(fd, libc::F_GETPIPE_SZ);
                if (0..PIPE_BYTES).contains(&current) {
                    libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES);
                }
            }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn a_pipe_can_be_enlarged_to_the_size_asked_for() {
        let mut fds = [0; 2];
        // SAFETY: pipe fills the two-int array; both ends are closed below.
        unsafe {
            assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
            let before = libc::fcntl(fds[1], libc::F_GETPIPE_SZ);
            let set = libc::fcntl(fds[1], libc::F_SETPIPE_SZ, super::PIPE_BYTES);
            let after = libc::fcntl(fds[1], libc::F_GETPIPE_SZ);
            libc::close(fds[0]);
            libc::close(fds[1]);
            assert!(before > 0);
            // Refused only when the system limit is below 1 MiB; then nothing changed.
            if set >= 0 {
                assert!(after >= super::PIPE_BYTES, "{before} -> {after}");
            } else {
                assert_eq!(after, before);
            }
        }
    }
}
