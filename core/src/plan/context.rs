//! The planner's settings, statistics and the shared search context
//! ([`SearchCx`]: the graph, settings and memo caches every search state
//! reads). Below both `state` (which extends a state by one op) and `search`
//! (the beam), so neither imports the other's internals.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::cell::RefCell;

use super::candidates::TensorView;
use super::cost::Cycles;
use super::error::PlanResult;
use super::layout::{Layout, TILE_COUNT};
use super::memory::{Allocation, AllocationSum, MemoryRejection, DATA_BUDGET_BYTES};
use super::opplan::{OpPlan, Slot};
use super::planned::BodyPlan;
use super::relayout::{relayout, Window};
use crate::ir::{Graph, OpId, OpKind, RegionId, ValueDef, ValueId};
use ipuc_target::ipu21::sram::SUPPORT_CHARGE_BYTES;
use ipuc_target::lookup::LookupMap;

/// Default beam width (`--planning-beam-width`).
pub const DEFAULT_BEAM_WIDTH: usize = 64;

/// Runtime + kernel stub bytes assumed when the host does not say
/// ([`PlanConfig::fixed_code_bytes`]); the built-in runtime is smaller.
pub const DEFAULT_FIXED_CODE_BYTES: u64 = 8192;

/// Planner settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanConfig {
    /// States kept per step.
    pub beam_width: usize,
    /// Tiles available.
    pub tiles: u32,
    /// Per-tile budget for data and the estimated linked image (excluding
    /// the support reserve, the runtime state).
    pub budget: u64,
    /// Bytes of the runtime and kernel stubs every tile's image starts with
    /// (the host links them first and knows their size; the default is a
    /// conservative [`DEFAULT_FIXED_CODE_BYTES`]).
    pub fixed_code_bytes: u64,
    /// The exchange stream cap the rows will be scheduled with
    /// (`--exchange-stream-words`): shorter pieces make longer rows.
    pub max_stream_words: Option<u32>,
    /// Fewest key/value blocks per head an attention plan may use (default
    /// 1: any; see [`super::candidates::GenConfig::min_key_parts`]).
    pub min_key_parts: u32,
    /// How each tile's estimated linked image is charged
    /// ([`super::code::CodeCharge`]); [`super::plan_graph`] falls back from
    /// whole elements to the span once, when no plan fits.
    pub code_charge: super::code::CodeCharge,
    /// Also offer every GEMM grid that leaves tiles unused placed at the
    /// far end of the tiles (ending at the last one), not only from tile 0
    /// ([`super::candidates::GenConfig::gemm_far_end`]); [`super::plan_graph`]
    /// turns it on for one last search when no plan fits without it.
    pub gemm_far_end: bool,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            beam_width: DEFAULT_BEAM_WIDTH,
            tiles: TILE_COUNT,
            budget: DATA_BUDGET_BYTES,
            fixed_code_bytes: DEFAULT_FIXED_CODE_BYTES,
            max_stream_words: None,
            min_key_parts: 1,
            code_charge: super::code::CodeCharge::WholeElements,
            gemm_far_end: false,
        }
    }
}

/// Search statistics (the host adds wall time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanStats {
    /// (state, candidate) pairs evaluated.
    pub candidates_screened: u64,
    /// Candidate lists generated (cache misses).
    pub candidate_sets: u64,
    /// Repeat bodies searched (region cache misses).
    pub body_searches: u64,
    /// Region cache hits (including cached infeasible contexts).
    pub cache_hits: u64,
    /// Candidates rejected for memory.
    pub memory_rejections: u64,
}

impl PlanStats {
    /// The counts of two searches together.
    pub fn plus(&self, other: &PlanStats) -> PlanStats {
        PlanStats {
            candidates_screened: self.candidates_screened + other.candidates_screened,
            candidate_sets: self.candidate_sets + other.candidate_sets,
            body_searches: self.body_searches + other.body_searches,
            cache_hits: self.cache_hits + other.cache_hits,
            memory_rejections: self.memory_rejections + other.memory_rejections,
        }
    }
}

pub(super) type BoundaryKey = (RegionId, Vec<Layout>, Vec<Layout>);
/// A cached region search: its frontier, or the report of why none fits.
pub(super) type BodyFrontier = Result<Arc<Vec<Arc<BodyPlan>>>, Arc<MemoryRejection>>;
/// A shared code estimate (`plan::code`).
pub(super) type CodeRef = Arc<super::code::CodeUse>;
/// An op plan with its code estimate (the plan is kept so its address,
/// the cache key, is not reused).
pub(super) type PlanCode = (Arc<OpPlan>, CodeRef);
pub(super) type CandidateKey = (OpId, Vec<Option<Layout>>);
/// A re-layout's cycles and code estimate (`None` if a run is unaligned).
pub(super) type RelayoutCharge = Option<(Cycles, CodeRef)>;

/// How a host runs the planner's independent Repeat-body searches (the
/// boundaries first reached at one Repeat op, one job each) on its own
/// threads. Without one they run in order on the calling thread; the plan,
/// its statistics and any rejection are the same either way.
pub trait SearchJobs: Sync {
    /// Runs `job(i)` for every `i` in `0..count`; the outcomes in index order.
    fn run(&self, count: usize, job: &(dyn Fn(usize) -> BodySearch + Sync)) -> Vec<BodySearch>;
}

/// One Repeat-body search job's outcome, opaque to the host that ran it.
pub struct BodySearch {
    pub(super) frontier: PlanResult<BodyFrontier>,
    pub(super) stats: PlanStats,
}

/// The memo caches of a [`SearchCx`] (not the region cache: a fork searches
/// one body, it does not look bodies up, and a later search charges code
/// differently).
///
/// Every memo (and the region cache) is only looked up and filled, never
/// iterated, so they are [`LookupMap`]s: their order cannot reach a plan.
#[derive(Clone, Default)]
pub(super) struct Memo {
    candidates: LookupMap<CandidateKey, Arc<Vec<Arc<OpPlan>>>>,
    relayouts: LookupMap<(Layout, Layout, u32), RelayoutCharge>,
    plan_code: LookupMap<usize, PlanCode>,
}

/// Dense per-tile bytes of one copy of a layout's allocation, by layout
/// and element bytes ([`SearchCx::layout_tile_bytes`]).
type TileBytesCache = LookupMap<(Layout, u32), Arc<Vec<u64>>>;

/// Shared search context.
pub struct SearchCx<'g> {
    /// The graph.
    pub graph: &'g Graph,
    /// Settings.
    pub config: PlanConfig,
    pub(super) stats: RefCell<PlanStats>,
    pub(super) candidate_cache: RefCell<LookupMap<CandidateKey, Arc<Vec<Arc<OpPlan>>>>>,
    /// Each re-layout's cycles and code, from one [`relayout`] of it.
    pub(super) relayout_cache: RefCell<LookupMap<(Layout, Layout, u32), RelayoutCharge>>,
    /// Code of each op plan applied so far, keyed by the plan's address;
    /// the entry holds the plan, so the address is not reused meanwhile.
    pub(super) plan_code_cache: RefCell<LookupMap<usize, PlanCode>>,
    pub(super) region_cache: RefCell<LookupMap<BoundaryKey, BodyFrontier>>,
    pub(super) region_label: RefCell<String>,
    /// Per Repeat op, the sum of the pending sequence elements' default
    /// storage it last released ([`super::memory::AllocationSum`]): every
    /// state of a beam releases the same ones, so each check of a body is
    /// one pass over the tiles instead of a walk over every element's
    /// blocks. Used only while the allocations are the same ones.
    pub(super) released_statics: RefCell<LookupMap<OpId, Arc<AllocationSum>>>,
    /// Dense per-tile bytes of one copy of a layout's allocation, by
    /// layout and element bytes ([`super::memory::layout_tile_bytes`]),
    /// for layouts spread over many tiles: the planner adds and removes
    /// the same output, staging and storage layouts from state after
    /// state. Memoises only (not part of [`Memo`]).
    pub(super) tile_bytes_cache: RefCell<TileBytesCache>,
    /// The buffer a memory check works a moment's dynamic bytes out in
    /// (taken and given back, so the beam's checks reuse one).
    pub(super) moment_buffer: RefCell<Vec<u64>>,
    /// Called with (top-level ops planned, top-level ops) after each
    /// top-level op (a progress bar's position; a Repeat's body searches
    /// happen inside its op).
    pub(super) progress: Option<&'g dyn Fn(u32, u32)>,
    /// Where independent body searches run (`None`: here, in order).
    pub(super) jobs: Option<&'g dyn SearchJobs>,
}

impl<'g> SearchCx<'g> {
    pub(super) fn new(graph: &'g Graph, config: PlanConfig) -> Self {
        SearchCx {
            graph,
            config,
            stats: RefCell::new(PlanStats::default()),
            candidate_cache: RefCell::new(LookupMap::default()),
            relayout_cache: RefCell::new(LookupMap::default()),
            plan_code_cache: RefCell::new(LookupMap::default()),
            region_cache: RefCell::new(LookupMap::default()),
            region_label: RefCell::new(String::from("top level")),
            released_statics: RefCell::new(LookupMap::default()),
            tile_bytes_cache: RefCell::new(LookupMap::default()),
            moment_buffer: RefCell::new(Vec::new()),
            progress: None,
            jobs: None,
        }
    }

    /// A context for one body search on another thread: the same graph,
    /// settings and job runner, a copy of `memo` (what an earlier search
    /// worked out; the caches only memoise, so what the fork finds does not
    /// depend on them), no progress.
    pub(super) fn fork(
        graph: &'g Graph,
        config: PlanConfig,
        jobs: &'g dyn SearchJobs,
        region_label: &str,
        memo: &Memo,
    ) -> Self {
        let cx = SearchCx {
            jobs: Some(jobs),
            ..SearchCx::with_memo(graph, config, memo.clone())
        };
        cx.region_label.replace(String::from(region_label));
        cx
    }

    /// A context starting from `memo` (what a search with the same
    /// candidate settings worked out: the caches do not depend on the
    /// budget or the code charge, only on the graph and `config`'s tiles,
    /// candidate options and stream cap).
    pub(super) fn with_memo(graph: &'g Graph, config: PlanConfig, memo: Memo) -> Self {
        SearchCx {
            candidate_cache: RefCell::new(memo.candidates),
            relayout_cache: RefCell::new(memo.relayouts),
            plan_code_cache: RefCell::new(memo.plan_code),
            ..SearchCx::new(graph, config)
        }
    }

    /// The memo caches, for a later search with the same candidate settings.
    pub(super) fn into_memo(self) -> Memo {
        Memo {
            candidates: self.candidate_cache.into_inner(),
            relayouts: self.relayout_cache.into_inner(),
            plan_code: self.plan_code_cache.into_inner(),
        }
    }

    /// A copy of the memo caches, for [`SearchCx::fork`].
    pub(super) fn memo(&self) -> Memo {
        Memo {
            candidates: self.candidate_cache.borrow().clone(),
            relayouts: self.relayout_cache.borrow().clone(),
            plan_code: self.plan_code_cache.borrow().clone(),
        }
    }

    /// The sum of `allocs` (the allocations Repeat `op` releases), reused
    /// from the last call for `op` when it summed the same allocations.
    pub(super) fn released_sum(
        &self,
        op: OpId,
        allocs: Vec<Arc<Allocation>>,
    ) -> Arc<AllocationSum> {
        if let Some(sum) = self.released_statics.borrow().get(&op) {
            if sum.sums(&allocs) {
                return sum.clone();
            }
        }
        let sum = Arc::new(AllocationSum::of(allocs));
        self.released_statics.borrow_mut().insert(op, sum.clone());
        sum
    }

    /// [`super::memory::layout_tile_bytes`] of `(layout, elem)`, memoised.
    pub(super) fn layout_tile_bytes(&self, layout: &Layout, elem: u32) -> Arc<Vec<u64>> {
        if let Some(bytes) = self.tile_bytes_cache.borrow().get(&(*layout, elem)) {
            return bytes.clone();
        }
        let bytes = Arc::new(super::memory::layout_tile_bytes(layout, elem));
        self.tile_bytes_cache
            .borrow_mut()
            .insert((*layout, elem), bytes.clone());
        bytes
    }

    /// 2-D view of a value.
    pub fn view(&self, v: ValueId) -> Option<TensorView> {
        self.graph.ty(v).and_then(TensorView::of)
    }

    /// Name of a value for reports: source name, or `op result`.
    pub fn value_name(&self, v: ValueId) -> String {
        match self.graph.value(v).map(|x| x.def()) {
            Some(ValueDef::Result { op, .. }) => match self.graph.op(op).map(|o| o.kind()) {
                Some(OpKind::Input { name, .. }) | Some(OpKind::Parameter { name, .. }) => {
                    name.clone()
                }
                Some(_) => format!("{} result (v{})", self.op_label(op), v.index()),
                None => format!("v{}", v.index()),
            },
            Some(ValueDef::Argument { region, index }) => {
                self.argument_name(region, index as usize, v)
            }
            None => format!("v{}", v.index()),
        }
    }

    /// A Repeat argument: iterated ones are named after their sequence's
    /// first element (`….layers.0.mlp.fc1.weight ×27`).
    fn argument_name(&self, region: RegionId, index: usize, v: ValueId) -> String {
        let rep = self
            .graph
            .region(region)
            .and_then(|r| r.parent())
            .and_then(|op| self.graph.repeat(op));
        if let Some(rep) = rep {
            let (c, i) = (rep.carried_args().len(), rep.invariant_args().len());
            if index < c {
                return format!("carried residual {index} (v{})", v.index());
            }
            if index >= c + i {
                if let Some(&first) = rep.sequence(index - c - i).first() {
                    return format!("{} ×{}", self.value_name(first), rep.trip_count());
                }
            }
        }
        format!("repeat argument {index} (v{})", v.index())
    }

    /// The model's name for an op (the graph builder's label, e.g.
    /// `encoder.layers.*.mlp.fc1`, as lowering names its steps), else
    /// `mnemonic#index`.
    pub fn op_label(&self, op: OpId) -> String {
        match self.graph.label(op) {
            Some(label) => label.into(),
            None => format!(
                "{}#{}",
                self.graph.op(op).map(|o| o.mnemonic()).unwrap_or("?"),
                op.index()
            ),
        }
    }

    /// Where the search currently is, for reports.
    pub fn region_label(&self) -> String {
        self.region_label.borrow().clone()
    }

    /// Support reserve bytes.
    pub fn reserve(&self) -> u64 {
        SUPPORT_CHARGE_BYTES as u64
    }

    /// Cycles and estimated image bytes of re-laying out `from` into `to`
    /// (`None` if a run is unaligned), memoised; both from the same
    /// [`relayout`] moves, the function lowering uses.
    pub fn relayout_charge(&self, from: Layout, to: Layout, elem: u32) -> RelayoutCharge {
        if let Some(c) = self.relayout_cache.borrow().get(&(from, to, elem)) {
            return c.clone();
        }
        let c = relayout(
            &from,
            Slot::Operand(0),
            &to,
            Slot::Output,
            elem,
            Window::whole(&to),
        )
        .ok()
        .map(|r| {
            let mut code = super::code::CodeUse::default();
            code.add_phase(
                &r.transfers,
                super::code::piece_words(self.config.max_stream_words),
            );
            code.add_calls(&r.copies);
            (r.cost(), Arc::new(code.compact()))
        });
        self.relayout_cache
            .borrow_mut()
            .insert((from, to, elem), c.clone());
        c
    }

    /// Estimated image bytes of an op plan's stages, memoised per plan.
    pub fn plan_code(&self, plan: &Arc<OpPlan>) -> Arc<super::code::CodeUse> {
        let key = Arc::as_ptr(plan) as usize;
        if let Some((_, c)) = self.plan_code_cache.borrow().get(&key) {
            return c.clone();
        }
        let mut code = super::code::CodeUse::default();
        let piece = super::code::piece_words(self.config.max_stream_words);
        for stage in &plan.stages {
            code.add_stage(stage, piece);
        }
        let code = Arc::new(code.compact());
        self.plan_code_cache
            .borrow_mut()
            .insert(key, (plan.clone(), code.clone()));
        code
    }
}
