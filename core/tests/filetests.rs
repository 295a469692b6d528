//! Filetests: each `filetests/*.ir` file is a graph in the dump's text form
//! with a `; test: MODE [key=value …]` line, and ends with `; expect:`
//! followed by the output that mode must print, as `; ` comment lines.
//! `IPUC_BLESS=1 cargo test -p ipuc-core --test filetests` (or
//! `cargo xtask filetests --bless`) rewrites the expectations from what the
//! compiler prints now; review the diff before committing it.
//!
//! Modes:
//! - `verify`: the graph parses and verifies; prints its canonical dump.
//! - `plan tiles=N [beam=W]`: the planner's chosen implementation per op
//!   (with its own cycle estimate) and the peak bytes per tile.
//! - `compile tiles=N`: the whole pipeline; prints each stage's summary
//!   line and the package digest.
//!
//! A file whose graph, plan or compile is refused expects the error text.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ipuc_core::ir::Graph;
use ipuc_core::pipeline::{compile_with, CompileHooks, CompileOptions, Stage};
use ipuc_core::plan::listing::plan_lines;
use ipuc_core::plan::{plan_graph, PlanConfig};

const EXPECT: &str = "; expect:";

fn directory() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../filetests")
}

/// The `; test:` line: mode and `key=value` options.
struct Header {
    mode: String,
    options: Vec<(String, String)>,
}

impl Header {
    fn read(text: &str, file: &Path) -> Header {
        let line = text
            .lines()
            .find_map(|l| l.strip_prefix("; test:"))
            .unwrap_or_else(|| panic!("{}: no `; test: MODE` line", file.display()));
        let mut words = line.split_whitespace();
        let mode = words.next().unwrap_or_default().to_string();
        let options = words
            .map(|w| {
                let (k, v) = w
                    .split_once('=')
                    .unwrap_or_else(|| panic!("{}: option `{w}` is not key=value", file.display()));
                (k.to_string(), v.to_string())
            })
            .collect();
        Header { mode, options }
    }

    fn number(&self, key: &str, default: u64) -> u64 {
        self.options
            .iter()
            .find(|(k, _)| k == key)
            .map_or(default, |(_, v)| v.parse().expect("a number"))
    }
}

/// Stage summaries, in the order the pipeline reports them.
#[derive(Default)]
struct Summaries(Mutex<Vec<String>>);

impl CompileHooks for Summaries {
    fn stage_finished(&self, stage: Stage, _elapsed_ms: f64, summary: &str) {
        let mut lines = self.0.lock().unwrap();
        lines.push(format!("{stage}: {summary}"));
    }
}

fn run(header: &Header, graph: &Graph) -> String {
    let tiles = header.number("tiles", 16) as u32;
    let mut out = String::new();
    match header.mode.as_str() {
        "verify" => out.push_str(&graph.dump()),
        "plan" => {
            let config = PlanConfig {
                tiles,
                beam_width: header.number("beam", 64) as usize,
                ..PlanConfig::default()
            };
            match plan_graph(graph, config) {
                Ok(plan) => {
                    for line in plan_lines(&plan) {
                        let label = graph.label(line.op).map(|l| format!(" {l}"));
                        let pad = "  ".repeat(line.depth as usize);
                        writeln!(
                            out,
                            "{pad}{}{}: {} ({} compute + {} exchange cycles{})",
                            line.op,
                            label.unwrap_or_default(),
                            line.summary,
                            line.cycles.compute,
                            line.cycles.exchange,
                            if line.relayouts.is_empty() {
                                String::new()
                            } else {
                                format!(", re-lays out operands {:?}", line.relayouts)
                            }
                        )
                        .unwrap();
                    }
                    writeln!(
                        out,
                        "peak {} bytes on tile {}",
                        plan.peak_bytes, plan.peak_tile
                    )
                    .unwrap();
                }
                Err(e) => writeln!(out, "error: {e}").unwrap(),
            }
        }
        "compile" => {
            let options = CompileOptions {
                tiles,
                name: "filetest".into(),
                ..CompileOptions::default()
            };
            let hooks = Summaries::default();
            let result = compile_with(
                graph,
                &options,
                &ipuc_target::package::NativeKernelAbi,
                &hooks,
            );
            for line in hooks.0.lock().unwrap().iter() {
                writeln!(out, "{line}").unwrap();
            }
            match result {
                Ok(c) => writeln!(out, "package {} bytes", c.bytes.len()).unwrap(),
                Err(e) => writeln!(out, "error: {e}").unwrap(),
            }
        }
        other => panic!("unknown filetest mode `{other}` (verify, plan, compile)"),
    }
    out
}

/// The expectation as it is written in the file: `; ` prefixes removed.
fn expected(text: &str) -> Option<String> {
    let (_, tail) = text.split_once(EXPECT)?;
    let mut out = String::new();
    for line in tail.lines().skip(1) {
        let line = line.strip_prefix("; ").or_else(|| line.strip_prefix(";"))?;
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

fn with_expectation(text: &str, actual: &str) -> String {
    let body = text.split_once(EXPECT).map_or(text, |(head, _)| head);
    let mut out = body.trim_end().to_string();
    out.push_str("\n\n");
    out.push_str(EXPECT);
    out.push('\n');
    for line in actual.lines() {
        if line.is_empty() {
            out.push_str(";\n");
        } else {
            writeln!(out, "; {line}").unwrap();
        }
    }
    out
}

#[test]
fn filetests() {
    let bless = std::env::var_os("IPUC_BLESS").is_some();
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory())
        .expect("the filetests directory")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ir"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 10,
        "expected at least 10 filetests, found {}",
        files.len()
    );
    let mut failures = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let header = Header::read(&text, file);
        let actual = match Graph::parse(text.split_once(EXPECT).map_or(text.as_str(), |(h, _)| h)) {
            Ok(graph) => run(&header, &graph),
            Err(e) => format!("error: {e}\n"),
        };
        if bless {
            let blessed = with_expectation(&text, &actual);
            if blessed != text {
                let tmp = file.with_extension("ir.tmp");
                std::fs::write(&tmp, blessed).unwrap();
                std::fs::rename(&tmp, file).unwrap();
            }
        } else if expected(&text).as_deref() != Some(actual.as_str()) {
            failures.push(format!(
                "{}:\n--- expected\n{}--- actual\n{actual}",
                file.display(),
                expected(&text).unwrap_or_else(|| "(no `; expect:` section)\n".into())
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} filetests differ (IPUC_BLESS=1 rewrites them):\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
