//! The compiler's std driver around [`ipuc_core::pipeline`]: stage lines
//! and progress bars on stderr, a wall clock for the stage timings, rayon
//! for the independent jobs (tile placement, exchange-phase scheduling,
//! tile linking), the developer dumps (`IPUC_DUMP_PHASES`,
//! `IPUC_DUMP_CODE`), and typed errors the CLI turns into reports (a
//! memory rejection is [`PlanOverBudget`], a placement rejection
//! `report::placement_rejection::PlacementRejected`).

pub mod phase_dump;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, RwLock};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::progress::{self, Progress};
use crate::report::placement_rejection;

use ipuc_core::ir::Graph;
use ipuc_core::pipeline::{self, CompileError, CompileHooks, HookError, Linked, Stage};
use ipuc_core::plan::PlanError;
use ipuc_core::rows::PhaseJob;
use ipuc_target::kernel::KernelAbi;

pub use ipuc_core::pipeline::{CompileOptions, CompileReport, Compiled, StageTimes};

pub use crate::report::memory::PlanOverBudget;

/// Compiles `graph` into a package, reporting progress on stderr.
pub fn compile(graph: &Graph, kernels: &dyn KernelAbi, opts: &CompileOptions) -> Result<Compiled> {
    compile_with_progress(graph, kernels, opts, &Progress::stderr("compile"))
}

/// [`compile`] reporting each stage (and bars for long ones) to `progress`.
pub fn compile_with_progress(
    graph: &Graph,
    kernels: &dyn KernelAbi,
    opts: &CompileOptions,
    progress: &Progress,
) -> Result<Compiled> {
    let hooks = Hooks {
        progress,
        clock: Instant::now(),
        stage: RwLock::new(None),
        position: Mutex::new((0, 1)),
    };
    pipeline::compile_with(graph, opts, kernels, &hooks).map_err(host_error)
}

/// The std host's [`CompileHooks`].
struct Hooks<'a> {
    progress: &'a Progress,
    clock: Instant,
    /// The running stage's line and bar.
    stage: RwLock<Option<progress::Stage>>,
    /// The last `progress` position and which search of the stage it is:
    /// planning searches again (span charge, far-end grids) when a search
    /// runs out of memory, and its count restarts from zero.
    position: Mutex<(u64, u32)>,
}

impl CompileHooks for Hooks<'_> {
    fn note(&self, message: &str) {
        self.progress.note(message);
    }

    fn stage_started(&self, stage: Stage, jobs: usize) {
        let started = self.progress.stage(stage.name(), jobs as u64);
        if let Ok(mut current) = self.stage.write() {
            *current = Some(started);
        }
        if let Ok(mut p) = self.position.lock() {
            *p = (0, 1);
        }
    }

    fn job_finished(&self, stage: Stage) {
        // Planning's bar counts the top region's ops (`progress`), not its
        // Repeat-body search jobs.
        if stage == Stage::Planning {
            return;
        }
        if let Ok(current) = self.stage.read() {
            if let Some(s) = current.as_ref() {
                s.inc(1);
            }
        }
    }

    fn progress(&self, _stage: Stage, done: u64, total: u64) {
        let search = self.position.lock().ok().map(|mut p| {
            if done < p.0 {
                p.1 += 1;
            }
            p.0 = done;
            p.1
        });
        if let Ok(current) = self.stage.read() {
            if let Some(s) = current.as_ref() {
                if let Some(n @ 2..) = search {
                    // A later search, not the first one going backwards.
                    s.set_detail(&format!("search {n} (the one before ran out of memory)"));
                }
                s.set_total(total);
                s.set_position(done);
            }
        }
    }

    fn stage_finished(&self, _stage: Stage, _elapsed_ms: f64, summary: &str) {
        let finished = self.stage.write().ok().and_then(|mut s| s.take());
        if let Some(s) = finished {
            s.finish(summary);
        }
    }

    fn clock_ms(&self) -> Option<f64> {
        Some(self.clock.elapsed().as_secs_f64() * 1e3)
    }

    /// In parallel (rayon): every worker takes the next job not yet taken,
    /// so jobs start in the order given (exchange phases largest first: the
    /// last to finish are short); results in job order, so packages are
    /// byte-identical at any `RAYON_NUM_THREADS`.
    fn run_jobs<J: Sync, R: Send>(
        &self,
        stage: Stage,
        jobs: &[J],
        run: &(dyn Fn(&J) -> R + Sync),
    ) -> Vec<R> {
        // Developer aid: `IPUC_TIME_JOBS=1` prints each job's wall time,
        // worker thread and start offset (ms from the stage start) on stderr.
        let timing = std::env::var_os("IPUC_TIME_JOBS").is_some();
        let start = Instant::now();
        let next = AtomicUsize::new(0);
        let slots: Vec<Mutex<Option<R>>> = jobs.iter().map(|_| Mutex::new(None)).collect();
        let worker = || loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = jobs.get(i) else {
                break;
            };
            let t = Instant::now();
            let r = run(job);
            if timing {
                eprintln!(
                    "job {} #{i}: thread {:?} start {:.1} ms, took {:.1} ms",
                    stage.name(),
                    rayon::current_thread_index(),
                    (t - start).as_secs_f64() * 1e3,
                    t.elapsed().as_secs_f64() * 1e3
                );
            }
            self.job_finished(stage);
            *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
        };
        let workers = rayon::current_num_threads().min(jobs.len());
        rayon::scope(|s| {
            for _ in 0..workers {
                s.spawn(|_| worker());
            }
        });
        slots
            .into_iter()
            .map(|slot| {
                slot.into_inner()
                    .unwrap_or_else(|e| e.into_inner())
                    .expect("every job ran: the workers take jobs until none is left")
            })
            .collect()
    }
    fn exchange_jobs(&self, jobs: &[PhaseJob]) -> Result<(), HookError> {
        if let Some(path) = std::env::var_os("IPUC_DUMP_PHASES") {
            crate::fsio::write_atomic(path.as_ref(), phase_dump::write_jobs(jobs).as_bytes())
                .with_context(|| format!("writing {}", path.to_string_lossy()))?;
        }
        Ok(())
    }

    /// Developer aid: per-tile image estimate vs the linked parts, for
    /// calibrating `plan::code`.
    fn linked(&self, linked: &Linked<'_>) -> Result<(), HookError> {
        if let Some(path) = std::env::var_os("IPUC_DUMP_CODE") {
            crate::fsio::write_atomic(path.as_ref(), code_dump(linked)?.as_bytes())
                .with_context(|| format!("writing {}", path.to_string_lossy()))?;
        }
        Ok(())
    }
}

/// The `IPUC_DUMP_CODE` table.
fn code_dump(linked: &Linked<'_>) -> Result<String, HookError> {
    let mut text = String::from(
        "tile estimate image runtime program rows stored_rows send sendoff delay ctl1 sendpicp other\n",
    );
    for img in linked.images {
        let (runtime, program, rows) = img.part_bytes()?;
        let counts = row_instruction_counts(
            linked
                .exchange
                .stored
                .get(&img.physical_tile)
                .map(Vec::as_slice)
                .unwrap_or(&[]),
        );
        text.push_str(&format!(
            "{} {} {} {runtime} {program} {rows} {}\n",
            img.logical_tile.get(),
            linked
                .code_estimates
                .get(img.logical_tile.index())
                .copied()
                .unwrap_or(0),
            img.code_bytes(),
            counts.map(|c| c.to_string()).join(" ")
        ));
    }
    Ok(text)
}

/// The pipeline's error as the CLI wants it: a planner memory rejection
/// as [`PlanOverBudget`], a placement memory rejection as
/// `PlacementRejected` (both with their reports to write), a hook's own
/// error as it was, everything else as the typed [`CompileError`] (its
/// stage, then its cause).
fn host_error(err: CompileError) -> anyhow::Error {
    let stage = err.to_string();
    match err {
        CompileError::Plan {
            error: PlanError::OutOfMemory(rejection),
            ..
        } => anyhow::Error::new(PlanOverBudget(rejection, Vec::new())).context(stage),
        CompileError::Placement(failed) => {
            let pipeline::PlacementFailed {
                errors,
                schedule,
                requests,
            } = *failed;
            let placed = errors.into_iter().map(Err).collect();
            match placement_rejection::placements_or_rejection(&schedule, &requests, placed) {
                Err(e) => e.context(stage),
                Ok(_) => anyhow::anyhow!("{stage}: a refused tile went missing"),
            }
        }
        CompileError::PatchData(failed) => {
            let pipeline::PatchDataFailed {
                error,
                schedule,
                placements,
            } = *failed;
            let placement = placements.iter().find(|p| p.tile == error.tile);
            let parts = placement_rejection::PatchDataParts {
                repeat_bytes: error.repeat_bytes,
                sharing_bytes: error.sharing_bytes,
            };
            let headline = error.to_string();
            anyhow::Error::new(placement_rejection::patch_data_rejection(
                &schedule,
                &placements,
                error.tile,
                placement,
                parts,
                error.error,
                headline,
            ))
            .context(stage)
        }
        CompileError::Code(failed) => {
            let pipeline::CodeDoesNotFit {
                error,
                placement,
                parts,
                schedule,
                placements,
            } = *failed;
            anyhow::Error::new(placement_rejection::code_rejection(
                &schedule,
                &placements,
                &placement,
                parts,
                error,
            ))
            .context(stage)
        }
        CompileError::Hook(e) => anyhow::Error::from_boxed(e),
        other => anyhow::Error::new(other),
    }
}

/// Lower-case hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// Developer aid (`IPUC_DUMP_CODE`): a tile's stored rows and their
/// instructions by kind: [rows, send, sendoff, delay, one-word control
/// (delaypic, delayxpic, sendpic), sendpicp, other].
fn row_instruction_counts(rows: &[ipuc_core::exchange::ExchangeRow]) -> [u64; 7] {
    use ipuc_target::ipu21::isa::{decode, Instruction as I};
    let mut c = [0u64; 7];
    c[0] = rows.len() as u64;
    for row in rows {
        let mut i = 0;
        while i < row.words.len() {
            let Ok((instr, n)) = decode(&row.words[i..]) else {
                break;
            };
            let k = match instr {
                I::Send { .. } => 1,
                I::SendOff { .. } => 2,
                I::Delay { .. } => 3,
                I::DelayPic { .. } | I::DelayXPic { .. } | I::SendPic { .. } => 4,
                I::SendPicP { .. } => 5,
                _ => 6,
            };
            c[k] += 1;
            i += n.max(1);
        }
    }
    c
}
