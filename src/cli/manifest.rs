//! The record `--format html --output-dir DIR` leaves in DIR (`.agentnorm-pages.json`), so that a
//! re-run over inputs that have not changed renders only what did (issue 14): for each input
//! read whole, what identifies it unchanged (size, modification and change times to the
//! nanosecond, inode and device) and the pages it wrote; for each page, the inputs it was
//! rendered from and its own size and modification time; the version and the options the pages
//! were rendered with.
//!
//! It is a cache and nothing more: a record that is missing, unreadable, not JSON, of another
//! version or of other options is ignored (every input is rendered); it is read without
//! following a link and only when it is a plain file of sensible size, and written like a page
//! (a new file of its own, renamed over the name).

use std::fs::Metadata;
use std::io::Read as _;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The record's file name in DIR. No page can have it: page names never start with a dot.
pub const MANIFEST: &str = ".agentnorm-pages.json";

/// A record larger than this is not read (it is not one of ours).
const MANIFEST_MAX: u64 = 256 << 20;

/// What identifies a file unchanged since it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// Its length in bytes.
    pub size: u64,
    /// Its modification time, ns since the epoch.
    pub mtime_ns: i64,
    /// Its status change time (ns; 0 where the platform has none): it moves when anything sets
    /// the modification time back.
    pub ctime_ns: i64,
    /// Its inode (0 where the platform has none): a file replaced by another has another.
    pub ino: u64,
    /// The device it is on (0 where the platform has none).
    pub dev: u64,
}

impl Stamp {
    /// The stamp of a file's metadata.
    pub fn of(m: &Metadata) -> Stamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            let ns = |s: i64, n: i64| s.saturating_mul(1_000_000_000).saturating_add(n);
            Stamp {
                size: m.len(),
                mtime_ns: ns(m.mtime(), m.mtime_nsec()),
                ctime_ns: ns(m.ctime(), m.ctime_nsec()),
                ino: m.ino(),
                dev: m.dev(),
            }
        }
        #[cfg(not(unix))]
        {
            Stamp { size: m.len(), mtime_ns: modified_ns(m), ctime_ns: 0, ino: 0, dev: 0 }
        }
    }
}

/// A file's modification time in ns since the epoch (negative before it; 0 when unknown).
pub fn modified_ns(m: &Metadata) -> i64 {
    match m.modified().map(|t| t.duration_since(std::time::UNIX_EPOCH)) {
        Ok(Ok(d)) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
        Ok(Err(e)) => i64::try_from(e.duration().as_nanos()).map_or(i64::MIN, |n| -n),
        Err(_) => 0,
    }
}

/// One page an input wrote, in the order it wrote them: enough to replay what writing it did
/// to the run's names and sessions without reading the input.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageEntry {
    /// The page's session id (none for a page without one).
    pub session: Option<String>,
    /// The file name the page asked for (from its session id).
    pub name: String,
    /// The file it was written to (`name`, or `<stem>-2.html`, … when that was taken).
    pub file: String,
    /// The session resumed one an earlier input started: its page was rewritten in place (and
    /// its path not printed again).
    pub resumed: bool,
    /// The inputs (paths; `-` for stdin) the session's page had been rendered from before this
    /// one, or none when no earlier input had the session.
    pub earlier: Option<Vec<String>>,
}

/// One input read whole, as it was when it was read, and what it wrote.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InputRecord {
    /// Its path as the run named it.
    pub path: String,
    /// The file as it was before it was read.
    pub stamp: Stamp,
    /// A line of it ended as `unknown` (for `--strict`).
    pub unknown: bool,
    /// A turn of it failed or it ended with one open (for `--fail-on-error`).
    pub turn_failed: bool,
    /// Its pages.
    pub pages: Vec<PageEntry>,
}

/// One page as the run left it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageRecord {
    /// Its file name in DIR.
    pub file: String,
    /// The inputs (paths) it was rendered from, in order.
    pub from: Vec<String>,
    /// Its length.
    pub size: u64,
    /// Its modification time (ns since the epoch).
    pub mtime_ns: i64,
}

/// The whole record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// The version of agentnorm that wrote it, and the build (another invalidates every page).
    pub agentnorm: String,
    /// The options the pages were rendered with (others invalidate every page).
    pub key: String,
    /// The inputs read whole, in the order they were read.
    pub inputs: Vec<InputRecord>,
    /// The pages those inputs wrote.
    pub pages: Vec<PageRecord>,
}

/// This build's version: the crate's version and the size and modification time of the
/// running binary (a rebuilt binary of the same version may render otherwise).
pub fn build() -> String {
    let exe = std::env::current_exe().and_then(std::fs::metadata);
    match exe {
        Ok(m) => format!("{} {}:{}", env!("CARGO_PKG_VERSION"), m.len(), modified_ns(&m)),
        Err(_) => env!("CARGO_PKG_VERSION").to_owned(),
    }
}

/// The record in `dir`, when there is one of this build and `key`: read without following a
/// link, only from a plain file; anything else (none, another's, corrupt) is `None`.
pub fn load(dir: &Path, build: &str, key: &str) -> Option<Manifest> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        // Neither a link (O_NOFOLLOW) nor a FIFO that would block the open (O_NONBLOCK).
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(dir.join(MANIFEST)).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MANIFEST_MAX {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MANIFEST_MAX).read_to_end(&mut bytes).ok()?;
    let m: Manifest = serde_json::from_slice(&bytes).ok()?;
    (m.agentnorm == build && m.key == key).then_some(m)
}

/// Whether `name` can be a page's file name (what `--output-dir` writes): letters, digits, `.`,
/// `_`, `-`, no leading dot, ending in `.html`. A record's names are checked against it before
/// any is used, so a planted record cannot name a file outside DIR.
pub fn is_page_name(name: &str) -> bool {
    name.len() <= 128
        && name.ends_with(".html")
        && !name.starts_with('.')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_names_stay_inside_the_folder() {
        for ok in ["s-1.html", "abc_DEF.1.html", "session.html"] {
            assert!(is_page_name(ok), "{ok}");
        }
        for no in ["../x.html", "a/b.html", ".agentnorm-pages.json", ".x.html", "x.htm", "/etc/x.html", "x\\y.html", ""]
        {
            assert!(!is_page_name(no), "{no}");
        }
    }

    #[test]
    fn a_corrupt_or_foreign_record_is_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path(), "b", "k").is_none(), "none there");
        std::fs::write(dir.path().join(MANIFEST), b"{not json").unwrap();
        assert!(load(dir.path(), "b", "k").is_none(), "corrupt");
        let m = Manifest { agentnorm: "b".into(), key: "k".into(), inputs: vec![], pages: vec![] };
        std::fs::write(dir.path().join(MANIFEST), serde_json::to_vec(&m).unwrap()).unwrap();
        assert!(load(dir.path(), "b", "k").is_some(), "ours");
        assert!(load(dir.path(), "other build", "k").is_none(), "another build");
        assert!(load(dir.path(), "b", "other options").is_none(), "other options");
    }

    #[cfg(unix)]
    #[test]
    fn a_record_behind_a_link_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let m = Manifest { agentnorm: "b".into(), key: "k".into(), inputs: vec![], pages: vec![] };
        let real = dir.path().join("elsewhere.json");
        std::fs::write(&real, serde_json::to_vec(&m).unwrap()).unwrap();
        let pages = dir.path().join("pages");
        std::fs::create_dir(&pages).unwrap();
        std::os::unix::fs::symlink(&real, pages.join(MANIFEST)).unwrap();
        assert!(load(&pages, "b", "k").is_none());
    }
}
