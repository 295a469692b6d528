//! The pipeline alone: stages in order through the hooks, jobs counted,
//! the same package from any job order, and typed errors with their cause.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use std::sync::Mutex;

use super::*;
use crate::ir::{DType, GraphBuilder, TensorType};
use crate::plan::PlanError;
use ipuc_target::package;

fn graph() -> Graph {
    let mut b = GraphBuilder::new();
    let x = b
        .input("x", TensorType::new(DType::F16, [1, 8, 32]))
        .unwrap();
    let w = b
        .parameter("w", TensorType::new(DType::F16, [16, 32]))
        .unwrap();
    let y = b.matmul_transposed(x, w, DType::F16).unwrap();
    b.output("y", y).unwrap();
    b.finish().unwrap()
}

fn options() -> CompileOptions {
    CompileOptions {
        tiles: 4,
        ..CompileOptions::default()
    }
}

/// Records every hook call; runs jobs in reverse order.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    reverse: bool,
}

impl CompileHooks for Recorder {
    fn stage_started(&self, stage: Stage, jobs: usize) {
        self.events
            .lock()
            .unwrap()
            .push(alloc::format!("start {stage} {jobs}"));
    }
    fn job_finished(&self, stage: Stage) {
        self.events
            .lock()
            .unwrap()
            .push(alloc::format!("job {stage}"));
    }
    fn stage_finished(&self, stage: Stage, _elapsed_ms: f64, _summary: &str) {
        self.events
            .lock()
            .unwrap()
            .push(alloc::format!("finish {stage}"));
    }
    fn clock_ms(&self) -> Option<f64> {
        Some(self.events.lock().unwrap().len() as f64)
    }
    fn run_jobs<J: Sync, R: Send>(
        &self,
        stage: Stage,
        jobs: &[J],
        run: &(dyn Fn(&J) -> R + Sync),
    ) -> Vec<R> {
        if !self.reverse {
            let mut out = Vec::new();
            for job in jobs {
                out.push(run(job));
                self.job_finished(stage);
            }
            return out;
        }
        let mut out: Vec<R> = jobs.iter().rev().map(run).collect();
        out.reverse();
        out
    }
}

#[test]
fn stages_run_in_order_through_the_hooks_and_are_timed() {
    let hooks = Recorder::default();
    let compiled = compile_with(&graph(), &options(), &NativeKernelAbi, &hooks).unwrap();
    let events = hooks.events.into_inner().unwrap();
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| e.strip_prefix("start "))
        .collect();
    let names: Vec<&str> = started
        .iter()
        .map(|s| s.rsplit_once(' ').unwrap().0)
        .collect();
    assert_eq!(
        names,
        [
            "planning",
            "lowering",
            "placement",
            "exchange scheduling",
            "patch-data placement",
            "emission",
            "linking",
            "packaging"
        ]
    );
    // Every job-running stage reports each of its jobs once.
    for stage in [Stage::Placement, Stage::ExchangeScheduling, Stage::Linking] {
        let announced: usize = started
            .iter()
            .find_map(|s| s.strip_prefix(stage.name()))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let done = events
            .iter()
            .filter(|e| e.strip_prefix("job ") == Some(stage.name()))
            .count();
        assert_eq!(done, announced, "{stage}");
        // This graph has no exchange phase; every tile is placed and linked.
        assert_eq!(announced > 0, stage != Stage::ExchangeScheduling, "{stage}");
    }
    assert_eq!(events.iter().filter(|e| e.starts_with("finish")).count(), 8);
    assert!(compiled.report.times.total_ms() > 0.0);
    assert_eq!(compiled.report.sha256, package::digest_hex(&compiled.bytes));
    assert_eq!(package::read(&compiled.bytes).unwrap(), compiled.package);
}

#[test]
fn any_job_order_gives_the_same_package() {
    let forward = compile_with(&graph(), &options(), &NativeKernelAbi, &Sequential).unwrap();
    let reverse = Recorder {
        reverse: true,
        ..Recorder::default()
    };
    let backward = compile_with(&graph(), &options(), &NativeKernelAbi, &reverse).unwrap();
    assert_eq!(forward.bytes, backward.bytes);
    assert_eq!(
        compile(&graph(), &options()).unwrap(),
        forward.package,
        "compile is compile_with with the defaults"
    );
}

#[test]
fn errors_name_the_stage_and_keep_the_cause() {
    use core::error::Error;
    let err = compile(
        &graph(),
        &CompileOptions {
            tiles: 0,
            ..options()
        },
    )
    .unwrap_err();
    assert!(matches!(err, CompileError::Tiles { tiles: 0 }));
    assert!(err.source().is_none());

    // A budget nothing fits in: the planner's typed rejection is the cause.
    let err = compile(
        &graph(),
        &CompileOptions {
            planner_data_budget: Some(64),
            ..options()
        },
    )
    .unwrap_err();
    assert_eq!(alloc::format!("{err}"), "planning");
    let cause = err.source().expect("the planner's error");
    assert!(cause.downcast_ref::<PlanError>().is_some(), "{cause}");
    assert!(matches!(
        err,
        CompileError::Plan {
            error: PlanError::OutOfMemory(_),
            ..
        }
    ));
}

/// A hook's own failure stops the compile and comes back as it was.
#[test]
fn a_failing_hook_is_returned() {
    #[derive(Debug)]
    struct Refused;
    impl fmt::Display for Refused {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("refused")
        }
    }
    impl core::error::Error for Refused {}
    struct Refuse;
    impl CompileHooks for Refuse {
        fn exchange_jobs(&self, _jobs: &[PhaseJob]) -> Result<(), HookError> {
            Err(alloc::boxed::Box::new(Refused))
        }
    }
    let Err(CompileError::Hook(inner)) =
        compile_with(&graph(), &options(), &NativeKernelAbi, &Refuse)
    else {
        panic!("the hook's error")
    };
    assert_eq!(alloc::format!("{inner}"), "refused");
}

/// The second refit after linking: a tile placed again with more room
/// for code keeps that room out of its data (its code reservation covers
/// it, the image limit is above it), the exchange is scheduled again for
/// the new addresses, and the compile finishes from there.
#[test]
fn a_tile_placed_again_with_more_room_for_code_keeps_it_and_links() {
    use crate::place::ReservedKind;
    use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;
    let g = graph();
    let opts = options();
    let hooks = Sequential;
    let mut run = Run {
        hooks: &hooks,
        times: StageTimes::default(),
    };
    let front = front::plan_and_place(&mut run, &g, &opts, &NativeKernelAbi).unwrap();
    let tile = front.placements[0].tile;
    let room = 40_000u32;
    let reserved_end = |p: &crate::place::TilePlacement| {
        p.reserved
            .iter()
            .filter(|r| r.kind == ReservedKind::Code)
            .map(|r| r.range.end)
            .max()
            .unwrap()
    };
    assert!(reserved_end(&front.placements[0]) < APPLICATION_LOAD_BASE + room);
    let rooms = BTreeMap::from([(tile, room)]);
    let front = front::replace_with_room(&mut run, front, &opts, &rooms).unwrap();
    let p = front.placements.iter().find(|p| p.tile == tile).unwrap();
    assert_eq!(reserved_end(p), APPLICATION_LOAD_BASE + room);
    assert!(p.code_limit() >= APPLICATION_LOAD_BASE + room);
    p.check_code(room).unwrap();
    let compiled = back::emit_link_package(&mut run, &g, &opts, &NativeKernelAbi, front).unwrap();
    assert!(compiled.report.tiles > 0);
}
