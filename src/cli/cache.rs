//! The usage cache: what `agentnorm usage` and `agentnorm statusline` collected from each log
//! file, kept on disk so that a re-run reads only the files that changed.
//!
//! One file, `usage.bin` in the cache folder (`$AGENTNORM_CACHE_DIR`, else the platform's:
//! `$XDG_CACHE_HOME/agentnorm`, `~/.cache/agentnorm`, `~/Library/Caches/agentnorm`,
//! `%LOCALAPPDATA%\agentnorm`). It holds, per log file (by absolute path), the file's identity
//! when it was read (device, inode, size, modification and change times) and the `--dialect`
//! it was read with, beside the collected usage ([`InputUsage::to_bytes`]). An entry counts only
//! when all of these are the same now: a file changed, replaced (a new inode), appended to or
//! truncated is read again, whole. The file starts with the agentnorm version and a hash of the sources it
//! was built from (`build.rs`): another build's cache is ignored (and replaced), as is a damaged
//! one. It is replaced atomically (a
//! new file renamed over it), so runs at the same time never read half of one; the last to
//! finish wins. Entries of files that a walk no longer finds are dropped; entries of files this
//! run did not look at are kept (the status line reads only recent logs).
//!
//! [`InputUsage::to_bytes`]: agentnorm::sink::report::InputUsage::to_bytes

use std::collections::HashMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use agentnorm::Dialect;
use serde::{Deserialize, Serialize};

/// What the file starts with: the format's name, its layout, and the version that wrote it.
const MAGIC: &[u8; 8] = b"agntnrm1";

/// The build that writes and reads the cache: the version and the hash of the sources.
fn build() -> String {
    concat!(env!("CARGO_PKG_VERSION"), "+", env!("AGENTNORM_SOURCE_HASH")).to_owned()
}

/// What identifies a file as unchanged since it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    /// The size and mtime of a SQLite database's write-ahead log beside it
    /// ([`agentnorm::files::write_ahead_log`]).
    wal: Option<(u64, i128)>,
}

impl FileId {
    /// The identity of the file at `path` (with its `-wal` beside it, if any).
    pub fn of_path(path: &std::path::Path) -> Option<FileId> {
        let mut id = FileId::of(&fs::metadata(path).ok()?);
        if let Some(Ok(w)) = agentnorm::files::write_ahead_log(path).map(fs::metadata) {
            let w = FileId::of(&w);
            id.wal = Some((w.size, w.mtime_ns));
        }
        Some(id)
    }

    /// The identity of the file `meta` describes.
    pub fn of(meta: &fs::Metadata) -> FileId {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
            FileId {
                dev: meta.dev(),
                ino: meta.ino(),
                size: meta.size(),
                mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
                ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
                wal: None,
            }
        }
        #[cfg(not(unix))]
        {
            let ns = |t: std::io::Result<std::time::SystemTime>| {
                t.ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as i128)
            };
            FileId {
                dev: 0,
                ino: 0,
                size: meta.len(),
                mtime_ns: ns(meta.modified()),
                ctime_ns: ns(meta.created()),
                wal: None,
            }
        }
    }
}

/// One cached file. Its data is shared with the run that reads it (the report decodes the
/// inputs one at a time, from here, at the end).
#[derive(Debug, Clone)]
struct Entry {
    id: FileId,
    dialect: Option<Dialect>,
    data: Arc<[u8]>,
}

/// One entry on disk: the key (the path's bytes), the identity, the `--dialect`, the data.
type DiskEntry<'a> = (&'a [u8], FileId, Option<Dialect>, &'a [u8]);

/// The file's layout after [`MAGIC`], as written: a key and an entry, borrowed.
#[derive(Serialize)]
struct OnDisk<'a> {
    version: String,
    entries: Vec<DiskEntry<'a>>,
}

/// [`OnDisk`] as read, borrowing from the file's bytes (each entry's data is copied once, into
/// its [`Entry`]).
#[derive(Deserialize)]
struct OnDiskRead<'a> {
    version: &'a str,
    #[serde(borrow)]
    entries: Vec<DiskEntry<'a>>,
}

/// The cache as read at the start of a run, and what the run adds.
#[derive(Debug, Default)]
pub struct UsageCache {
    /// Where it is kept (`None`: nowhere to keep it; the run reads every file).
    file: Option<PathBuf>,
    entries: HashMap<Vec<u8>, Entry>,
    /// Whether anything was added or dropped since it was read.
    changed: bool,
}

/// The key of `path`: its absolute form's bytes.
fn key(path: &Path) -> Vec<u8> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        abs.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        abs.to_string_lossy().into_owned().into_bytes()
    }
}

/// The cache folder: `$AGENTNORM_CACHE_DIR`, else the platform's cache folder's `agentnorm`.
pub fn folder() -> Option<PathBuf> {
    match std::env::var_os("AGENTNORM_CACHE_DIR").filter(|v| !v.is_empty()) {
        Some(d) => Some(PathBuf::from(d)),
        None => dirs::cache_dir().map(|d| d.join("agentnorm")),
    }
}

impl UsageCache {
    /// The cache of the cache folder (empty when there is none yet, or it is another version's
    /// or damaged).
    pub fn open() -> UsageCache {
        match folder() {
            Some(dir) => UsageCache::open_at(&dir.join("usage.bin")),
            None => UsageCache::default(),
        }
    }

    /// The cache kept in `file`.
    pub fn open_at(file: &Path) -> UsageCache {
        let entries = fs::read(file).ok().and_then(|bytes| parse(&bytes)).unwrap_or_default();
        UsageCache { file: Some(file.to_path_buf()), entries, changed: false }
    }

    /// The cached bytes of `path`, when its identity now is the one it was read with (and it
    /// was read with the same `--dialect`).
    pub fn get(&self, path: &Path, id: FileId, dialect: Option<Dialect>) -> Option<&Arc<[u8]>> {
        let e = self.entries.get(&key(path))?;
        (e.id == id && e.dialect == dialect).then_some(&e.data)
    }

    /// Records what `path` (of identity `id`) gave.
    pub fn put(&mut self, path: &Path, id: FileId, dialect: Option<Dialect>, data: impl Into<Arc<[u8]>>) {
        self.entries.insert(key(path), Entry { id, dialect, data: data.into() });
        self.changed = true;
    }

    /// Drops the entries of files under one of `roots` (folders walked whole this run) that the
    /// walk did not find (`found`: the files it did).
    pub fn forget_missing(&mut self, roots: &[PathBuf], found: &[PathBuf]) {
        let roots: Vec<Vec<u8>> = roots.iter().filter(|r| r.is_dir()).map(|r| key(r)).collect();
        if roots.is_empty() {
            return;
        }
        let found: std::collections::HashSet<Vec<u8>> = found.iter().map(|p| key(p)).collect();
        let before = self.entries.len();
        self.entries.retain(|k, _| {
            let under = roots
                .iter()
                .any(|r| k.len() > r.len() && k.starts_with(r) && k[r.len()] == std::path::MAIN_SEPARATOR as u8);
            !under || found.contains(k)
        });
        self.changed |= self.entries.len() != before;
    }

    /// Writes the cache back when the run changed it: a new file beside the old one, renamed
    /// over it. An error says why the cache could not be kept (the report is not affected).
    pub fn save(&self) -> std::io::Result<()> {
        let Some(file) = &self.file else { return Ok(()) };
        if !self.changed {
            return Ok(());
        }
        let dir = file.parent().unwrap_or(Path::new("."));
        fs::create_dir_all(dir)?;
        let mut entries: Vec<_> =
            self.entries.iter().map(|(k, e)| (k.as_slice(), e.id, e.dialect, &e.data[..])).collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let body = OnDisk { version: build(), entries };
        let bytes = postcard::to_stdvec(&body).map_err(std::io::Error::other)?;
        let mut tmp = tempfile_in(dir)?;
        tmp.1.write_all(MAGIC)?;
        tmp.1.write_all(&bytes)?;
        tmp.1.sync_all().ok();
        drop(tmp.1);
        fs::rename(&tmp.0, file).inspect_err(|_| {
            let _ = fs::remove_file(&tmp.0);
        })
    }

    /// How many files it holds.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// A new file in `dir` that no other run uses (`usage.bin.<pid>.<n>.tmp`), created without
/// following a link, readable by its owner only.
fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, fs::File)> {
    let pid = std::process::id();
    for n in 0..100u32 {
        let path = dir.join(format!("usage.bin.{pid}.{n}.tmp"));
        let mut opts = fs::OpenOptions::new();
        opts.write(true).create_new(true);
        // Readable by its owner only: it names sessions, models and project folders.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        match opts.open(&path) {
            Ok(f) => return Ok((path, f)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary name for the usage cache"))
}

/// The entries of a cache file, or `None` when it is another version's or damaged.
fn parse(bytes: &[u8]) -> Option<HashMap<Vec<u8>, Entry>> {
    let body = bytes.strip_prefix(MAGIC.as_slice())?;
    let disk: OnDiskRead = postcard::from_bytes(body).ok()?;
    (disk.version == build()).then(|| {
        disk.entries
            .into_iter()
            .map(|(k, id, dialect, data)| (k.to_vec(), Entry { id, dialect, data: Arc::from(data) }))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(p: &Path) -> FileId {
        FileId::of(&fs::metadata(p).unwrap())
    }

    #[test]
    fn a_database_changes_identity_when_its_write_ahead_log_grows() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        fs::write(&db, b"SQLite format 3\0").unwrap();
        let alone = FileId::of_path(&db).unwrap();
        assert_eq!(alone, FileId::of(&fs::metadata(&db).unwrap()), "no -wal: the file's own identity");
        fs::write(dir.path().join("opencode.db-wal"), b"page").unwrap();
        let with_wal = FileId::of_path(&db).unwrap();
        assert_ne!(with_wal, alone);
        fs::write(dir.path().join("opencode.db-wal"), b"page, and another").unwrap();
        assert_ne!(FileId::of_path(&db).unwrap(), with_wal, "new messages in the log, the database untouched");
    }

    #[test]
    fn an_unchanged_file_is_found_and_any_change_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        fs::write(&log, b"{\"x\":1}\n").unwrap();
        let store = dir.path().join("cache/usage.bin");
        let mut c = UsageCache::open_at(&store);
        assert!(c.get(&log, id_of(&log), None).is_none());
        c.put(&log, id_of(&log), None, b"one".to_vec());
        c.save().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(fs::metadata(&store).unwrap().permissions().mode() & 0o777, 0o600);
        }

        let c = UsageCache::open_at(&store);
        assert_eq!(c.get(&log, id_of(&log), None).map(|d| &d[..]), Some(&b"one"[..]));
        // Another --dialect is another reading.
        assert!(c.get(&log, id_of(&log), Some(Dialect::Claude)).is_none());

        // Appended to.
        let mut f = fs::OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(b"{\"x\":2}\n").unwrap();
        drop(f);
        assert!(c.get(&log, id_of(&log), None).is_none());
    }

    #[test]
    fn a_file_replaced_by_one_of_the_same_size_and_time_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("a.jsonl");
        fs::write(&log, b"{\"x\":1}\n").unwrap();
        let before = id_of(&log);
        let other = dir.path().join("b.jsonl");
        fs::write(&other, b"{\"x\":9}\n").unwrap();
        let f = fs::File::options().write(true).open(&other).unwrap();
        f.set_modified(fs::metadata(&log).unwrap().modified().unwrap()).unwrap();
        drop(f);
        fs::rename(&other, &log).unwrap();
        let after = id_of(&log);
        assert_eq!((before.size, before.mtime_ns), (after.size, after.mtime_ns));
        let mut c = UsageCache::default();
        c.put(&log, before, None, b"old".to_vec());
        assert!(c.get(&log, after, None).is_none(), "a new inode is a new file");
    }

    #[test]
    fn another_versions_or_a_damaged_cache_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("usage.bin");
        let log = dir.path().join("a.jsonl");
        fs::write(&log, b"{}\n").unwrap();
        let k = key(&log);
        let other = OnDisk { version: "0.0.0-other".into(), entries: vec![(&k, id_of(&log), None, b"old")] };
        let mut bytes = MAGIC.to_vec();
        bytes.extend(postcard::to_stdvec(&other).unwrap());
        fs::write(&store, &bytes).unwrap();
        assert_eq!(UsageCache::open_at(&store).len(), 0, "another version's entries are not used");

        for damaged in [&b"garbage"[..], &bytes[..bytes.len() / 2], b""] {
            fs::write(&store, damaged).unwrap();
            let mut c = UsageCache::open_at(&store);
            assert_eq!(c.len(), 0);
            c.put(&log, id_of(&log), None, b"new".to_vec());
            c.save().unwrap();
            assert_eq!(
                UsageCache::open_at(&store).get(&log, id_of(&log), None).map(|d| d.to_vec()),
                Some(b"new".to_vec())
            );
        }
    }

    #[test]
    fn files_gone_from_a_walked_folder_are_forgotten_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let walked = dir.path().join("projects");
        fs::create_dir(&walked).unwrap();
        let id = FileId { dev: 1, ino: 2, size: 3, mtime_ns: 4, ctime_ns: 5, wal: None };
        let mut c = UsageCache::default();
        c.put(&walked.join("kept.jsonl"), id, None, vec![1]);
        c.put(&walked.join("gone.jsonl"), id, None, vec![2]);
        c.put(&dir.path().join("projects-other/x.jsonl"), id, None, vec![3]);
        c.put(&dir.path().join("elsewhere.jsonl"), id, None, vec![4]);
        c.forget_missing(std::slice::from_ref(&walked), &[walked.join("kept.jsonl")]);
        assert!(c.get(&walked.join("kept.jsonl"), id, None).is_some());
        assert!(c.get(&walked.join("gone.jsonl"), id, None).is_none());
        assert!(c.get(&dir.path().join("projects-other/x.jsonl"), id, None).is_some(), "a sibling is not under it");
        assert!(c.get(&dir.path().join("elsewhere.jsonl"), id, None).is_some());
    }
}
