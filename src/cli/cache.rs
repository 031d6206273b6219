//! The usage cache: what `agentnorm usage` and `agentnorm statusline` collected from each log
//! file, kept on disk so that a re-run reads only the files that changed.
//!
//! One file, `usage.bin` in the cache folder (`$AGENTNORM_CACHE_DIR`, else the platform's:
//! `$XDG_CACHE_HOME/agentnorm`, `~/.cache/agentnorm`, `~/Library/Caches/agentnorm`,
//! `%LOCALAPPDATA%\agentnorm`). It holds, per log file (by absolute path), the file's identity
//! when it was read (device, inode, size, modification and change times) and the `--dialect`
//! it was read with, beside the collected usage ([`InputUsage::to_bytes`]). An entry counts only
//! when all of these are the same now: a file changed, replaced (a new inode), appended to or
//! truncated is read again. A log read in pieces (a Claude Code transcript or a Codex rollout of
//! 1 MiB or more, `usage::read_pieces`) also has a [`Resume`] point, the start of its last
//! piece, with the lines a reading from there reads first (a rollout's seed) and the usage of
//! the pieces before it (its entry's usage is then that of the last piece, [`Parts`]:
//! each turn is kept once): when the same file (device and inode) has grown and the 64 KiB
//! before that point are the bytes that were there ([`check_before`]), it is read on from
//! there; any other change is read whole. The file starts with the agentnorm version and a hash of the
//! sources it was built from (`build.rs`): another build's cache is ignored (and replaced), as
//! is a damaged one.
//!
//! A run holds the index of the cache (a few hundred bytes per file), not the usage: each
//! file's usage is read from the cache file when the report takes it, and what the run reads
//! afresh is written straight to the next cache file ([`Spool`]), so a run's memory does not
//! grow with the logs (the cache of the 2 GB benchmark home is 70 MB). The layout: [`MAGIC`],
//! the usage of every file one after the other, the index ([`Index`]), the index's [`sum`] (4
//! bytes) and its offset (8 bytes, little-endian). The next cache file is written beside the old
//! one and renamed over it, so runs at the same time never read half of one; the last to finish
//! wins. It is not synced to the disk before the rename: the index holds a checksum of each
//! file's usage, and usage that does not match it (a crash left the cache half written) is read
//! again from its log. Entries of files that a walk no longer finds are dropped; entries of
//! files this run did not look at are kept (the status line reads only recent logs).
//!
//! [`InputUsage::to_bytes`]: agentnorm::sink::report::InputUsage::to_bytes

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use agentnorm::Dialect;
use serde::{Deserialize, Serialize};

/// What the file starts with: the format's name, its layout, and the version that wrote it.
const MAGIC: &[u8; 8] = b"agntnrm5";

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

/// `len` bytes of `file` from `offset`.
pub(super) fn read_at(file: &fs::File, offset: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; usize::try_from(len).map_err(std::io::Error::other)?];
    #[cfg(unix)]
    std::os::unix::fs::FileExt::read_exact_at(file, &mut buf, offset)?;
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(file, &mut buf[done..], offset + done as u64)?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
    }
    Ok(buf)
}

/// Writes `bytes` into `file` at `offset`.
fn write_at(file: &fs::File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)?;
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < bytes.len() {
            done += std::os::windows::fs::FileExt::seek_write(file, &bytes[done..], offset + done as u64)?;
        }
    }
    Ok(())
}

/// One input's usage bytes ([`InputUsage::to_bytes`]): in memory, or at a place in a file the
/// run holds open (a cache file, or the [`Spool`] of what it read).
///
/// [`InputUsage::to_bytes`]: agentnorm::sink::report::InputUsage::to_bytes
#[derive(Debug, Clone)]
pub enum Blob {
    /// Held in memory.
    Memory(Arc<[u8]>),
    /// `len` bytes at `offset` of `file`, whose [`sum`] is `sum`.
    File { file: Arc<fs::File>, offset: u64, len: u64, sum: u32 },
}

impl Blob {
    /// The bytes (read from the file, for a blob kept in one); an error when they are not the
    /// bytes that were written there (a cache file a crash left half written: it is not
    /// synced, [`UsageCache::save`]).
    pub fn read(&self) -> std::io::Result<Vec<u8>> {
        match self {
            // No sum to check: none is worked out (a freshly read log's usage is read here).
            Blob::Memory(b) => Ok(b.to_vec()),
            Blob::File { .. } => self.read_summed().map(|(bytes, _)| bytes),
        }
    }

    /// The bytes ([`Blob::read`]) and their [`sum`] (the one checked, for a blob in a file).
    fn read_summed(&self) -> std::io::Result<(Vec<u8>, u32)> {
        match self {
            Blob::Memory(b) => Ok((b.to_vec(), sum(b))),
            Blob::File { file, offset, len, sum: expected } => {
                let bytes = read_at(file, *offset, *len)?;
                if sum(&bytes) != *expected {
                    return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "damaged usage cache"));
                }
                Ok((bytes, *expected))
            }
        }
    }
}

/// The checksum a cache file keeps of each blob and of its index (CRC-32: what catches the
/// blocks a crash left unwritten, at memory speed).
fn sum(bytes: &[u8]) -> u32 {
    crc32fast::hash(bytes)
}

/// A file's usage as the cache holds it: for a log read in pieces, the usage of the pieces
/// before its last ([`Resume::settled`]) and of its last piece, else all of it in `rest`. Kept
/// apart, a live transcript that grew is not encoded again whole at each run, and the cache
/// holds its usage once.
#[derive(Debug, Clone)]
pub struct Parts {
    /// The usage of the pieces before the last.
    pub settled: Option<Blob>,
    /// The usage of the rest of the file (of all of it, without `settled`).
    pub rest: Blob,
}

impl From<Vec<u8>> for Blob {
    fn from(v: Vec<u8>) -> Blob {
        Blob::Memory(v.into())
    }
}

/// A file that usage bytes are appended to as the inputs are read, from any thread: the next
/// cache file (named, beside the cache), or an unnamed temporary file (`--no-cache`, or no
/// cache folder to write in), so that what a run read is not held in memory.
#[derive(Debug)]
pub struct Spool {
    /// Its name, when it is to become the cache.
    path: Option<PathBuf>,
    file: Arc<fs::File>,
    /// Where the next bytes go.
    end: Mutex<u64>,
}

impl Spool {
    /// A spool named `usage.bin.<pid>.<n>.tmp` in `dir`, that [`UsageCache::save`] renames
    /// into the cache; it starts with [`MAGIC`].
    fn named(dir: &Path) -> std::io::Result<Spool> {
        fs::create_dir_all(dir)?;
        let (path, file) = tempfile_in(dir)?;
        let spool = Spool { path: Some(path), file: Arc::new(file), end: Mutex::new(0) };
        spool.append(MAGIC)?;
        Ok(spool)
    }

    /// An unnamed spool in the temporary folder, gone when the run ends.
    pub fn unnamed() -> std::io::Result<Spool> {
        Ok(Spool { path: None, file: Arc::new(tempfile::tempfile()?), end: Mutex::new(0) })
    }

    /// Appends `bytes`; the offset they are at.
    fn append(&self, bytes: &[u8]) -> std::io::Result<u64> {
        let mut end = self.end.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        write_at(&self.file, bytes, *end)?;
        let at = *end;
        *end += bytes.len() as u64;
        Ok(at)
    }

    /// `bytes` as a blob: appended here, or kept in memory when they cannot be written.
    pub fn keep(&self, bytes: Vec<u8>) -> Blob {
        match self.append(&bytes) {
            Ok(offset) => Blob::File { file: self.file.clone(), offset, len: bytes.len() as u64, sum: sum(&bytes) },
            Err(_) => bytes.into(),
        }
    }

    /// Where `blob` is in this spool (offset, length, checksum), when it is in it.
    fn place_of(&self, blob: &Blob) -> Option<Place> {
        match blob {
            Blob::File { file, offset, len, sum } if Arc::ptr_eq(file, &self.file) => Some((*offset, *len, *sum)),
            _ => None,
        }
    }
}

/// One cached file: its identity and `--dialect` when read, the span of its usage's times
/// ([`InputUsage::span_ms`]: the report's order, known without reading the usage), the usage
/// (of its bytes from its resume point on, when it has one: the rest is the resume's).
///
/// [`InputUsage::span_ms`]: agentnorm::sink::report::InputUsage::span_ms
#[derive(Debug, Clone)]
struct Entry {
    id: FileId,
    dialect: Option<Dialect>,
    span: Option<(i64, i64)>,
    blob: Blob,
    resume: Option<Resume>,
}

/// Where a log read in pieces can be read on from when it grows: the start of its last piece,
/// a hash of the bytes before it ([`check_before`]), and the usage of the pieces before it.
#[derive(Debug, Clone)]
pub struct Resume {
    /// The byte its last piece starts at (a line's start).
    pub at: u64,
    /// [`check_before`] of the file at `at` when it was read.
    pub check: u64,
    /// The usage of the file's bytes before `at` ([`InputUsage::to_bytes`]).
    ///
    /// [`InputUsage::to_bytes`]: agentnorm::sink::report::InputUsage::to_bytes
    pub settled: Blob,
    /// The lines a reading from `at` reads first ([`agentnorm::Normalizer::seeded`]), when
    /// the log's dialect marks any (a Codex rollout's session, model, total and rate limits).
    pub seed: Option<Blob>,
    /// The span of that usage's times ([`InputUsage::span_ms`]).
    ///
    /// [`InputUsage::span_ms`]: agentnorm::sink::report::InputUsage::span_ms
    pub span: Option<(i64, i64)>,
}

/// How many bytes before a resume point [`check_before`] reads.
const CHECKED_BYTES: u64 = 64 << 10;

/// A hash of the [`CHECKED_BYTES`] of the file at `path` before byte `at` (fewer when `at` is
/// nearer its start), and of `at`: a file whose bytes there changed is not read on from `at`.
pub fn check_before(path: &Path, at: u64) -> std::io::Result<u64> {
    let file = fs::File::open(path)?;
    let from = at.saturating_sub(CHECKED_BYTES);
    let bytes = read_at(&file, from, at - from)?;
    use std::hash::BuildHasher as _;
    Ok(foldhash::quality::FixedState::with_seed(0).hash_one((at, bytes)))
}

/// Where a blob is in a cache file: offset, length, [`sum`].
type Place = (u64, u64, u32);

/// One entry of the index on disk: the key (the path's bytes), the identity, the `--dialect`,
/// the span, where the usage is in the file, and the resume point (`at`, `check`, where the
/// usage before it is, and its span).
type DiskEntry<'a> = (&'a [u8], FileId, Option<Dialect>, Option<(i64, i64)>, Place, Option<DiskResume>);

/// A [`Resume`] on disk: `at`, `check`, where the usage before `at` is, its span, and where the
/// seed is.
type DiskResume = (u64, u64, Place, Option<(i64, i64)>, Option<Place>);

/// The index at the end of the file.
#[derive(Serialize, Deserialize)]
struct Index<'a> {
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
    /// The next cache file, made when the first file is read afresh (`None` in it: it could
    /// not be made).
    spool: OnceLock<Option<Spool>>,
    /// A cache asked for the files this one does not hold (`usage.bin` behind the status
    /// line's own, [`UsageCache::open_recent`]), read when it is first asked.
    behind: Option<(PathBuf, OnceLock<Box<UsageCache>>)>,
}

/// The key of `path`: its absolute form's bytes.
fn key(path: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt as _;
        // An absolute path with no `.` component and no doubled `/` is its own absolute form:
        // `std::path::absolute` would only build it again component by component (a tenth of a
        // warm run over 12,000 logs, its reallocations contending for the allocator's lock).
        let bytes = path.as_os_str().as_bytes();
        let clean = bytes.starts_with(b"/")
            && !bytes.windows(2).any(|w| w == b"//")
            && !bytes.windows(3).any(|w| w == b"/./")
            && !bytes.ends_with(b"/.");
        if clean {
            return bytes.to_vec();
        }
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        abs.as_os_str().as_bytes().to_vec()
    }
    #[cfg(not(unix))]
    {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
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

    /// The status line's cache: `statusline.bin` in the cache folder, which holds the logs the
    /// status line read last (those of the last day), with `usage.bin` behind it for the logs it
    /// does not hold. The status line runs after every message, and the live transcript has
    /// changed each time: writing only the recent logs' usage again, not every log's (48 MB for
    /// the 2 GB benchmark home), keeps that run short.
    pub fn open_recent() -> UsageCache {
        match folder() {
            Some(dir) => UsageCache::open_before(&dir.join("statusline.bin"), &dir.join("usage.bin")),
            None => UsageCache::default(),
        }
    }

    /// The cache kept in `file`, with the one kept in `behind` asked for the files it does
    /// not hold (read when first asked).
    pub fn open_before(file: &Path, behind: &Path) -> UsageCache {
        UsageCache { behind: Some((behind.to_path_buf(), OnceLock::new())), ..UsageCache::open_at(file) }
    }

    /// The cache behind this one, read on first use.
    fn behind(&self) -> Option<&UsageCache> {
        let (path, cache) = self.behind.as_ref()?;
        Some(cache.get_or_init(|| Box::new(UsageCache::open_at(path))))
    }

    /// Keeps the entries of `paths` only, taking those it does not hold from the cache behind
    /// it: after a run, it holds what the next run over the same files reads.
    pub fn keep_only(&mut self, paths: &[PathBuf]) {
        let keys: std::collections::HashSet<Vec<u8>> = paths.iter().map(|p| key(p)).collect();
        let before = self.entries.len();
        self.entries.retain(|k, _| keys.contains(k));
        self.changed |= self.entries.len() != before;
        // The cache behind is read only when a file is missing here (it is most of a run).
        let missing: Vec<&Vec<u8>> = keys.iter().filter(|k| !self.entries.contains_key(*k)).collect();
        let mut taken = Vec::new();
        if !missing.is_empty()
            && let Some(behind) = self.behind()
        {
            taken.extend(missing.into_iter().filter_map(|k| Some((k.clone(), behind.entries.get(k)?.clone()))));
        }
        self.changed |= !taken.is_empty();
        self.entries.extend(taken);
    }

    /// The cache kept in `file`.
    pub fn open_at(file: &Path) -> UsageCache {
        let entries = fs::File::open(file).ok().and_then(parse).unwrap_or_default();
        UsageCache { file: Some(file.to_path_buf()), entries, ..UsageCache::default() }
    }

    /// The span and usage cached for `path`, when its identity now is the one it was read with
    /// (and it was read with the same `--dialect`). The cache behind is not asked for a file
    /// this one holds as it was before (a live transcript that grew since the last status
    /// line): reading it is most of such a run, and the file is read on from its last piece.
    pub fn get(&self, path: &Path, id: FileId, dialect: Option<Dialect>) -> Option<(Option<(i64, i64)>, Parts)> {
        match self.entries.get(&key(path)) {
            Some(e) if e.id == id && e.dialect == dialect => {
                Some((e.span, Parts { settled: e.resume.as_ref().map(|r| r.settled.clone()), rest: e.blob.clone() }))
            }
            Some(e) if e.dialect == dialect => None,
            _ => self.behind()?.get(path, id, dialect),
        }
    }

    /// Where to read `path` on from, now that its identity is `id`, and the usage of its bytes
    /// before that point: when the cache holds a resume point for it ([`Resume`]), the file is
    /// the one that was read (same device and inode, read with the same `--dialect`), it is not
    /// shorter than that point, and the bytes before the point are the ones that were there
    /// ([`check_before`]). A log that only grew is so read from its last piece.
    pub fn resume(&self, path: &Path, id: FileId, dialect: Option<Dialect>) -> Option<&Resume> {
        fn own<'a>(e: &'a Entry, path: &Path, id: FileId, dialect: Option<Dialect>) -> Option<&'a Resume> {
            let r = e.resume.as_ref()?;
            let same = e.id.dev == id.dev && e.id.ino == id.ino && e.dialect == dialect && id.size >= r.at;
            (same && check_before(path, r.at).ok()? == r.check).then_some(r)
        }
        match self.entries.get(&key(path)).and_then(|e| own(e, path, id, dialect)) {
            Some(found) => Some(found),
            None => self.behind()?.resume(path, id, dialect),
        }
    }

    /// Where the usage of files read afresh goes: the next cache file, else (no cache folder
    /// to write in) nowhere (`None`: the caller keeps them).
    pub fn spool(&self) -> Option<&Spool> {
        let dir = self.file.as_ref()?.parent().unwrap_or(Path::new("."));
        self.spool.get_or_init(|| Spool::named(dir).ok()).as_ref()
    }

    /// Records what `path` (of identity `id`) gave: `blob`, the usage of its bytes from the
    /// resume point on (of all of them, without one).
    pub fn put(
        &mut self,
        path: &Path,
        id: FileId,
        dialect: Option<Dialect>,
        span: Option<(i64, i64)>,
        blob: Blob,
        resume: Option<Resume>,
    ) {
        self.entries.insert(key(path), Entry { id, dialect, span, blob, resume });
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

    /// Writes the cache back when the run changed it: the usage read afresh is in the next
    /// cache file already; the rest is copied into it, the index written after, and the file
    /// renamed over the old one. An error says why the cache could not be kept (the report is
    /// not affected: every blob stays readable).
    pub fn save(&self) -> std::io::Result<()> {
        let Some(file) = &self.file else { return Ok(()) };
        if !self.changed {
            return Ok(());
        }
        let spool = self.spool().ok_or_else(|| std::io::Error::other("no cache folder to write in"))?;
        let Some(tmp) = spool.path.clone() else {
            return Err(std::io::Error::other("the next cache file has no name"));
        };
        let written = (|| {
            let mut keys: Vec<&Vec<u8>> = self.entries.keys().collect();
            keys.sort();
            let mut entries = Vec::with_capacity(keys.len());
            // Where a blob is in the next cache file: where the run spooled it, else copied there.
            let place = |blob: &Blob| -> std::io::Result<Place> {
                match spool.place_of(blob) {
                    Some(place) => Ok(place),
                    None => {
                        let (bytes, sum) = blob.read_summed()?;
                        Ok((spool.append(&bytes)?, bytes.len() as u64, sum))
                    }
                }
            };
            for k in keys {
                let e = &self.entries[k];
                let resume = match &e.resume {
                    Some(r) => {
                        let seed = match &r.seed {
                            Some(s) => Some(place(s)?),
                            None => None,
                        };
                        Some((r.at, r.check, place(&r.settled)?, r.span, seed))
                    }
                    None => None,
                };
                entries.push((k.as_slice(), e.id, e.dialect, e.span, place(&e.blob)?, resume));
            }
            let version = build();
            let index = postcard::to_stdvec(&Index { version: &version, entries }).map_err(std::io::Error::other)?;
            let at = spool.append(&index)?;
            spool.append(&sum(&index).to_le_bytes())?;
            spool.append(&at.to_le_bytes())?;
            // Not synced (4 ms of a 50 ms status line on ext4): a crash that leaves the file
            // half written leaves checksums that do not match, and what they cover is read again.
            fs::rename(&tmp, file)
        })();
        written.inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })?;
        sweep(file.parent().unwrap_or(Path::new(".")));
        Ok(())
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
        opts.read(true).write(true).create_new(true);
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

/// Removes the next cache files that runs stopped before saving left in `dir` (a day old: a
/// run at the same time still writes its own).
fn sweep(dir: &Path) {
    let Ok(list) = fs::read_dir(dir) else { return };
    let day = std::time::Duration::from_secs(86_400);
    for e in list.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let old =
            e.metadata().ok().and_then(|m| m.modified().ok()).and_then(|t| t.elapsed().ok()).is_some_and(|a| a > day);
        if old && name.starts_with("usage.bin.") && name.ends_with(".tmp") {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// The entries of a cache file (their usage left in it), or `None` when it is another
/// version's or damaged.
fn parse(file: fs::File) -> Option<HashMap<Vec<u8>, Entry>> {
    let size = file.metadata().ok()?.len();
    let body = MAGIC.len() as u64;
    if size < body + 8 || read_at(&file, 0, body).ok()? != MAGIC {
        return None;
    }
    let at = u64::from_le_bytes(read_at(&file, size - 8, 8).ok()?.try_into().ok()?);
    if !(body..=size - 12).contains(&at) {
        return None;
    }
    let bytes = read_at(&file, at, size - 8 - at).ok()?;
    let (bytes, index_sum) = bytes.split_at(bytes.len() - 4);
    if sum(bytes).to_le_bytes() != index_sum {
        return None;
    }
    let index: Index = postcard::from_bytes(bytes).ok()?;
    if index.version != build() {
        return None;
    }
    let file = Arc::new(file);
    index
        .entries
        .into_iter()
        .map(|(k, id, dialect, span, place, resume)| {
            // Usage outside the part of the file before the index: damaged.
            let inside =
                |(offset, len, _): Place| offset >= body && offset.checked_add(len).is_some_and(|end| end <= at);
            let blob = |(offset, len, sum): Place| Blob::File { file: file.clone(), offset, len, sum };
            let resume = match resume {
                Some((r_at, check, p, span, seed)) if inside(p) && seed.is_none_or(inside) => {
                    Some(Resume { at: r_at, check, settled: blob(p), seed: seed.map(blob), span })
                }
                Some(_) => return None,
                None => None,
            };
            inside(place).then(|| (k.to_vec(), Entry { id, dialect, span, blob: blob(place), resume }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn id_of(p: &Path) -> FileId {
        FileId::of(&fs::metadata(p).unwrap())
    }

    /// The bytes cached for `path` (of identity `id`, read with no `--dialect`).
    fn bytes(c: &UsageCache, path: &Path, id: FileId) -> Option<Vec<u8>> {
        c.get(path, id, None).map(|(_, p)| p.rest.read().unwrap())
    }

    #[cfg(unix)]
    #[test]
    fn a_key_is_the_absolute_form_of_the_path_however_it_is_written() {
        use std::os::unix::ffi::OsStrExt as _;
        for p in [
            "/a/b.jsonl",
            "/a/b/",
            "/a/../b",
            "/a//b",
            "//a/b",
            "///a",
            "/a/./b",
            "/a/.",
            "/.a/b.",
            "rel/x",
            "./x",
            "/",
        ] {
            let abs = std::path::absolute(p).unwrap();
            assert_eq!(key(Path::new(p)), abs.as_os_str().as_bytes(), "{p}");
        }
    }

    /// The files in `dir`, by name.
    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        v.sort();
        v
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
        c.put(&log, id_of(&log), None, Some((1, 2)), b"one".to_vec().into(), None);
        c.save().unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            assert_eq!(fs::metadata(&store).unwrap().permissions().mode() & 0o777, 0o600);
        }

        let c = UsageCache::open_at(&store);
        assert_eq!(bytes(&c, &log, id_of(&log)), Some(b"one".to_vec()));
        assert_eq!(c.get(&log, id_of(&log), None).map(|(span, _)| span), Some(Some((1, 2))), "the span is kept");
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
        c.put(&log, before, None, None, b"old".to_vec().into(), None);
        assert!(c.get(&log, after, None).is_none(), "a new inode is a new file");
    }

    #[test]
    fn another_versions_or_a_damaged_cache_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("usage.bin");
        let log = dir.path().join("a.jsonl");
        fs::write(&log, b"{}\n").unwrap();
        let mut c = UsageCache::open_at(&store);
        c.put(&log, id_of(&log), None, None, b"old".to_vec().into(), None);
        c.save().unwrap();
        let good = fs::read(&store).unwrap();
        // The same layout, another version's index.
        let version = build();
        let mut other = good.clone();
        let at = good.windows(version.len()).rposition(|w| w == version.as_bytes()).unwrap();
        other[at] ^= 1;
        let n = other.len();
        let index_at = u64::from_le_bytes(other[n - 8..].try_into().unwrap()) as usize;
        let index_sum = sum(&other[index_at..n - 12]).to_le_bytes();
        other[n - 12..n - 8].copy_from_slice(&index_sum);
        fs::write(&store, &other).unwrap();
        assert_eq!(UsageCache::open_at(&store).len(), 0, "another version's entries are not used");
        // The index as it was, one of its bytes changed (a crash left it half written).
        let mut torn = good.clone();
        torn[at] ^= 1;
        fs::write(&store, &torn).unwrap();
        assert_eq!(UsageCache::open_at(&store).len(), 0, "an index that does not match its checksum is not used");
        // A file's usage changed under the index: it is not taken as usage.
        let mut torn = good.clone();
        let blob_at = good.windows(3).position(|w| w == b"old").unwrap();
        torn[blob_at] = b'n';
        fs::write(&store, &torn).unwrap();
        let c = UsageCache::open_at(&store);
        let (_, parts) = c.get(&log, id_of(&log), None).unwrap();
        assert_eq!(parts.rest.read().unwrap_err().kind(), std::io::ErrorKind::InvalidData);

        let past_end = {
            // The index's offset pointing past the index.
            let mut b = good.clone();
            let n = b.len();
            b[n - 8..].copy_from_slice(&(n as u64).to_le_bytes());
            b
        };
        for damaged in [&b"garbage"[..], &good[..good.len() / 2], b"", &past_end] {
            fs::write(&store, damaged).unwrap();
            let mut c = UsageCache::open_at(&store);
            assert_eq!(c.len(), 0);
            c.put(&log, id_of(&log), None, None, b"new".to_vec().into(), None);
            c.save().unwrap();
            assert_eq!(bytes(&UsageCache::open_at(&store), &log, id_of(&log)), Some(b"new".to_vec()));
        }
    }

    #[test]
    fn usage_read_afresh_goes_to_the_next_cache_file_and_the_rest_is_read_from_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("cache/usage.bin");
        let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
        fs::write(&a, b"{}\n").unwrap();
        fs::write(&b, b"{}\n{}\n").unwrap();
        let mut c = UsageCache::open_at(&store);
        let blob = c.spool().unwrap().keep(b"usage of a".to_vec());
        assert!(matches!(blob, Blob::File { .. }), "spooled, not held");
        c.put(&a, id_of(&a), None, None, blob, None);
        c.save().unwrap();
        assert_eq!(names(store.parent().unwrap()), ["usage.bin"], "the spool became the cache");

        // A run that reads nothing afresh writes nothing.
        let c = UsageCache::open_at(&store);
        assert!(
            matches!(c.get(&a, id_of(&a), None), Some((_, Parts { rest: Blob::File { .. }, .. }))),
            "left in the file"
        );
        c.save().unwrap();
        drop(c);
        assert_eq!(names(store.parent().unwrap()), ["usage.bin"]);

        // One read afresh, one carried over from the old file.
        let mut c = UsageCache::open_at(&store);
        let blob = c.spool().unwrap().keep(b"usage of b".to_vec());
        c.put(&b, id_of(&b), None, None, blob, None);
        c.save().unwrap();
        // What the run holds is still readable after the rename.
        assert_eq!(bytes(&c, &a, id_of(&a)), Some(b"usage of a".to_vec()));
        let c = UsageCache::open_at(&store);
        assert_eq!(bytes(&c, &a, id_of(&a)), Some(b"usage of a".to_vec()));
        assert_eq!(bytes(&c, &b, id_of(&b)), Some(b"usage of b".to_vec()));
        assert_eq!(names(store.parent().unwrap()), ["usage.bin"]);

        // A run stopped before it saved left its next cache file: gone a day later.
        let left = store.parent().unwrap().join("usage.bin.1.0.tmp");
        fs::write(&left, b"agntnrm2").unwrap();
        let fresh = store.parent().unwrap().join("usage.bin.2.0.tmp");
        fs::write(&fresh, b"agntnrm2").unwrap();
        let f = fs::File::options().write(true).open(&left).unwrap();
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 86_400)).unwrap();
        drop(f);
        let mut c = UsageCache::open_at(&store);
        c.put(&b, id_of(&b), None, None, b"again".to_vec().into(), None);
        c.save().unwrap();
        assert_eq!(names(store.parent().unwrap()), ["usage.bin", "usage.bin.2.0.tmp"]);

        // No cache folder: the unnamed spool holds the bytes on disk too.
        let s = Spool::unnamed().unwrap();
        let blob = s.keep(b"usage".to_vec());
        assert!(matches!(blob, Blob::File { .. }));
        assert_eq!(blob.read().unwrap(), b"usage");
    }

    #[test]
    fn a_cache_before_another_holds_only_the_files_kept_and_takes_the_others_from_behind() {
        let dir = tempfile::tempdir().unwrap();
        let (front, back) = (dir.path().join("statusline.bin"), dir.path().join("usage.bin"));
        let logs: Vec<PathBuf> = (0..3).map(|i| dir.path().join(format!("{i}.jsonl"))).collect();
        for l in &logs {
            fs::write(l, b"{}\n").unwrap();
        }
        let mut all = UsageCache::open_at(&back);
        for (i, l) in logs.iter().enumerate() {
            all.put(l, id_of(l), None, None, vec![i as u8].into(), None);
        }
        all.save().unwrap();
        let back_bytes = fs::read(&back).unwrap();

        // Nothing in front yet: every file is found behind.
        let mut c = UsageCache::open_before(&front, &back);
        assert_eq!(bytes(&c, &logs[2], id_of(&logs[2])), Some(vec![2]));
        // Kept: two files, one of them read afresh.
        fs::write(&logs[1], b"{}\n{}\n").unwrap();
        c.put(&logs[1], id_of(&logs[1]), None, None, vec![9].into(), None);
        c.keep_only(&logs[..2]);
        c.save().unwrap();
        assert_eq!(fs::read(&back).unwrap(), back_bytes, "the cache behind is not written");
        let front_only = UsageCache::open_at(&front);
        assert_eq!(front_only.len(), 2);
        assert_eq!(bytes(&front_only, &logs[0], id_of(&logs[0])), Some(vec![0]), "taken from behind");
        assert_eq!(bytes(&front_only, &logs[1], id_of(&logs[1])), Some(vec![9]));
        assert_eq!(bytes(&front_only, &logs[2], id_of(&logs[2])), None, "not kept");
        // In front, what it holds wins over what is behind (log 1's old usage); the rest is
        // still found behind.
        let c = UsageCache::open_before(&front, &back);
        assert_eq!(bytes(&c, &logs[1], id_of(&logs[1])), Some(vec![9]));
        assert_eq!(bytes(&c, &logs[2], id_of(&logs[2])), Some(vec![2]));

        // A run over the files it holds does not read the cache behind (most of a status
        // line's run), not even for one of them that grew (it is read on, not taken from behind).
        let read_behind = |c: &UsageCache| c.behind.as_ref().is_some_and(|(_, b)| b.get().is_some());
        let mut c = UsageCache::open_before(&front, &back);
        fs::write(&logs[0], b"{}\n{}\n{}\n").unwrap();
        assert_eq!(bytes(&c, &logs[0], id_of(&logs[0])), None, "grown: read again");
        assert_eq!(bytes(&c, &logs[1], id_of(&logs[1])), Some(vec![9]));
        c.keep_only(&logs[..2]);
        assert!(!read_behind(&c), "the cache behind was read");
        // One it does not hold is still taken from behind.
        c.keep_only(&logs);
        assert!(read_behind(&c));
        assert_eq!(bytes(&c, &logs[2], id_of(&logs[2])), Some(vec![2]));
    }

    #[test]
    fn files_gone_from_a_walked_folder_are_forgotten_and_others_kept() {
        let dir = tempfile::tempdir().unwrap();
        let walked = dir.path().join("projects");
        fs::create_dir(&walked).unwrap();
        let id = FileId { dev: 1, ino: 2, size: 3, mtime_ns: 4, ctime_ns: 5, wal: None };
        let mut c = UsageCache::default();
        c.put(&walked.join("kept.jsonl"), id, None, None, vec![1].into(), None);
        c.put(&walked.join("gone.jsonl"), id, None, None, vec![2].into(), None);
        c.put(&dir.path().join("projects-other/x.jsonl"), id, None, None, vec![3].into(), None);
        c.put(&dir.path().join("elsewhere.jsonl"), id, None, None, vec![4].into(), None);
        c.forget_missing(std::slice::from_ref(&walked), &[walked.join("kept.jsonl")]);
        assert!(c.get(&walked.join("kept.jsonl"), id, None).is_some());
        assert!(c.get(&walked.join("gone.jsonl"), id, None).is_none());
        assert!(c.get(&dir.path().join("projects-other/x.jsonl"), id, None).is_some(), "a sibling is not under it");
        assert!(c.get(&dir.path().join("elsewhere.jsonl"), id, None).is_some());
    }
}
