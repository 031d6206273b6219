//! Where the bytes come from: stdin, files, folders walked for logs, gzip and zstd read
//! transparently by their magic bytes (SPEC §5). The library does no I/O; this is the binary's.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// One input stream.
#[derive(Debug, Clone)]
pub enum Input {
    /// Standard input.
    Stdin,
    /// A file, as given or as found while walking a folder.
    File(PathBuf),
}

impl Input {
    /// The name to report on stderr or in `detect`: `-` for stdin, the path otherwise, its
    /// controls and bidi characters escaped as the pretty view escapes them (`\u{1b}`) and bytes
    /// that are not UTF-8 shown as U+FFFD.
    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_owned(),
            Input::File(p) => agentnorm::sink::safe::printable(&p.to_string_lossy()).into_owned(),
        }
    }

    /// The `source` of its events (none for stdin).
    pub fn source(&self) -> Option<String> {
        match self {
            Input::Stdin => None,
            Input::File(p) => Some(p.display().to_string()),
        }
    }
}

/// Expands the command line's paths: none or `-` is stdin; a folder is walked recursively
/// (hidden folders included, links not followed, sorted by path) for `*.jsonl` / `*.ndjson` and
/// their `.gz` / `.zst` forms, whatever bytes the names hold. What cannot be walked is reported
/// and sets `failed`; a folder with no log file is said on stderr; stdin on a terminal gets a
/// one-line hint on stderr (and is still read).
pub fn expand(paths: &[PathBuf], failed: &mut bool) -> Vec<Input> {
    let stdin_hint = || {
        use std::io::IsTerminal as _;
        if io::stdin().is_terminal() {
            eprintln!(
                "agentnorm: reading a stream from the terminal (end it with Ctrl-D); pipe one in or name files: see --help"
            );
        }
    };
    if paths.is_empty() {
        stdin_hint();
        return vec![Input::Stdin];
    }
    let mut out = Vec::new();
    for p in paths {
        if p.as_os_str() == "-" {
            stdin_hint();
            out.push(Input::Stdin);
        } else if p.is_dir() {
            let before = out.len();
            for entry in walkdir::WalkDir::new(p).follow_links(false).sort_by_file_name() {
                match entry {
                    Ok(e) if e.file_type().is_file() && is_log_name(e.path()) => out.push(Input::File(e.into_path())),
                    Ok(_) => {}
                    Err(err) => {
                        eprintln!("agentnorm: {}", agentnorm::sink::safe::printable(&err.to_string()));
                        *failed = true;
                    }
                }
            }
            if out.len() == before {
                eprintln!(
                    "agentnorm: no log files found under {} (*.jsonl, *.ndjson, also .gz / .zst; name other files, such as Gemini's .json, on the command line)",
                    agentnorm::sink::safe::printable(&p.to_string_lossy())
                );
            }
        } else {
            out.push(Input::File(p.clone()));
        }
    }
    out
}

/// `*.jsonl`, `*.ndjson`, and the same compressed (`.gz`, `.zst`, `.zstd`).
/// The name's bytes are looked at, not its text: a name that is not UTF-8 is a log all the same.
pub fn is_log_name(p: &Path) -> bool {
    let Some(name) = p.file_name().map(std::ffi::OsStr::as_encoded_bytes) else { return false };
    let base = [&b".gz"[..], b".zst", b".zstd"].iter().find_map(|c| name.strip_suffix(*c)).unwrap_or(name);
    base.ends_with(b".jsonl") || base.ends_with(b".ndjson")
}

/// Files at least this large are read ahead on a thread of their own.
const READ_AHEAD_MIN: u64 = 4 << 20;

/// A readable stream, decompressed when it starts with gzip's or zstd's magic bytes. It is
/// buffered: `fill_buf` hands out the bytes read without copying them again.
pub type Reader = Box<dyn BufRead + Send>;

/// Opens an input. Files and stdin alike are sniffed for compression. `max_line` is the
/// stream's `--max-line-bytes`: a large plain file is read ahead in blocks of whole lines up to
/// that length.
pub fn open(input: &Input, max_line: usize) -> io::Result<Reader> {
    let raw: Reader = match input {
        Input::Stdin => Box::new(BufReader::with_capacity(1 << 20, io::stdin())),
        Input::File(p) => {
            let f = File::open(p)?;
            let meta = f.metadata()?;
            if meta.is_dir() {
                return Err(io::Error::new(io::ErrorKind::IsADirectory, "is a directory"));
            }
            // Large files are read ahead on their own thread (small ones are not worth a thread),
            // in blocks cut at newlines unless the bytes are compressed.
            if meta.len() >= READ_AHEAD_MIN {
                let mut head = [0u8; 4];
                let n = (&f).read(&mut head)?;
                (&f).seek(SeekFrom::Start(0))?;
                if is_compressed(&head[..n]) {
                    Box::new(crate::cli::readahead::ReadAhead::new(f)?)
                } else {
                    Box::new(crate::cli::readahead::ReadAhead::lines(f, max_line)?)
                }
            } else {
                Box::new(BufReader::with_capacity(1 << 20, f))
            }
        }
    };
    decompressed(raw)
}

/// gzip's magic bytes.
const GZIP: &[u8] = &[0x1f, 0x8b];
/// zstd's magic bytes.
const ZSTD: &[u8] = &[0x28, 0xb5, 0x2f, 0xfd];

/// Whether bytes starting a file say it is gzip- or zstd-compressed.
pub fn is_compressed(head: &[u8]) -> bool {
    head.starts_with(GZIP) || head.starts_with(ZSTD)
}

fn decompressed(mut raw: Reader) -> io::Result<Reader> {
    let head = raw.fill_buf()?;
    Ok(if head.starts_with(GZIP) {
        Box::new(BufReader::with_capacity(1 << 20, flate2::bufread::MultiGzDecoder::new(raw)))
    } else if head.starts_with(ZSTD) {
        Box::new(BufReader::with_capacity(1 << 20, zstd::stream::read::Decoder::with_buffer(raw)?))
    } else {
        raw
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn log_names() {
        for ok in ["a.jsonl", "b.ndjson", "c.jsonl.gz", "d.ndjson.zst", "rollout-1.jsonl.zstd"] {
            assert!(is_log_name(Path::new(ok)), "{ok}");
        }
        for no in ["a.json", "b.txt", "c.gz", "jsonl"] {
            assert!(!is_log_name(Path::new(no)), "{no}");
        }
    }

    fn read_all(bytes: Vec<u8>) -> Vec<u8> {
        let mut out = Vec::new();
        decompressed(Box::new(io::Cursor::new(bytes))).unwrap().read_to_end(&mut out).unwrap();
        out
    }

    #[test]
    fn compression_is_recognised_by_magic_bytes() {
        let text = b"{\"type\":\"turn.started\"}\n".repeat(100);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&text).unwrap();
        assert_eq!(read_all(gz.finish().unwrap()), text);
        assert_eq!(read_all(zstd::encode_all(&text[..], 1).unwrap()), text);
        assert_eq!(read_all(text.clone()), text);
    }
}
