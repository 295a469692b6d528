//! Per-tile memory maps and memory-rejection reports: the input the
//! planner's memory estimator and SRAM placement hand to the HTML renderers.
//!
//! Liveness is measured in *moments*: indices into [`MemoryMap::moments`]
//! (schedule steps, in program order). An allocation is live from `first`
//! to `last` inclusive.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use ipuc_target::ipu21::sram;
use serde::{Deserialize, Serialize};

/// The per-tile budget the planner checks against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryBudget {
    /// Bytes a tile may use, including `support_reserve`.
    pub tile_bytes: u64,
    /// Bytes of the budget set aside for runtime, state and stacks.
    pub support_reserve: u64,
    /// SRAM address range shown on the map.
    pub memory_base: u32,
    pub memory_end: u32,
}

impl MemoryBudget {
    pub const IPU21: MemoryBudget = MemoryBudget {
        tile_bytes: sram::TILE_MEMORY_BUDGET as u64,
        support_reserve: sram::SUPPORT_RESERVE_BYTES as u64,
        memory_base: sram::TILE_MEMORY_BASE,
        memory_end: sram::TILE_MEMORY_END,
    };

    /// Bytes left for planned allocations after the support reserve.
    pub fn allocatable(&self) -> u64 {
        self.tile_bytes.saturating_sub(self.support_reserve)
    }
}

/// What an allocation holds (colours the map).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllocationClass {
    Code,
    ExchangeTable,
    HostDescriptors,
    Weight,
    Activation,
    Scratch,
    Reserve,
}

impl AllocationClass {
    pub const ALL: [AllocationClass; 7] = [
        AllocationClass::Code,
        AllocationClass::ExchangeTable,
        AllocationClass::HostDescriptors,
        AllocationClass::Weight,
        AllocationClass::Activation,
        AllocationClass::Scratch,
        AllocationClass::Reserve,
    ];
    pub fn name(self) -> &'static str {
        match self {
            AllocationClass::Code => "code",
            AllocationClass::ExchangeTable => "exchange-table",
            AllocationClass::HostDescriptors => "host-descriptors",
            AllocationClass::Weight => "weight",
            AllocationClass::Activation => "activation",
            AllocationClass::Scratch => "scratch",
            AllocationClass::Reserve => "reserve",
        }
    }
}

/// Inclusive range of moments during which an allocation is live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Liveness {
    pub first: u32,
    pub last: u32,
}

impl Liveness {
    pub fn contains(&self, moment: u32) -> bool {
        self.first <= moment && moment <= self.last
    }
}

/// One placed (or estimated) allocation on one tile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Allocation {
    pub name: String,
    pub class: AllocationClass,
    /// SRAM address; `None` for estimates made before placement.
    pub address: Option<u32>,
    pub size: u64,
    pub live: Liveness,
}

/// All allocations of one tile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileMemoryMap {
    /// Raw logical id: the report's JSON field (`host/schemas`).
    pub tile: u32,
    pub allocations: Vec<Allocation>,
}

/// The moment a tile's live bytes are highest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TilePeak {
    /// Raw logical id: the report's JSON field.
    pub tile: u32,
    pub moment: u32,
    /// Live allocation bytes, excluding the support reserve.
    pub live_bytes: u64,
}

impl TileMemoryMap {
    /// Live bytes at every moment `0..moments` (one sweep over start/end events).
    pub fn live_bytes(&self, moments: usize) -> Vec<u64> {
        let mut delta = vec![0i128; moments + 1];
        for a in &self.allocations {
            let first = (a.live.first as usize).min(moments);
            let end = (a.live.last as usize + 1).min(moments);
            if first < end {
                delta[first] += i128::from(a.size);
                delta[end] -= i128::from(a.size);
            }
        }
        let mut live = 0i128;
        delta[..moments]
            .iter()
            .map(|d| {
                live += d;
                live.max(0) as u64
            })
            .collect()
    }

    /// The earliest moment with the most live bytes.
    pub fn peak(&self, moments: usize) -> TilePeak {
        let live = self.live_bytes(moments);
        let (moment, live_bytes) =
            live.iter().enumerate().fold(
                (0, 0),
                |best, (m, &b)| if b > best.1 { (m, b) } else { best },
            );
        TilePeak {
            tile: self.tile,
            moment: moment as u32,
            live_bytes,
        }
    }

    /// Allocations live at `moment`, largest first.
    pub fn live_at(&self, moment: u32) -> Vec<&Allocation> {
        let mut live: Vec<&Allocation> = self
            .allocations
            .iter()
            .filter(|a| a.live.contains(moment))
            .collect();
        live.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.name.cmp(&b.name)));
        live
    }
}

/// A memory map of (some or all) tiles for `memory.html`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryMap {
    pub title: String,
    pub budget: MemoryBudget,
    /// Moment names (schedule steps) in program order.
    pub moments: Vec<String>,
    pub tiles: Vec<TileMemoryMap>,
    /// Tiles of the device that hold nothing (no program, no buffer): shown
    /// as unused, so the map covers every tile.
    #[serde(default)]
    pub unused_tiles: Vec<u32>,
}

impl MemoryMap {
    /// Checks moment references and address ranges.
    pub fn validate(&self) -> Result<()> {
        let n = self.moments.len() as u32;
        for t in &self.tiles {
            for a in &t.allocations {
                if a.live.first > a.live.last || a.live.last >= n {
                    bail!(
                        "memory map: tile {} allocation `{}` live {}..={} is outside the {n} moments",
                        t.tile,
                        a.name,
                        a.live.first,
                        a.live.last
                    );
                }
                if let Some(addr) = a.address {
                    let end = u64::from(addr) + a.size;
                    if addr < self.budget.memory_base || end > u64::from(self.budget.memory_end) {
                        bail!(
                            "memory map: tile {} allocation `{}` {addr:#x}..{end:#x} is outside SRAM {:#x}..{:#x}",
                            t.tile,
                            a.name,
                            self.budget.memory_base,
                            self.budget.memory_end
                        );
                    }
                }
            }
        }
        Ok(())
    }

    /// Peak of every tile, in tile order.
    pub fn peaks(&self) -> Vec<TilePeak> {
        self.tiles
            .iter()
            .map(|t| t.peak(self.moments.len()))
            .collect()
    }

    /// The tile with the highest peak (lowest tile id on ties).
    pub fn peak_tile(&self) -> Option<TilePeak> {
        self.peaks()
            .into_iter()
            .max_by(|a, b| a.live_bytes.cmp(&b.live_bytes).then(b.tile.cmp(&a.tile)))
    }
}

/// One allocation live at the peak of a rejected plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveAllocation {
    pub name: String,
    pub class: AllocationClass,
    pub bytes: u64,
}

/// Report class of a planner allocation kind.
fn kind_class(kind: ipuc_core::plan::memory::AllocationKind) -> AllocationClass {
    use ipuc_core::plan::memory::AllocationKind;
    match kind {
        AllocationKind::Parameter | AllocationKind::IteratedParameter => AllocationClass::Weight,
        AllocationKind::Activation | AllocationKind::Carried => AllocationClass::Activation,
        AllocationKind::Staging | AllocationKind::Scratch => AllocationClass::Scratch,
        AllocationKind::Code => AllocationClass::Code,
    }
}

/// Why the planner's memory estimator rejected a plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryRejection {
    /// The operation being planned when the budget was exceeded.
    pub operation: String,
    pub peak_tile: u32,
    pub peak_moment: String,
    pub peak_moment_index: u32,
    pub budget: MemoryBudget,
    /// Allocations live on `peak_tile` at the peak, largest first.
    pub live: Vec<LiveAllocation>,
    /// Live bytes (excluding the reserve) on `peak_tile` at every moment.
    pub timeline: Vec<(String, u64)>,
    /// Tiles whose peak exceeds the budget (when known).
    pub tiles_over_budget: Option<u32>,
    /// What rejected it: `planner estimate` or `placement`.
    #[serde(default)]
    pub source: String,
    /// Moments the lifetimes in `tiles` refer to (placement: every schedule
    /// step; planner: the one rejected moment).
    #[serde(default)]
    pub moments: Vec<String>,
    /// The tiles a report's picker offers (the peak tile first), each with
    /// its allocations and their lifetimes over `moments`.
    #[serde(default)]
    pub tiles: Vec<TileMemoryMap>,
    /// Placement: every tile placement refused (all of them, in tile
    /// order, even those the picker does not hold; a late failure's one
    /// tile). Empty for a planner rejection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused_tiles: Vec<u32>,
    /// A late placement failure (the linked code image, or the patch data,
    /// did not fit once known): what did not fit on which tile, the bytes
    /// it needs and the bytes free for it, and what the tile's memory holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shortfall: Option<Shortfall>,
}

/// What did not fit in a late placement failure (after the plan was
/// accepted and its buffers placed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shortfall {
    /// `code image` (code, argument blocks and exchange rows below the
    /// lowest region-0 data) or `patch data` (Repeat tables and sharing
    /// lists).
    pub what: String,
    /// Logical tile.
    pub tile: u32,
    /// Bytes it needs.
    pub needed_bytes: u64,
    /// Bytes free for it (code: below `limit`; patch data: the largest free
    /// range, or what the budget leaves).
    pub free_bytes: u64,
    /// Code: the address the image must end at or below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// What the tile holds, by part: runtime, program and argument blocks,
    /// exchange rows, patch data, data (buffers), support state.
    pub parts: Vec<LiveAllocation>,
}

impl MemoryRejection {
    /// The rejection at the peak of `tile` (the estimator's worst tile).
    pub fn at_peak(
        operation: &str,
        tile: &TileMemoryMap,
        moments: &[String],
        budget: MemoryBudget,
    ) -> Self {
        let peak = tile.peak(moments.len());
        let live = tile
            .live_at(peak.moment)
            .into_iter()
            .map(|a| LiveAllocation {
                name: a.name.clone(),
                class: a.class,
                bytes: a.size,
            })
            .collect();
        let timeline = moments
            .iter()
            .cloned()
            .zip(tile.live_bytes(moments.len()))
            .collect();
        MemoryRejection {
            source: "placement".into(),
            moments: moments.to_vec(),
            tiles: vec![tile.clone()],
            refused_tiles: Vec::new(),
            operation: operation.to_string(),
            peak_tile: tile.tile,
            peak_moment: moments
                .get(peak.moment as usize)
                .cloned()
                .unwrap_or_default(),
            peak_moment_index: peak.moment,
            budget,
            live,
            timeline,
            tiles_over_budget: None,
            shortfall: None,
        }
    }

    /// The report of a planner rejection (`ipuc_core::plan`'s estimator):
    /// the peak tile, the moment and every allocation live there. The
    /// estimator checks moments of candidate plans, not a whole schedule, so
    /// it has no per-moment timeline to give (`timeline` stays empty). The
    /// picker's tiles are the estimator's most loaded ones that lie in the
    /// plan (`tile < plan_tiles`) and hold something: the estimator fills
    /// its list up to `REPORTED_TILES` from every tile it sizes, so with
    /// `--planning-tiles 16` it would offer tiles 16–31, which hold nothing.
    pub fn from_plan(r: &ipuc_core::plan::memory::MemoryRejection, plan_tiles: u32) -> Self {
        let live = r
            .live
            .iter()
            .map(|a| LiveAllocation {
                name: a.name.clone(),
                class: kind_class(a.kind),
                bytes: a.bytes,
            })
            .collect();
        let tiles = r
            .tiles
            .iter()
            .filter(|t| t.tile == r.tile || (t.tile < plan_tiles && !t.live.is_empty()))
            .map(|t| TileMemoryMap {
                tile: t.tile,
                allocations: t
                    .live
                    .iter()
                    .map(|a| Allocation {
                        name: a.name.clone(),
                        class: kind_class(a.kind),
                        address: None,
                        size: a.bytes,
                        live: Liveness { first: 0, last: 0 },
                    })
                    .collect(),
            })
            .collect();
        MemoryRejection {
            source: "planner estimate".into(),
            moments: vec![r.moment.clone()],
            tiles,
            refused_tiles: Vec::new(),
            operation: format!(
                "{} ({}, op {} in {})",
                r.op_label, r.op_name, r.op_index, r.region
            ),
            peak_tile: r.tile,
            peak_moment: r.moment.clone(),
            peak_moment_index: r.op_index,
            budget: MemoryBudget {
                tile_bytes: r.budget_bytes,
                support_reserve: r.reserve_bytes,
                ..MemoryBudget::IPU21
            },
            live,
            timeline: Vec::new(),
            tiles_over_budget: Some(r.tiles_over_budget),
            shortfall: None,
        }
    }

    /// One report per rejected candidate of a planner rejection: `r` first,
    /// then its other candidates (lowest peak first).
    pub fn all_from_plan(
        r: &ipuc_core::plan::memory::MemoryRejection,
        plan_tiles: u32,
    ) -> Vec<Self> {
        std::iter::once(r)
            .chain(r.candidates.iter())
            .map(|c| Self::from_plan(c, plan_tiles))
            .collect()
    }

    /// Of the picker's tiles ([`MemoryRejection::tiles`]), how many are
    /// over the budget at their own peak (live bytes plus the reserve).
    pub fn picked_over_budget(&self) -> u32 {
        let moments = self.moments.len().max(1);
        self.tiles
            .iter()
            .filter(|t| {
                t.peak(moments).live_bytes + self.budget.support_reserve > self.budget.tile_bytes
            })
            .count() as u32
    }

    /// Live bytes plus the support reserve: what is compared with the budget.
    pub fn effective_bytes(&self) -> u64 {
        self.live.iter().map(|a| a.bytes).sum::<u64>() + self.budget.support_reserve
    }

    /// Bytes above the budget (0 when it fits).
    pub fn excess_bytes(&self) -> u64 {
        self.effective_bytes()
            .saturating_sub(self.budget.tile_bytes)
    }

    /// Live bytes per allocation class at the peak.
    pub fn bytes_by_class(&self) -> BTreeMap<AllocationClass, u64> {
        let mut m = BTreeMap::new();
        for a in &self.live {
            *m.entry(a.class).or_default() += a.bytes;
        }
        m
    }
}

/// Every plan the planner tried exceeds the per-tile memory budget. A typed
/// error (reachable with `anyhow::Error::downcast_ref`) so the CLI can write
/// the rejection reports and name them in the message: the rejection (its
/// top dozen allocations, [`ipuc_core::plan::memory::DISPLAYED_ALLOCATIONS`])
/// then, once written, the reported candidate's report (the first path) and
/// how many other candidates' reports lie beside it.
#[derive(Debug, thiserror::Error)]
#[error("{0}{reports}", reports = reports_line(.1))]
pub struct PlanOverBudget(
    pub Box<ipuc_core::plan::memory::MemoryRejection>,
    pub Vec<std::path::PathBuf>,
);

/// What a rejection error says about its written reports (nothing until
/// they are written): the reported candidate's report, then how many other
/// candidates' reports lie beside it.
pub fn reports_line(paths: &[std::path::PathBuf]) -> String {
    let Some((first, others)) = paths.split_first() else {
        return String::new();
    };
    let mut s = format!(
        "  report: {} (+ .json: tile picker, live bytes against the budget, allocations at the peak)",
        first.display()
    );
    if !others.is_empty() {
        s.push_str(&format!(
            "\n  and {} more rejected candidate(s) beside it, lowest peak first (…-0001.html to …-{:04}.html)",
            others.len(),
            others.len()
        ));
    }
    s
}
