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
use crate::ir::{OpId, ValueId};
use ipuc_target::ipu21::sram::MemoryClass;

mod apply;
mod check;
mod repeat;

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

/// Layouts spread over at least this many blocks are added from their
/// memoised dense per-tile bytes ([`SearchCx::layout_tile_bytes`]), not by
/// walking their blocks.
const DENSE_MIN_BLOCKS: u32 = 128;

/// [`Allocation::accumulate`], from the memoised dense per-tile bytes when
/// its layout has many blocks: the same u64 sums (a removal removes what
/// was added, so nothing saturates either way).
fn accumulate(cx: &SearchCx<'_>, a: &Allocation, usage: &mut [u64], add: bool) {
    if let TileBytes::Layout { layout, elem } = &a.tiles {
        let blocks = layout
            .rows
            .outer
            .saturating_mul(layout.rows.inner)
            .saturating_mul(layout.cols.outer)
            .saturating_mul(layout.cols.inner)
            .saturating_mul(layout.replicas);
        if blocks >= DENSE_MIN_BLOCKS {
            let bytes = cx.layout_tile_bytes(layout, *elem);
            memory::add_usage_times(usage, &bytes, u64::from(a.copies.max(1)), add);
            return;
        }
    }
    a.accumulate(usage, add);
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
            accumulate(cx, &a, &mut usage, true);
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
                s.insert_root(cx, *v, a.clone());
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

    fn set_static(&mut self, cx: &SearchCx<'_>, v: ValueId, a: Option<Arc<Allocation>>) {
        let statics = Arc::make_mut(&mut self.statics);
        let usage = Arc::make_mut(&mut self.static_usage);
        let mut il_changed = false;
        if let Some(old) = statics.remove(&v) {
            accumulate(cx, &old, usage, false);
            if old.class == MemoryClass::Interleaved {
                accumulate(
                    cx,
                    &old,
                    Arc::make_mut(&mut self.static_il).as_mut_slice(),
                    false,
                );
                il_changed = true;
            }
        }
        if let Some(a) = a {
            accumulate(cx, &a, usage, true);
            if a.class == MemoryClass::Interleaved {
                accumulate(
                    cx,
                    &a,
                    Arc::make_mut(&mut self.static_il).as_mut_slice(),
                    true,
                );
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
    fn insert_root(&mut self, cx: &SearchCx<'_>, v: ValueId, a: Arc<Allocation>) {
        self.remove_root(cx, v);
        accumulate(
            cx,
            &a,
            Arc::make_mut(&mut self.root_usage).as_mut_slice(),
            true,
        );
        if a.class == MemoryClass::Interleaved {
            accumulate(
                cx,
                &a,
                Arc::make_mut(&mut self.root_il).as_mut_slice(),
                true,
            );
        }
        self.roots.insert(v, Root { alloc: a, users: 1 });
    }

    /// Drops root `v` (if any) and its bytes from `root_usage`.
    fn remove_root(&mut self, cx: &SearchCx<'_>, v: ValueId) {
        if let Some(old) = self.roots.remove(&v) {
            let a = &old.alloc;
            accumulate(
                cx,
                a,
                Arc::make_mut(&mut self.root_usage).as_mut_slice(),
                false,
            );
            if a.class == MemoryClass::Interleaved {
                accumulate(
                    cx,
                    a,
                    Arc::make_mut(&mut self.root_il).as_mut_slice(),
                    false,
                );
            }
        }
    }

    fn drop_value(&mut self, cx: &SearchCx<'_>, v: ValueId) {
        if let Some(loc) = self.values.remove(&v) {
            if let Some(r) = loc.root {
                if let Some(root) = self.roots.get_mut(&r) {
                    root.users -= 1;
                    if root.users == 0 {
                        self.remove_root(cx, r);
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
