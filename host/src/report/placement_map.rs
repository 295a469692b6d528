//! The memory map of a placed schedule: every tile's support ranges, patch
//! data and
//! placed buffers with their addresses and lifetimes, for `memory.html`.

use ipuc_core::lower::schedule::{BufferRole, TileSchedule};
use ipuc_core::place::{ReservedKind, TilePlacement};

use super::memory::{
    Allocation, AllocationClass, Liveness, MemoryBudget, MemoryMap, TileMemoryMap,
};

/// Map class of a buffer role.
pub(crate) fn role_class(role: &BufferRole) -> AllocationClass {
    match role {
        BufferRole::Parameter { .. }
        | BufferRole::Iterated { .. }
        | BufferRole::Constant { .. } => AllocationClass::Weight,
        BufferRole::Scratch => AllocationClass::Scratch,
        _ => AllocationClass::Activation,
    }
}

/// Map class of a reserved range.
pub(crate) fn reserved_class(kind: ReservedKind) -> AllocationClass {
    match kind {
        ReservedKind::Code => AllocationClass::Code,
        ReservedKind::ExchangeRows => AllocationClass::ExchangeTable,
        ReservedKind::HostWindow => AllocationClass::HostDescriptors,
        ReservedKind::State => AllocationClass::Reserve,
    }
}

/// The schedule's steps in pre-order, named by their originating op
/// (`compute: encoder.layers.0.mlp.fc1`, …): the moments of every memory
/// report made from a placement.
pub fn schedule_moments(schedule: &TileSchedule) -> Vec<String> {
    let count = schedule.step_count.max(1) as usize;
    let mut moments: Vec<String> = (0..count).map(|i| format!("step {i}")).collect();
    schedule.visit(|step, _| {
        use ipuc_core::lower::schedule::Step;
        let (i, label) = match step {
            Step::Compute(c) => (c.index.0, format!("compute: {}", c.origin.label)),
            Step::Exchange(e) => (e.index.0, format!("exchange: {}", e.origin.label)),
            Step::Repeat(r) => (
                r.index.0,
                format!("repeat ×{}: {}", r.trip_count, r.origin.label),
            ),
        };
        if let Some(m) = moments.get_mut(i as usize) {
            *m = label;
        }
    });
    moments
}

/// Builds the memory map of per-tile `placements` (moments = the schedule's steps in
/// pre-order, named by their originating op). Reserved ranges are live
/// throughout.
pub fn memory_map_from_placement(
    title: &str,
    schedule: &TileSchedule,
    placements: &[TilePlacement],
) -> MemoryMap {
    let count = schedule.step_count.max(1) as usize;
    let moments = schedule_moments(schedule);
    let last = count as u32 - 1;
    let tiles = placements
        .iter()
        .map(|t| {
            // The support ranges as placement charges them (their blocked
            // spans), and the constant patch-data block: live throughout.
            let mut allocations: Vec<Allocation> = t
                .reserved
                .iter()
                .map(|r| Allocation {
                    name: r.name.clone(),
                    class: reserved_class(r.kind),
                    address: Some(r.blocked.start),
                    size: u64::from(r.blocked.end - r.blocked.start),
                    live: Liveness { first: 0, last },
                })
                .chain(t.constants.iter().map(|c| Allocation {
                    name: c.name.clone(),
                    class: AllocationClass::ExchangeTable,
                    address: Some(c.range.start),
                    size: u64::from(c.range.end - c.range.start),
                    live: Liveness { first: 0, last },
                }))
                .collect();
            allocations.extend(t.by_address().into_iter().map(|a| {
                let class = schedule
                    .buffers
                    .get(a.key.0 as usize)
                    .filter(|b| b.id == a.key)
                    .map_or(AllocationClass::Activation, |b| role_class(&b.role));
                Allocation {
                    name: a.name.clone(),
                    class,
                    address: Some(a.range.start),
                    size: u64::from(a.range.end - a.range.start),
                    live: Liveness {
                        first: a.first_step.min(last),
                        last: a.last_step.min(last),
                    },
                }
            }));
            TileMemoryMap {
                tile: t.tile,
                allocations,
            }
        })
        .collect::<Vec<_>>();
    // Every other tile of the C600 holds nothing.
    let used: std::collections::BTreeSet<u32> = placements.iter().map(|p| p.tile).collect();
    let unused_tiles = (0..u32::from(ipuc_core::ipu21::topology::TILE_COUNT))
        .filter(|t| !used.contains(t))
        .collect();
    MemoryMap {
        title: title.to_owned(),
        // The support charge is drawn as the reserved allocations above, at
        // their exact addresses, so it is not added a second time.
        budget: MemoryBudget {
            support_reserve: 0,
            ..MemoryBudget::IPU21
        },
        moments,
        tiles,
        unused_tiles,
    }
}
