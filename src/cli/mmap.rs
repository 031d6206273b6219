//! A large plain file mapped into memory, for the all-cores path (`agentnorm::normalize::parallel`).
//!
//! It exists because reading copies the page cache into a buffer (a quarter of one thread's work
//! on a large file) and then the buffer must be cut and handed between threads; a mapping lets
//! every worker read its own chunk where it lies, with no copy and no hand-off. The pages behind
//! the fold are released as it goes ([`Mmap::release`]), so the resident memory stays a few
//! chunks whatever the file's size. The mapping is memmap2's; pages are the system's size.
//!
//! A mapped file that another process truncates ends a reader with SIGBUS when it touches a page
//! past the new end, and logs are live files. So a file is mapped only under a read lease
//! (`F_SETLEASE`, Linux): the kernel grants it only when no one has the file open for writing,
//! and whoever then opens it for writing or truncates it is held until the lease is given back
//! (or `/proc/sys/fs/lease-break-time` passes, 45 s by default). A held writer shows as a lease
//! break ([`Mmap::broken`]): the fold stops at its next chunk, no thread touches the mapping
//! after that, the lease is given back, and the rest of the file is read with ordinary reads
//! from where the fold stopped (what the file then holds past that offset, if anything). A file
//! that is already open for writing (a log being written), one not owned by the user, or a
//! system without leases is not mapped: it is read as a stream, which a shrinking file cannot
//! crash.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd as _;

/// A read-only mapping of a whole file, held under a read lease.
pub struct Mmap {
    map: memmap2::Mmap,
    file: File,
    page: usize,
}

impl Mmap {
    /// Maps `file` (opened read-only) whole under a read lease; `None` for an empty file, and
    /// when no lease can be had (the file is open for writing somewhere, it is not the user's,
    /// or leases are not supported).
    pub fn new(file: File) -> io::Result<Option<Mmap>> {
        if !lease(&file, libc::F_RDLCK) {
            return Ok(None);
        }
        // Measured under the lease: no one can have shrunk it since.
        let len = file.metadata()?.len();
        if len == 0 {
            lease(&file, libc::F_UNLCK);
            return Ok(None);
        }
        // SAFETY: the mapping is read-only, and the read lease keeps any other process from
        // writing or truncating the file while it is in use: a writer is held until `broken`
        // has been seen and the fold has stopped touching the mapping (see the module doc).
        let map = match unsafe { memmap2::MmapOptions::new().map(&file) } {
            Ok(m) => m,
            Err(e) => {
                lease(&file, libc::F_UNLCK);
                return Err(e);
            }
        };
        // Only tunes read-ahead.
        let _ = map.advise(memmap2::Advice::Sequential);
        // SAFETY: sysconf only reads a system constant.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096).max(1);
        Ok(Some(Mmap { map, file, page }))
    }

    /// The file's bytes (as they were when mapped).
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Whether another process wants to write or truncate the file: the lease is being broken,
    /// and the mapping must be left (the writer waits until the lease is given back).
    pub fn broken(&self) -> bool {
        // SAFETY: F_GETLEASE only reads the lease state of an open descriptor.
        #[cfg(target_os = "linux")]
        let broken = unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_GETLEASE) } != libc::F_RDLCK;
        // No leases elsewhere: `new` maps nothing there, so this is never asked.
        #[cfg(not(target_os = "linux"))]
        let broken = true;
        broken
    }

    /// Gives the pages wholly inside `from..to` back to the kernel (read again from the file if
    /// touched later, so the bytes seen never change); returns where the released pages end.
    pub fn release(&self, from: usize, to: usize) -> usize {
        let start = from.next_multiple_of(self.page);
        let end = to.min(self.map.len()) / self.page * self.page;
        if end > start {
            // SAFETY: `start..end` is a page-aligned range inside the mapping. MADV_DONTNEED on
            // a private read-only file mapping drops the pages; later reads fault the file's
            // bytes back in (the lease keeps them the same).
            let _ = unsafe { self.map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start) };
            return end;
        }
        from
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // Nothing touches the mapping once its owner is dropped: the lease goes back, then
        // memmap2 unmaps it.
        lease(&self.file, libc::F_UNLCK);
    }
}

/// Sets the lease of `file` to `kind` (`F_RDLCK` or `F_UNLCK`); whether that was granted.
fn lease(file: &File, kind: libc::c_int) -> bool {
    #[cfg(target_os = "linux")]
    {
        ensure_sigio_handled();
        // SAFETY: F_SETLEASE on an open descriptor; no memory is passed.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, kind) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, kind);
        false
    }
}

/// A lease break is signalled with SIGIO, whose default action ends the process: it is caught
/// (the break itself is seen by [`Mmap::broken`]).
#[cfg(target_os = "linux")]
fn ensure_sigio_handled() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let _ = signal_hook::flag::register(signal_hook::consts::SIGIO, seen);
    });
}
