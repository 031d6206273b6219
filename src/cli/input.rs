//! Where the bytes come from: stdin, files, folders walked for logs, gzip and zstd read
//! transparently by their magic bytes (SPEC §5). The library does no I/O; this is the binary's.

use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::PathBuf;

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

    /// The normalizer's options for this input: `base` with its `source`, and for a `.json`
    /// file, [`agentnorm::Options::document`].
    pub fn options(&self, base: &agentnorm::Options) -> agentnorm::Options {
        let document = matches!(self, Input::File(p) if agentnorm::files::is_document_name(p));
        base.clone().source(self.source()).document(document)
    }
}

/// The paths of the files among `inputs` (stdin left out).
pub fn files(inputs: &[Input]) -> Vec<PathBuf> {
    inputs.iter().filter_map(|i| if let Input::File(p) = i { Some(p.clone()) } else { None }).collect()
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
            // By name: siblings share their folder's path, so comparing whole paths' bytes is
            // comparing names (`sort_by_file_name` parses each name again at every comparison:
            // 5 % of a warm status line over 12,000 logs).
            let by_name = |a: &walkdir::DirEntry, b: &walkdir::DirEntry| a.path().as_os_str().cmp(b.path().as_os_str());
            for entry in walkdir::WalkDir::new(p).follow_links(false).sort_by(by_name) {
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
                    "agentnorm: no log files found under {} (*.jsonl, *.ndjson, also .gz / .zst, and saved sessions kept as .json; name other files, such as Gemini's --output-format json, on the command line)",
                    agentnorm::sink::safe::printable(&p.to_string_lossy())
                );
            }
        } else {
            out.push(Input::File(p.clone()));
        }
    }
    out
}

/// What a folder walk takes as a log ([`agentnorm::files::is_log_name`]).
pub use agentnorm::files::is_log_name;

/// Files at least this large are read ahead on a thread of their own.
const READ_AHEAD_MIN: u64 = 4 << 20;

/// A readable stream of lines ([`agentnorm::files::decoded`]: decompressed, a database read as
/// lines). It is
/// buffered: `fill_buf` hands out the bytes read without copying them again.
pub use agentnorm::files::Reader;

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
                let mut head = [0u8; 16];
                let n = (&f).read(&mut head)?;
                (&f).seek(SeekFrom::Start(0))?;
                if !agentnorm::files::is_plain(&head[..n]) {
                    Box::new(crate::cli::readahead::ReadAhead::new(f)?)
                } else {
                    Box::new(crate::cli::readahead::ReadAhead::lines(f, max_line)?)
                }
            } else {
                Box::new(BufReader::with_capacity(1 << 20, f))
            }
        }
    };
    let path = match input {
        Input::File(p) => Some(p.as_path()),
        Input::Stdin => None,
    };
    agentnorm::files::decoded(raw, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::path::Path;

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
        agentnorm::files::decoded(Box::new(io::Cursor::new(bytes)), None).unwrap().read_to_end(&mut out).unwrap();
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
