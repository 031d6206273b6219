//! The usage cache (`agentnorm usage`, `agentnorm statusline`): a re-run gives the report a
//! run without the cache gives, whatever changed in between.

use std::path::Path;
use std::process::Output;

mod common;
use common::bin;

/// `agentnorm usage ARGS` with its cache in `cache`.
fn usage(cache: &Path, args: &[&str]) -> Output {
    let out = bin().env("AGENTNORM_CACHE_DIR", cache).arg("usage").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// The report without any cache.
fn truth(args: &[&str]) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args.to_vec();
    a.push("--no-cache");
    usage(dir.path(), &a).stdout
}

#[test]
fn a_warm_run_gives_the_cold_runs_report_for_every_grouping() {
    let cache = tempfile::tempdir().unwrap();
    for by in ["session", "project", "day", "week", "month", "model", "block"] {
        let args = ["--json", "--by", by, "--timezone", "UTC", "--now", "2026-05-01T00:00:00Z", "fixtures"];
        let cold = usage(cache.path(), &args).stdout;
        assert!(cache.path().join("usage.bin").is_file(), "the first run keeps a cache");
        let warm = usage(cache.path(), &args).stdout;
        assert_eq!(String::from_utf8_lossy(&warm), String::from_utf8_lossy(&cold), "--by {by}");
        assert_eq!(warm, truth(&args), "--by {by}");
        assert!(cold.len() > 100, "the fixtures hold usage");
    }
}

#[test]
fn no_cache_neither_reads_nor_writes_one() {
    let cache = tempfile::tempdir().unwrap();
    usage(cache.path(), &["--json", "--no-cache", "fixtures/claude-transcript"]);
    assert!(!cache.path().join("usage.bin").exists());
    // A damaged cache is not even looked at.
    std::fs::write(cache.path().join("usage.bin"), b"not a cache").unwrap();
    usage(cache.path(), &["--json", "--no-cache", "fixtures/claude-transcript"]);
    assert_eq!(std::fs::read(cache.path().join("usage.bin")).unwrap(), b"not a cache");
}

#[test]
fn a_damaged_cache_is_survived_and_replaced() {
    let cache = tempfile::tempdir().unwrap();
    let args = ["--json", "fixtures/claude-transcript", "fixtures/codex-rollout"];
    let good = usage(cache.path(), &args).stdout;
    let kept = std::fs::read(cache.path().join("usage.bin")).unwrap();
    for damaged in [b"garbage".to_vec(), kept[..kept.len() / 2].to_vec(), Vec::new()] {
        std::fs::write(cache.path().join("usage.bin"), &damaged).unwrap();
        assert_eq!(usage(cache.path(), &args).stdout, good);
        // Rewritten whole (its usage in the order the files were read, which the threads decide,
        // so not byte for byte the first), and used as it is by the next run.
        let rewritten = std::fs::read(cache.path().join("usage.bin")).unwrap();
        assert!(rewritten.len().abs_diff(kept.len()) < 64, "rewritten whole: {} vs {}", rewritten.len(), kept.len());
        assert_eq!(usage(cache.path(), &args).stdout, good);
        assert_eq!(std::fs::read(cache.path().join("usage.bin")).unwrap(), rewritten, "read, not written again");
    }
}

/// Lines of a fixture.
fn lines(path: &str) -> Vec<String> {
    std::fs::read_to_string(common::root().join(path)).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn an_appended_log_counts_its_new_requests() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let all = lines("fixtures/claude-transcript/growing_usage.jsonl");
    let half = all.len() / 2;
    std::fs::write(&log, all[..half].join("\n") + "\n").unwrap();
    let folder = dir.path().to_str().unwrap();
    let first = usage(cache.path(), &["--json", folder]).stdout;
    assert_eq!(first, truth(&["--json", folder]));
    std::fs::write(&log, all.join("\n") + "\n").unwrap();
    let second = usage(cache.path(), &["--json", folder]).stdout;
    assert_ne!(first, second, "the appended requests count");
    assert_eq!(second, truth(&["--json", folder]));
}

#[test]
fn a_log_rewritten_to_the_same_size_or_replaced_is_read_again() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rollout.jsonl");
    let text = std::fs::read_to_string(common::root().join("fixtures/codex-rollout/paginated_0_160.jsonl")).unwrap();
    std::fs::write(&log, &text).unwrap();
    let folder = dir.path().to_str().unwrap();
    let before = usage(cache.path(), &["--json", folder]).stdout;
    // The same bytes but the first digit of every output count: same size, new content.
    let key = "\"output_tokens\":";
    let mut bytes = text.clone().into_bytes();
    for (at, _) in text.match_indices(key) {
        let d = &mut bytes[at + key.len()];
        *d = if *d == b'9' { b'8' } else { b'9' };
    }
    std::fs::write(&log, &bytes).unwrap();
    let after = usage(cache.path(), &["--json", folder]).stdout;
    assert_ne!(before, after);
    assert_eq!(after, truth(&["--json", folder]));
    // Replaced by a rename (a new inode) with other content.
    let other = dir.path().join("new.tmp");
    std::fs::copy(common::root().join("fixtures/codex-rollout/v0104_tasks_unified_exec.jsonl"), &other).unwrap();
    std::fs::rename(&other, &log).unwrap();
    let replaced = usage(cache.path(), &["--json", folder]).stdout;
    assert_eq!(replaced, truth(&["--json", folder]));
    assert_ne!(replaced, after);
}

#[test]
fn a_deleted_log_no_longer_counts() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for f in ["growing_usage", "sidechain_task"] {
        std::fs::copy(
            common::root().join(format!("fixtures/claude-transcript/{f}.jsonl")),
            dir.path().join(format!("{f}.jsonl")),
        )
        .unwrap();
    }
    let folder = dir.path().to_str().unwrap();
    let both = usage(cache.path(), &["--json", folder]).stdout;
    std::fs::remove_file(dir.path().join("sidechain_task.jsonl")).unwrap();
    let one = usage(cache.path(), &["--json", folder]).stdout;
    assert_ne!(both, one);
    assert_eq!(one, truth(&["--json", folder]));
}

#[test]
fn the_status_line_reads_the_same_with_and_without_the_cache() {
    let cache = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.jsonl");
    std::fs::copy(common::root().join("fixtures/claude-transcript/growing_usage.jsonl"), &log).unwrap();
    let run = |extra: &[&str]| {
        let mut c = bin();
        c.env("AGENTNORM_CACHE_DIR", cache.path())
            .args(["statusline", "--timezone", "UTC"])
            .args(extra)
            .arg(dir.path())
            .stdin(std::process::Stdio::null());
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let none = run(&["--no-cache"]);
    assert!(!cache.path().join("statusline.bin").exists());
    let cold = run(&[]);
    // The status line keeps a cache of its own (the recent logs only); `usage`'s is not written.
    assert!(cache.path().join("statusline.bin").is_file());
    assert!(!cache.path().join("usage.bin").exists());
    let warm = run(&[]);
    assert_eq!(cold, none);
    assert_eq!(warm, none);
}

#[test]
fn a_cached_log_is_named_as_this_run_names_it() {
    let cache = tempfile::tempdir().unwrap();
    let relative = ["--json", "fixtures/claude-transcript"];
    usage(cache.path(), &relative);
    let abs = common::root().join("fixtures/claude-transcript");
    let absolute = ["--json", abs.to_str().unwrap()];
    let warm = usage(cache.path(), &absolute).stdout;
    assert_eq!(warm, truth(&absolute));
    assert!(String::from_utf8_lossy(&warm).contains(abs.to_str().unwrap()), "the sources are this run's paths");
}
