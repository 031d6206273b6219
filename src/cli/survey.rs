//! `agentnorm survey`: per dialect and CLI version, each frame type seen, its count, and how
//! agentnorm reads it (mapped, heartbeat, unknown), with one sample line (the first unknown one,
//! else the first).
//!
//! Every input is normalized on its own (with no output) while the fold records how each line
//! was read; the counts of all inputs are added up. It is how a new CLI release is noticed: its
//! new frames are the `unknown` rows.

use std::io::{self, Read as _, Write};

use agentnorm::{Normalizer, Options, ReadAs, Survey};
use anyhow::Result;

use crate::cli::{SurveyArgs, input};

/// Runs `agentnorm survey`; the exit status is 2 when an input could not be read.
pub fn run(args: &SurveyArgs) -> Result<u8> {
    let mut failed = false;
    let mut total = Survey::default();
    let mut buf = vec![0u8; 256 << 10];
    for inp in input::expand(&args.paths, &mut failed) {
        let mut reader = match input::open(&inp, agentnorm::DEFAULT_MAX_LINE_BYTES) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("agentnorm: {}: {e}", agentnorm::sink::safe::printable(&inp.name()));
                failed = true;
                continue;
            }
        };
        let mut norm = Normalizer::new(inp.options(&Options::default().observed_at(false).dialect(args.dialect)));
        norm.record_survey();
        let mut sink = |_: &agentnorm::Event| {};
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => norm.feed(&buf[..n], &mut sink),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!("agentnorm: {}: {e}", agentnorm::sink::safe::printable(&inp.name()));
                    failed = true;
                    break;
                }
            }
        }
        norm.finish(&mut sink);
        if let Some(s) = norm.take_survey() {
            total.merge(s);
        }
    }
    let mut out = io::stdout().lock();
    if args.json {
        write_json(&total, &mut out)?
    } else {
        write_table(&total, &mut out)?
    }
    out.flush()?;
    Ok(if failed { 2 } else { 0 })
}

fn read_as(r: ReadAs) -> &'static str {
    match r {
        ReadAs::Mapped => "mapped",
        ReadAs::Heartbeat => "heartbeat",
        ReadAs::Unknown => "unknown",
    }
}

/// One JSON object per row.
fn write_json(s: &Survey, out: &mut impl Write) -> io::Result<()> {
    for (k, v) in &s.rows {
        let mut row = serde_json::Map::new();
        row.insert("dialect".into(), k.dialect.map_or(serde_json::Value::Null, |d| d.as_str().into()));
        if let Some(ver) = &k.cli_version {
            row.insert("cli_version".into(), ver.as_str().into());
        }
        row.insert("frame".into(), k.frame.as_str().into());
        row.insert("read_as".into(), read_as(v.read_as()).into());
        row.insert("count".into(), v.count().into());
        row.insert("mapped".into(), v.mapped.into());
        row.insert("heartbeat".into(), v.heartbeat.into());
        row.insert("unknown".into(), v.unknown.into());
        if let Some(src) = &v.source {
            row.insert("source".into(), src.as_str().into());
        }
        row.insert("line".into(), v.line.into());
        if k.dialect.is_none() {
            row.remove("dialect");
        }
        serde_json::to_writer(&mut *out, &row)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// A table for people: agent-controlled names neutralised, columns padded.
fn write_table(s: &Survey, out: &mut impl Write) -> io::Result<()> {
    use agentnorm::sink::safe::printable;
    let rows: Vec<[String; 7]> = s
        .rows
        .iter()
        .map(|(k, v)| {
            let sample = match &v.source {
                Some(src) => format!("{}:{}", printable(src), v.line),
                None => format!("line {}", v.line),
            };
            [
                k.dialect.map_or("-", |d| d.as_str()).to_owned(),
                printable(k.cli_version.as_deref().unwrap_or("-")).into_owned(),
                printable(&k.frame).into_owned(),
                v.count().to_string(),
                read_as(v.read_as()).to_owned(),
                if v.unknown > 0 && v.read_as() != ReadAs::Unknown { v.unknown.to_string() } else { String::new() },
                sample,
            ]
        })
        .collect();
    let head = ["DIALECT", "VERSION", "FRAME", "COUNT", "READ AS", "UNKNOWN", "SAMPLE"];
    let mut widths = head.map(|h| h.chars().count());
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(unicode_width::UnicodeWidthStr::width(c.as_str()));
        }
    }
    let line = |cells: [&str; 7], out: &mut dyn Write| -> io::Result<()> {
        let mut text = String::new();
        for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w.saturating_sub(unicode_width::UnicodeWidthStr::width(*c));
            if i == 3 || i == 5 {
                text.push_str(&" ".repeat(pad));
                text.push_str(c);
            } else {
                text.push_str(c);
                if i < 6 {
                    text.push_str(&" ".repeat(pad));
                }
            }
            if i < 6 {
                text.push_str("  ");
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    line(head, out)?;
    for r in &rows {
        line([&r[0], &r[1], &r[2], &r[3], &r[4], &r[5], &r[6]], out)?;
    }
    let unknown: u64 = s.rows.values().map(|v| v.unknown).sum();
    let all: u64 = s.rows.values().map(|v| v.count()).sum();
    writeln!(out, "{all} lines, {unknown} unknown")
}
