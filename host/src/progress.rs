//! Stage progress on stderr: one line per finished stage (a `tracing` info
//! event: shown with `-v` or `RUST_LOG=info`), and on a terminal a bar with
//! an ETA for any stage that runs longer than [`BAR_DELAY`] (not with `-q`;
//! never when stderr is not a terminal, so piped logs get no `\r`).
//!
//! Used by the compiler driver (planning, lowering, placement, exchange
//! scheduling, emission, linking, packaging) and meant for any other long
//! host stage (e.g. simulation). A [`Stage`] is `Sync`: worker threads may
//! advance it concurrently.
//!
//! ```
//! use ipuc::progress::Progress;
//! let progress = Progress::quiet();
//! let stage = progress.stage("exchange scheduling", 3);
//! for _ in 0..3 {
//!     stage.inc(1);
//! }
//! let ms = stage.finish("3 phases");
//! assert!(ms >= 0.0);
//! ```

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A stage shows its bar only once it has run this long (short stages print
/// their one line and nothing else).
pub const BAR_DELAY: Duration = Duration::from_secs(2);

/// How often a long stage says it is still running when there is no bar
/// ([`Stage::heartbeat`]: stderr is not a terminal).
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// Where stage lines and bars go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Nothing at all (library callers, tests).
    Quiet,
    /// One line per stage (stderr is not a terminal).
    Lines,
    /// One line per stage plus bars for long stages.
    Terminal,
}

/// The progress reporter of one command (e.g. one compilation).
#[derive(Clone, Debug)]
pub struct Progress {
    mode: Mode,
    /// Prefix of every line, e.g. `compile`.
    prefix: &'static str,
}

impl Progress {
    /// Reports on stderr, with bars when stderr is a terminal.
    pub fn stderr(prefix: &'static str) -> Self {
        let quiet = crate::output::verbosity() == crate::output::Verbosity::Quiet;
        let mode = if std::io::stderr().is_terminal() && !quiet {
            Mode::Terminal
        } else {
            Mode::Lines
        };
        Self { mode, prefix }
    }

    /// Reports nothing (timings are still measured).
    pub fn quiet() -> Self {
        Self {
            mode: Mode::Quiet,
            prefix: "",
        }
    }

    /// Prints a line that is not a stage result (e.g. what is about to
    /// happen), unless quiet.
    pub fn note(&self, message: &str) {
        if self.mode != Mode::Quiet {
            tracing::info!("{}: {message}", self.prefix);
        }
    }

    /// Starts a stage of `total` units of work (0 when unknown: the bar then
    /// shows elapsed time and a count without an ETA).
    pub fn stage(&self, name: &str, total: u64) -> Stage {
        let bar = if self.mode == Mode::Terminal {
            let bar = ProgressBar::with_draw_target(
                (total > 0).then_some(total),
                ProgressDrawTarget::hidden(),
            );
            let template = if total > 0 {
                "{prefix}: {msg} [{bar:30}] {pos}/{len} ({elapsed}, ETA {eta})"
            } else {
                "{prefix}: {msg} {spinner} {pos} ({elapsed})"
            };
            if let Ok(style) = ProgressStyle::with_template(template) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_prefix(self.prefix);
            bar.set_message(name.to_string());
            Some(bar)
        } else {
            None
        };
        Stage {
            name: name.to_string(),
            started: Instant::now(),
            mode: self.mode,
            prefix: self.prefix,
            bar,
            shown: std::sync::atomic::AtomicBool::new(false),
            beats: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

/// One running stage.
#[derive(Debug)]
pub struct Stage {
    name: String,
    started: Instant,
    mode: Mode,
    prefix: &'static str,
    bar: Option<ProgressBar>,
    shown: std::sync::atomic::AtomicBool,
    /// Heartbeat lines printed so far.
    beats: std::sync::atomic::AtomicU64,
}

/// The heartbeat due after `elapsed` when `printed` have been printed: the
/// number of the next one, if its time has come.
fn beat_due(elapsed: Duration, printed: u64) -> Option<u64> {
    let due = (elapsed.as_millis() / HEARTBEAT.as_millis()) as u64;
    (due > printed).then_some(due)
}

impl Stage {
    /// Advances the stage by `n` units.
    pub fn inc(&self, n: u64) {
        if let Some(bar) = &self.bar {
            bar.inc(n);
            self.show_if_long(bar);
        }
    }

    /// Sets how many units are done (e.g. from a counter kept elsewhere);
    /// never beyond the total, which may have been an estimate.
    pub fn set_position(&self, done: u64) {
        if let Some(bar) = &self.bar {
            let done = bar.length().map_or(done, |len| done.min(len));
            bar.set_position(done);
            self.show_if_long(bar);
        }
    }

    /// Shows `detail` after the stage's name on the bar (e.g. a running
    /// count); the finished line prints its own detail.
    pub fn set_detail(&self, detail: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{} · {detail}", self.name));
        }
    }

    /// Where there is no bar (stderr is not a terminal), prints
    /// `<prefix>: <name>: still running after <s> s: <detail>` once every
    /// [`HEARTBEAT`] (a `tracing` info line, like the stage lines), so a
    /// long run in a log shows it is alive and how far it got. Call it as
    /// often as convenient; it prints only when one is due.
    pub fn heartbeat(&self, detail: &str) {
        use std::sync::atomic::Ordering;
        if self.mode != Mode::Lines {
            return;
        }
        let elapsed = self.started.elapsed();
        let printed = self.beats.load(Ordering::Relaxed);
        let Some(due) = beat_due(elapsed, printed) else {
            return;
        };
        // One caller prints each beat, whichever thread gets there first.
        if self
            .beats
            .compare_exchange(printed, due, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            tracing::info!(
                "{}: {}: still running after {} s: {detail}",
                self.prefix,
                self.name,
                elapsed.as_secs()
            );
        }
    }

    /// Changes the stage's total (e.g. once the amount of work is known).
    pub fn set_total(&self, total: u64) {
        if let Some(bar) = &self.bar {
            bar.set_length(total);
        }
    }

    /// Milliseconds since the stage started.
    pub fn elapsed_ms(&self) -> f64 {
        self.started.elapsed().as_secs_f64() * 1e3
    }

    fn show_if_long(&self, bar: &ProgressBar) {
        use std::sync::atomic::Ordering;
        if self.started.elapsed() >= BAR_DELAY && !self.shown.swap(true, Ordering::Relaxed) {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(200));
        }
    }

    /// Ends the stage, printing `<prefix>: <name> in <ms> ms[: detail]`
    /// (unless quiet), and returns its wall time in milliseconds.
    pub fn finish(self, detail: &str) -> f64 {
        let ms = self.elapsed_ms();
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        if self.mode != Mode::Quiet {
            tracing::info!("{}", stage_line(self.prefix, &self.name, ms, detail));
        }
        ms
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        // A stage abandoned by an error must not leave its bar on screen.
        if let Some(bar) = &self.bar {
            if !bar.is_finished() {
                bar.finish_and_clear();
            }
        }
    }
}

/// The one line a finished stage prints.
fn stage_line(prefix: &str, name: &str, ms: f64, detail: &str) -> String {
    if detail.is_empty() {
        format!("{prefix}: {name} in {ms:.0} ms")
    } else {
        format!("{prefix}: {name} in {ms:.0} ms: {detail}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_lines_name_the_stage_and_time() {
        assert_eq!(
            stage_line("compile", "planning", 7085.4, "62258 candidates"),
            "compile: planning in 7085 ms: 62258 candidates"
        );
        assert_eq!(
            stage_line("compile", "linking", 12.0, ""),
            "compile: linking in 12 ms"
        );
    }

    #[test]
    fn heartbeats_come_once_per_interval() {
        assert_eq!(beat_due(Duration::from_secs(3), 0), None);
        assert_eq!(beat_due(HEARTBEAT, 0), Some(1));
        assert_eq!(beat_due(HEARTBEAT * 3 / 2, 1), None);
        // A caller that looked up late prints one line, not the backlog.
        assert_eq!(beat_due(HEARTBEAT * 5, 1), Some(5));
        assert_eq!(beat_due(HEARTBEAT * 5, 5), None);
    }

    #[test]
    fn quiet_stages_still_measure_time() {
        let p = Progress::quiet();
        let s = p.stage("x", 10);
        s.inc(4);
        s.set_total(20);
        std::thread::sleep(Duration::from_millis(5));
        assert!(s.finish("") >= 5.0);
    }

    #[test]
    fn positions_and_details_are_accepted_quietly() {
        let p = Progress::quiet();
        let s = p.stage("inference 1 of 1", 10);
        s.set_position(4);
        s.set_position(40);
        s.set_detail("123 cycles");
        assert!(s.finish("done") >= 0.0);
    }

    /// On a terminal the bar clamps positions to its total and shows the
    /// detail after the stage's name (drawn only after BAR_DELAY; checked
    /// here through the bar's state, not the screen).
    #[test]
    fn terminal_bars_clamp_positions_and_show_details() {
        let p = Progress {
            mode: Mode::Terminal,
            prefix: "device",
        };
        let s = p.stage("inference 1 of 2", 10);
        s.set_position(4);
        let bar = s.bar.as_ref().unwrap();
        assert_eq!(bar.position(), 4);
        s.set_position(40);
        assert_eq!(bar.position(), 10);
        s.set_detail("67 supersteps");
        assert_eq!(bar.message(), "inference 1 of 2 · 67 supersteps");
        s.finish("");
    }

    #[test]
    fn stages_are_shared_across_threads() {
        let p = Progress::quiet();
        let s = p.stage("threads", 100);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..25 {
                        s.inc(1);
                    }
                });
            }
        });
        s.finish("");
    }
}
