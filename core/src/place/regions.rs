//! The address windows each region class may use on a tile, after the
//! reserved ranges (with their element guards) are taken out.

use alloc::vec::Vec;
use core::ops::Range;

use crate::ipu21::sram::{
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

/// The ranges every tile keeps for the runtime (ipuc's fixed layout,
/// `crate::ipu21::sram::layout`): the code area (runtime, generated
/// program, exchange rows; linked images end at `layout::CODE_LIMIT`, so its
/// look-ahead guard ends exactly at the state element) and the runtime
/// state block. Their blocked bytes are exactly
/// [`SUPPORT_CHARGE_BYTES`](crate::ipu21::sram::SUPPORT_CHARGE_BYTES), the
/// charge the planner's data budget is derived from.
pub fn support_reserved() -> Vec<ReservedRange> {
    use crate::ipu21::sram::layout;
    alloc::vec![
        ReservedRange {
            name: "code and exchange rows".into(),
            kind: super::request::ReservedKind::Code,
            range: TILE_MEMORY_BASE..layout::CODE_LIMIT,
        },
        ReservedRange {
            name: "runtime state".into(),
            kind: super::request::ReservedKind::State,
            range: layout::COMPLETION_WORD..layout::DATA_BASE,
        },
    ]
}

/// Validates reserved ranges and returns their blocked spans, sorted and merged.
pub fn blocked_spans(tile: u32, reserved: &[ReservedRange]) -> PlaceResult<Vec<Range<u32>>> {
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

/// Free windows of a class, in preference order: standard buffers fill
/// region 0's data area first and overflow into region 1; interleaved
/// buffers use region 1 only.
pub fn class_windows(class: RegionClass, blocked: &[Range<u32>]) -> Vec<Range<u32>> {
    let mut out = Vec::new();
    if class == RegionClass::Standard {
        out.extend(subtract(REGION0, blocked));
    }
    out.extend(subtract(REGION1, blocked));
    out
}

/// Lowest aligned start of `size` bytes in the windows (in order) avoiding
/// the sorted, merged `occupied` ranges; on failure the largest aligned free
/// range seen.
pub(super) fn first_fit(
    windows: &[Range<u32>],
    occupied: &[Range<u32>],
    size: u32,
    align: u32,
) -> Result<u32, u32> {
    let mut largest = 0u32;
    for w in windows {
        let mut cursor = w.start;
        let gaps = occupied
            .iter()
            .filter(|o| o.end > w.start && o.start < w.end)
            .map(|o| o.start.max(w.start)..o.end.min(w.end))
            .chain(core::iter::once(w.end..w.end));
        for next in gaps {
            let gap_end = next.start;
            if let Some(start) = align_up(cursor, align) {
                if start <= gap_end {
                    if gap_end - start >= size {
                        return Ok(start);
                    }
                    largest = largest.max(gap_end - start);
                }
            }
            cursor = cursor.max(next.end);
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
    fn support_ranges_block_exactly_the_support_charge() {
        use crate::ipu21::sram::{layout, SUPPORT_CHARGE_BYTES};
        let blocked = blocked_spans(0, &support_reserved()).unwrap();
        let bytes: u32 = blocked.iter().map(|r| r.end - r.start).sum();
        assert_eq!(bytes, SUPPORT_CHARGE_BYTES);
        // Data may start right after the state block.
        let windows = class_windows(RegionClass::Standard, &blocked);
        assert_eq!(windows[0].start, layout::DATA_BASE);
    }

    #[test]
    fn windows_skip_blocked_spans() {
        let blocked = merge(alloc::vec![
            0x4C000..0x50000,
            0x58000..0x5C000,
            0x4F000..0x51000
        ]);
        assert_eq!(blocked, alloc::vec![0x4C000..0x51000, 0x58000..0x5C000]);
        let std = class_windows(RegionClass::Standard, &blocked);
        assert_eq!(
            std,
            alloc::vec![0x51000..0x58000, 0x5C000..0x80000, REGION1]
        );
        assert_eq!(
            class_windows(RegionClass::Interleaved, &blocked),
            alloc::vec![REGION1]
        );
    }
}
