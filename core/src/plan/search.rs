//! Pareto beam search over (cycles, per-tile peak memory).
//!
//! Ops are planned in region order. Every retained state is extended by every
//! candidate of the next op; states are grouped by the layouts of their live
//! values (what the future can see), Pareto-filtered within a group, and the
//! beam keeps at most `beam_width` of them (the best of each group first,
//! then the cheapest; the lowest-memory state always survives).
//!
//! A Repeat body is searched as its own region, with the carried and
//! invariant layouts fixed by the enclosing state. Its frontier is cached by
//! that boundary context, so outer branches reaching the Repeat with the same
//! layouts reuse it; infeasible contexts are cached too. Each cached body
//! candidate carries its exact per-tile peak, so attaching it to an outer
//! state is an O(tiles) check.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::candidates::{candidates, default_storage, GenConfig, OperandInfo, TensorView};
use super::code::CodeCharge;
use super::context::{
    BodyFrontier, BodySearch, BoundaryKey, Memo, PlanConfig, PlanStats, SearchCx, SearchJobs,
};
use super::cost::Cycles;
use super::error::{OpRef, PlanError, PlanResult};
use super::layout::Layout;
use super::memory::{self, Allocation, AllocationKind, MemoryRejection, TileBytes};
use super::opplan::OpPlan;
use super::planned::{BodyPlan, PlannedOp};
use super::region::RegionInfo;
use super::state::{Mode, Reject, State};
use crate::ir::{Graph, OpId, OpKind, ValueDef, ValueId};
use ipuc_target::ipu21::sram::MemoryClass;

/// The chosen plan of a whole graph.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Top-level ops in order (Repeats carry their body).
    pub ops: Vec<PlannedOp>,
    /// Storage of every top-level source value (inputs, parameters, constants).
    pub sources: BTreeMap<ValueId, Arc<Allocation>>,
    /// Estimated cycles.
    pub cycles: Cycles,
    /// Exact per-tile peak (excluding the support reserve) and its tile.
    pub peak_bytes: u64,
    /// Tile of the peak (raw: an index into the planner's per-tile arrays).
    pub peak_tile: u32,
    /// Exact peak of every tile over all moments (excluding the support
    /// reserve, including the code charge of the estimated image), indexed
    /// by logical tile.
    pub tile_peaks: Arc<Vec<u64>>,
    /// Estimated linked-image bytes of every tile (runtime, stubs, program,
    /// argument blocks, exchange rows; `plan::code`), indexed by logical
    /// tile: placement keeps the elements they need free for code.
    pub code_bytes: Arc<Vec<u64>>,
    /// Search statistics.
    pub stats: PlanStats,
    /// Settings used.
    pub config: PlanConfig,
}

/// Candidate generation for the search (memoised in the context).
impl SearchCx<'_> {
    pub(crate) fn candidates_for(
        &self,
        op: OpId,
        state: &State,
    ) -> PlanResult<Arc<Vec<Arc<OpPlan>>>> {
        let o = self
            .graph
            .op(op)
            .ok_or(PlanError::MalformedGraph { what: "op" })?;
        let layouts = state.operand_layouts(o.operands());
        // GEMMs and attention ignore where their operands are (they name
        // the layouts they read): key them by pending flags only.
        let key_layouts = if matches!(o.kind(), OpKind::MatMul(_) | OpKind::Attention { .. }) {
            layouts
                .iter()
                .map(|l| l.map(|_| Layout::single(0, 0, 0)))
                .collect()
        } else {
            layouts.clone()
        };
        if let Some(c) = self
            .candidate_cache
            .borrow()
            .get(&(op, key_layouts.clone()))
        {
            return Ok(c.clone());
        }
        let mut infos = Vec::new();
        for (&v, layout) in o.operands().iter().zip(&layouts) {
            let ty = self
                .graph
                .ty(v)
                .ok_or(PlanError::MalformedGraph { what: "value" })?
                .clone();
            let view = TensorView::of(&ty).ok_or_else(|| PlanError::Unsupported {
                op: OpRef::of(self.graph, op),
                op_name: o.mnemonic(),
                reason: "dimension exceeds u32",
            })?;
            infos.push(OperandInfo {
                ty,
                view,
                current: *layout,
            });
        }
        let out = o
            .result()
            .and_then(|r| self.graph.ty(r))
            .ok_or(PlanError::MalformedGraph { what: "result" })?;
        let plans = candidates(
            self.graph,
            op,
            &infos,
            out,
            &GenConfig {
                tiles: self.config.tiles,
                min_key_parts: self.config.min_key_parts,
                gemm_far_end: self.config.gemm_far_end,
            },
        )?;
        let plans = Arc::new(plans.into_iter().map(Arc::new).collect::<Vec<_>>());
        self.stats.borrow_mut().candidate_sets += 1;
        self.candidate_cache
            .borrow_mut()
            .insert((op, key_layouts), plans.clone());
        Ok(plans)
    }
}

/// Keeps at most `width` states: first the memory front over all groups
/// ([`split_front`]), then the leaders of the signature groups (each group
/// Pareto-filtered), then the rest by cycles; the lowest-peak state always
/// survives.
fn prune(states: Vec<State>, width: usize) -> Vec<State> {
    let mut groups: BTreeMap<Vec<(ValueId, Option<Layout>)>, Vec<State>> = BTreeMap::new();
    for s in states {
        groups.entry(s.signature()).or_default().push(s);
    }
    let mut leaders = Vec::new();
    let mut rest = Vec::new();
    for (_, g) in groups {
        // Dominance over (cycles, peak so far, static bytes now): static
        // storage (e.g. resident vs streamed weights) weighs on every later
        // moment, so a cheaper-but-heavier branch does not hide a lighter one.
        let mut kept = split_front(g, usize::MAX, rank).0.into_iter();
        if let Some(first) = kept.next() {
            leaders.push(first);
        }
        rest.extend(kept);
    }
    let lowest = leaders
        .iter()
        .chain(rest.iter())
        .min_by_key(|s| (s.peak, s.cycles.total()))
        .cloned();
    leaders.sort_by_key(|s| (s.cycles.total(), s.peak));
    rest.sort_by_key(|s| (s.cycles.total(), s.peak));
    let ranked: Vec<State> = leaders.into_iter().chain(rest).collect();
    // The memory front over all groups first (see [`split_front`]).
    let (mut out, others) = split_front(ranked, width / MEMORY_FRONT_SHARE, rank);
    out.extend(others);
    out.truncate(width.max(1));
    if let Some(l) = lowest {
        if !out.iter().any(|s| s.peak == l.peak && s.cycles == l.cycles) {
            out.pop();
            out.push(l);
        }
    }
    out
}

/// A state's (cycles, peak so far, static bytes now).
fn rank(s: &State) -> (u64, u64, u64) {
    (s.cycles.total(), s.peak, s.static_max())
}

/// The share of the beam reserved for the memory front: one state in four.
const MEMORY_FRONT_SHARE: usize = 4;

/// `items` split into their memory front, cheapest first — up to `room`
/// items that no cheaper item dominates in memory (no larger peak and no
/// larger static bytes), by `key` = (cycles, peak, static) — and the rest
/// in their order.
///
/// Over the whole beam the front counters the group leaders' greed: with many
/// signature groups (the slices and head splits after a fused QKV make
/// dozens) the leaders of one memory-heavy lineage fill the beam, and an
/// op that needs the memory later (attention) rejects them all. So400m
/// lost LayerNorm on 729 tiles with its parameters streamed this way: its
/// resident twin, 114 KB per tile heavier, led every group and died at
/// the attention.
fn split_front<T>(items: Vec<T>, room: usize, key: fn(&T) -> (u64, u64, u64)) -> (Vec<T>, Vec<T>) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| key(&items[i]));
    let mut front: Vec<usize> = Vec::new();
    for i in order {
        if front.len() >= room {
            break;
        }
        let (_, peak, stat) = key(&items[i]);
        if !front.iter().any(|&k| {
            let (_, p, s) = key(&items[k]);
            p <= peak && s <= stat
        }) {
            front.push(i);
        }
    }
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    let front = front.iter().filter_map(|&i| slots[i].take()).collect();
    (front, slots.into_iter().flatten().collect())
}

/// The best rejection seen, rebuilt as a report on demand.
struct BestRejection {
    peak: u64,
    state: State,
    pos: u32,
    op: OpId,
    plan: Option<Arc<OpPlan>>,
    body: Option<Arc<BodyPlan>>,
}

fn run_region(cx: &SearchCx<'_>, info: &RegionInfo, start: State) -> Result<Vec<State>, PlanError> {
    let mut states = alloc::vec![start];
    for (pos, &op) in info.ops.iter().enumerate() {
        let pos = pos as u32;
        let o = cx
            .graph
            .op(op)
            .ok_or(PlanError::MalformedGraph { what: "op" })?;
        let mut next = Vec::new();
        // The lowest-peak rejected candidates (first seen wins ties), kept
        // for the reports should no candidate fit.
        let mut rejected: Vec<BestRejection> = Vec::new();
        let mut note =
            |peak: u64, state: &State, plan: Option<&Arc<OpPlan>>, body: Option<&Arc<BodyPlan>>| {
                cx.stats.borrow_mut().memory_rejections += 1;
                // One entry per distinct candidate (its lowest peak over the
                // states), so the reports show different plans, not one plan
                // reached from several states.
                let same = |b: &BestRejection| match (plan, body, &b.plan, &b.body) {
                    (Some(p), _, Some(q), _) => Arc::ptr_eq(p, q),
                    (None, Some(p), None, Some(q)) => Arc::ptr_eq(p, q),
                    _ => false,
                };
                if let Some(i) = rejected.iter().position(same) {
                    if rejected[i].peak <= peak {
                        return;
                    }
                    rejected.remove(i);
                }
                let at = rejected.partition_point(|b| b.peak <= peak);
                if at < memory::REPORTED_CANDIDATES {
                    rejected.insert(
                        at,
                        BestRejection {
                            peak,
                            state: state.clone(),
                            pos,
                            op,
                            plan: plan.cloned(),
                            body: body.cloned(),
                        },
                    );
                    rejected.truncate(memory::REPORTED_CANDIDATES);
                }
            };
        let mut repeat_failure: Option<Arc<MemoryRejection>> = None;
        let frontiers = match o.kind().as_repeat() {
            Some(_) => body_frontiers(cx, &states, op)?,
            None => Vec::new(),
        };
        for (i, s) in states.iter().enumerate() {
            if let Some(frontier) = frontiers.get(i) {
                match frontier {
                    Ok(bodies) => {
                        for b in bodies.iter() {
                            cx.stats.borrow_mut().candidates_screened += 1;
                            match s.apply_repeat(cx, info, pos, op, b, Mode::Search) {
                                Ok(n) => next.push(n),
                                Err(Reject::Memory { peak, .. }) => note(peak, s, None, Some(b)),
                                Err(Reject::Unaligned) => {}
                            }
                        }
                    }
                    Err(r) => repeat_failure = Some(r.clone()),
                }
                continue;
            }
            let plans = cx.candidates_for(op, s)?;
            for p in plans.iter() {
                cx.stats.borrow_mut().candidates_screened += 1;
                match s.apply(cx, info, pos, op, p, Mode::Search) {
                    Ok(n) => next.push(n),
                    Err(Reject::Memory { peak, .. }) => note(peak, s, Some(p), None),
                    Err(Reject::Unaligned) => {}
                }
            }
        }
        if next.is_empty() {
            let mut reports = rejected.iter().filter_map(|b| {
                let r = match (&b.plan, &b.body) {
                    (Some(p), _) => b.state.apply(cx, info, b.pos, b.op, p, Mode::Report),
                    (None, Some(body)) => {
                        b.state
                            .apply_repeat(cx, info, b.pos, b.op, body, Mode::Report)
                    }
                    _ => Err(Reject::Unaligned),
                };
                match r {
                    Err(Reject::Memory {
                        report: Some(report),
                        ..
                    }) => Some(report),
                    _ => None,
                }
            });
            if let Some(mut report) = reports.next() {
                report.candidates = reports.map(|r| *r).collect();
                return Err(PlanError::OutOfMemory(report));
            }
            if let Some(r) = repeat_failure {
                return Err(PlanError::OutOfMemory(alloc::boxed::Box::new((*r).clone())));
            }
            return Err(PlanError::NoCandidate {
                op: OpRef::of(cx.graph, op),
                op_name: o.mnemonic(),
            });
        }
        states = prune(next, cx.config.beam_width);
        if let Some(progress) = cx.progress.filter(|_| info.region == cx.graph.top()) {
            progress(pos + 1, info.ops.len() as u32);
        }
    }
    Ok(states)
}

/// The carried and invariant layouts a state gives the Repeat `op`'s body,
/// and the region-cache key they make.
struct Boundary {
    key: BoundaryKey,
    carried: Vec<Layout>,
    invariants: Vec<Layout>,
}

fn boundary(cx: &SearchCx<'_>, s: &State, op: OpId) -> PlanResult<Boundary> {
    let rep = cx
        .graph
        .repeat(op)
        .ok_or(PlanError::MalformedGraph { what: "repeat" })?;
    let layout_of = |v: ValueId| -> PlanResult<Layout> {
        match s.value(v).and_then(|l| l.layout) {
            Some(l) => Ok(l),
            None => cx
                .view(v)
                .map(|w| default_storage(&w, cx.config.tiles))
                .ok_or(PlanError::MalformedGraph { what: "value" }),
        }
    };
    let carried: Vec<Layout> = rep
        .carried_inits()
        .iter()
        .map(|&v| layout_of(v))
        .collect::<PlanResult<_>>()?;
    let invariants: Vec<Layout> = rep
        .invariants()
        .iter()
        .map(|&v| layout_of(v))
        .collect::<PlanResult<_>>()?;
    Ok(Boundary {
        key: (rep.body(), carried.clone(), invariants.clone()),
        carried,
        invariants,
    })
}

/// The cached frontier of the Repeat `op`'s body for the boundary `s` gives it.
pub(crate) fn body_frontier(cx: &SearchCx<'_>, s: &State, op: OpId) -> PlanResult<BodyFrontier> {
    body_frontiers(cx, core::slice::from_ref(s), op)?
        .pop()
        .ok_or(PlanError::MalformedGraph {
            what: "region cache entry",
        })
}

/// The cached frontier of the Repeat `op`'s body for the boundary each of
/// `states` gives it. Boundaries neither cached nor given by an earlier
/// state are searched — as the host's jobs when it runs them
/// ([`SearchJobs`]), each in a [`SearchCx::fork`] — and cached; every
/// other state counts a cache hit, as if the states were taken in order.
pub(crate) fn body_frontiers(
    cx: &SearchCx<'_>,
    states: &[State],
    op: OpId,
) -> PlanResult<Vec<BodyFrontier>> {
    let bounds = states
        .iter()
        .map(|s| boundary(cx, s, op))
        .collect::<PlanResult<Vec<_>>>()?;
    let mut fresh: Vec<&Boundary> = Vec::new();
    {
        let cache = cx.region_cache.borrow();
        for b in &bounds {
            if !cache.contains_key(&b.key) && !fresh.iter().any(|f| f.key == b.key) {
                fresh.push(b);
            }
        }
    }
    let search_here = |b: &Boundary| search_body(cx, op, &b.carried, &b.invariants);
    let found: Vec<PlanResult<BodyFrontier>> = match (cx.jobs, fresh.split_first()) {
        (Some(jobs), Some((first, rest))) if !rest.is_empty() => {
            // The first search here fills the memo caches, which the others
            // (mostly the same ops on the same layouts) start from.
            let mut found = alloc::vec![search_here(first)];
            let (graph, config) = (cx.graph, cx.config);
            let label = cx.region_label.borrow().clone();
            let memo = cx.memo();
            let outcomes = jobs.run(rest.len(), &|k| {
                let fork = SearchCx::fork(graph, config, jobs, &label, &memo);
                let b = rest[k];
                let frontier = search_body(&fork, op, &b.carried, &b.invariants);
                let stats = *fork.stats.borrow();
                BodySearch { frontier, stats }
            });
            let mut stats = cx.stats.borrow_mut();
            for o in outcomes {
                *stats = stats.plus(&o.stats);
                found.push(o.frontier);
            }
            found
        }
        _ => fresh.iter().map(|b| search_here(b)).collect(),
    };
    {
        let mut stats = cx.stats.borrow_mut();
        stats.body_searches += fresh.len() as u64;
        stats.cache_hits += (bounds.len() - fresh.len()) as u64;
    }
    let mut cache = cx.region_cache.borrow_mut();
    for (b, frontier) in fresh.iter().zip(found) {
        // The first failing search in state order, as taken one by one.
        cache.insert(b.key.clone(), frontier?);
    }
    bounds
        .iter()
        .map(|b| {
            cache.get(&b.key).cloned().ok_or(PlanError::MalformedGraph {
                what: "region cache entry",
            })
        })
        .collect()
}

/// Whether the yield of carried value `j` can be written straight into the
/// carried buffer by its producer (no copy at the end of the body): the
/// producer is a body op with the carried layout whose output is a fresh
/// buffer, and the carried argument is not read after it — or read by it
/// element for element (a local op on the same layout). Lowering uses the
/// same test.
pub fn yield_in_place(
    graph: &Graph,
    info: &RegionInfo,
    ops: &[PlannedOp],
    carried_arg: ValueId,
    yielded: ValueId,
    layout: &Layout,
) -> bool {
    let Some(ValueDef::Result { op: producer, .. }) = graph.value(yielded).map(|v| v.def()) else {
        return false;
    };
    let Some(pos) = info.ops.iter().position(|&o| o == producer) else {
        return false;
    };
    let Some(plan) = ops.get(pos).and_then(|p| p.plan.as_ref()) else {
        return false;
    };
    if plan.output_is_view || plan.output != *layout {
        return false;
    }
    let pos = pos as u32;
    match info.last_use.get(&carried_arg).copied() {
        None => true,
        Some(last) if last < pos => true,
        Some(last) if last == pos => {
            ops[pos as usize].relayouts.is_empty()
                && matches!(plan.family, super::opplan::PlanFamily::Local { .. })
                && plan
                    .operands
                    .iter()
                    .all(|o| o.layout == *layout || o.layout.tensor_rows() == 1)
        }
        Some(_) => false,
    }
}

fn search_body(
    cx: &SearchCx<'_>,
    op: OpId,
    carried: &[Layout],
    invariants: &[Layout],
) -> PlanResult<BodyFrontier> {
    let rep = cx
        .graph
        .repeat(op)
        .ok_or(PlanError::MalformedGraph { what: "repeat" })?;
    let info = RegionInfo::new(cx.graph, rep.body())?;
    let outer_label = cx
        .region_label
        .replace(format!("repeat body (x{})", rep.trip_count()));
    let mut args = Vec::new();
    for (&arg, layout) in rep.carried_args().iter().zip(carried) {
        let elem = cx.view(arg).map(|w| w.elem()).unwrap_or(1);
        let a = Arc::new(Allocation {
            name: cx.value_name(arg),
            kind: AllocationKind::Carried,
            class: MemoryClass::Standard,
            tiles: TileBytes::Layout {
                layout: *layout,
                elem,
            },
            copies: 1,
        });
        args.push((arg, *layout, Some(a)));
    }
    for (&arg, layout) in rep.invariant_args().iter().zip(invariants) {
        args.push((arg, *layout, None));
    }
    let start = State::start(cx, &info, &args);
    let finals = match run_region(cx, &info, start.clone()) {
        Ok(f) => f,
        Err(PlanError::OutOfMemory(r)) => {
            cx.region_label.replace(outer_label);
            return Ok(Err(Arc::new(*r)));
        }
        Err(e) => {
            cx.region_label.replace(outer_label);
            return Err(e);
        }
    };
    let mut bodies = Vec::new();
    for f in finals {
        let ops = f.planned_ops();
        // Carried write-backs.
        let mut cycles = f.cycles;
        let mut writebacks = super::code::CodeUse::default();
        for ((&arg, &y), layout) in rep.carried_args().iter().zip(rep.yields()).zip(carried) {
            let Some(loc) = f.value(y) else { continue };
            let Some(from) = loc.layout else { continue };
            if from == *layout && yield_in_place(cx.graph, &info, &ops, arg, y, layout) {
                continue;
            }
            let Some((c, code)) = cx.relayout_charge(from, *layout, loc.elem) else {
                continue;
            };
            cycles = cycles.plus(c);
            writebacks.add(&code);
        }
        // Exact per-tile peak by replaying the choices.
        let Some(mut s) = replay_exact(cx, &info, &start, &ops, false) else {
            continue;
        };
        let iterated: Vec<(ValueId, Arc<Allocation>)> = rep
            .iterated_args()
            .iter()
            .filter_map(|a| s.statics().get(a).map(|al| (*a, al.clone())))
            .collect();
        let peak_tile = s.data_peaks();
        s.add_code(&writebacks);
        let mut iterated_usage = memory::empty_usage();
        let mut iterated_il = memory::empty_usage();
        for (_, a) in &iterated {
            a.accumulate(&mut iterated_usage, true);
            if a.class == MemoryClass::Interleaved {
                a.accumulate(&mut iterated_il, true);
            }
        }
        let minus = |p: &[u64], i: &[u64]| -> Vec<u64> {
            p.iter().zip(i).map(|(p, i)| p.saturating_sub(*i)).collect()
        };
        let dyn_tile = minus(&peak_tile, &iterated_usage);
        let dyn_il_tile = minus(&s.interleaved_peaks(), &iterated_il);
        let iterated_il = iterated
            .iter()
            .any(|(_, a)| a.class == MemoryClass::Interleaved)
            .then(|| Arc::new(iterated_il));
        let peak = memory::peak_of(&peak_tile).0;
        bodies.push(Arc::new(BodyPlan {
            ops,
            cycles,
            carried_layouts: carried.to_vec(),
            invariant_layouts: invariants.to_vec(),
            iterated,
            iterated_usage: Arc::new(iterated_usage),
            iterated_il,
            peak_tile: Arc::new(peak_tile),
            dyn_tile: Arc::new(dyn_tile),
            dyn_il_tile: Arc::new(dyn_il_tile),
            peak,
            code_tiles: s.code_tiles().clone(),
            code_all: s.code_all(),
        }));
    }
    cx.region_label.replace(outer_label);
    bodies.sort_by_key(|b| (b.cycles.total(), b.peak));
    Ok(Ok(Arc::new(bodies)))
}

/// Plans `graph` (verified IR) with `config`.
pub fn plan_graph(graph: &Graph, config: PlanConfig) -> PlanResult<Plan> {
    plan_graph_with_stats(graph, config).0
}

/// Like [`plan_graph`], also returning the search statistics when planning
/// fails (a memory rejection still screened candidates and searched bodies).
///
/// When no plan fits with each image charged in whole elements, the search
/// runs once more charging only the bytes the images span
/// ([`super::code::CodeCharge::Span`]), and when that fails too, once more
/// also offering GEMM grids placed at the far end of the tiles
/// ([`PlanConfig::gemm_far_end`]): the plan's `config` says which search
/// produced it, its stats count every search, and the last rejection is
/// the one returned. A config that already asks for a later search starts
/// there.
pub fn plan_graph_with_stats(graph: &Graph, config: PlanConfig) -> (PlanResult<Plan>, PlanStats) {
    plan_graph_reporting(graph, config, SearchHooks::default())
}

/// What a host gives the planner: a progress callback, called with
/// `(done, total)` after each of the top region's ops (a Repeat's body is
/// searched inside its op), and a runner for the independent body searches.
/// The plan is the same with or without either.
#[derive(Clone, Copy, Default)]
pub struct SearchHooks<'a> {
    /// Progress of the top region.
    pub progress: Option<&'a dyn Fn(u32, u32)>,
    /// Where body searches run.
    pub jobs: Option<&'a dyn SearchJobs>,
}

/// [`plan_graph`] with the host's [`SearchHooks`].
pub fn plan_graph_with(
    graph: &Graph,
    config: PlanConfig,
    hooks: SearchHooks<'_>,
) -> PlanResult<Plan> {
    plan_graph_reporting(graph, config, hooks).0
}

fn plan_graph_reporting(
    graph: &Graph,
    config: PlanConfig,
    hooks: SearchHooks<'_>,
) -> (PlanResult<Plan>, PlanStats) {
    let mut config = config;
    let mut memo = Memo::default();
    let mut total = PlanStats::default();
    loop {
        let (result, stats, used) = search_once(graph, config, hooks, memo);
        total = total.plus(&stats);
        let next = match result {
            Err(PlanError::OutOfMemory(_)) if config.code_charge == CodeCharge::WholeElements => {
                PlanConfig {
                    code_charge: CodeCharge::Span,
                    ..config
                }
            }
            Err(PlanError::OutOfMemory(_)) if !config.gemm_far_end => PlanConfig {
                gemm_far_end: true,
                ..config
            },
            other => return (other.map(|p| Plan { stats: total, ..p }), total),
        };
        // The next search charges code differently (same candidates: keep
        // the memo) or offers more GEMM grids (new candidates: start anew).
        memo = if next.gemm_far_end == config.gemm_far_end {
            used
        } else {
            Memo::default()
        };
        config = next;
    }
}

fn search_once(
    graph: &Graph,
    config: PlanConfig,
    hooks: SearchHooks<'_>,
    memo: Memo,
) -> (PlanResult<Plan>, PlanStats, Memo) {
    let mut cx = SearchCx::with_memo(graph, config, memo);
    cx.progress = hooks.progress;
    cx.jobs = hooks.jobs;
    let result = plan_with(&cx, graph, config);
    let stats = *cx.stats.borrow();
    (result, stats, cx.into_memo())
}

/// Replays chosen `ops` from `start` in exact mode, as the finalists of a
/// search (a Repeat body's or the top region's) are re-checked for their
/// true per-tile peak: `None` when a choice no longer applies. `repeats`
/// says whether a Repeat may appear (never inside a Repeat body).
fn replay_exact(
    cx: &SearchCx<'_>,
    info: &RegionInfo,
    start: &State,
    ops: &[PlannedOp],
    repeats: bool,
) -> Option<State> {
    let mut record = memory::empty_usage();
    let mut s = start.clone();
    for (pos, p) in ops.iter().enumerate() {
        let r = match (&p.plan, &p.repeat) {
            (Some(plan), _) => s.apply(cx, info, pos as u32, p.op, plan, Mode::Exact(&mut record)),
            (None, Some(body)) if repeats => {
                s.apply_repeat(cx, info, pos as u32, p.op, body, Mode::Exact(&mut record))
            }
            _ => Err(Reject::Unaligned),
        };
        s = r.ok()?;
    }
    Some(s)
}

fn plan_with(cx: &SearchCx<'_>, graph: &Graph, config: PlanConfig) -> PlanResult<Plan> {
    let info = RegionInfo::new(graph, graph.top())?;
    let start = State::start(cx, &info, &[])
        .with_fixed_code(config.fixed_code_bytes + super::code::PROGRAM_FIXED_BYTES);
    let finals = run_region(cx, &info, start.clone())?;
    // Finalists: cheapest first; replay exactly to get the true peak.
    let mut best: Option<(State, u64, u32, Vec<u64>)> = None;
    let mut sorted = finals;
    sorted.sort_by_key(|s| (s.cycles.total(), s.peak));
    for f in sorted.into_iter().take(4) {
        let ops = f.planned_ops();
        if let Some(s) = replay_exact(cx, &info, &start, &ops, true) {
            // Statics chosen late are live from the start: the final
            // per-tile peak is the final static usage plus the largest
            // dynamic usage of any moment.
            let peaks = s.tile_peaks();
            let (peak, tile) = memory::peak_of(&peaks);
            if peak > config.budget {
                continue;
            }
            best = Some((s, peak, tile, peaks));
            break;
        }
    }
    let (state, peak_bytes, peak_tile, tile_peaks) = best.ok_or(PlanError::MalformedGraph {
        what: "finalist (replay failed or exceeded the budget the search checked)",
    })?;
    let stats = *cx.stats.borrow();
    Ok(Plan {
        ops: state.planned_ops(),
        sources: state.statics().clone(),
        cycles: state.cycles,
        peak_bytes,
        peak_tile,
        tile_peaks: Arc::new(tile_peaks),
        code_bytes: Arc::new(state.code_bytes()),
        stats,
        config,
    })
}

#[cfg(test)]
mod front_tests {
    use super::split_front;
    use alloc::vec::Vec;

    fn key(s: &(u64, u64, u64)) -> (u64, u64, u64) {
        *s
    }

    #[test]
    fn a_lighter_branch_survives_a_cheaper_heavy_lineage() {
        // A memory-heavy lineage, cheapest in every group, then one lighter
        // state: it has to come out in the front however many heavy ones lead.
        let mut beam: Vec<(u64, u64, u64)> = (0..40).map(|i| (100 + i, 530, 420)).collect();
        beam.push((150, 420, 300));
        beam.push((160, 425, 310)); // dominated by the one above
        let (front, rest) = split_front(beam, 8, key);
        assert_eq!(front, [(100, 530, 420), (150, 420, 300)]);
        assert_eq!(rest.len(), 40);
        assert_eq!(rest[0], (101, 530, 420), "the rest keeps its order");
    }

    #[test]
    fn the_front_is_capped_cheapest_first() {
        let beam: Vec<(u64, u64, u64)> = (0..10).map(|i| (i, 100 - i, 100 - i)).collect();
        let (front, rest) = split_front(beam, 3, key);
        assert_eq!(front, [(0, 100, 100), (1, 99, 99), (2, 98, 98)]);
        assert_eq!(rest.len(), 7);
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use crate::ir::DType;
    use crate::plan::memory::DATA_BUDGET_BYTES;

    fn repeat_op(g: &Graph) -> OpId {
        g.walk()
            .into_iter()
            .find(|&op| g.repeat(op).is_some())
            .unwrap()
    }

    #[test]
    fn same_boundary_hits_the_region_cache_and_infeasible_contexts_are_cached() {
        let g = crate::plan::tests::residual_mlp(16, 64, 128, 3, DType::F16);
        let op = repeat_op(&g);
        for (budget, feasible) in [(DATA_BUDGET_BYTES, true), (2_000, false)] {
            let cx = SearchCx::new(
                &g,
                PlanConfig {
                    tiles: 16,
                    budget,
                    ..PlanConfig::default()
                },
            );
            let info = RegionInfo::new(&g, g.top()).unwrap();
            // Two outer branches reaching the Repeat with the same boundary.
            let a = State::start(&cx, &info, &[]);
            let b = a.clone();
            let first = body_frontier(&cx, &a, op).unwrap();
            let second = body_frontier(&cx, &b, op).unwrap();
            let stats = *cx.stats.borrow();
            assert_eq!((stats.body_searches, stats.cache_hits), (1, 1));
            assert_eq!(first.is_ok(), feasible);
            match (first, second) {
                (Ok(x), Ok(y)) => assert!(Arc::ptr_eq(&x, &y) && !x.is_empty()),
                (Err(x), Err(y)) => {
                    assert!(Arc::ptr_eq(&x, &y));
                    assert!(x.region.contains("repeat body"));
                }
                _ => panic!("cache returned a different outcome"),
            }
        }
    }
}
