//! `--redact` through the built binary: one test per secret shape, the `--raw` line, strings the
//! normalizer passes through in their escaped form, lines that are not UTF-8, the diagnostics
//! view, and no false positive: every fixture (but the one made of fake secrets) comes out byte
//! for byte the same with and without `--redact`.

use serde_json::Value;

mod common;
use common::{all_fixtures, assert_success, of_type, parse, root, run_raw};

/// A Claude assistant frame whose one text block is `text`.
fn assistant_text(text: &str) -> String {
    serde_json::json!({
        "type": "assistant",
        "message": {"id": "msg_1", "model": "claude-sonnet-5", "role": "assistant", "content": [{"type": "text", "text": text}]},
        "session_id": "s1",
        "parent_tool_use_id": null
    })
    .to_string()
}

/// Runs `args` (plus `--no-observed-at`) on `input`; asserts success and valid NDJSON.
fn run(args: &[&str], input: &str) -> (String, Vec<Value>) {
    let mut all = vec!["--no-observed-at"];
    all.extend_from_slice(args);
    let out = run_raw(&all, input.as_bytes());
    assert_success(&out);
    let text = String::from_utf8(out.stdout).expect("UTF-8 output");
    let evs = parse(text.as_bytes());
    (text, evs)
}

/// Feeds `text` as assistant text and as a line of stderr mixed into the stream, with `--redact
/// --raw`: both come out as `masked`, every `raw` of a JSON line is still JSON, and no part of
/// `secret` is left anywhere in the output — which without `--redact` it is.
fn check(text: &str, secret: &str, masked: &str) {
    let input = format!("{}\n{text}\n", assistant_text(text));
    let encoded = serde_json::to_string(secret).unwrap();
    let encoded = &encoded[1..encoded.len() - 1];
    let (plain, _) = run(&["--raw"], &input);
    assert!(plain.contains(encoded), "without --redact: {plain}");
    let (out, evs) = run(&["--raw", "--redact"], &input);
    assert!(!out.contains(encoded), "secret {secret:?} left in:\n{out}");
    assert_eq!(common::output_text(&evs), masked);
    let unknown = of_type(&evs, "unknown");
    assert_eq!(unknown.len(), 1, "{out}");
    assert_eq!(unknown[0]["raw"], masked);
    assert_eq!(unknown[0]["sample"].as_str().unwrap(), masked.chars().take(200).collect::<String>());
    let delta = &of_type(&evs, "output_delta")[0];
    let raw: Value = serde_json::from_str(delta["raw"].as_str().expect("--raw")).expect("the masked raw line is JSON");
    assert_eq!(raw["message"]["content"][0]["text"], masked);
}

#[test]
fn anthropic_key() {
    let k = "sk-ant-api03-FAKEfake0123456789FAKEfake_0123456789-FAKEAA";
    check(&format!("use {k} here"), k, "use [REDACTED:anthropic-key] here");
}

#[test]
fn openai_keys() {
    for k in ["sk-proj-FAKEfake0123456789abcdef_FAKE-0123", "sk-FAKEfake0123456789abcdefFAKEfake0123456789ab"] {
        check(&format!("key={k}."), k, "key=[REDACTED:openai-key].");
    }
}

#[test]
fn github_tokens() {
    for k in [
        "ghp_FAKEfake0123456789abcdefFAKEfake0123",
        "gho_FAKEfake0123456789abcdefFAKEfake0123",
        "ghs_FAKEfake0123456789abcdefFAKEfake0123",
        "github_pat_11FAKEfake0123456789ab_FAKEfake0123456789abcdefFAKE",
    ] {
        check(
            &format!("git push https://{k}@github.com/o/r"),
            k,
            "git push https://[REDACTED:github-token]@github.com/o/r",
        );
    }
}

#[test]
fn aws_access_key_id() {
    check("id AKIAIOSFODNN7EXAMPLE ok", "AKIAIOSFODNN7EXAMPLE", "id [REDACTED:aws-access-key] ok");
}

#[test]
fn aws_secret_key_assignment() {
    let k = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    check(&format!("aws_secret_access_key = {k}"), k, "aws_secret_access_key = [REDACTED:aws-secret-key]");
}

#[test]
fn google_api_key() {
    let k = "AIzaSyFAKEfake0123456789abcdefFAKEfake0";
    check(&format!("?key={k}&q=1"), k, "?key=[REDACTED:google-api-key]&q=1");
}

#[test]
fn slack_token() {
    let k = "xoxb-0000000000-0000000000-FAKEfakeFAKE";
    check(&format!("token {k}"), k, "token [REDACTED:slack-token]");
}

#[test]
fn stripe_key() {
    let k = "sk_live_FAKEfake0123456789abcdef";
    check(&format!("Stripe::Client.new({k})"), k, "Stripe::Client.new([REDACTED:stripe-key])");
}

#[test]
fn jwt() {
    let k = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.RkFLRWZha2VGQUtFZmFrZQ";
    check(&format!("cookie: session={k}; Path=/"), k, "cookie: session=[REDACTED:jwt]; Path=/");
}

#[test]
fn pem_private_key_block() {
    let body = "MIIEFAKEFAKEfakefake0123456789/+FAKEFAKE";
    let text =
        format!("key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n{body}\n-----END OPENSSH PRIVATE KEY-----\ndone");
    // As a stderr line the block is cut at the first newline: that line alone is masked.
    let input = format!("{}\n", assistant_text(&text));
    let (out, evs) = run(&["--raw", "--redact"], &input);
    assert!(!out.contains(body), "{out}");
    assert_eq!(common::output_text(&evs), "key:\n[REDACTED:private-key]\ndone");
}

#[test]
fn authorization_headers() {
    check(
        "-H 'Authorization: Bearer FAKEfake0123.abc-_~+/=' x",
        "FAKEfake0123.abc",
        "-H 'Authorization: Bearer [REDACTED:authorization]' x",
    );
    check(
        "authorization: basic ZmFrZXVzZXI6ZmFrZXBhc3M=",
        "ZmFrZXVzZXI6ZmFrZXBhc3M",
        "authorization: basic [REDACTED:authorization]",
    );
    check("x-api-key: FAKEfake0123456789", "FAKEfake0123456789", "x-api-key: [REDACTED:api-key]");
}

#[test]
fn env_assignments_keep_their_name() {
    check("OPENAI_API_KEY=abc123FAKE", "abc123FAKE", "OPENAI_API_KEY=[REDACTED:secret]");
    check("export GITHUB_TOKEN='FAKE fake'", "FAKE fake", "export GITHUB_TOKEN='[REDACTED:secret]'");
    check("PASSWORD=\"hunter2 FAKE\" ./run", "hunter2 FAKE", "PASSWORD=\"[REDACTED:secret]\" ./run");
    check(
        "DB_PASS=FAKEpass STRIPE_SECRET=FAKEsec",
        "FAKE",
        "DB_PASS=[REDACTED:secret] STRIPE_SECRET=[REDACTED:secret]",
    );
    check("password: 'FAKEpass'", "FAKEpass", "password: '[REDACTED:secret]'");
    // References and ordinary settings are no secrets.
    let kept = "GITHUB_TOKEN=$GITHUB_TOKEN MAX_TOKENS=4096 token=1";
    let (_, evs) = run(&["--redact"], &format!("{}\n", assistant_text(kept)));
    assert_eq!(common::output_text(&evs), kept);
}

#[test]
fn json_value_under_a_secret_key_in_tool_input_and_raw() {
    let line = r#"{"type":"assistant","message":{"id":"m","model":"claude-sonnet-5","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"mcp__vault__put","input":{"path":"app","client_secret":"FAKE\/fake\"1","apiKey":"FAKEkey"}}]},"session_id":"s1","parent_tool_use_id":null}"#;
    let (out, evs) = run(&["--redact", "--raw"], &format!("{line}\n"));
    assert!(!out.contains("FAKE"), "{out}");
    let started = of_type(&evs, "tool_started")[0];
    assert_eq!(
        started["input"],
        serde_json::json!({"path":"app","client_secret":"[REDACTED:secret]","apiKey":"[REDACTED:secret]"})
    );
    let raw: Value = serde_json::from_str(started["raw"].as_str().unwrap()).unwrap();
    assert_eq!(raw["message"]["content"][0]["input"]["client_secret"], "[REDACTED:secret]");
}

#[test]
fn long_escaped_tool_output_is_masked_and_stays_json() {
    // A tool result longer than the pass-through threshold, full of escapes, with a key in it
    // written with an escaped slash and a `\u` escape.
    let filler = "line\\twith \\\"quotes\\\" and \\\\ backslashes\\n".repeat(20);
    let line = format!(
        r#"{{"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t1","type":"tool_result","content":"{filler}aws_secret_access_key=wJalrXUtnFEMI\/K7MDENG\/bPxRfiCYEXAMPLEKEY\n\u0073k-ant-api03-FAKEfake0123456789FAKEfake\n{filler}"}}]}},"session_id":"s1","parent_tool_use_id":null}}"#
    );
    let input = format!("{}\n{line}\n", assistant_text("hi"));
    let (out, evs) = run(&["--redact", "--raw"], &input);
    assert!(!out.contains("EXAMPLEKEY") && !out.contains("FAKEfake"), "{out}");
    let done = of_type(&evs, "tool_completed")[0];
    let output = done["output"].as_str().unwrap();
    assert!(output.contains("aws_secret_access_key=[REDACTED:aws-secret-key]\n[REDACTED:anthropic-key]\n"), "{output}");
    assert!(output.starts_with("line\twith \"quotes\" and \\ backslashes\n"));
    serde_json::from_str::<Value>(done["raw"].as_str().unwrap()).expect("raw line still JSON");
}

#[test]
fn a_line_that_is_not_utf8_is_masked_in_raw_and_raw_base64() {
    let input = b"\xff\xfe token ghp_FAKEfake0123456789abcdefFAKEfake0123 \xff\n";
    let out = run_raw(&["--no-observed-at", "--redact"], input);
    assert_success(&out);
    let evs = parse(&out.stdout);
    let unknown = of_type(&evs, "unknown")[0];
    assert!(!unknown["raw"].as_str().unwrap().contains("ghp_"));
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD.decode(unknown["raw_base64"].as_str().unwrap()).unwrap();
    assert_eq!(bytes, b"\xff\xfe token [REDACTED:github-token] \xff");
}

#[test]
fn diagnostics_view_redacts() {
    let line = "2026-09-14T10:00:00.000000Z ERROR codex_core::client: request failed: Authorization: Bearer FAKEfake0123456789";
    let out = run_raw(&["diagnostics", "--redact"], format!("{line}\n").as_bytes());
    assert_success(&out);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(!text.contains("FAKEfake") && text.contains("Bearer [REDACTED:authorization]"), "{text}");
    let plain = run_raw(&["diagnostics"], format!("{line}\n").as_bytes());
    assert!(String::from_utf8_lossy(&plain.stdout).contains("FAKEfake"));
}

/// The fixture made of fake secrets, which is the one that must change.
const FAKE: &str = "fixtures/claude/fake_secrets.jsonl";

#[test]
fn fake_secrets_fixture_matches_its_redacted_output() {
    let out = common::bin().args(["--no-observed-at", "--redact", "--raw", FAKE]).output().unwrap();
    assert_success(&out);
    let expected = std::fs::read(root().join("fixtures/claude/fake_secrets.redacted")).unwrap();
    assert!(
        out.stdout == expected,
        "`agentnorm --no-observed-at --redact --raw {FAKE}` differs from fake_secrets.redacted"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for fake in ["FAKEfake", "EXAMPLE", "correct horse", "ZmFrZX", "eyJzdWIi"] {
        assert!(!text.contains(fake), "{fake} left in the redacted output");
    }
    // Every kind appears.
    for kind in [
        "anthropic-key",
        "openai-key",
        "github-token",
        "aws-access-key",
        "aws-secret-key",
        "google-api-key",
        "slack-token",
        "stripe-key",
        "jwt",
        "private-key",
        "authorization",
        "api-key",
        "secret",
    ] {
        assert!(text.contains(&format!("[REDACTED:{kind}]")), "{kind}");
    }
    // The words and settings that are not secrets are still there.
    for kept in ["MAX_TOKENS=4096", "DEPLOY_TOKEN=$CI_DEPLOY_TOKEN", "\\\"jsonwebtoken\\\":\\\"^9.0.2\\\""] {
        assert!(text.contains(kept), "{kept}");
    }
}

#[test]
fn no_fixture_changes_under_redact() {
    let fixtures: Vec<_> = all_fixtures().into_iter().filter(|p| p.to_str() != Some(FAKE)).collect();
    assert!(fixtures.len() > 40);
    for f in fixtures {
        let run = |redact: bool| {
            let mut c = common::bin();
            c.args(["--no-observed-at", "--raw"]);
            if redact {
                c.arg("--redact");
            }
            c.arg(&f).output().unwrap().stdout
        };
        assert!(run(false) == run(true), "{} changes under --redact", f.display());
    }
}

/// Pieces that secrets, escapes and JSON are made of, glued at random into text.
fn piece() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    prop_oneof![
        Just("sk-ant-api03-".to_owned()),
        Just("sk-proj-".to_owned()),
        Just("ghp_".to_owned()),
        Just("AKIA".to_owned()),
        Just("eyJhbGciOi.".to_owned()),
        Just("-----BEGIN RSA PRIVATE KEY-----".to_owned()),
        Just("-----END RSA PRIVATE KEY-----".to_owned()),
        Just("Authorization: Bearer ".to_owned()),
        Just("API_KEY=".to_owned()),
        Just("\"password\": ".to_owned()),
        Just("'".to_owned()),
        Just("\"".to_owned()),
        Just("\\".to_owned()),
        Just("\\u0073".to_owned()),
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just(":".to_owned()),
        Just("\n".to_owned()),
        Just("é→🚀".to_owned()),
        "[A-Za-z0-9_/+=.-]{0,40}",
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 300, ..Default::default() })]

    /// Whatever the text, as assistant text (short and long, so both string paths), as a tool's
    /// JSON input and as a line of its own: no panic, every output line is JSON, and every `raw`
    /// of a JSON input line is still JSON.
    #[test]
    fn redacted_output_stays_json(pieces in proptest::collection::vec(piece(), 0..30)) {
        let text: String = pieces.concat();
        let long = format!("{text}{}", " padding".repeat(40));
        let mut input = String::new();
        for t in [&text, &long] {
            input.push_str(&assistant_text(t));
            input.push('\n');
        }
        let tool = serde_json::json!({"type":"assistant","message":{"id":"m2","model":"claude-sonnet-5","content":[
            {"type":"tool_use","id":"t1","name":"Bash","input":{"command": text, "env": {"API_KEY": text}}}]},
            "session_id":"s1","parent_tool_use_id":null});
        input.push_str(&tool.to_string());
        input.push('\n');
        input.push_str(&text.replace('\n', " "));
        input.push('\n');
        let opts = agentnorm::Options::default().observed_at(false).raw(true).redact(true);
        let out = common::normalize_in_sizes(input.as_bytes(), opts, &[]);
        for line in String::from_utf8(out).unwrap().lines() {
            let ev: Value = serde_json::from_str(line).unwrap();
            if ev["type"] != "unknown" && let Some(raw) = ev["raw"].as_str() {
                serde_json::from_str::<Value>(raw).unwrap();
            }
        }
    }
}

/// Claude with `--include-partial-messages` streams text in pieces of a few characters: a key
/// split over pieces is masked in every piece after its prefix, in `text` and in `raw`, and the
/// text still comes out once, in order.
#[test]
fn a_secret_split_over_streamed_pieces() {
    let pieces =
        ["Your key is sk-ant-", "api03-FAKE12", "34fakeFAKE56", "78fake and ", "OPENAI_API_KEY=", "FAKEabc", "9 ok"];
    let mut input = String::from(
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"m1","model":"claude-sonnet-5","usage":{"input_tokens":5,"output_tokens":1}}},"session_id":"s1","parent_tool_use_id":null}"#,
    );
    input.push('\n');
    for p in pieces {
        let delta = serde_json::json!({"type":"stream_event","event":{"type":"content_block_delta","index":0,
            "delta":{"type":"text_delta","text":p}},"session_id":"s1","parent_tool_use_id":null});
        input.push_str(&delta.to_string());
        input.push('\n');
    }
    let (plain, evs) = run(&["--raw"], &input);
    assert_eq!(common::output_text(&evs), pieces.concat());
    assert!(plain.contains("FAKE"));
    let (out, evs) = run(&["--raw", "--redact"], &input);
    assert!(!out.contains("FAKE"), "{out}");
    assert_eq!(
        common::output_text(&evs),
        "Your key is [REDACTED:cut][REDACTED:cut][REDACTED:cut][REDACTED:cut] and OPENAI_API_KEY=[REDACTED:cut][REDACTED:cut] ok"
    );
}
