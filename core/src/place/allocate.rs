//! Liveness-based linear-scan allocation of one tile's buffers.
//!
//! Buffers are taken in order of first use (longest-lived and largest first
//! among equals) and each gets the lowest aligned address, in its class's
//! preferred window, that no buffer live at an overlapping step occupies and
//! that shares no effective element with a placed conflict partner — nor,
//! in a first attempt, with a placed `apart` partner (a tile that does not
//! fit that way is placed again with the conflicts alone, and then largest
//! first).

use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::ops::Range;

use super::error::{PlaceError, PlaceResult};
use super::map::{Allocation, MemoryPeak, ReservedEntry, TilePlacement};
use super::regions::{blocked_span, blocked_spans, class_windows, element_span, first_fit, merge};
use super::request::{BufferId, BufferRequest, PlacementRequest, RegionClass};
use ipuc_target::ipu21::sram::TILE_MEMORY_BUDGET;

/// Places every buffer of one tile.
///
/// The tile is charged, at every step, the blocked bytes of its reserved
/// ranges plus the span (all copies, alignment padding) of every buffer
/// live then — the same quantity the planner's estimator bounds
/// ([`ipuc_target::ipu21::sram::SUPPORT_CHARGE_BYTES`] + its per-tile peak). A
/// peak above [`TILE_MEMORY_BUDGET`] is [`PlaceError::OverBudget`].
pub fn place_tile(request: &PlacementRequest) -> PlaceResult<TilePlacement> {
    let tile = request.tile;
    let blocked = blocked_spans(tile, &request.reserved)?;
    let spans = validate(request)?;
    let hard = conflict_partners(request, &request.conflicts)?;
    let fit =
        |partners: &[Vec<usize>], order| fit_buffers(request, &spans, partners, &blocked, order);
    let with_apart = if request.apart.is_empty() {
        None
    } else {
        let mut both = hard.clone();
        for (b, extra) in both
            .iter_mut()
            .zip(conflict_partners(request, &request.apart)?)
        {
            b.extend(extra);
        }
        fit(&both, Order::FirstUse).ok()
    };
    let placed = match with_apart {
        Some(placed) => placed,
        // A tile that first use fragments can still fit by size (ViT-B/16
        // at batch 32 left a 211,200-byte staging buffer a 165,072-byte
        // free range at a 501,336-byte peak); the error reported is first
        // use's.
        None => fit(&hard, Order::FirstUse)
            .or_else(|e| fit(&hard, Order::LargestFirst).map_err(|_| e))?,
    };
    let mut allocations: Vec<Allocation> = request
        .buffers
        .iter()
        .zip(placed)
        .zip(&spans)
        .map(|((b, r), &span)| {
            // Invariant: `fit_buffers` placed every buffer or returned.
            let range = r.unwrap_or(0..span);
            Allocation {
                key: b.key,
                name: b.name.clone(),
                class: b.class,
                stride: b.stride().unwrap_or(span),
                range,
                copies: b.copies.max(1),
                bytes: b.bytes,
                first_step: b.first_step,
                last_step: b.last_step,
            }
        })
        .collect();
    allocations.sort_by_key(|a| a.key);

    let mut reserved: Vec<ReservedEntry> = request
        .reserved
        .iter()
        .map(|r| ReservedEntry {
            name: r.name.clone(),
            kind: r.kind,
            range: r.range.clone(),
            blocked: blocked_span(r),
        })
        .collect();
    reserved.sort_by_key(|r| (r.range.start, r.range.end));
    let reserved_bytes: u32 = blocked.iter().map(|r| r.end - r.start).sum();
    let peak = peak_live(&allocations, reserved_bytes);
    if peak.bytes > TILE_MEMORY_BUDGET {
        let mut live: Vec<(String, u32)> = allocations
            .iter()
            .filter(|a| a.first_step <= peak.step && peak.step <= a.last_step)
            .map(|a| (a.name.clone(), a.range.end - a.range.start))
            .collect();
        live.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        return Err(PlaceError::OverBudget {
            tile,
            step: peak.step,
            charged: peak.bytes,
            reserved: reserved_bytes,
            budget: TILE_MEMORY_BUDGET,
            live,
        });
    }
    Ok(TilePlacement {
        tile,
        reserved,
        allocations,
        constants: Vec::new(),
        peak,
    })
}

/// Partners per buffer index under `pairs` (symmetric). Keys are unique
/// (`validate`), so a sorted key index finds each in log time.
fn conflict_partners(
    request: &PlacementRequest,
    pairs: &[super::request::ElementConflict],
) -> PlaceResult<Vec<Vec<usize>>> {
    let tile = request.tile;
    let mut by_key: Vec<(BufferId, usize)> = request
        .buffers
        .iter()
        .enumerate()
        .map(|(i, b)| (b.key, i))
        .collect();
    by_key.sort_unstable();
    let index_of = |key: BufferId| -> PlaceResult<usize> {
        by_key
            .binary_search_by_key(&key, |&(k, _)| k)
            .map(|at| by_key[at].1)
            .map_err(|_| PlaceError::UnknownConflictBuffer { tile, buffer: key })
    };
    let mut partners: Vec<Vec<usize>> = alloc::vec![Vec::new(); request.buffers.len()];
    for c in pairs {
        if c.a == c.b {
            return Err(PlaceError::SelfConflict { tile, buffer: c.a });
        }
        let (a, b) = (index_of(c.a)?, index_of(c.b)?);
        partners[a].push(b);
        partners[b].push(a);
    }
    Ok(partners)
}

/// The order [`fit_buffers`] takes buffers in (interleaved-class first in
/// both).
#[derive(Clone, Copy, Debug)]
enum Order {
    /// By first use, longest-lived and largest first among equals.
    FirstUse,
    /// By size, largest first, then by first use.
    LargestFirst,
}

/// Each buffer's byte range (`spans` long), taken in placement order: the
/// first fit in its class's windows around `blocked` that no buffer live
/// at the same time occupies and that shares no element with a placed
/// conflict partner.
fn fit_buffers(
    request: &PlacementRequest,
    spans: &[u32],
    partners: &[Vec<usize>],
    blocked: &[Range<u32>],
    order_by: Order,
) -> PlaceResult<Vec<Option<Range<u32>>>> {
    // Interleaved-class buffers first: they can only use region 1, while
    // standard buffers may take whatever region 0 or 1 leaves (any order
    // is correct, as every fit checks all placed buffers live at the time).
    let mut order: Vec<usize> = (0..request.buffers.len()).collect();
    match order_by {
        Order::FirstUse => order.sort_by_key(|&i| {
            let b = &request.buffers[i];
            (
                b.class != RegionClass::Interleaved,
                b.first_step,
                Reverse(b.last_step),
                Reverse(spans[i]),
                b.key,
            )
        }),
        Order::LargestFirst => order.sort_by_key(|&i| {
            let b = &request.buffers[i];
            (
                b.class != RegionClass::Interleaved,
                Reverse(spans[i]),
                b.first_step,
                b.key,
            )
        }),
    }

    let mut placed: Vec<Option<Range<u32>>> = alloc::vec![None; request.buffers.len()];
    for &i in &order {
        let buf = &request.buffers[i];
        let mut occupied: Vec<Range<u32>> = Vec::new();
        for (j, r) in placed.iter().enumerate() {
            if let Some(r) = r {
                if !r.is_empty() && request.buffers[j].overlaps_in_time(buf) {
                    occupied.push(r.clone());
                }
            }
        }
        let live_bytes: u64 = occupied.iter().map(|r| u64::from(r.end - r.start)).sum();
        for &p in &partners[i] {
            if let Some(r) = &placed[p] {
                if !r.is_empty() {
                    occupied.push(element_span(r));
                }
            }
        }
        let occupied = merge(occupied);
        let windows = class_windows(buf.class, blocked);
        match first_fit(&windows, &occupied, spans[i], buf.align) {
            Ok(start) => placed[i] = Some(start..start + spans[i]),
            Err(largest_free) => {
                return Err(PlaceError::NoRoom {
                    tile: request.tile,
                    buffer: buf.key,
                    name: buf.name.clone(),
                    class: buf.class,
                    bytes_needed: spans[i],
                    largest_free,
                    live_bytes: u32::try_from(live_bytes).unwrap_or(u32::MAX),
                    first_step: buf.first_step,
                })
            }
        }
    }
    Ok(placed)
}

/// Checks every buffer and returns its span (all copies).
fn validate(request: &PlacementRequest) -> PlaceResult<Vec<u32>> {
    let tile = request.tile;
    let mut keys: Vec<BufferId> = request.buffers.iter().map(|b| b.key).collect();
    keys.sort();
    if let Some(w) = keys.windows(2).find(|w| w[0] == w[1]) {
        return Err(PlaceError::DuplicateBuffer { tile, buffer: w[0] });
    }
    request
        .buffers
        .iter()
        .map(|b: &BufferRequest| {
            if !b.align.is_power_of_two() {
                return Err(PlaceError::BadAlignment {
                    tile,
                    buffer: b.key,
                    align: b.align,
                });
            }
            if b.last_step < b.first_step {
                return Err(PlaceError::BadLifetime {
                    tile,
                    buffer: b.key,
                    first_step: b.first_step,
                    last_step: b.last_step,
                });
            }
            b.span().ok_or(PlaceError::SizeOverflow {
                tile,
                buffer: b.key,
                bytes: b.bytes,
                copies: b.copies,
            })
        })
        .collect()
}

/// Peak of reserved bytes plus allocations live at one step.
fn peak_live(allocations: &[Allocation], reserved_bytes: u32) -> MemoryPeak {
    // (step, delta) events: a buffer adds its span at its first step and
    // removes it after its last.
    let mut events: Vec<(u64, i64)> = Vec::with_capacity(allocations.len() * 2);
    for a in allocations {
        let span = i64::from(a.range.end - a.range.start);
        events.push((u64::from(a.first_step), span));
        events.push((u64::from(a.last_step) + 1, -span));
    }
    events.sort_by_key(|&(s, d)| (s, d));
    let mut live: i64 = 0;
    let mut best = MemoryPeak {
        bytes: reserved_bytes,
        step: 0,
    };
    let mut k = 0;
    while k < events.len() {
        let step = events[k].0;
        while k < events.len() && events[k].0 == step {
            live += events[k].1;
            k += 1;
        }
        let total = i64::from(reserved_bytes) + live;
        if total > i64::from(best.bytes) {
            best = MemoryPeak {
                bytes: u32::try_from(total).unwrap_or(u32::MAX),
                step: u32::try_from(step).unwrap_or(u32::MAX),
            };
        }
    }
    best
}
