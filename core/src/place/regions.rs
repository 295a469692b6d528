//! The address windows each region class may use on a tile, after the
//! reserved ranges (with their element guards) are taken out.

use alloc::vec::Vec;
use core::ops::Range;
use ipuc_target::ipu21::topology::LogicalTile;

use ipuc_target::ipu21::sram::{
    effective_element, ELEMENT_SIZE, EXECUTABLE_MEMORY_LIMIT, INTERLEAVED_BASE,
    INTERLEAVED_ELEMENT_SIZE, LOADER_REACHABLE_LIMIT, SUPERVISOR_FETCH_LOOKAHEAD, TILE_MEMORY_BASE,
    TILE_MEMORY_END,
};

use super::error::{PlaceError, PlaceResult};
use super::request::{RegionClass, ReservedRange};

/// Addresses of the effective element holding `addr`: 16 KiB standard
/// elements below the interleaved base, 32 KiB effective elements above it
/// (`docs/facts/ipu21-target.md` §1.2).
pub fn element_bounds(addr: u32) -> Range<u32> {
    if addr < INTERLEAVED_BASE {
        let start = addr - addr % ELEMENT_SIZE;
        start..start + ELEMENT_SIZE
    } else {
        let start = addr - (addr - INTERLEAVED_BASE) % INTERLEAVED_ELEMENT_SIZE;
        start..start + INTERLEAVED_ELEMENT_SIZE
    }
}

/// The effective elements a non-empty byte range touches, as the address
/// span from the first element's start to the last element's end.
pub fn element_span(range: &Range<u32>) -> Range<u32> {
    let last = range.end.max(range.start + 1) - 1;
    element_bounds(range.start).start..element_bounds(last).end
}

/// Do two non-empty byte ranges touch a common effective element?
pub fn share_element(a: &Range<u32>, b: &Range<u32>) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let (a0, a1) = (effective_element(a.start), effective_element(a.end - 1));
    let (b0, b1) = (effective_element(b.start), effective_element(b.end - 1));
    a0 <= b1 && b0 <= a1
}

/// Bytes a reserved range keeps data away from: the range itself, or for
/// code and exchange rows every element it touches including the 64-byte
/// fetch look-ahead past its end (`docs/facts/ipu21-target.md` §2.10 rules 2–3).
pub fn blocked_span(reserved: &ReservedRange) -> Range<u32> {
    if reserved.kind.isolates_elements() {
        let guarded_end = reserved
            .range
            .end
            .saturating_add(SUPERVISOR_FETCH_LOOKAHEAD)
            .min(TILE_MEMORY_END);
        element_span(&(reserved.range.start..guarded_end))
    } else {
        reserved.range.clone()
    }
}

/// The ranges every tile keeps for the runtime (ipuc's layout,
/// `ipuc_target::ipu21::sram::layout`): the code area from the bottom of region 0
/// (runtime, kernel stubs, generated program, argument blocks, exchange
/// rows: `image_bytes` from the load address, the planner's estimate of the
/// tile's linked image) and the runtime state block at the top of region 0.
/// Their blocked bytes are exactly
/// [`code_charge_bytes`](ipuc_target::ipu21::sram::code_charge_bytes)`(image_bytes)`
/// plus [`SUPPORT_CHARGE_BYTES`](ipuc_target::ipu21::sram::SUPPORT_CHARGE_BYTES),
/// the charges the planner's per-tile usage includes. An estimate past
/// [`MAX_IMAGE_BYTES`](ipuc_target::ipu21::sram::MAX_IMAGE_BYTES) is clamped to it
/// (the planner never accepts one, as the code charge is undefined there).
pub fn support_reserved(image_bytes: u32) -> Vec<ReservedRange> {
    use ipuc_target::ipu21::sram::{layout, APPLICATION_LOAD_BASE, MAX_IMAGE_BYTES};
    alloc::vec![
        ReservedRange {
            name: "code, argument blocks and exchange rows".into(),
            kind: super::request::ReservedKind::Code,
            range: TILE_MEMORY_BASE..APPLICATION_LOAD_BASE + image_bytes.min(MAX_IMAGE_BYTES),
        },
        ReservedRange {
            name: "runtime state".into(),
            kind: super::request::ReservedKind::State,
            range: layout::STATE_BASE..layout::STATE_END,
        },
    ]
}

/// Validates reserved ranges and returns their blocked spans, sorted and merged.
pub fn blocked_spans(
    tile: LogicalTile,
    reserved: &[ReservedRange],
) -> PlaceResult<Vec<Range<u32>>> {
    let mut spans = Vec::with_capacity(reserved.len());
    for r in reserved {
        if r.range.is_empty() || r.range.start < TILE_MEMORY_BASE || r.range.end > TILE_MEMORY_END {
            return Err(PlaceError::ReservedOutsideSram {
                tile,
                name: r.name.clone(),
                range: r.range.clone(),
            });
        }
        spans.push(blocked_span(r));
    }
    Ok(merge(spans))
}

/// Sorts and merges overlapping or touching ranges.
pub fn merge(mut spans: Vec<Range<u32>>) -> Vec<Range<u32>> {
    spans.retain(|s| !s.is_empty());
    spans.sort_by_key(|s| (s.start, s.end));
    let mut out: Vec<Range<u32>> = Vec::with_capacity(spans.len());
    for s in spans {
        match out.last_mut() {
            Some(last) if s.start <= last.end => last.end = last.end.max(s.end),
            _ => out.push(s),
        }
    }
    out
}

/// `window` minus the sorted, merged `blocked` spans.
fn subtract(window: Range<u32>, blocked: &[Range<u32>]) -> Vec<Range<u32>> {
    let mut out = Vec::new();
    let mut cursor = window.start;
    for b in blocked {
        if b.end <= cursor || b.start >= window.end {
            continue;
        }
        if b.start > cursor {
            out.push(cursor..b.start);
        }
        cursor = cursor.max(b.end);
    }
    if cursor < window.end {
        out.push(cursor..window.end);
    }
    out
}

/// Region 0 (`TILE_MEMORY_BASE..0x80000`): the only executable region
/// (`docs/facts/ipu21-target.md` §1.2).
pub const REGION0: Range<u32> = TILE_MEMORY_BASE..EXECUTABLE_MEMORY_LIMIT;

/// Region 1 up to the loader-reachable limit: every placed buffer may be
/// host-initialised, so nothing goes in the top 0x450 bytes the loader
/// cannot write (`docs/facts/ipu21-target.md` §1.2).
pub const REGION1: Range<u32> = INTERLEAVED_BASE..LOADER_REACHABLE_LIMIT;

/// A free address window and the direction it is filled in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The addresses.
    pub range: Range<u32>,
    /// Filled from the top down (region 0, so code keeps the bottom free).
    pub top_down: bool,
}

/// Free windows of a class, in preference order: standard data fills
/// region 1 first, then region 0 from the top down, so the bottom of
/// region 0 above each tile's code estimate stays free as long as possible
/// (a linked image longer than its estimate may still use it); interleaved
/// buffers use region 1 only.
pub fn class_windows(class: RegionClass, blocked: &[Range<u32>]) -> Vec<Window> {
    let mut out: Vec<Window> = subtract(REGION1, blocked)
        .into_iter()
        .map(|range| Window {
            range,
            top_down: false,
        })
        .collect();
    if class == RegionClass::Standard {
        let mut low: Vec<Range<u32>> = subtract(REGION0, blocked);
        low.reverse();
        out.extend(low.into_iter().map(|range| Window {
            range,
            top_down: true,
        }));
    }
    out
}

/// An aligned start of `size` bytes in the windows (in order; the lowest
/// one in a bottom-up window, the highest in a top-down one) avoiding the
/// sorted, merged `occupied` ranges; on failure the largest aligned free
/// range seen. An empty block occupies nothing, so it fits even where no
/// gap is left: at the first window's aligned start.
pub(super) fn first_fit(
    windows: &[Window],
    occupied: &[Range<u32>],
    size: u32,
    align: u32,
) -> Result<u32, u32> {
    if size == 0 {
        return Ok(windows
            .first()
            .and_then(|w| align_up(w.range.start, align))
            .unwrap_or(0));
    }
    let mut largest = 0u32;
    for w in windows {
        let w_range = &w.range;
        // Free gaps of the window, in address order.
        let mut gaps: Vec<Range<u32>> = Vec::new();
        let mut cursor = w_range.start;
        let cuts = occupied
            .iter()
            .filter(|o| o.end > w_range.start && o.start < w_range.end)
            .map(|o| o.start.max(w_range.start)..o.end.min(w_range.end))
            .chain(core::iter::once(w_range.end..w_range.end));
        for next in cuts {
            if next.start > cursor {
                gaps.push(cursor..next.start);
            }
            cursor = cursor.max(next.end);
        }
        if w.top_down {
            for g in gaps.iter().rev() {
                let Some(top) = g.end.checked_sub(size) else {
                    continue;
                };
                let start = top - top % align.max(1);
                if start >= g.start {
                    return Ok(start);
                }
                if let Some(s) = align_up(g.start, align) {
                    largest = largest.max(g.end.saturating_sub(s));
                }
            }
        } else {
            for g in &gaps {
                if let Some(start) = align_up(g.start, align) {
                    if start <= g.end {
                        if g.end - start >= size {
                            return Ok(start);
                        }
                        largest = largest.max(g.end - start);
                    }
                }
            }
        }
    }
    Err(largest)
}

fn align_up(x: u32, align: u32) -> Option<u32> {
    let a = align.max(1);
    x.checked_add(a - 1).map(|v| v & !(a - 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::place::request::ReservedKind;
    use alloc::string::ToString;

    #[test]
    fn element_bounds_follow_the_two_granules() {
        assert_eq!(element_bounds(0x4C010), 0x4C000..0x50000);
        assert_eq!(element_bounds(0x7FFFF), 0x7C000..0x80000);
        assert_eq!(element_bounds(0x80000), 0x80000..0x88000);
        assert_eq!(element_bounds(0x8FFFF), 0x88000..0x90000);
        assert!(share_element(&(0x80000..0x80010), &(0x87FF0..0x88000)));
        assert!(!share_element(&(0x80000..0x88000), &(0x88000..0x88010)));
        assert!(!share_element(&(0x7C000..0x80000), &(0x80000..0x80004)));
    }

    #[test]
    fn code_blocks_whole_elements_plus_lookahead() {
        let code = ReservedRange {
            name: "code".to_string(),
            kind: ReservedKind::Code,
            range: 0x5C000..0x63FC8,
        };
        // 0x63FC8 + 64 crosses into the element at 0x64000.
        assert_eq!(blocked_span(&code), 0x5C000..0x68000);
        let state = ReservedRange {
            kind: ReservedKind::State,
            ..code.clone()
        };
        assert_eq!(blocked_span(&state), 0x5C000..0x63FC8);
    }

    #[test]
    fn support_ranges_block_exactly_the_code_and_state_charges() {
        use ipuc_target::ipu21::sram::{code_charge_bytes, layout, SUPPORT_CHARGE_BYTES};
        for image in [0, 20_000, 49_872, 100_000] {
            let blocked = blocked_spans(LogicalTile::default(), &support_reserved(image)).unwrap();
            let bytes: u32 = blocked.iter().map(|r| r.end - r.start).sum();
            assert_eq!(
                bytes,
                code_charge_bytes(image).unwrap() + SUPPORT_CHARGE_BYTES,
                "image of {image} bytes"
            );
            // Standard data fills region 1 first, then region 0 from just
            // below the state block down to the code's last element.
            let windows = class_windows(RegionClass::Standard, &blocked);
            assert_eq!(windows[0].range, REGION1);
            assert_eq!(windows[1].range.end, layout::STATE_BASE);
            assert_eq!(
                windows[1].range.start,
                TILE_MEMORY_BASE + code_charge_bytes(image).unwrap()
            );
            assert!(windows[1].top_down);
        }
    }

    #[test]
    fn windows_skip_blocked_spans() {
        let blocked = merge(alloc::vec![
            0x4C000..0x50000,
            0x58000..0x5C000,
            0x4F000..0x51000
        ]);
        assert_eq!(blocked, alloc::vec![0x4C000..0x51000, 0x58000..0x5C000]);
        let std: Vec<Range<u32>> = class_windows(RegionClass::Standard, &blocked)
            .into_iter()
            .map(|w| w.range)
            .collect();
        assert_eq!(
            std,
            alloc::vec![REGION1, 0x5C000..0x80000, 0x51000..0x58000]
        );
        assert_eq!(
            class_windows(RegionClass::Interleaved, &blocked)
                .into_iter()
                .map(|w| w.range)
                .collect::<Vec<_>>(),
            alloc::vec![REGION1]
        );
    }

    #[test]
    fn top_down_windows_fill_from_their_top() {
        let windows = [Window {
            range: 0x60000..0x70000,
            top_down: true,
        }];
        assert_eq!(first_fit(&windows, &[], 0x100, 32), Ok(0x6FF00));
        assert_eq!(
            first_fit(
                &windows,
                core::slice::from_ref(&(0x6FF00..0x70000)),
                0x100,
                32
            ),
            Ok(0x6FE00)
        );
        // Unaligned top: the start rounds down.
        assert_eq!(
            first_fit(&windows, core::slice::from_ref(&(0x6FFF8..0x70000)), 8, 32),
            Ok(0x6FFE0)
        );
        assert_eq!(first_fit(&windows, &[], 0x10001, 32), Err(0x10000));
    }
}
