//! The matrix's tally: each case's ending judged against what it expects,
//! the failures listed by kind, and the one-line count that closes a run.

use std::collections::BTreeMap;
use std::fs;

use ipuc_target::package;

use super::child::{temporaries_beside, Ended};
use super::{Case, Expect, Landing, MEMORY_BOUND_KB};

#[derive(Default)]
pub(super) struct Matrix {
    cases: usize,
    typed: usize,
    signal_ok: usize,
    /// Signal cases by where the signal landed.
    landed_not_sent: usize,
    landed_before: usize,
    landed_during: usize,
    landed_after_rename: usize,
    /// Aimed signals that landed in the write, SIGINT/SIGTERM and SIGKILL.
    aimed_ok: usize,
    aimed_missed: Vec<String>,
    heartbeats: usize,
    no_heartbeat: Vec<String>,
    repeated_path: Vec<String>,
    hangs: Vec<String>,
    aborts: Vec<String>,
    partial: Vec<String>,
    /// An exit code other than the case's (or 1/5 for a typed error), or
    /// an error that does not say what it must.
    wrong_code: Vec<String>,
    /// Exit 0 where an error was due: the input accepted and used.
    silent: Vec<String>,
    /// Artifact sets left part old, part new.
    mixed: Vec<String>,
    /// Signals aimed into a set's commit that left the whole new set.
    commit_ok: usize,
    successes: usize,
    /// Cases per class, and the seconds they took.
    classes: BTreeMap<&'static str, (usize, f64)>,
    unbounded: Vec<String>,
    leftover_after_kill: usize,
    leftover: Vec<String>,
    slowest: (f64, String),
    largest: (i64, String),
}

impl Matrix {
    /// Counts one case: its time and memory, where its signal landed, how
    /// it ended against what it expects, and what it left of its guarded
    /// outputs.
    pub(super) fn judge(&mut self, case: &Case, ended: &Ended, stderr: &str) {
        self.cases += 1;
        let class = self.classes.entry(case.class).or_default();
        class.0 += 1;
        class.1 += ended.seconds;
        let label = format!("{} ({})", case.name, case.args.join(" "));
        self.tally_cost(case, ended, &label);
        self.tally_landing(case, ended);
        self.judge_ending(case, ended, stderr, &label);
        self.judge_guarded(case, &label);
    }

    /// The slowest and largest case so far, and a case over the memory bound.
    fn tally_cost(&mut self, case: &Case, ended: &Ended, label: &str) {
        if ended.seconds > self.slowest.0 {
            self.slowest = (ended.seconds, case.name.clone());
        }
        if ended.max_rss_kb > self.largest.0 {
            self.largest = (ended.max_rss_kb, case.name.clone());
        }
        if ended.max_rss_kb > MEMORY_BOUND_KB {
            self.unbounded
                .push(format!("{label}: {} MB", ended.max_rss_kb / 1024));
        }
    }

    /// Where the signals sent at a time landed (aimed ones are judged in
    /// [`Matrix::judge_ending`]).
    fn tally_landing(&mut self, case: &Case, ended: &Ended) {
        match ended.landing.filter(|_| case.expect == Expect::Signal) {
            Some(Landing::NotSent) => self.landed_not_sent += 1,
            Some(Landing::BeforeWrite) => self.landed_before += 1,
            Some(Landing::DuringWrite) => self.landed_during += 1,
            Some(Landing::AfterRename) => self.landed_after_rename += 1,
            None => {}
        }
    }

    /// A hang or an abort whatever the case expects; otherwise the ending
    /// its [`Expect`] asks for.
    fn judge_ending(&mut self, case: &Case, ended: &Ended, stderr: &str, label: &str) {
        let panicked = stderr.contains("panicked") || stderr.contains("RUST_BACKTRACE");
        let sent = case.signal.as_ref().map(|(s, _)| *s);
        if ended.timed_out {
            self.hangs.push(label.to_string());
            return;
        }
        if panicked || ended.signal.is_some_and(|s| Some(s) != sent) {
            self.aborts.push(format!(
                "{label}: {:?} {}",
                ended.signal,
                first_line(stderr)
            ));
            return;
        }
        match case.expect {
            Expect::TypedError => self.judge_typed_error(case, ended, stderr, label),
            Expect::UsageOrSuccess => match ended.code {
                Some(0) => self.successes += 1,
                Some(2 | 3) if stderr.contains("error") => self.typed += 1,
                code => self.wrong_code.push(format!(
                    "{label}: exit {code:?} (wanted 0, 2 or 3): {}",
                    first_line(stderr)
                )),
            },
            Expect::Success => {
                if ended.code == Some(0) {
                    self.successes += 1;
                } else {
                    self.wrong_code.push(format!(
                        "{label}: exit {:?} (wanted 0): {}",
                        ended.code,
                        first_line(stderr)
                    ));
                }
            }
            Expect::AimedCommit => {
                let landed = ended.landing == Some(Landing::AfterRename);
                if landed && ended.signal == sent {
                    self.commit_ok += 1;
                } else {
                    self.aimed_missed.push(format!(
                        "{label}: landed {:?}, ended by {:?} (exit {:?})",
                        ended.landing, ended.signal, ended.code
                    ));
                }
            }
            Expect::Signal => self.signal_ok += 1,
            Expect::AimedSignal => {
                let landed = ended.landing == Some(Landing::DuringWrite);
                if landed && ended.signal == sent {
                    self.aimed_ok += 1;
                } else {
                    self.aimed_missed.push(format!(
                        "{label}: landed {:?}, ended by {:?} (exit {:?})",
                        ended.landing, ended.signal, ended.code
                    ));
                }
            }
            Expect::Heartbeat => {
                if stderr.contains("still running after") && ended.signal == sent {
                    self.heartbeats += 1;
                } else {
                    self.no_heartbeat.push(format!(
                        "{label}: ended by {:?} (exit {:?}): {}",
                        ended.signal,
                        ended.code,
                        first_line(stderr)
                    ));
                }
            }
        }
    }

    /// Usage (2), does-not-fit (3) or bad input (4), as `host/src/exit.rs`
    /// defines them; a validation FAIL (1) or an internal error (5) blames
    /// the wrong thing.
    fn judge_typed_error(&mut self, case: &Case, ended: &Ended, stderr: &str, label: &str) {
        if ended.code == Some(0) {
            self.silent.push(format!("{label}: exit 0"));
            return;
        }
        let missing: Vec<&String> = case
            .needles
            .iter()
            .filter(|n| !stderr.contains(n.as_str()))
            .collect();
        let wrong = case.code.is_some_and(|c| ended.code != Some(c));
        if matches!(ended.code, Some(2..=4)) && (wrong || !missing.is_empty()) {
            self.wrong_code.push(format!(
                "{label}: exit {:?} (wanted {:?}){}: {}",
                ended.code,
                case.code,
                if missing.is_empty() {
                    String::new()
                } else {
                    format!(", missing {missing:?}")
                },
                first_line(stderr)
            ));
            return;
        }
        if matches!(ended.code, Some(2..=4)) && stderr.contains("error") {
            self.typed += 1;
            if let Some(path) = repeated_path(&case.args, stderr) {
                self.repeated_path
                    .push(format!("{label}: {path}: {}", first_line(stderr)));
            }
        } else {
            self.wrong_code.push(format!(
                "{label}: exit {:?}: {}",
                ended.code,
                first_line(stderr)
            ));
        }
    }

    /// Each guarded output holds its previous bytes (or, after a signal
    /// sent at some time, a valid new package), and no temporary is left
    /// beside it; temporaries found are removed for the next case.
    fn judge_guarded(&mut self, case: &Case, label: &str) {
        let sent = case.signal.as_ref().map(|(s, _)| *s);
        let mut replaced = 0;
        for (path, before) in &case.guarded {
            let now = fs::read(path);
            let lost = now.is_err();
            let now = now.unwrap_or_default();
            // A complete new file: a package that reads, or any other
            // artifact with content.
            let complete = !lost
                && if path.extension().is_some_and(|e| e == "ipuc") {
                    package::read(&now).is_ok()
                } else {
                    !now.is_empty()
                };
            if now != *before {
                replaced += 1;
            }
            // Old bytes where the run must not replace anything; a
            // complete new file after a signal sent at some time, an
            // aimed commit or a success.
            let may_be_new = matches!(
                case.expect,
                Expect::Signal | Expect::AimedCommit | Expect::Success | Expect::UsageOrSuccess
            );
            let intact = (now == *before && !lost) || (may_be_new && complete);
            if !intact {
                self.partial.push(format!(
                    "{label}: {} ({} bytes, was {})",
                    path.display(),
                    now.len(),
                    before.len()
                ));
            }
            let temps = temporaries_beside(path);
            if !temps.is_empty() {
                if sent == Some(libc::SIGKILL) {
                    // SIGKILL cannot be caught: counted, then cleared.
                    self.leftover_after_kill += temps.len();
                } else {
                    self.leftover.push(format!("{label}: {temps:?}"));
                }
                for t in temps {
                    let _ = fs::remove_file(t);
                }
            }
        }
        let n = case.guarded.len();
        if case.set && replaced != 0 && replaced != n {
            self.mixed
                .push(format!("{label}: {replaced} of {n} files replaced"));
        }
        let all_new = matches!(case.expect, Expect::AimedCommit | Expect::Success);
        if all_new && replaced != n {
            self.partial.push(format!(
                "{label}: {replaced} of {n} files replaced, all were due"
            ));
        }
    }

    /// Lists every failure by kind, then the matrix's counts.
    pub(super) fn print(&self, seconds: f64) {
        let list = |title: &str, v: &[String]| {
            for l in v {
                println!("  {title}: {l}");
            }
        };
        list("HANG", &self.hangs);
        list("ABORT", &self.aborts);
        list("PARTIAL", &self.partial);
        list("WRONG EXIT CODE", &self.wrong_code);
        list("SILENT WRONG RESULT", &self.silent);
        list("MIXED SET", &self.mixed);
        list("UNBOUNDED MEMORY", &self.unbounded);
        list("TEMPORARY LEFT", &self.leftover);
        list("REPEATED PATH", &self.repeated_path);
        list("AIM MISSED", &self.aimed_missed);
        list("NO HEARTBEAT", &self.no_heartbeat);
        let m = self;
        let classes: Vec<String> = m
            .classes
            .iter()
            .map(|(c, (n, s))| format!("{c} {n} ({s:.0} s)"))
            .collect();
        println!(
            "hostile matrix: {} cases, {} typed errors, {} wrong exit codes, {} hangs, {} aborts, {} silent wrong results, {} partial or lost files, {} mixed sets (by class: {})",
            m.cases,
            m.typed,
            m.wrong_code.len(),
            m.hangs.len(),
            m.aborts.len(),
            m.silent.len(),
            m.partial.len(),
            m.mixed.len(),
            classes.join(", ")
        );
        println!(
            "  detail: {} successes, {} errors naming a path twice, {} heartbeat of an endless run ({} missing), {} signal cases at fractions of a run ending in the old or a complete new set (landed: {} before the write, {} during it, {} after the rename, {} after the process ended), {} signals aimed into a write that landed there and left the old files, {} aimed into a commit that left the whole new set ({} aims missed), {} over {} MB, {} temporaries left (SIGINT/SIGTERM: {}; SIGKILL, which cannot be caught: {}); slowest {:.2} s ({}), peak RSS {} MB ({}); {:.1} s in all",
            m.successes,
            m.repeated_path.len(),
            m.heartbeats,
            m.no_heartbeat.len(),
            m.signal_ok,
            m.landed_before,
            m.landed_during,
            m.landed_after_rename,
            m.landed_not_sent,
            m.aimed_ok,
            m.commit_ok,
            m.aimed_missed.len(),
            m.unbounded.len(),
            MEMORY_BOUND_KB / 1024,
            m.leftover.len() + m.leftover_after_kill,
            m.leftover.len(),
            m.leftover_after_kill,
            m.slowest.0,
            m.slowest.1,
            m.largest.0 / 1024,
            m.largest.1,
            seconds,
        );
    }

    /// Whether any case failed: hangs, aborts, partial files, untyped
    /// errors, unbounded memory, temporaries left, repeated paths, missed
    /// aims or a missing heartbeat.
    pub(super) fn failed(&self) -> bool {
        !(self.hangs.is_empty()
            && self.aborts.is_empty()
            && self.partial.is_empty()
            && self.wrong_code.is_empty()
            && self.silent.is_empty()
            && self.mixed.is_empty()
            && self.unbounded.is_empty()
            && self.leftover.is_empty()
            && self.repeated_path.is_empty()
            && self.aimed_missed.is_empty()
            && self.no_heartbeat.is_empty())
    }
}

/// A path argument that an `error` line of `stderr` names more than once
/// (each path should appear once: the OS errors and `fsio`'s leave it to
/// the caller). Paths inside other paths count: `D` in `D/config.json`.
fn repeated_path(args: &[String], stderr: &str) -> Option<String> {
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
    args.iter()
        .filter(|a| a.starts_with('/'))
        .find(|a| errors.iter().any(|l| l.matches(a.as_str()).count() > 1))
        .cloned()
}

fn first_line(s: &str) -> &str {
    s.lines()
        .rev()
        .find(|l| l.contains("error"))
        .unwrap_or_else(|| s.lines().last().unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::repeated_path;

    #[test]
    fn a_path_named_twice_is_found() {
        let args: Vec<String> = ["inspect", "/x/fifo", "--tile", "3"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let twice = "note: /x/fifo twice here is fine\nerror: reading /x/fifo: /x/fifo: is a FIFO";
        assert_eq!(repeated_path(&args, twice), Some("/x/fifo".into()));
        let once = "error: reading /x/fifo: is a FIFO (named pipe), not a regular file";
        assert_eq!(repeated_path(&args, once), None);
        // A directory argument inside a file's path counts too.
        let dir: Vec<String> = vec!["compile".into(), "--checkpoint".into(), "/ck".into()];
        let doubled = "error: /ck/config.json: /ck/config.json: is a directory";
        assert_eq!(repeated_path(&dir, doubled), Some("/ck".into()));
    }
}
