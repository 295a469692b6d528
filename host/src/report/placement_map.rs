//! The memory map of a placed schedule: every tile's support ranges, patch
//! data and
//! placed buffers with their addresses and lifetimes, for `memory.html`.

use ipuc_core::lower::schedule::{BufferRole, TileSchedule};
use ipuc_core::lower::BufferId;
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

/// The schedule's last step (every memory report's last moment).
pub(crate) fn last_step(schedule: &TileSchedule) -> u32 {
    schedule.step_count.max(1) - 1
}

/// Map class of buffer `key` of `schedule` (from its role).
pub(crate) fn buffer_class(schedule: &TileSchedule, key: BufferId) -> AllocationClass {
    schedule
        .buffers
        .get(key.0 as usize)
        .filter(|b| b.id == key)
        .map_or(AllocationClass::Activation, |b| role_class(&b.role))
}

/// One allocation row of a memory map: buffer `key` of `schedule` (its
/// class from its role), `size` bytes at `address` (`None` before
/// placement), live over steps `first..=last` clamped to the schedule. The
/// one row function of every memory report made from a placement or its
/// requests.
pub(crate) fn buffer_row(
    schedule: &TileSchedule,
    key: BufferId,
    name: &str,
    address: Option<u32>,
    size: u64,
    (first, last): (u32, u32),
) -> Allocation {
    let end = last_step(schedule);
    let first = first.min(end);
    Allocation {
        name: name.to_owned(),
        class: buffer_class(schedule, key),
        address,
        size,
        live: Liveness {
            first,
            last: last.min(end).max(first),
        },
    }
}

/// A range live throughout the schedule (support ranges, constant blocks).
pub(crate) fn static_row(
    schedule: &TileSchedule,
    name: &str,
    class: AllocationClass,
    address: Option<u32>,
    size: u64,
) -> Allocation {
    Allocation {
        name: name.to_owned(),
        class,
        address,
        size,
        live: Liveness {
            first: 0,
            last: last_step(schedule),
        },
    }
}

/// One placed tile's map: its support ranges as placement charges them
/// (their blocked spans) and its constant blocks (patch data), live
/// throughout, then its buffers by address.
pub fn tile_map(schedule: &TileSchedule, t: &TilePlacement) -> TileMemoryMap {
    let mut allocations: Vec<Allocation> = t
        .reserved
        .iter()
        .map(|r| {
            static_row(
                schedule,
                &r.name,
                reserved_class(r.kind),
                Some(r.blocked.start),
                u64::from(r.blocked.end - r.blocked.start),
            )
        })
        .chain(t.constants.iter().map(|c| {
            static_row(
                schedule,
                &c.name,
                AllocationClass::ExchangeTable,
                Some(c.range.start),
                u64::from(c.range.end - c.range.start),
            )
        }))
        .collect();
    allocations.extend(t.by_address().into_iter().map(|a| {
        buffer_row(
            schedule,
            a.key,
            &a.name,
            Some(a.range.start),
            u64::from(a.range.end - a.range.start),
            (a.first_step, a.last_step),
        )
    }));
    TileMemoryMap {
        // The report's JSON numbers tiles by their raw logical id.
        tile: u32::from(t.tile.get()),
        allocations,
    }
}

/// Builds the memory map of per-tile `placements` (moments = the schedule's steps in
/// pre-order, named by their originating op). Reserved ranges are live
/// throughout.
pub fn memory_map_from_placement(
    title: &str,
    schedule: &TileSchedule,
    placements: &[TilePlacement],
) -> MemoryMap {
    let moments = schedule_moments(schedule);
    let tiles = placements.iter().map(|t| tile_map(schedule, t)).collect();
    // Every other tile of the C600 holds nothing.
    let used: std::collections::BTreeSet<u32> =
        placements.iter().map(|p| u32::from(p.tile.get())).collect();
    let unused_tiles = (0..u32::from(ipuc_target::ipu21::topology::TILE_COUNT))
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
