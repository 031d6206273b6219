//! `agentnorm._native`: the Python face of the agentnorm library (PyO3), zero-spawn.
//!
//! It exists so that Python programs that drive coding-agent CLIs read their streams with the
//! same parser and contract as the CLI instead of parsing NDJSON by hand. Everything that is not
//! conversion lives in `agentnorm-bindings-common`; events cross as the library's NDJSON bytes,
//! turned into dicts by the parser in `build.rs` (keys made once per batch; `json.loads` of one
//! JSON array per batch is the fallback for what it does not expect). Parsing runs with the GIL
//! released.

mod build;

use std::path::PathBuf;
use std::sync::Mutex;

use agentnorm_bindings_common::{self as common, Error, Files, Settings, Stream};
use pyo3::exceptions::{
    PyFileNotFoundError, PyIsADirectoryError, PyNotADirectoryError, PyOSError, PyPermissionError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

/// The CLI's message as the matching Python exception (`OSError` subclasses for inputs,
/// `ValueError` for arguments).
fn to_py(e: Error) -> PyErr {
    let msg = e.to_string();
    match &e {
        Error::Io { source, .. } => match source.kind() {
            std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
            std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(msg),
            std::io::ErrorKind::IsADirectory => PyIsADirectoryError::new_err(msg),
            std::io::ErrorKind::NotADirectory => PyNotADirectoryError::new_err(msg),
            _ => PyOSError::new_err(msg),
        },
        Error::Invalid(_) => PyValueError::new_err(msg),
    }
}

/// The value in a Mutex held by `&mut` (never locked; a poisoned one is taken as it is).
fn stream_mut<T>(m: &mut Mutex<T>) -> &mut T {
    m.get_mut().unwrap_or_else(|p| p.into_inner())
}

/// `json.loads`, looked up once.
fn loads(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static LOADS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    Ok(LOADS.get_or_try_init(py, || py.import("json")?.getattr("loads").map(Bound::unbind))?.bind(py))
}

/// The bytes of a bytes-like object: `bytes` and `bytearray` directly, anything else with the
/// buffer protocol (`memoryview`, `array`, ...) copied through `bytes(obj)`.
fn bytes_of(obj: &Bound<'_, PyAny>) -> PyResult<PyBackedBytes> {
    if let Ok(b) = obj.extract::<PyBackedBytes>() {
        return Ok(b);
    }
    Ok(obj.py().get_type::<PyBytes>().call1((obj,))?.extract::<PyBackedBytes>()?)
}

/// A JSON array text as a Python list of dicts.
fn to_list<'py>(py: Python<'py>, array: &str) -> PyResult<Bound<'py, PyList>> {
    if let Some(list) = build::list(py, array) {
        return list;
    }
    Ok(loads(py)?.call1((PyString::new(py, array),))?.cast_into::<PyList>()?)
}

fn ndjson_list<'py>(py: Python<'py>, ndjson: Vec<u8>) -> PyResult<Bound<'py, PyList>> {
    let array = py.detach(|| common::ndjson_to_array(ndjson));
    to_list(py, &array)
}

/// An incremental normalizer: feed it bytes in any chunks, get the events each chunk completed.
#[pyclass(module = "agentnorm._native")]
struct Normalizer {
    // A Mutex only to make the class `Sync` as PyO3 asks (the normalizer is `Send`, not
    // `Sync`); methods take `&mut self`, so it is never locked.
    stream: Mutex<Stream>,
}

#[pymethods]
impl Normalizer {
    #[new]
    #[pyo3(signature = (dialect=None, redact=false, raw=false, source=None, observed_at=true, max_line_bytes=None))]
    fn new(
        dialect: Option<String>,
        redact: bool,
        raw: bool,
        source: Option<String>,
        observed_at: bool,
        max_line_bytes: Option<usize>,
    ) -> PyResult<Normalizer> {
        let s = Settings { dialect, redact, raw, source, observed_at, max_line_bytes };
        Ok(Normalizer { stream: Mutex::new(Stream::new(common::options(&s).map_err(to_py)?)) })
    }

    /// Feeds bytes; returns the events they completed (a partial last line waits for more).
    fn feed<'py>(&mut self, py: Python<'py>, data: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        let data = bytes_of(data)?;
        let stream = stream_mut(&mut self.stream);
        let array = py.detach(|| {
            stream.feed(&data);
            stream.take_array()
        });
        to_list(py, &array)
    }

    /// Ends the input: the events of a last line without a newline, and `run_ended`. Later
    /// calls of `feed` and `finish` return no events.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let stream = stream_mut(&mut self.stream);
        let array = py.detach(|| {
            stream.finish();
            stream.take_array()
        });
        to_list(py, &array)
    }
}

enum Source {
    Files(Files),
    /// A binary file object (anything with `read(n) -> bytes`), read with the GIL held and
    /// normalized without it.
    Object(Py<PyAny>, Stream),
    Closed,
}

/// The events of files, folders or a binary file object, one dict at a time (read in batches,
/// parsed with the GIL released). `close()` (or leaving a `with` block) releases the input
/// early; dropping the iterator does the same.
#[pyclass(module = "agentnorm._native")]
struct Events {
    // A Mutex only for `Sync` (see `Normalizer`).
    source: Mutex<Source>,
    batch: Option<Py<PyList>>,
    pos: usize,
}

/// Bytes asked of a file object per `read` call.
const OBJECT_READ: usize = 1 << 20;

impl Events {
    fn next_batch<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let source = stream_mut(&mut self.source);
        match source {
            Source::Closed => Ok(None),
            Source::Files(files) => match py.detach(|| files.next_ndjson()) {
                Ok(Some(ndjson)) => Ok(Some(ndjson_list(py, ndjson)?)),
                Ok(None) => {
                    *source = Source::Closed;
                    Ok(None)
                }
                Err(e) => {
                    *source = Source::Closed;
                    Err(to_py(e))
                }
            },
            Source::Object(obj, stream) => {
                while stream.pending() < common::BATCH_BYTES && !stream.finished() {
                    let chunk = match obj.bind(py).call_method1("read", (OBJECT_READ,)) {
                        Ok(c) => c,
                        Err(e) => {
                            *source = Source::Closed;
                            return Err(e);
                        }
                    };
                    if chunk.is_instance_of::<PyString>() {
                        *source = Source::Closed;
                        return Err(PyValueError::new_err(
                            "read() of the file object returned str, not bytes (open it in binary mode)",
                        ));
                    }
                    let bytes = bytes_of(&chunk)?;
                    py.detach(|| if bytes.is_empty() { stream.finish() } else { stream.feed(&bytes) });
                }
                let ndjson = stream.take_ndjson();
                if stream.finished() && ndjson.is_empty() {
                    *source = Source::Closed;
                    return Ok(None);
                }
                Ok(Some(ndjson_list(py, ndjson)?))
            }
        }
    }
}

#[pymethods]
impl Events {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        loop {
            if let Some(batch) = &self.batch {
                let batch = batch.bind(py);
                if self.pos < batch.len() {
                    let ev = batch.get_item(self.pos)?;
                    self.pos += 1;
                    return Ok(Some(ev));
                }
                self.batch = None;
            }
            match self.next_batch(py)? {
                Some(b) => {
                    self.batch = Some(b.unbind());
                    self.pos = 0;
                }
                None => return Ok(None),
            }
        }
    }

    /// Releases the input (the file is closed); the iterator ends.
    fn close(&mut self) {
        *stream_mut(&mut self.source) = Source::Closed;
        self.batch = None;
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }
}

/// `read(source, ...)`: the events of a path (file or folder, also `.gz` / `.zst`), a list of
/// paths, or a binary file object.
#[pyfunction]
#[pyo3(signature = (source, *, dialect=None, redact=false, raw=false, observed_at=true, max_line_bytes=None, name=None))]
#[allow(clippy::too_many_arguments)]
fn read(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    dialect: Option<String>,
    redact: bool,
    raw: bool,
    observed_at: bool,
    max_line_bytes: Option<usize>,
    name: Option<String>,
) -> PyResult<Events> {
    let settings = Settings { dialect, redact, raw, source: name, observed_at, max_line_bytes };
    let src = if source.hasattr("read")? {
        Source::Object(source.clone().unbind(), Stream::new(common::options(&settings).map_err(to_py)?))
    } else {
        let paths = paths_of(source)?;
        Source::Files(py.detach(|| Files::new(&paths, settings)).map_err(to_py)?)
    };
    Ok(Events { source: Mutex::new(src), batch: None, pos: 0 })
}

/// One path (str or os.PathLike) or a list of them.
fn paths_of(obj: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    if let Ok(p) = obj.extract::<PathBuf>() {
        return Ok(vec![p]);
    }
    obj.try_iter()
        .map_err(|_| PyValueError::new_err("expected a path, a list of paths or a binary file object"))?
        .map(|p| p?.extract::<PathBuf>())
        .collect()
}

/// `usage(paths, by="session", since=None, until=None, dialect=None)`: the rows of
/// `agentnorm usage --json`, the totals row last (`"totals": True`).
#[pyfunction]
#[pyo3(signature = (paths=None, by="session", since=None, until=None, dialect=None))]
fn usage<'py>(
    py: Python<'py>,
    paths: Option<&Bound<'py, PyAny>>,
    by: &str,
    since: Option<String>,
    until: Option<String>,
    dialect: Option<String>,
) -> PyResult<Bound<'py, PyList>> {
    let paths = match paths {
        Some(p) => paths_of(p)?,
        None => Vec::new(),
    };
    let by = by.to_owned();
    let rows = py
        .detach(|| common::usage(&paths, &by, since.as_deref(), until.as_deref(), dialect.as_deref()))
        .map_err(to_py)?;
    ndjson_list(py, rows)
}

/// `detect(path)`: the first dialect detected in a file (`None` for `unknown`); for a folder a
/// dict of each log file's path to its dialect.
#[pyfunction]
fn detect(py: Python<'_>, path: PathBuf) -> PyResult<Py<PyAny>> {
    if path.is_dir() {
        let files = py.detach(|| common::expand(std::slice::from_ref(&path))).map_err(to_py)?;
        let out = PyDict::new(py);
        for f in files {
            let d = py.detach(|| common::detect(&f)).map_err(to_py)?;
            out.set_item(f.display().to_string(), d)?;
        }
        return Ok(out.into_any().unbind());
    }
    let d = py.detach(|| common::detect(&path)).map_err(to_py)?;
    Ok(d.into_pyobject(py)?.into_any().unbind())
}

/// `schema()`: the JSON Schema of the events, as `agentnorm schema` prints it.
#[pyfunction]
fn schema(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    loads(py)?.call1((common::schema(),))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Normalizer>()?;
    m.add_class::<Events>()?;
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(usage, m)?)?;
    m.add_function(wrap_pyfunction!(detect, m)?)?;
    m.add_function(wrap_pyfunction!(schema, m)?)?;
    Ok(())
}
