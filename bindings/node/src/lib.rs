//! The Node face of the agentnorm library (napi-rs), zero-spawn.
//!
//! It exists so that TypeScript programs that drive coding-agent CLIs read their streams with the
//! same parser and contract as the CLI. Everything that is not conversion lives in
//! `agentnorm-bindings-common`. Events cross as one JSON array text per batch (the library's
//! NDJSON bytes), which `index.js` hands to V8's `JSON.parse`: one call per batch instead of one
//! N-API call per property. Files are read and normalized on libuv's thread pool, off the event
//! loop.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agentnorm_bindings_common::{self as common, Error as CommonError, Files, Settings, Stream};
use napi::bindgen_prelude::*;
use napi::{Env, Task};
use napi_derive::napi;

/// The CLI's message as a JS `Error`; its `code` is `ENOENT`-style for inputs, `EINVAL` for
/// arguments.
fn to_js(e: CommonError) -> Error {
    let status = match &e {
        CommonError::Io { .. } => Status::GenericFailure,
        CommonError::Invalid(_) => Status::InvalidArg,
    };
    Error::new(status, e.to_string())
}

/// The normalizer's options (the CLI's flags of the same names).
#[napi(object)]
#[derive(Default)]
pub struct NormalizerOptions {
    /// Force a dialect instead of detecting it per frame (`--dialect`).
    pub dialect: Option<String>,
    /// Mask secrets (`--redact`).
    pub redact: Option<bool>,
    /// Add the source line as `raw` to every event (`--raw`).
    pub raw: Option<bool>,
    /// The `source` written on every event.
    pub source: Option<String>,
    /// Write `observed_at` (default true; `--no-observed-at` is `false`).
    pub observed_at: Option<bool>,
    /// Lines longer than this become `unknown` `line_too_long` (`--max-line-bytes`).
    pub max_line_bytes: Option<u32>,
}

fn settings(o: Option<NormalizerOptions>) -> Settings {
    let o = o.unwrap_or_default();
    Settings {
        dialect: o.dialect,
        redact: o.redact.unwrap_or(false),
        raw: o.raw.unwrap_or(false),
        source: o.source,
        observed_at: o.observed_at.unwrap_or(true),
        max_line_bytes: o.max_line_bytes.map(|n| n as usize),
    }
}

/// An incremental normalizer; `feed` and `finish` return the events as a JSON array text.
#[napi(js_name = "NativeNormalizer")]
pub struct NativeNormalizer {
    stream: Stream,
}

#[napi]
impl NativeNormalizer {
    /// A normalizer with these options.
    #[napi(constructor)]
    pub fn new(options: Option<NormalizerOptions>) -> Result<NativeNormalizer> {
        Ok(NativeNormalizer { stream: Stream::new(common::options(&settings(options)).map_err(to_js)?) })
    }

    /// Feeds bytes; returns the events they completed.
    #[napi]
    pub fn feed(&mut self, data: &[u8]) -> String {
        self.stream.feed(data);
        self.stream.take_array()
    }

    /// Ends the input: the last partial line's events and `run_ended`.
    #[napi]
    pub fn finish(&mut self) -> String {
        self.stream.finish();
        self.stream.take_array()
    }
}

/// Files and folders read in batches on the thread pool.
#[napi(js_name = "NativeFiles")]
pub struct NativeFiles {
    files: Arc<Mutex<Option<Files>>>,
}

#[napi]
impl NativeFiles {
    /// The inputs of these paths (files, folders walked for logs, `.gz` / `.zst`).
    #[napi(constructor)]
    pub fn new(paths: Vec<String>, options: Option<NormalizerOptions>) -> Result<NativeFiles> {
        let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
        let files = Files::new(&paths, settings(options)).map_err(to_js)?;
        Ok(NativeFiles { files: Arc::new(Mutex::new(Some(files))) })
    }

    /// The next batch as a JSON array text, `null` after the last.
    #[napi(ts_return_type = "Promise<string | null>")]
    pub fn next(&self) -> AsyncTask<NextBatch> {
        AsyncTask::new(NextBatch(Arc::clone(&self.files)))
    }

    /// Closes the current input; later batches are `null`.
    #[napi]
    pub fn close(&self) {
        if let Ok(mut f) = self.files.lock() {
            *f = None;
        }
    }
}

/// One batch of [`NativeFiles`], read off the event loop.
pub struct NextBatch(Arc<Mutex<Option<Files>>>);

impl Task for NextBatch {
    type Output = Option<String>;
    type JsValue = Option<String>;

    fn compute(&mut self) -> Result<Self::Output> {
        let mut guard = self.0.lock().map_err(|_| Error::from_reason("agentnorm: reader poisoned"))?;
        let Some(files) = guard.as_mut() else { return Ok(None) };
        match files.next_ndjson() {
            Ok(Some(ndjson)) => Ok(Some(common::ndjson_to_array(ndjson))),
            Ok(None) => {
                *guard = None;
                Ok(None)
            }
            Err(e) => {
                *guard = None;
                Err(to_js(e))
            }
        }
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// Options of `usage`.
#[napi(object)]
#[derive(Default)]
pub struct UsageOptions {
    /// `session` (default), `project`, `model`, `day`, `week`, `month` or `block`.
    pub by: Option<String>,
    /// RFC 3339 or `YYYY-MM-DD`.
    pub since: Option<String>,
    /// RFC 3339 or `YYYY-MM-DD` (a day: its end).
    pub until: Option<String>,
    /// Force a dialect.
    pub dialect: Option<String>,
}

/// The usage report, computed off the event loop.
pub struct UsageTask(Vec<PathBuf>, UsageOptions);

impl Task for UsageTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> Result<String> {
        let o = &self.1;
        let rows = common::usage(
            &self.0,
            o.by.as_deref().unwrap_or("session"),
            o.since.as_deref(),
            o.until.as_deref(),
            o.dialect.as_deref(),
        )
        .map_err(to_js)?;
        Ok(common::ndjson_to_array(rows))
    }

    fn resolve(&mut self, _env: Env, output: String) -> Result<String> {
        Ok(output)
    }
}

/// The rows of `agentnorm usage --json` as a JSON array text (totals row last).
#[napi(js_name = "nativeUsage", ts_return_type = "Promise<string>")]
pub fn native_usage(paths: Vec<String>, options: Option<UsageOptions>) -> AsyncTask<UsageTask> {
    AsyncTask::new(UsageTask(paths.into_iter().map(PathBuf::from).collect(), options.unwrap_or_default()))
}

/// The first dialect detected in a file, `null` for `unknown`.
#[napi(js_name = "nativeDetect")]
pub fn native_detect(path: String) -> Result<Option<String>> {
    Ok(common::detect(PathBuf::from(path).as_path()).map_err(to_js)?.map(str::to_owned))
}

/// The log files a list of paths expands to (folders walked as the CLI walks them).
#[napi(js_name = "nativeExpand")]
pub fn native_expand(paths: Vec<String>) -> Result<Vec<String>> {
    let paths: Vec<PathBuf> = paths.into_iter().map(PathBuf::from).collect();
    Ok(common::expand(&paths).map_err(to_js)?.into_iter().map(|p| p.display().to_string()).collect())
}

/// The JSON Schema of the events as JSON text (`agentnorm schema`).
#[napi(js_name = "nativeSchema")]
pub fn native_schema() -> String {
    common::schema()
}
