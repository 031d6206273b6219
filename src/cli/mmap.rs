//! A large plain file mapped into memory, for the all-cores path (`agentnorm::normalize::parallel`).
//!
//! It exists because reading copies the page cache into a buffer (a quarter of one thread's work
//! on a large file) and then the buffer must be cut and handed between threads; a mapping lets
//! every worker read its own chunk where it lies, with no copy and no hand-off. The pages behind
//! the fold are released as it goes ([`Mapped::release`]), so the resident memory stays a few
//! chunks whatever the file's size.
//!
//! A file truncated by another process while it is mapped ends the process with SIGBUS (as for
//! every reader that maps files); the logs normalized are written once and read afterwards.

use std::fs::File;
use std::io;

/// A read-only private mapping of a whole file.
pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value; sharing `&[u8]` views of it between
// threads is as safe as sharing any immutable byte slice.
unsafe impl Send for Mapped {}
// SAFETY: as above; `release` only drops pages the kernel reads back from the file on access.
unsafe impl Sync for Mapped {}

impl Mapped {
    /// Maps `file` whole; `None` for an empty file.
    pub fn new(file: &File) -> io::Result<Option<Mapped>> {
        let len = usize::try_from(file.metadata()?.len()).map_err(|_| io::Error::other("file too large to map"))?;
        if len == 0 {
            return Ok(None);
        }
        use std::os::fd::AsRawFd as _;
        // SAFETY: a fresh read-only private mapping of `len` bytes of an open file; the kernel
        // picks the address. Failure is checked below.
        let ptr =
            unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_PRIVATE, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `ptr..ptr + len` is the mapping just made. The advice only tunes read-ahead.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        Ok(Some(Mapped { ptr, len }))
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes that live as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }

    /// Gives the pages wholly inside `from..to` back to the kernel (read again from the file if
    /// touched later, so the bytes seen never change); returns where the released pages end.
    pub fn release(&self, from: usize, to: usize) -> usize {
        let page = 4096;
        let start = from.next_multiple_of(page);
        let end = to.min(self.len) / page * page;
        if end > start {
            // SAFETY: `start..end` is a page-aligned range inside the mapping. MADV_DONTNEED on
            // a private read-only file mapping drops the pages; later reads fault the file's
            // bytes back in.
            unsafe { libc::madvise(self.ptr.cast::<u8>().add(start).cast(), end - start, libc::MADV_DONTNEED) };
            return end;
        }
        from
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, once; no view of it outlives `self`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}
