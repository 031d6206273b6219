//! The files agentnorm reads, opened for the CLI and the bindings (the normalizer itself does no
//! I/O): which files a folder walk takes as logs ([`is_log_name`]), and each opened as lines
//! ([`open`]): gzip and zstd decompressed, OpenCode's SQLite database read as the JSON lines of
//! its messages ([`database`]). The one place below the dialects that knows where CLIs keep
//! their sessions: by name and by file format, never by content.

use std::io::{self, BufRead, BufReader};
use std::path::Path;

/// A readable stream of lines.
pub type Reader = Box<dyn BufRead + Send>;

/// Whether a folder walk takes this file as a log: `*.jsonl`, `*.ndjson` and the same compressed
/// (`.gz`, `.zst`, `.zstd`); and the saved sessions that are JSON documents where their CLI keeps
/// them: Gemini CLI's older `chats/session-*.json`, OpenCode's `storage/message/<session>/*.json`
/// (any other `.json` is not a log: a config file, a package manifest). The name's bytes are
/// looked at, not its text: a name that is not UTF-8 is a log all the same.
pub fn is_log_name(p: &Path) -> bool {
    let Some(name) = p.file_name().map(std::ffi::OsStr::as_encoded_bytes) else { return false };
    let base = uncompressed(name);
    if base.ends_with(b".jsonl") || base.ends_with(b".ndjson") {
        return true;
    }
    if !name.ends_with(b".json") {
        return false;
    }
    let folder = |up: usize| p.ancestors().nth(up).and_then(|a| a.file_name()).map(std::ffi::OsStr::as_encoded_bytes);
    let gemini = folder(1) == Some(b"chats") && name.starts_with(b"session-");
    let opencode = folder(2) == Some(b"message") && folder(3) == Some(b"storage");
    gemini || opencode
}

/// Whether a file of this name holds one JSON document, not a stream of lines: `*.json` (and
/// compressed), as Gemini CLI's older sessions and OpenCode's message files are kept
/// ([`crate::Options::document`]).
pub fn is_document_name(p: &Path) -> bool {
    p.file_name().is_some_and(|n| uncompressed(n.as_encoded_bytes()).ends_with(b".json"))
}

/// A file name without its compression suffix (`.gz`, `.zst`, `.zstd`).
fn uncompressed(name: &[u8]) -> &[u8] {
    [&b".gz"[..], b".zst", b".zstd"].iter().find_map(|c| name.strip_suffix(*c)).unwrap_or(name)
}

/// gzip's magic bytes.
const GZIP: &[u8] = &[0x1f, 0x8b];
/// zstd's magic bytes.
const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];
/// A SQLite database starts with these 16 bytes.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Whether bytes starting a file say it is gzip- or zstd-compressed.
pub fn is_compressed(head: &[u8]) -> bool {
    head.starts_with(GZIP) || head.starts_with(ZSTD)
}

/// `raw` as lines: decompressed when its first bytes are gzip's or zstd's magic; the lines of
/// [`database`] when they are SQLite's (`path` names the file, which a database is read from:
/// from a pipe it is an error); else as it is.
pub fn decoded(mut raw: Reader, path: Option<&Path>) -> io::Result<Reader> {
    let head = raw.fill_buf()?;
    Ok(if head.starts_with(GZIP) {
        Box::new(BufReader::with_capacity(1 << 20, flate2::bufread::MultiGzDecoder::new(raw)))
    } else if head.starts_with(ZSTD) {
        Box::new(BufReader::with_capacity(1 << 20, zstd::stream::read::Decoder::with_buffer(raw)?))
    } else if head.starts_with(SQLITE_MAGIC) {
        match path {
            Some(p) => Box::new(database(p)?),
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "a SQLite database (OpenCode's opencode.db) is read from its file: name it, do not pipe it",
                ));
            }
        }
    } else {
        raw
    })
}

/// Opens a file as lines ([`decoded`]); a folder is an error.
pub fn open(path: &Path) -> io::Result<Reader> {
    let f = std::fs::File::open(path)?;
    if f.metadata()?.is_dir() {
        return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory"));
    }
    decoded(Box::new(BufReader::with_capacity(1 << 20, f)), Some(path))
}

/// Whether bytes starting a file say it is read as it is: neither compressed nor a database
/// (such a file may be mapped, cut into blocks of lines, followed as it grows).
pub fn is_plain(head: &[u8]) -> bool {
    !is_compressed(head) && !head.starts_with(SQLITE_MAGIC)
}

/// The write-ahead log beside a SQLite database (`<file>-wal`), where it exists: OpenCode's
/// newest messages sit there until a checkpoint, the database file itself unchanged, so what
/// tells whether a database changed (its identity, its modification time) looks at both.
pub fn write_ahead_log(path: &Path) -> Option<std::path::PathBuf> {
    // Only a database has one: a log file is not looked for one (a `stat` saved per log).
    if is_log_name(path) {
        return None;
    }
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let wal = std::path::PathBuf::from(wal);
    wal.is_file().then_some(wal)
}

/// Rows read from the database at a time.
const BATCH: i64 = 512;

/// The message infos of an OpenCode database (`opencode.db`, OpenCode ≥ 1.2), one JSON object per
/// line in the order they were stored (what the `opencode-session` dialect reads): each row's
/// `data` with its `id` and `session_id` put back as `id` and `sessionID` (the table keeps them
/// in columns). A `data` that is not a JSON object is
/// written as a JSON string, so that it is read as a line the dialect does not know, not lost.
///
/// The database is opened read-only, and read a batch of rows at a time (OpenCode may be writing
/// it meanwhile: each batch sees the rows stored by then). A file without a `message` table is
/// an error.
pub fn database(path: &Path) -> io::Result<DatabaseLines> {
    use rusqlite::OpenFlags;
    let conn =
        rusqlite::Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(db_error)?;
    // OpenCode may be writing: wait for its lock rather than fail (a WAL database never locks
    // readers out).
    conn.busy_timeout(std::time::Duration::from_secs(5)).map_err(db_error)?;
    let has_messages: bool = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'message'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)
        .map_err(db_error)?;
    if !has_messages {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a SQLite database without a `message` table (not OpenCode's opencode.db)",
        ));
    }
    Ok(DatabaseLines { conn, after: i64::MIN, buf: Vec::new(), pos: 0, done: false })
}

fn db_error(e: rusqlite::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("SQLite: {e}"))
}

/// The lines of [`database`]: a reader that queries the next batch of rows when it runs out.
pub struct DatabaseLines {
    conn: rusqlite::Connection,
    /// The last row read (`rowid`).
    after: i64,
    buf: Vec<u8>,
    pos: usize,
    done: bool,
}

impl std::fmt::Debug for DatabaseLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatabaseLines").field("after", &self.after).field("done", &self.done).finish()
    }
}

impl DatabaseLines {
    /// Reads the next batch of rows into `buf`.
    fn next_batch(&mut self) -> io::Result<()> {
        self.buf.clear();
        self.pos = 0;
        let mut stmt = self
            .conn
            .prepare_cached("SELECT rowid, id, session_id, data FROM message WHERE rowid > ?1 ORDER BY rowid LIMIT ?2")
            .map_err(db_error)?;
        let mut rows = stmt.query(rusqlite::params![self.after, BATCH]).map_err(db_error)?;
        let mut n = 0;
        while let Some(row) = rows.next().map_err(db_error)? {
            n += 1;
            self.after = row.get(0).map_err(db_error)?;
            let text = |i: usize| -> Option<String> {
                match row.get_ref(i).ok()? {
                    rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                        Some(String::from_utf8_lossy(t).into_owned())
                    }
                    rusqlite::types::ValueRef::Integer(i) => Some(i.to_string()),
                    _ => None,
                }
            };
            let (id, session, data) = (text(1), text(2), text(3).unwrap_or_default());
            let line = match serde_json::from_str::<serde_json::Value>(&data) {
                Ok(serde_json::Value::Object(mut info)) => {
                    for (key, value) in [("id", id), ("sessionID", session)] {
                        if let (false, Some(v)) = (info.contains_key(key), value) {
                            info.insert(key.to_owned(), serde_json::Value::String(v));
                        }
                    }
                    serde_json::Value::Object(info)
                }
                _ => serde_json::Value::String(data),
            };
            serde_json::to_writer(&mut self.buf, &line).map_err(io::Error::other)?;
            self.buf.push(b'\n');
        }
        self.done = n < BATCH;
        Ok(())
    }
}

impl io::Read for DatabaseLines {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        use io::BufRead as _;
        let n = {
            let avail = self.fill_buf()?;
            let n = avail.len().min(out.len());
            out[..n].copy_from_slice(&avail[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl io::BufRead for DatabaseLines {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.pos == self.buf.len() && !self.done {
            self.next_batch()?;
        }
        Ok(&self.buf[self.pos..])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.buf.len());
    }
}

#[cfg(test)]
mod tests {
    use super::{is_document_name, is_log_name};
    use std::path::Path;

    #[test]
    fn logs_and_the_saved_sessions_that_are_json_documents() {
        for log in [
            "a.jsonl",
            "b.ndjson.gz",
            "c.jsonl.zst",
            "/h/.gemini/tmp/abc/chats/session-2026-03-02T16-40-3e8a1c5f.json",
            "/h/.local/share/opencode/storage/message/ses_1/msg_2.json",
        ] {
            assert!(is_log_name(Path::new(log)), "{log}");
        }
        for not in [
            "a.json",
            "package.json",
            "/h/.gemini/tmp/abc/logs.json",
            "/h/.gemini/tmp/abc/chats/checkpoint-x.json",
            "/h/.local/share/opencode/storage/session/p/ses_1.json",
            "a.txt",
        ] {
            assert!(!is_log_name(Path::new(not)), "{not}");
        }
        assert!(is_document_name(Path::new("chats/session-1.json")) && is_document_name(Path::new("a.json.gz")));
        assert!(!is_document_name(Path::new("a.jsonl")) && !is_document_name(Path::new("json")));
    }
}
