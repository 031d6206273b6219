//! The closed set of normalized events: agentnorm's wire contract (SPEC §1, §3, §4).
//!
//! This module exists so that every producer (the dialect adapters) and every consumer (the NDJSON
//! writer, tests, library users) agree on one typed vocabulary. An [`Event`] is an internally
//! tagged enum (`"type"` first on the wire, `snake_case`), and every variant starts with the
//! flattened [`Envelope`], so the envelope fields come right after `type`, then the fields of the
//! event's own type. Optional fields are left out when absent; `null` is never written (the one
//! exception being nulls *inside* `tool_started.input`, the CLI's own arguments).
//!
//! Reading the output back is the identity:
//!
//! ```
//! use agentnorm::{Event, Envelope};
//! let ev = Event::OutputDelta { env: Envelope::default(), text: "hi".into(), message_id: None };
//! let json = serde_json::to_string(&ev).unwrap();
//! assert_eq!(json, r#"{"type":"output_delta","text":"hi"}"#);
//! assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), ev);
//! ```

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub(crate) mod json;
pub mod sink;

/// Version of the output contract this build writes (`run_started.contract`).
pub const CONTRACT_VERSION: u32 = 1;

/// Defines [`Dialect`] from the registry's list (`src/dialects.rs`).
macro_rules! define_dialect {
    ($($variant:ident $module:ident::$adapter:ident $name:literal $doc:literal;)*) => {
        /// The input dialects agentnorm recognises (SPEC §2), in the registry's order.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        pub enum Dialect {
            $(
                #[doc = $doc]
                #[serde(rename = $name)]
                $variant,
            )*
        }

        impl Dialect {
            /// Every dialect, in the registry's order (the preferred one first).
            pub const ALL: &'static [Dialect] = &[$(Dialect::$variant),*];

            /// The dialect's name on the wire (`claude`, `codex-rollout`, …).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Dialect::$variant => $name,)*
                }
            }

            /// What the dialect reads, in a line.
            pub fn description(self) -> &'static str {
                match self {
                    $(Dialect::$variant => $doc,)*
                }
            }
        }
    };
}
dialects!(define_dialect);

/// `--dialect`'s values, from the registry (`agentnorm --help` lists them with their inputs).
impl clap::ValueEnum for Dialect {
    fn value_variants<'a>() -> &'a [Dialect] {
        Dialect::ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.as_str()).help(self.description()))
    }
}

impl Dialect {
    /// Parses a wire name back into a dialect.
    pub fn from_name(name: &str) -> Option<Dialect> {
        Dialect::ALL.iter().copied().find(|d| d.as_str() == name)
    }

    /// The dialect's position in the registry (0-based).
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The fields every event may carry (SPEC §1), written right after `type`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Envelope {
    /// The input dialect the event came from, once known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<Dialect>,
    /// 1-based line number of the source line that made this event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// Last line of a frame spread over several lines (pretty-printed JSON documents).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_end: Option<u64>,
    /// The input path, when the input came from a named file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The agent's session or thread id, once known in this stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The tool call that spawned the subagent this event belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_id: Option<String>,
    /// The frame's own timestamp, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// When agentnorm read the line, RFC 3339 UTC with milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at: Option<String>,
    /// Extension: true on every event of a Claude transcript sidechain (a subagent's lines
    /// written inline in its parent's transcript).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidechain: Option<bool>,
    /// With `--raw`: the source line (extension; `unknown` and `diagnostic` carry it anyway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<Text>,
}

/// Token usage folded into one vocabulary (SPEC §4). Absent means "not reported", never 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Usage {
    /// Prompt tokens neither read from nor written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Prompt tokens read from the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Prompt tokens written to the cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    /// All generated tokens, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    /// The reasoning part of `output`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<u64>,
    /// On `usage` events: `input + cache_read + cache_write`, the context the provider saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
    /// Extension: the part of `cache_write` written to the 1-hour cache (Claude
    /// `cache_creation.ephemeral_1h_input_tokens`), billed at twice the input rate where the
    /// 5-minute write costs 1.25×. Present only where the log reports a non-zero part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_1h: Option<u64>,
    /// Extension: the service tier that served the request where the log names one other than
    /// the standard tier (`priority`, `flex`, `batch`); it changes the price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_tier: Option<ServiceTier>,
}

/// Extension: a non-standard service tier (Claude `usage.service_tier`, OpenAI `service_tier`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServiceTier {
    /// Priority processing: a higher price for lower latency.
    Priority,
    /// Flex processing: a lower price for slower responses.
    Flex,
    /// Batch processing.
    Batch,
}

impl ServiceTier {
    /// The tier a log names, `None` for the standard tier (`standard`, `default`, `auto`) or an
    /// unknown name.
    pub fn from_name(s: &str) -> Option<ServiceTier> {
        match s {
            "priority" => Some(ServiceTier::Priority),
            "flex" => Some(ServiceTier::Flex),
            "batch" => Some(ServiceTier::Batch),
            _ => None,
        }
    }
}

/// Extension: one model's counters from Claude's `result.modelUsage`, in the §4 vocabulary.
///
/// Claude Code keeps them per process, summed over every turn it ran (subagents and auxiliary
/// calls included): a model that disappears or a counter that goes down means a new process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelUsage {
    /// Prompt tokens neither read from nor written to the cache (`inputTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<u64>,
    /// Prompt tokens read from the cache (`cacheReadInputTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<u64>,
    /// Prompt tokens written to the cache (`cacheCreationInputTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<u64>,
    /// Generated tokens (`outputTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<u64>,
    /// Web searches (`webSearchRequests`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub web_search_requests: Option<u64>,
    /// Cost in USD the CLI reported for the model (`costUSD`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// The model's context window (`contextWindow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// The model's output limit (`maxOutputTokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u64>,
}

impl Usage {
    /// True when no figure at all was reported.
    pub fn is_empty(&self) -> bool {
        *self == Usage::default()
    }
}

/// What a tool call does (SPEC §3 `tool_started.kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum ToolKind {
    Shell,
    Read,
    Write,
    Edit,
    Search,
    Fetch,
    WebSearch,
    Mcp,
    /// Spawns a subagent.
    Task,
    Plan,
    Ask,
    Other,
}

/// Status of one plan item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
    /// Dropped before it was done (SPEC §3: Gemini, OpenCode, Cursor `TODO_STATUS_CANCELLED`).
    Cancelled,
}

/// One item of a plan / todo list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanItem {
    /// The item's text.
    pub text: String,
    /// Its status.
    pub status: PlanStatus,
}

/// What a subagent event reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum SubagentOperation {
    Spawn,
    Wait,
    Message,
    Close,
    Update,
}

/// A subagent's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum SubagentStatus {
    Pending,
    Running,
    Completed,
    Failed,
    Stopped,
}

/// Whether a turn's usage covers the turn or the whole session so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UsageScope {
    /// The figures are this turn's.
    Turn,
    /// The figures are a running total for the session (Codex `exec --json`).
    Session,
}

/// Why a turn failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum FailureKind {
    MaxTurns,
    UsageLimit,
    Auth,
    ApiError,
    Aborted,
    Other,
}

/// Severity of a diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Level {
    Info,
    Warning,
    Error,
}

/// Why a line became an `unknown` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum UnknownReason {
    /// Not JSON and not starting with `{` or `[` (stderr text, banners).
    NotJson,
    /// Starts with `{` or `[` but does not parse.
    InvalidJson,
    /// Valid JSON that is not an object.
    NotObject,
    /// An object no dialect knows, or a known frame with an unknown subtype.
    UnrecognizedFrame,
    /// A known frame with required fields missing or mistyped, or nested too deep.
    MalformedFrame,
    /// Longer than `--max-line-bytes`.
    LineTooLong,
}

impl UnknownReason {
    /// The reason's name on the wire (`not_json`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            UnknownReason::NotJson => "not_json",
            UnknownReason::InvalidJson => "invalid_json",
            UnknownReason::NotObject => "not_object",
            UnknownReason::UnrecognizedFrame => "unrecognized_frame",
            UnknownReason::MalformedFrame => "malformed_frame",
            UnknownReason::LineTooLong => "line_too_long",
        }
    }
}

/// A string that may still be in its JSON-escaped form, as read from the input.
///
/// Large strings (tool output, file contents) are carried from input to output as the escaped
/// bytes the CLI wrote, so they are neither unescaped nor escaped again. [`Text::as_str`] gives
/// the decoded text either way; equality compares decoded text.
#[derive(Clone)]
pub struct Text(TextRepr);

#[derive(Clone)]
enum TextRepr {
    Plain(String),
    /// A JSON string literal, quotes included, valid as written.
    Escaped(Box<str>),
}

impl Text {
    /// Wraps a JSON string literal as the input wrote it, quotes included.
    ///
    /// The caller guarantees `quoted` is one valid JSON string literal holding no lone-surrogate
    /// escape; the frame reader only passes input it has parsed.
    pub(crate) fn from_quoted(quoted: &str) -> Text {
        Text(TextRepr::Escaped(quoted.into()))
    }

    /// The decoded text.
    pub fn as_str(&self) -> Cow<'_, str> {
        match &self.0 {
            TextRepr::Plain(s) => Cow::Borrowed(s),
            TextRepr::Escaped(q) if !q.contains('\\') => Cow::Borrowed(&q[1..q.len() - 1]),
            TextRepr::Escaped(q) => Cow::Owned(crate::event::json::decode_quoted(q)),
        }
    }

    /// The JSON string literal (quotes included) when the text is still in its escaped form.
    pub(crate) fn escaped(&self) -> Option<&str> {
        match &self.0 {
            TextRepr::Plain(_) => None,
            TextRepr::Escaped(q) => Some(q),
        }
    }

    /// True when the decoded text is empty.
    pub fn is_empty(&self) -> bool {
        match &self.0 {
            TextRepr::Plain(s) => s.is_empty(),
            TextRepr::Escaped(q) => q.len() <= 2,
        }
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text(TextRepr::Plain(s))
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text(TextRepr::Plain(s.to_owned()))
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.as_str(), f)
    }
}

impl Serialize for Text {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            TextRepr::Plain(s) => serializer.serialize_str(s),
            TextRepr::Escaped(e) => crate::event::json::serialize_escaped(e, serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        String::deserialize(deserializer).map(Text::from)
    }
}

impl JsonSchema for Text {
    fn schema_name() -> Cow<'static, str> {
        "Text".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

/// A JSON value carried through as compact JSON text (the CLI's own tool arguments).
///
/// The text is written by agentnorm's own writer from a parsed value, so it is valid JSON by
/// construction and is copied to the output without being parsed again.
#[derive(Clone)]
pub struct Json(Box<str>);

impl Json {
    /// Wraps compact JSON text that the caller has produced from a parsed value.
    pub(crate) fn from_trusted(text: String) -> Json {
        Json(text.into_boxed_str())
    }

    /// The compact JSON text.
    pub fn get(&self) -> &str {
        &self.0
    }

    /// The value, parsed.
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).unwrap_or(serde_json::Value::Null)
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.get() == other.get() || self.value() == other.value()
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.get())
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        crate::event::json::serialize_raw_json(&self.0, serializer)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        // Through `Value`: a raw value cannot be read inside the flattened, tagged `Event`.
        let v = serde_json::Value::deserialize(deserializer)?;
        Ok(Json::from_trusted(v.to_string()))
    }
}

impl JsonSchema for Json {
    fn schema_name() -> Cow<'static, str> {
        "AnyJson".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!(true)
    }
}

macro_rules! events {
    ($(
        $(#[$vmeta:meta])*
        $variant:ident { $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)? }
    )*) => {
        /// One normalized event (SPEC §3). The set is closed: match on it.
        ///
        /// Every variant carries the [`Envelope`] as `env`, flattened on the wire right after
        /// `type`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(tag = "type", rename_all = "snake_case")]
        pub enum Event {
            $(
                $(#[$vmeta])*
                $variant {
                    /// The envelope fields.
                    #[serde(flatten)]
                    env: Envelope,
                    $( $(#[$fmeta])* $field: $ty, )*
                },
            )*
        }

        impl Event {
    /// `cost_scope` of a `turn_completed` / `turn_failed` (`None` elsewhere and when not given).
    pub fn cost_scope(&self) -> Option<UsageScope> {
        match self {
            Event::TurnCompleted { cost_scope, .. } | Event::TurnFailed { cost_scope, .. } => *cost_scope,
            _ => None,
        }
    }
}

impl Event {
            /// Appends the event as one compact JSON object (no line ending): byte for byte what
            /// its `Serialize` makes serde_json write (a test pins the two together), without
            /// serde's work per field; long strings are copied as the input wrote them.
            pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
                match self {
                    $(
                        Event::$variant { env, $( $field, )* } => {
                            crate::event::json::open_event(out, self.type_name(), env);
                            $( crate::event::json::Field::write_field($field, concat!(",\"", stringify!($field), "\":"), out); )*
                        }
                    )*
                }
                out.push(b'}');
            }

            /// The envelope.
            pub fn env(&self) -> &Envelope {
                match self { $( Event::$variant { env, .. } => env, )* }
            }
            /// The envelope, mutably.
            pub fn env_mut(&mut self) -> &mut Envelope {
                match self { $( Event::$variant { env, .. } => env, )* }
            }
        }
    };
}

events! {
    /// Once per input source, before its first event.
    RunStarted {
        /// agentnorm's version.
        version: String,
        /// The contract's version (`1`).
        contract: u32,
    }
    /// A session began (`session_id` is in the envelope and always present here).
    SessionStarted {
        /// Model name as the CLI reported it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// Working directory.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// The CLI's own version.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cli_version: Option<String>,
        /// Permission / approval mode.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        permission_mode: Option<String>,
        /// Names of the tools offered to the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tools: Option<Vec<String>>,
        /// The session this one was forked or spawned from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parent_session_id: Option<String>,
    }
    /// A turn began (only where the CLI says so).
    TurnStarted {}
    /// The user's prompt.
    UserMessage {
        /// The prompt text.
        text: Text,
    }
    /// Assistant text, each piece exactly once per stream.
    OutputDelta {
        /// The text.
        text: Text,
        /// The provider's message id, where known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    }
    /// Model reasoning (also liveness).
    Reasoning {
        /// The reasoning text, where the CLI shows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<Text>,
    }
    /// A tool call began.
    ToolStarted {
        /// The call's id.
        tool_id: String,
        /// The tool's name as the CLI gave it.
        name: String,
        /// What the tool does.
        kind: ToolKind,
        /// The arguments as the CLI gave them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Json>,
        /// A one-line human description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        summary: Option<String>,
        /// True when made from a result whose start was never seen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        synthetic: Option<bool>,
    }
    /// A tool call ended.
    ToolCompleted {
        /// The call's id.
        tool_id: String,
        /// The tool's name, where known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// What the tool does, where known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<ToolKind>,
        /// Whether it succeeded.
        ok: bool,
        /// Its output as text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<Text>,
        /// A command's exit code.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i64>,
        /// The error message of a failed call.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// How long the call took.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
    }
    /// The agent's plan / todo list, whole.
    PlanUpdated {
        /// The items in order.
        items: Vec<PlanItem>,
    }
    /// Something happened to a subagent.
    Subagent {
        /// The subagent's id.
        child_id: String,
        /// What was done.
        operation: SubagentOperation,
        /// The subagent's state.
        status: SubagentStatus,
        /// The CLI's own status word.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw_status: Option<String>,
        /// The id of the operation (tool call) that did it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        operation_id: Option<String>,
        /// What the subagent is for.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// A message to or from it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// Whether it runs in the background.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        background: Option<bool>,
    }
    /// Token usage of one model request.
    Usage {
        /// The figures.
        usage: Usage,
        /// The model that served the request.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
        /// The provider's message id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        /// The model's context window, where reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context_window: Option<u64>,
    }
    /// A turn ended well.
    TurnCompleted {
        /// The turn's (or, with `usage_scope: session`, the session's) usage.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// `turn` (default) or `session`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage_scope: Option<UsageScope>,
        /// Cost the CLI reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// `turn` (default) or `session`: Claude's `total_cost_usd` is a running total over the
        /// turns of one process.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_scope: Option<UsageScope>,
        /// Duration the CLI reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// Number of model turns the CLI reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        num_turns: Option<u64>,
        /// The final text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Text>,
        /// Why the model stopped.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        /// Extension: the per-model counters the CLI reported (Claude `result.modelUsage`, a
        /// running total for the process), by model name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_usage: Option<BTreeMap<String, ModelUsage>>,
    }
    /// A turn failed.
    TurnFailed {
        /// What went wrong.
        error: String,
        /// The class of failure.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        kind: Option<FailureKind>,
        /// Usage reported with the failure.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// `turn` (default) or `session`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage_scope: Option<UsageScope>,
        /// Cost the CLI reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_usd: Option<f64>,
        /// `turn` (default) or `session`: Claude's `total_cost_usd` is a running total over the
        /// turns of one process.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cost_scope: Option<UsageScope>,
        /// Duration the CLI reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// Extension: the per-model counters the CLI reported, as on `turn_completed`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model_usage: Option<BTreeMap<String, ModelUsage>>,
    }
    /// A rate-limit window's reading.
    RateLimit {
        /// `five_hour`, `seven_day`, `primary`, …
        window: String,
        /// The window's length.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        window_minutes: Option<u64>,
        /// `allowed`, `allowed_warning`, `rejected`, …
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<String>,
        /// How much of the window is used, 0–100.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        used_percent: Option<f64>,
        /// When the window resets, RFC 3339.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        resets_at: Option<String>,
        /// Overage status.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        overage_status: Option<String>,
        /// Whether overage is in use.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        using_overage: Option<bool>,
    }
    /// The conversation was compacted.
    Compacted {
        /// `auto` or `manual`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trigger: Option<String>,
        /// Tokens before.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pre_tokens: Option<u64>,
        /// Tokens after.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        post_tokens: Option<u64>,
    }
    /// The agent waits for the user.
    NeedsInput {
        /// The question, as text.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<String>,
        /// Structured questions, as the CLI gave them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        questions: Option<Json>,
    }
    /// The turn was interrupted.
    Interrupt {
        /// Why.
        reason: String,
    }
    /// Trouble the CLI reported that is not itself the end of a turn.
    Diagnostic {
        /// `info`, `warning` or `error`.
        level: Level,
        /// A stable code (`codex.plugin.not-installed`, `claude.api_retry`, …).
        code: String,
        /// Human-readable message.
        message: String,
        /// Key under which repeats are coalesced.
        dedupe_key: String,
        /// How many occurrences this event stands for.
        count: u64,
        /// Plugins named by the message.
        plugins: Vec<String>,
        /// The whole source line.
        raw: Text,
        /// The CLI subsystem that spoke, where known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subsystem: Option<String>,
        /// Coalesced view: first line seen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_line: Option<u64>,
        /// Coalesced view: last line seen.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        last_line: Option<u64>,
    }
    /// A recognised frame that carries nothing else worth an event.
    Heartbeat {
        /// The source frame's type (`stream_event/message_start`, `system/status`, …).
        frame: String,
    }
    /// Anything not understood. Never dropped.
    Unknown {
        /// Why it was not understood.
        reason: UnknownReason,
        /// The frame's `type` (or `type/subtype`), when a string.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame: Option<String>,
        /// The first 200 characters of the line.
        sample: String,
        /// The whole line, lossless (invalid UTF-8 replaced by U+FFFD).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw: Option<Text>,
        /// The line's bytes in base64, when it was not valid UTF-8.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw_base64: Option<String>,
    }
    /// Once per input source, at its end.
    RunEnded {
        /// Lines read.
        lines: u64,
        /// Events written, this one excluded.
        events: u64,
        /// Lines that ended as `unknown`.
        unknown: u64,
        /// For `unrecognized_frame` lines: frame type → count.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unknown_frames: Option<BTreeMap<String, u64>>,
        /// True when the input ended with a newline and no turn was left open.
        complete: bool,
    }
}

impl Event {
    /// Whether this event opens a turn, or shows that one is under way (text, reasoning, tool
    /// activity, a request's usage): a stream that ends after it, before a turn's end, ended
    /// with a turn open (`run_ended.complete` false).
    pub fn opens_turn(&self) -> bool {
        matches!(
            self,
            Event::TurnStarted { .. }
                | Event::OutputDelta { .. }
                | Event::Reasoning { .. }
                | Event::ToolStarted { .. }
                | Event::ToolCompleted { .. }
                | Event::Usage { .. }
        )
    }

    /// Whether this event ends the turn under way: it completed, failed, or was interrupted.
    pub fn ends_turn(&self) -> bool {
        matches!(self, Event::TurnCompleted { .. } | Event::Interrupt { .. } | Event::TurnFailed { .. })
    }

    /// The event's `type` name on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::RunStarted { .. } => "run_started",
            Event::SessionStarted { .. } => "session_started",
            Event::TurnStarted { .. } => "turn_started",
            Event::UserMessage { .. } => "user_message",
            Event::OutputDelta { .. } => "output_delta",
            Event::Reasoning { .. } => "reasoning",
            Event::ToolStarted { .. } => "tool_started",
            Event::ToolCompleted { .. } => "tool_completed",
            Event::PlanUpdated { .. } => "plan_updated",
            Event::Subagent { .. } => "subagent",
            Event::Usage { .. } => "usage",
            Event::TurnCompleted { .. } => "turn_completed",
            Event::TurnFailed { .. } => "turn_failed",
            Event::RateLimit { .. } => "rate_limit",
            Event::Compacted { .. } => "compacted",
            Event::NeedsInput { .. } => "needs_input",
            Event::Interrupt { .. } => "interrupt",
            Event::Diagnostic { .. } => "diagnostic",
            Event::Heartbeat { .. } => "heartbeat",
            Event::Unknown { .. } => "unknown",
            Event::RunEnded { .. } => "run_ended",
        }
    }

    /// Every event type name, in contract order.
    pub const TYPE_NAMES: [&'static str; 21] = [
        "run_started",
        "session_started",
        "turn_started",
        "user_message",
        "output_delta",
        "reasoning",
        "tool_started",
        "tool_completed",
        "plan_updated",
        "subagent",
        "usage",
        "turn_completed",
        "turn_failed",
        "rate_limit",
        "compacted",
        "needs_input",
        "interrupt",
        "diagnostic",
        "heartbeat",
        "unknown",
        "run_ended",
    ];

    /// A heartbeat for `frame`.
    pub fn heartbeat(frame: impl Into<String>) -> Event {
        Event::Heartbeat { env: Envelope::default(), frame: frame.into() }
    }

    /// The JSON Schema of the output events.
    pub fn json_schema() -> serde_json::Value {
        serde_json::to_value(schemars::schema_for!(Event)).unwrap_or_default()
    }
}
