//! The registry of dialects: one line per CLI agentnorm reads, and nothing else.
//!
//! Every place that needs the list of dialects expands it from here: the [`crate::Dialect`]
//! enum with its wire names (the vocabulary), the adapter dispatch in [`crate::dialect`]
//! (detection, mapping, each dialect's own fold state), `--dialect`'s values, `schema`, the
//! tests and the fuzz targets (through [`crate::Dialect::ALL`]). Adding a CLI is one file in
//! `src/dialect/` (a type implementing the adapter trait) plus one line here.
//!
//! Each line: the enum variant, the module under `src/dialect/` and its adapter type, the
//! wire name (SPEC §2), and what the dialect reads. The order is the order of preference when
//! a frame fits several dialects equally and the stream has not decided yet.

/// Calls `$then!` with the list of dialects (see the module docs).
macro_rules! dialects {
    ($then:ident) => {
        $then! {
            Claude claude::Claude "claude"
                "Claude Code `-p --output-format stream-json --verbose` and Claude-compatible streams (Amp `--stream-json`).";
            ClaudeTranscript claude_transcript::Transcript "claude-transcript"
                "Claude Code saved sessions (`~/.claude/projects/…/<session>.jsonl`).";
            Codex codex::Exec "codex"
                "OpenAI Codex `exec --json` (`thread.*`, `turn.*`, `item.*`).";
            CodexLegacy codex_legacy::Legacy "codex-legacy"
                "Codex `exec --json` before the thread/item format (`{\"id\",\"msg\"}`).";
            CodexRollout codex_rollout::Rollout "codex-rollout"
                "Codex session logs (`~/.codex/sessions/…/rollout-*.jsonl`).";
            Gemini gemini::Gemini "gemini"
                "Gemini CLI (and Gemini-shaped Antigravity builds) `--output-format stream-json` and `json`.";
            Opencode opencode::Opencode "opencode"
                "`opencode run --format json`.";
            Cursor cursor::Cursor "cursor"
                "Cursor agent `--output-format stream-json`.";
            Antigravity antigravity::Antigravity "antigravity"
                "The Antigravity CLI (`agy`) `--output-format stream-json` (`{\"event\":…}` envelope).";
            Copilot copilot::Copilot "copilot"
                "GitHub Copilot CLI `-p … --output-format json` and saved session logs (`~/.copilot/session-state/<id>/events.jsonl`).";
            Pi pi::Pi "pi"
                "`pi --mode json` (the pi coding agent), 0.4x–0.6x and the delta-only 1.x format, and its saved sessions `~/.pi/agent/sessions/…/*.jsonl`.";
            Droid droid::Droid "droid"
                "Factory `droid exec --output-format stream-json`.";
            Qwen qwen::Qwen "qwen"
                "Qwen Code `-p --output-format stream-json` (Claude-shaped, with its own usage counting).";
            Grok grok::Grok "grok"
                "xAI Grok Build CLI `-p --output-format streaming-json` and `json`.";
            GeminiSession gemini_session::GeminiSession "gemini-session"
                "Gemini CLI saved sessions (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, and the older `.json` documents).";
            OpencodeSession opencode_session::OpencodeSession "opencode-session"
                "OpenCode's saved message infos (`storage/message/<session>/<message>.json`, rows of `opencode.db`).";
        }
    };
}
