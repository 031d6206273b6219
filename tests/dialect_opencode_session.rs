//! The opencode-session dialect (OpenCode's saved message infos: `storage/message/…/*.json` up
//! to 1.1, rows of `opencode.db` from 1.2), pinned on `fixtures/opencode-session/` and on a
//! database made here.

use serde_json::{Value, json};

mod common;
use common::{at_line, bin, of_type, run_ended, types_at};

fn run(name: &str) -> Vec<Value> {
    common::events_of("opencode-session", name)
}

#[test]
fn assistant_infos_start_the_session_and_carry_the_request() {
    let evs = run("db_rows");
    assert_eq!(run_ended(&evs)["unknown"], 0);
    assert_eq!(types_at(&evs, 1), ["heartbeat"], "a user info says nothing countable");
    assert_eq!(types_at(&evs, 2), ["session_started", "usage"]);
    let started = &at_line(&evs, 2)[0];
    assert_eq!(started["cwd"], "/home/dev/dates");
    assert_eq!(started["model"], "claude-sonnet-4-5-20250929");
    let u = &at_line(&evs, 2)[1];
    assert_eq!(
        u["usage"],
        json!({"input": 3, "cache_read": 11872, "cache_write": 3210, "output": 412, "reasoning": 0, "context": 15085})
    );
    assert_eq!(u["message_id"], "msg_9a41c7e3a001Ld3fQ8sVb2nJxR");
    assert_eq!(u["at"], "2025-11-21T08:00:09.871Z", "dated by time.completed");
    // `finish: "tool-calls"` goes on; `stop` ends the turn with the sums and OpenCode's cost.
    assert_eq!(types_at(&evs, 3), ["usage", "turn_completed"]);
    let done = &at_line(&evs, 3)[1];
    assert_eq!(done["usage"]["output"], 412 + 187);
    assert_eq!(done["usage"]["cache_read"], 11872 + 15082);
    assert!((done["cost_usd"].as_f64().unwrap() - (0.0217881 + 0.0097446)).abs() < 1e-12);
    assert_eq!(done["stop_reason"], "stop");
    // The failed request reported zeros: no usage; its error fails the turn.
    assert_eq!(types_at(&evs, 5), ["session_started", "turn_failed"]);
    let failed = &at_line(&evs, 5)[1];
    assert_eq!(
        (failed["error"].as_str(), failed["kind"].as_str()),
        (Some("Rate limit reached for gpt-5.1-codex"), Some("api_error"))
    );
    assert!(failed.get("usage").is_none());
}

#[test]
fn a_turn_is_summed_per_session_when_a_subagents_infos_come_between() {
    let info = |id: &str, sid: &str, out: u64, finish: &str| {
        format!(
            r#"{{"id":"{id}","sessionID":"{sid}","role":"assistant","time":{{"created":1,"completed":2}},"modelID":"gpt-5","path":{{"cwd":"/w"}},"cost":0.5,"tokens":{{"input":1,"output":{out},"reasoning":0,"cache":{{"read":0,"write":0}}}},"finish":"{finish}"}}"#
        )
    };
    let lines = [
        info("m1", "parent", 10, "tool-calls"),
        info("c1", "child", 100, "tool-calls"),
        info("c2", "child", 200, "stop"),
        info("m2", "parent", 20, "stop"),
    ]
    .join("\n")
        + "\n";
    let evs = common::run_stdin(&[], &lines);
    let ends = of_type(&evs, "turn_completed");
    assert_eq!(ends.len(), 2);
    assert_eq!((ends[0]["session_id"].as_str(), ends[0]["usage"]["output"].as_u64()), (Some("child"), Some(300)));
    assert_eq!((ends[1]["session_id"].as_str(), ends[1]["usage"]["output"].as_u64()), (Some("parent"), Some(30)));
    assert_eq!(ends[1]["cost_usd"], 1.0);
}

#[test]
fn a_message_file_is_one_pretty_printed_frame() {
    let evs = run("message_file");
    assert_eq!(types_at(&evs, 1), ["session_started", "usage", "turn_completed"]);
    // OpenCode's `output` leaves reasoning out; SPEC's output holds it.
    assert_eq!(of_type(&evs, "usage")[0]["usage"]["output"], 388 + 256);
}

/// An `opencode.db` as OpenCode 1.2 lays it out: the message's `id` and `session_id` in columns,
/// the rest of the info in `data`.
fn database(dir: &std::path::Path, rows: &[(&str, &str, &str)]) -> std::path::PathBuf {
    let path = dir.join("opencode.db");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL, time_created integer NOT NULL, \
         time_updated integer NOT NULL, data text NOT NULL);",
    )
    .unwrap();
    for (n, (id, sid, data)) in rows.iter().enumerate() {
        conn.execute("INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)", rusqlite::params![id, sid, n as i64, data])
            .unwrap();
    }
    path
}

#[test]
fn the_database_is_read_as_its_messages_in_the_order_stored() {
    let dir = tempfile::tempdir().unwrap();
    let info = rows_info;
    // More rows than one batch, and a row whose data is not JSON: read as a line, not lost.
    let mut rows: Vec<(String, String, String)> =
        (0..1300).map(|i| (format!("msg_{i:05}"), "ses_a".to_owned(), info(i + 1))).collect();
    rows.insert(700, ("msg_bad".into(), "ses_a".into(), "not json".into()));
    let refs: Vec<(&str, &str, &str)> = rows.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
    let db = database(dir.path(), &refs);
    let out = bin().arg(&db).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let evs = common::parse(&out.stdout);
    let usage = of_type(&evs, "usage");
    assert_eq!(usage.len(), 1300);
    assert_eq!(usage[0]["message_id"], "msg_00000");
    assert_eq!(usage[0]["session_id"], "ses_a");
    assert_eq!(usage[1299]["usage"]["output"], 1300);
    assert_eq!(run_ended(&evs)["unknown"], 1, "the row that is not JSON");
    assert_eq!(run_ended(&evs)["lines"], 1301);

    // `usage` reads it (and finds it where OpenCode keeps it, with no path given).
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".local/share/opencode");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(&db, data.join("opencode.db")).unwrap();
    let rows = common::usage_in_home(home.path(), &[]);
    let total = rows.last().unwrap();
    assert_eq!(total["requests"], 1300);
    assert_eq!(total["output"], (1..=1300u64).sum::<u64>());

    // OpenCode 1.2 moves the message files into the database and leaves them where they were:
    // a message in both counts once.
    let file = data.join("storage/message/ses_a/msg_00005.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let mut info: Value = serde_json::from_str(&rows_info(6)).unwrap();
    info["id"] = json!("msg_00005");
    info["sessionID"] = json!("ses_a");
    std::fs::write(&file, serde_json::to_string_pretty(&info).unwrap() + "\n").unwrap();
    let total = common::usage_in_home(home.path(), &["--no-cache"]).pop().unwrap();
    assert_eq!((total["requests"].as_u64(), total["output"].as_u64()), (Some(1300), Some((1..=1300u64).sum())));
}

/// An assistant info of `out` output tokens, without its ids.
fn rows_info(out: u64) -> String {
    format!(
        r#"{{"role":"assistant","time":{{"created":1763712001466,"completed":1763712009871}},"modelID":"claude-sonnet-4-5-20250929","providerID":"anthropic","path":{{"cwd":"/w"}},"tokens":{{"input":3,"output":{out},"reasoning":0,"cache":{{"read":100,"write":10}}}}}}"#
    )
}

#[test]
fn a_database_that_is_not_opencodes_is_an_error_not_a_stream_of_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.db");
    rusqlite::Connection::open(&path).unwrap().execute_batch("CREATE TABLE t (x);").unwrap();
    let out = bin().arg(&path).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without a `message` table"), "{err}");
    // And piped, a database cannot be read.
    let bytes = std::fs::read(&path).unwrap();
    let out = common::run_raw(&[], &bytes);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("name it, do not pipe it"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
