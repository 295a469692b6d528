//! One search state (a planned prefix of a region) and the transition that
//! extends it by one op. The same transition runs in the beam (cheap memory
//! bounds), in exact replays of finalists (per-tile peaks) and when a
//! rejection report is built, so all three agree by construction.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::candidates::default_storage;
use super::context::SearchCx;
use super::cost::Cycles;
use super::layout::Layout;
use super::memory::{self, Allocation, AllocationKind, MemoryRejection, TileBytes};
use super::opplan::{OpPlan, PlanFamily};
use super::planned::{BodyPlan, OperandRelayout, PlannedOp, StorageChoice};
use super::region::{RegionInfo, SourceKind};
use crate::ipu21::sram::MemoryClass;
use crate::ir::{OpId, ValueId};

#[derive(Clone, Debug)]
struct ChoiceNode {
    op: PlannedOp,
    prev: Option<Arc<ChoiceNode>>,
}

/// Where a live value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueLoc {
    /// Its layout (`None`: a source whose storage is not chosen yet).
    pub layout: Option<Layout>,
    /// The dynamic allocation holding it (`None`: static or outer storage).
    pub root: Option<ValueId>,
    /// Element bytes.
    pub elem: u32,
}

#[derive(Clone, Debug)]
struct Root {
    alloc: Arc<Allocation>,
    users: u32,
}

/// A planned prefix of a region.
#[derive(Clone, Debug)]
pub struct State {
    values: BTreeMap<ValueId, ValueLoc>,
    roots: BTreeMap<ValueId, Root>,
    /// Per-tile bytes of every root's allocation (the dynamic usage of a
    /// moment before its transients), kept as roots come and go so a check
    /// does not walk every live allocation's blocks again.
    root_usage: Arc<Vec<u64>>,
    /// Interleaved-class part of `root_usage`.
    root_il: Arc<Vec<u64>>,
    statics: Arc<BTreeMap<ValueId, Arc<Allocation>>>,
    static_usage: Arc<Vec<u64>>,
    static_max: u64,
    /// Interleaved-class part of `static_usage`.
    static_il: Arc<Vec<u64>>,
    static_il_max: u64,
    /// Per tile, the largest dynamic (non-static) usage of any moment so
    /// far. Statics are live for the whole program (the host writes them
    /// before the first step), so a tile's true peak is
    /// `static_usage[t] + dyn_hist[t]` even when a static's storage is
    /// chosen after the moment that set `dyn_hist[t]`.
    dyn_hist: Arc<Vec<u64>>,
    /// Interleaved-class part of `dyn_hist` (its own per-tile history:
    /// interleaved data must fit region 1).
    il_hist: Arc<Vec<u64>>,
    /// Per tile, the estimated bytes of its linked image so far beyond
    /// `code_all` ([`super::code`]): code is live for the whole program and
    /// only grows, so charging the running total at every moment and
    /// checking the last moment covers every moment.
    code: Arc<Vec<u64>>,
    /// Estimated image bytes on every tile (runtime, stubs, per-phase
    /// sequences, Repeat frames).
    code_all: u64,
    /// How the estimated image is charged (the search's config).
    code_charge: super::code::CodeCharge,
    choices: Option<Arc<ChoiceNode>>,
    /// Cycles so far.
    pub cycles: Cycles,
    /// Peak per-tile bytes so far (an upper bound unless replayed exactly).
    pub peak: u64,
}

/// Why a transition failed.
#[derive(Clone, Debug)]
pub enum Reject {
    /// The moment does not fit; `peak` is exact. The report is built only in
    /// report mode.
    Memory {
        /// Exact peak bytes.
        peak: u64,
        /// Report (report mode only).
        report: Option<alloc::boxed::Box<MemoryRejection>>,
    },
    /// A re-layout would move a run that is not a whole word.
    Unaligned,
}

/// How thoroughly a transition checks memory.
#[derive(Debug)]
pub enum Mode<'a> {
    /// Bound first, per-tile refinement when it fails.
    Search,
    /// Per-tile always; records the elementwise max usage.
    Exact(&'a mut Vec<u64>),
    /// Like search, but a failure carries a full report.
    Report,
}

fn alloc_for(
    name: String,
    kind: AllocationKind,
    class: MemoryClass,
    layout: Layout,
    elem: u32,
    copies: u32,
) -> Arc<Allocation> {
    Arc::new(Allocation {
        name,
        kind,
        class,
        tiles: TileBytes::Layout { layout, elem },
        copies,
    })
}

impl State {
    /// The start of `info`'s region: sources get default storage; `args` are
    /// values already placed (Repeat carried/invariant arguments), with an
    /// optional dynamic allocation (carried buffers).
    pub fn start(
        cx: &SearchCx<'_>,
        info: &RegionInfo,
        args: &[(ValueId, Layout, Option<Arc<Allocation>>)],
    ) -> Self {
        let mut s = State {
            values: BTreeMap::new(),
            roots: BTreeMap::new(),
            root_usage: Arc::new(memory::empty_usage()),
            root_il: Arc::new(memory::empty_usage()),
            statics: Arc::new(BTreeMap::new()),
            static_usage: Arc::new(memory::empty_usage()),
            static_max: 0,
            static_il: Arc::new(memory::empty_usage()),
            static_il_max: 0,
            dyn_hist: Arc::new(memory::empty_usage()),
            il_hist: Arc::new(memory::empty_usage()),
            code: Arc::new(memory::empty_usage()),
            code_all: 0,
            code_charge: cx.config.code_charge,
            choices: None,
            cycles: Cycles::default(),
            peak: 0,
        };
        let mut statics = BTreeMap::new();
        let mut usage = memory::empty_usage();
        for (v, kind) in &info.sources {
            let Some(view) = cx.view(*v) else { continue };
            let layout = default_storage(&view, cx.config.tiles);
            let (k, copies) = match kind {
                SourceKind::Iterated { trip_count } => {
                    (AllocationKind::IteratedParameter, *trip_count)
                }
                _ => (AllocationKind::Parameter, 1),
            };
            let a = alloc_for(
                cx.value_name(*v),
                k,
                MemoryClass::Standard,
                layout,
                view.elem(),
                copies,
            );
            a.accumulate(&mut usage, true);
            statics.insert(*v, a);
            s.values.insert(
                *v,
                ValueLoc {
                    layout: None,
                    root: None,
                    elem: view.elem(),
                },
            );
        }
        for (v, layout, alloc) in args {
            let elem = cx.view(*v).map(|w| w.elem()).unwrap_or(1);
            let root = alloc.as_ref().map(|a| {
                s.insert_root(*v, a.clone());
                *v
            });
            s.values.insert(
                *v,
                ValueLoc {
                    layout: Some(*layout),
                    root,
                    elem,
                },
            );
        }
        s.static_max = memory::peak_of(&usage).0;
        s.static_usage = Arc::new(usage);
        s.statics = Arc::new(statics);
        s.peak = s.static_max;
        s
    }

    /// Where `v` is, if live.
    pub fn value(&self, v: ValueId) -> Option<&ValueLoc> {
        self.values.get(&v)
    }

    /// Signature for Pareto grouping: the layouts of live values.
    pub fn signature(&self) -> Vec<(ValueId, Option<Layout>)> {
        self.values.iter().map(|(v, l)| (*v, l.layout)).collect()
    }

    /// The planned ops in order.
    pub fn planned_ops(&self) -> Vec<PlannedOp> {
        let mut out = Vec::new();
        let mut node = self.choices.as_ref();
        while let Some(n) = node {
            out.push(n.op.clone());
            node = n.prev.as_ref();
        }
        out.reverse();
        out
    }

    /// Static allocations (sources with their chosen or default storage).
    pub fn statics(&self) -> &BTreeMap<ValueId, Arc<Allocation>> {
        &self.statics
    }

    /// Largest static per-tile usage.
    pub fn static_max(&self) -> u64 {
        self.static_max
    }

    /// Static per-tile usage.
    pub fn static_usage(&self) -> &[u64] {
        &self.static_usage
    }

    /// Exact per-tile peak of the prefix: statics (live for the whole
    /// program) plus the largest dynamic usage of any moment plus the code
    /// charge of the estimated image ([`super::code::charge`]).
    pub fn tile_peaks(&self) -> Vec<u64> {
        self.static_usage
            .iter()
            .zip(self.dyn_hist.iter())
            .zip(self.code.iter())
            .map(|((s, d), c)| s + d + super::code::charge(self.code_all + c, self.code_charge))
            .collect()
    }

    /// [`State::tile_peaks`] without the code charge (a Repeat body's data,
    /// composed into the enclosing region; its code is added there).
    pub fn data_peaks(&self) -> Vec<u64> {
        self.static_usage
            .iter()
            .zip(self.dyn_hist.iter())
            .map(|(s, d)| s + d)
            .collect()
    }

    /// Estimated linked-image bytes per tile ([`super::code`]).
    pub fn code_bytes(&self) -> Vec<u64> {
        self.code.iter().map(|c| self.code_all + c).collect()
    }

    /// Per-tile estimated image bytes beyond [`State::code_all`].
    pub fn code_tiles(&self) -> &Arc<Vec<u64>> {
        &self.code
    }

    /// Estimated image bytes on every tile.
    pub fn code_all(&self) -> u64 {
        self.code_all
    }

    /// The state with `bytes` of image on every tile (the runtime, kernel
    /// stubs and program prologue of a top-level region).
    pub fn with_fixed_code(mut self, bytes: u64) -> Self {
        self.code_all += bytes;
        self
    }

    /// Adds estimated image bytes.
    pub fn add_code(&mut self, code: &super::code::CodeUse) {
        if code.all == 0 && code.tiles.is_empty() {
            return;
        }
        code.accumulate(
            &mut self.code_all,
            Arc::make_mut(&mut self.code).as_mut_slice(),
        );
    }

    /// Adds per-tile image bytes (a Repeat body's) and `all` on every tile.
    pub fn add_code_tiles(&mut self, all: u64, tiles: &[u64]) {
        self.code_all += all;
        for (c, b) in Arc::make_mut(&mut self.code).iter_mut().zip(tiles) {
            *c += b;
        }
    }

    /// Per-tile largest dynamic usage of any moment so far.
    pub fn dynamic_peaks(&self) -> &[u64] {
        &self.dyn_hist
    }

    /// Exact per-tile interleaved-class peak of the prefix.
    pub fn interleaved_peaks(&self) -> Vec<u64> {
        self.static_il
            .iter()
            .zip(self.il_hist.iter())
            .map(|(s, d)| s + d)
            .collect()
    }

    fn set_static(&mut self, v: ValueId, a: Option<Arc<Allocation>>) {
        let statics = Arc::make_mut(&mut self.statics);
        let usage = Arc::make_mut(&mut self.static_usage);
        let mut il_changed = false;
        if let Some(old) = statics.remove(&v) {
            old.accumulate(usage, false);
            if old.class == MemoryClass::Interleaved {
                old.accumulate(Arc::make_mut(&mut self.static_il).as_mut_slice(), false);
                il_changed = true;
            }
        }
        if let Some(a) = a {
            a.accumulate(usage, true);
            if a.class == MemoryClass::Interleaved {
                a.accumulate(Arc::make_mut(&mut self.static_il).as_mut_slice(), true);
                il_changed = true;
            }
            statics.insert(v, a);
        }
        self.static_max = memory::peak_of(usage).0;
        if il_changed {
            self.static_il_max = memory::peak_of(&self.static_il).0;
        }
    }

    /// Makes `a` the root allocation of `v` (one user), keeping
    /// `root_usage` the sum of the roots' allocations.
    fn insert_root(&mut self, v: ValueId, a: Arc<Allocation>) {
        self.remove_root(v);
        a.accumulate(Arc::make_mut(&mut self.root_usage).as_mut_slice(), true);
        if a.class == MemoryClass::Interleaved {
            a.accumulate(Arc::make_mut(&mut self.root_il).as_mut_slice(), true);
        }
        self.roots.insert(v, Root { alloc: a, users: 1 });
    }

    /// Drops root `v` (if any) and its bytes from `root_usage`.
    fn remove_root(&mut self, v: ValueId) {
        if let Some(old) = self.roots.remove(&v) {
            let a = &old.alloc;
            a.accumulate(Arc::make_mut(&mut self.root_usage).as_mut_slice(), false);
            if a.class == MemoryClass::Interleaved {
                a.accumulate(Arc::make_mut(&mut self.root_il).as_mut_slice(), false);
            }
        }
    }

    fn drop_value(&mut self, v: ValueId) {
        if let Some(loc) = self.values.remove(&v) {
            if let Some(r) = loc.root {
                if let Some(root) = self.roots.get_mut(&r) {
                    root.users -= 1;
                    if root.users == 0 {
                        self.remove_root(r);
                    }
                }
            }
        }
    }

    fn push(&mut self, op: PlannedOp) {
        self.choices = Some(Arc::new(ChoiceNode {
            op,
            prev: self.choices.take(),
        }));
    }

    /// Checks one moment with `transient` allocations (and `extra` per-tile
    /// bytes, a Repeat body's dynamic peak) on top of the live ones, and
    /// folds the moment into the dynamic history. The checked peak is
    /// `max_t(static[t] + dyn_hist[t])`: exact, because statics are live at
    /// every moment.
    fn check(
        &mut self,
        cx: &SearchCx<'_>,
        transient: &[Arc<Allocation>],
        extra: Option<(&[u64], &[u64])>,
        mode: &mut Mode<'_>,
        moment: &dyn Fn() -> (String, String, u32, String),
    ) -> Result<u64, Reject> {
        let dynamic: Vec<&Allocation> = self
            .roots
            .values()
            .map(|r| &*r.alloc)
            .chain(transient.iter().map(|a| &**a))
            .collect();
        // The roots' bytes are kept summed (`root_usage`); only this
        // moment's transients are added (exact: the same u64 sums).
        let transient_il: Vec<&Allocation> = transient
            .iter()
            .map(|a| &**a)
            .filter(|a| a.class == MemoryClass::Interleaved)
            .collect();
        let transients: Vec<&Allocation> = transient.iter().map(|a| &**a).collect();
        let mut now = memory::moment_usage(&self.root_usage, &transients);
        let mut il_now = memory::moment_usage(&self.root_il, &transient_il);
        if let Some((extra, extra_il)) = extra {
            for (n, e) in now.iter_mut().zip(extra) {
                *n += e;
            }
            for (n, e) in il_now.iter_mut().zip(extra_il) {
                *n += e;
            }
        }
        let il_hist = Arc::make_mut(&mut self.il_hist);
        for (h, n) in il_hist.iter_mut().zip(&il_now) {
            *h = (*h).max(*n);
        }
        let il_usage: Vec<u64> = self
            .static_il
            .iter()
            .zip(il_hist.iter())
            .map(|(s, d)| s + d)
            .collect();
        let hist = Arc::make_mut(&mut self.dyn_hist);
        for (h, n) in hist.iter_mut().zip(&now) {
            *h = (*h).max(*n);
        }
        let (code_all, code_charge) = (self.code_all, self.code_charge);
        let usage: Vec<u64> = self
            .static_usage
            .iter()
            .zip(hist.iter())
            .zip(self.code.iter())
            .map(|((s, d), c)| s + d + super::code::charge(code_all + c, code_charge))
            .collect();
        if let Mode::Exact(record) = mode {
            for (r, u) in record.iter_mut().zip(&usage) {
                *r = (*r).max(*u);
            }
        }
        let (peak, tile) = memory::peak_of(&usage);
        let budget = cx.config.budget;
        let il_excess = {
            let (p, t) = memory::peak_of(&il_usage);
            (p > memory::INTERLEAVED_BUDGET_BYTES).then_some((p, t))
        };
        if peak <= budget && il_excess.is_none() {
            return Ok(peak);
        }
        // Report the tile that breaks a budget: the total one first.
        let tile = if peak > budget {
            tile
        } else {
            il_excess.map(|e| e.1).unwrap_or(tile)
        };
        let report = matches!(mode, Mode::Report).then(|| {
            let (op_name, op_label, op_index, what) = moment();
            let all = || {
                self.statics
                    .values()
                    .map(|a| &**a)
                    .chain(dynamic.iter().copied())
            };
            let mut live = memory::live_on_tile(tile, all());
            let t = tile as usize;
            let now_t = now.get(t).copied().unwrap_or(0);
            let listed_now: u64 = dynamic.iter().map(|a| a.tiles.on_tile(tile) * a.copies.max(1) as u64).sum();
            if now_t > listed_now {
                live.push(memory::LiveAllocation {
                    name: String::from("repeat body dynamic peak"),
                    kind: AllocationKind::Activation,
                    class: MemoryClass::Standard,
                    bytes: now_t - listed_now,
                });
            }
            let code_t = self.code.get(t).copied().unwrap_or(0) + self.code_all;
            live.push(memory::LiveAllocation {
                name: alloc::format!(
                    "code, argument blocks and exchange rows (estimated image {code_t} bytes, {})",
                    match self.code_charge {
                        super::code::CodeCharge::WholeElements => "whole elements",
                        super::code::CodeCharge::Span => "up to its fetch guard",
                    }
                ),
                kind: AllocationKind::Code,
                class: MemoryClass::Standard,
                bytes: super::code::charge(code_t, self.code_charge),
            });
            let hist_t = self.dyn_hist.get(t).copied().unwrap_or(0);
            if hist_t > now_t {
                live.push(memory::LiveAllocation {
                    name: String::from(
                        "dynamic data of an earlier moment (statics chosen since are live then too)",
                    ),
                    kind: AllocationKind::Activation,
                    class: MemoryClass::Standard,
                    bytes: hist_t - now_t,
                });
            }
            live.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
            // The most loaded tiles (the reported one always among them).
            let mut order: Vec<u32> = (0..usage.len() as u32).collect();
            order.sort_by(|&a, &b| {
                usage[b as usize]
                    .cmp(&usage[a as usize])
                    .then(a.cmp(&b))
            });
            order.retain(|&t| t != tile);
            order.truncate(memory::REPORTED_TILES.saturating_sub(1));
            order.insert(0, tile);
            let tiles = order
                .into_iter()
                .map(|t| {
                    let mut l = if t == tile {
                        live.clone()
                    } else {
                        memory::live_on_tile(t, all())
                    };
                    l.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
                    memory::TileLive {
                        tile: t,
                        bytes: usage.get(t as usize).copied().unwrap_or(0),
                        live: l,
                    }
                })
                .collect();
            alloc::boxed::Box::new(MemoryRejection {
                op_name,
                op_label,
                op_index,
                region: cx.region_label(),
                moment: what,
                tile,
                peak_bytes: usage.get(t).copied().unwrap_or(peak),
                reserve_bytes: cx.reserve(),
                budget_bytes: budget + cx.reserve(),
                interleaved_bytes: memory::interleaved_on_tile(tile, all()),
                interleaved_budget_bytes: memory::INTERLEAVED_BUDGET_BYTES,
                tiles_over_budget: usage.iter().filter(|&&u| u > budget).count() as u32,
                live,
                tiles,
                candidates: Vec::new(),
            })
        });
        Err(Reject::Memory {
            peak: peak.max(il_excess.map(|e| e.0).unwrap_or(0)),
            report,
        })
    }

    /// Extends the state by `op` implemented as `plan` at position `pos`.
    pub fn apply(
        &self,
        cx: &SearchCx<'_>,
        info: &RegionInfo,
        pos: u32,
        op: OpId,
        plan: &Arc<OpPlan>,
        mut mode: Mode<'_>,
    ) -> Result<State, Reject> {
        let mut s = self.clone();
        let graph_op = cx.graph.op(op).ok_or(Reject::Unaligned)?;
        let operands = graph_op.operands();
        let mut cost = plan.cost;
        let mut relayouts = Vec::new();
        let mut storage = Vec::new();
        let mut transient: Vec<Arc<Allocation>> = Vec::new();
        let mut view_root: Option<Arc<Allocation>> = None;
        for (i, (&v, req)) in operands.iter().zip(&plan.operands).enumerate() {
            let Some(loc) = s.values.get(&v).copied() else {
                return Err(Reject::Unaligned);
            };
            let current = match loc.layout {
                Some(l) => l,
                None => {
                    let layout = req.storage.unwrap_or(req.layout);
                    let class = if req.storage.is_some() {
                        MemoryClass::Standard
                    } else {
                        req.class
                    };
                    let copies = s.statics.get(&v).map(|a| a.copies).unwrap_or(1);
                    let kind = s
                        .statics
                        .get(&v)
                        .map(|a| a.kind)
                        .unwrap_or(AllocationKind::Parameter);
                    s.set_static(
                        v,
                        Some(alloc_for(
                            cx.value_name(v),
                            kind,
                            class,
                            layout,
                            loc.elem,
                            copies,
                        )),
                    );
                    if let Some(l) = s.values.get_mut(&v) {
                        l.layout = Some(layout);
                    }
                    storage.push(StorageChoice {
                        value: v,
                        layout,
                        class,
                    });
                    layout
                }
            };
            if current != req.layout {
                cost = cost.plus(
                    cx.relayout_cost(current, req.layout, loc.elem)
                        .ok_or(Reject::Unaligned)?,
                );
                if let Some(code) = cx.relayout_code(current, req.layout, loc.elem) {
                    s.add_code(&code);
                }
                relayouts.push(OperandRelayout {
                    operand: i as u8,
                    from: current,
                    to: req.layout,
                    elem: loc.elem,
                });
                let a = alloc_for(
                    format!("{} operand {i} staging", cx.op_label(op)),
                    AllocationKind::Staging,
                    req.class,
                    req.layout,
                    loc.elem,
                    1,
                );
                if i == 0 && plan.output_is_view {
                    view_root = Some(a.clone());
                }
                transient.push(a);
            }
        }
        for sc in &plan.scratch {
            transient.push(Arc::new(Allocation {
                name: format!("{} {}", cx.op_label(op), sc.name),
                kind: AllocationKind::Scratch,
                class: sc.class,
                tiles: TileBytes::Blocks(sc.blocks.clone()),
                copies: 1,
            }));
        }
        let result = graph_op.result().ok_or(Reject::Unaligned)?;
        let out_elem = cx.view(result).map(|w| w.elem()).unwrap_or(1);
        let out_alloc = if plan.output_is_view {
            view_root
        } else {
            let a = alloc_for(
                cx.value_name(result),
                AllocationKind::Activation,
                plan.output_class,
                plan.output,
                out_elem,
                1,
            );
            transient.push(a.clone());
            Some(a)
        };
        s.add_code(&cx.plan_code(plan));
        let peak = s.check(cx, &transient, None, &mut mode, &|| {
            (
                String::from(graph_op.mnemonic()),
                cx.op_label(op),
                pos,
                format!("during {} (op {pos}: {})", cx.op_label(op), plan.summary),
            )
        })?;
        s.peak = s.peak.max(peak);
        s.cycles = s.cycles.plus(cost);
        // Define the result.
        let root = match out_alloc {
            Some(a) => {
                s.insert_root(result, a);
                Some(result)
            }
            None => {
                // A view of operand 0's buffer (or of static storage).
                let r = operands
                    .first()
                    .and_then(|v| s.values.get(v))
                    .and_then(|l| l.root);
                if let Some(r) = r {
                    if let Some(root) = s.roots.get_mut(&r) {
                        root.users += 1;
                    }
                }
                r
            }
        };
        s.values.insert(
            result,
            ValueLoc {
                layout: Some(plan.output),
                root,
                elem: out_elem,
            },
        );
        for &v in operands {
            if info.last_use(v, pos) == pos {
                s.drop_value(v);
            }
        }
        if info.last_use(result, pos) == pos {
            s.drop_value(result);
        }
        s.push(PlannedOp {
            op,
            plan: Some(plan.clone()),
            relayouts,
            storage,
            repeat: None,
        });
        Ok(s)
    }

    /// Extends the state by a Repeat whose body is planned as `body`.
    pub fn apply_repeat(
        &self,
        cx: &SearchCx<'_>,
        info: &RegionInfo,
        pos: u32,
        op: OpId,
        body: &Arc<BodyPlan>,
        mut mode: Mode<'_>,
    ) -> Result<State, Reject> {
        let mut s = self.clone();
        let rep = cx.graph.repeat(op).ok_or(Reject::Unaligned)?;
        let trip = rep.trip_count() as u64;
        let mut cost = body.cycles.times(trip);
        // Carried initial values are copied into the carried buffers.
        for (&init, layout) in rep.carried_inits().iter().zip(&body.carried_layouts) {
            let elem = s.values.get(&init).map(|l| l.elem).unwrap_or(1);
            cost = cost.plus(
                cx.relayout_cost(*layout, *layout, elem)
                    .ok_or(Reject::Unaligned)?,
            );
            if let Some(code) = cx.relayout_code(*layout, *layout, elem) {
                s.add_code(&code);
            }
        }
        // The body's code is emitted once; the frame is set up on every tile.
        s.add_code_tiles(
            body.code_all + super::code::repeat_frame_bytes(body.iterated.len()),
            &body.code_tiles,
        );
        // Sequence elements read only here are stored by the body.
        for seq in rep.sequences() {
            for &v in seq {
                if s.values.get(&v).is_some_and(|l| l.layout.is_none())
                    && info.last_use(v, pos) == pos
                {
                    s.set_static(v, None);
                }
            }
        }
        // Iterated storage stays for the whole program: it is static from
        // the start, so it is charged at every moment, this one included.
        for (arg, a) in &body.iterated {
            s.set_static(*arg, Some(a.clone()));
        }
        let label = |_: ()| {
            (
                String::from("repeat"),
                cx.op_label(op),
                pos,
                format!("during the repeat body (op {pos}, ×{trip})"),
            )
        };
        let peak = s.check(
            cx,
            &[],
            Some((&body.dyn_tile, &body.dyn_il_tile)),
            &mut mode,
            &|| label(()),
        )?;
        s.peak = s.peak.max(peak);
        s.cycles = s.cycles.plus(cost);
        for ((&result, layout), &init) in rep
            .results()
            .iter()
            .zip(&body.carried_layouts)
            .zip(rep.carried_inits())
        {
            let elem = s.values.get(&init).map(|l| l.elem).unwrap_or(1);
            let a = alloc_for(
                cx.value_name(result),
                AllocationKind::Carried,
                MemoryClass::Standard,
                *layout,
                elem,
                1,
            );
            s.insert_root(result, a);
            s.values.insert(
                result,
                ValueLoc {
                    layout: Some(*layout),
                    root: Some(result),
                    elem,
                },
            );
        }
        let operands: Vec<ValueId> = cx
            .graph
            .op(op)
            .map(|o| o.operands().to_vec())
            .unwrap_or_default();
        for v in operands {
            if info.last_use(v, pos) == pos {
                s.drop_value(v);
            }
        }
        for &r in rep.results() {
            if info.last_use(r, pos) == pos {
                s.drop_value(r);
            }
        }
        s.push(PlannedOp {
            op,
            plan: None,
            relayouts: Vec::new(),
            storage: Vec::new(),
            repeat: Some(body.clone()),
        });
        Ok(s)
    }

    /// Current views of `op`'s operands for candidate generation.
    pub fn operand_layouts(&self, operands: &[ValueId]) -> Vec<Option<Layout>> {
        operands
            .iter()
            .map(|v| self.values.get(v).and_then(|l| l.layout))
            .collect()
    }

    /// True when `v` is a source whose storage is still open.
    pub fn is_pending(&self, v: ValueId) -> bool {
        self.values.get(&v).is_some_and(|l| l.layout.is_none())
    }

    /// The family of the last planned op (for tests).
    pub fn last_family(&self) -> Option<PlanFamily> {
        self.choices
            .as_ref()
            .and_then(|n| n.op.plan.as_ref().map(|p| p.family.clone()))
    }
}
