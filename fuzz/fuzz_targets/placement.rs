//! Per-tile SRAM placement on byte-driven requests (up to 24 buffers of any
//! size, copies, alignment, region class and lifetime, element conflicts
//! and reserved ranges): placement either fails with a typed error or
//! returns a placement satisfying every invariant, checked here
//! independently — alignment, strides, regions, reserved spans, no overlap
//! of buffers live at once, conflicting pairs in different elements, the
//! budget.
#![no_main]

use ipuc_core::place::{
    blocked_span, place_tile, share_element, support_reserved, BufferId, BufferRequest,
    ElementConflict, PlaceError, PlacementRequest, RegionClass, ReservedKind, ReservedRange,
};
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::ipu21::sram::{
    EXECUTABLE_MEMORY_LIMIT, INTERLEAVED_BASE, LOADER_REACHABLE_LIMIT, TILE_MEMORY_BUDGET,
};
use libfuzzer_sys::fuzz_target;

mod bytes;
use bytes::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut b = Bytes(data);
    let mut reserved = support_reserved(4 * (b.u32() % 0x8000));
    if b.u8() % 4 == 0 {
        let start = 0x5C000 + 4 * (b.u32() % 0x8000);
        let len = 4 * (b.u32() % 0x4000);
        reserved.push(ReservedRange {
            name: "fuzz".into(),
            kind: [ReservedKind::Code, ReservedKind::State, ReservedKind::ExchangeRows][usize::from(b.u8() % 3)],
            range: start..start + len,
        });
    }
    let n = 1 + b.u8() % 24;
    let buffers: Vec<BufferRequest> = (0..n)
        .map(|i| {
            let bytes = match b.u8() % 8 {
                0 => b.u32(),
                1 => 0,
                _ => 4 * (1 + b.u32() % 12_000),
            };
            let first_step = u32::from(b.u8() % 16);
            BufferRequest {
                key: BufferId(u32::from(i)),
                name: format!("b{i}"),
                bytes,
                copies: u32::from(b.u8() % 5),
                align: [4, 8, 16, 32, 64, 3, 0][usize::from(b.u8() % 7)],
                class: if b.u8() % 3 == 0 {
                    RegionClass::Interleaved
                } else {
                    RegionClass::Standard
                },
                first_step,
                last_step: first_step + u32::from(b.u8() % 8),
            }
        })
        .collect();
    let conflicts = (0..b.u8() % 6)
        .map(|_| ElementConflict {
            a: BufferId(u32::from(b.u8() % (n + 1))),
            b: BufferId(u32::from(b.u8() % (n + 1))),
        })
        .collect();
    // Soft pairs: kept apart where the tile has room, else dropped.
    let apart = (0..b.u8() % 6)
        .map(|_| ElementConflict {
            a: BufferId(u32::from(b.u8() % n.max(1))),
            b: BufferId(u32::from(b.u8() % n.max(1))),
        })
        .filter(|c| c.a != c.b)
        .collect();
    let req = PlacementRequest {
        tile: LogicalTile::new(u32::from(b.u8())).unwrap_or_default(),
        reserved,
        buffers,
        conflicts,
        apart,
    };
    let placed = match place_tile(&req) {
        Ok(p) => p,
        Err(e) => {
            let _ = e.to_string();
            if let PlaceError::NoRoom { bytes_needed, largest_free, .. } = e {
                assert!(largest_free < bytes_needed);
            }
            return;
        }
    };
    assert!(placed.peak.bytes <= TILE_MEMORY_BUDGET);
    let blocked: Vec<_> = req.reserved.iter().map(blocked_span).collect();
    for buf in &req.buffers {
        let a = placed.allocation(buf.key).expect("every buffer placed");
        assert_eq!(a.range.start % buf.align, 0, "{} misaligned", buf.name);
        assert_eq!(a.stride % buf.align, 0, "{} stride misaligned", buf.name);
        assert!(a.stride >= buf.bytes);
        assert_eq!(
            u64::from(a.range.end - a.range.start),
            u64::from(a.stride) * u64::from(buf.copies.max(1))
        );
        if a.range.is_empty() {
            continue;
        }
        match buf.class {
            RegionClass::Interleaved => assert!(
                a.range.start >= INTERLEAVED_BASE && a.range.end <= LOADER_REACHABLE_LIMIT
            ),
            RegionClass::Standard => {
                let in0 = a.range.end <= EXECUTABLE_MEMORY_LIMIT;
                let in1 =
                    a.range.start >= INTERLEAVED_BASE && a.range.end <= LOADER_REACHABLE_LIMIT;
                assert!(in0 || in1, "{} straddles regions: {:x?}", buf.name, a.range);
            }
        }
        for s in &blocked {
            assert!(
                a.range.end <= s.start || a.range.start >= s.end,
                "{} hits reserved {s:x?}",
                buf.name
            );
        }
        for c in &req.buffers {
            if c.key <= buf.key || !c.overlaps_in_time(buf) {
                continue;
            }
            let o = placed.allocation(c.key).unwrap();
            assert!(
                o.range.is_empty() || a.range.end <= o.range.start || o.range.end <= a.range.start,
                "{} {:x?} overlaps {} {:x?}",
                buf.name,
                a.range,
                c.name,
                o.range
            );
        }
    }
    for c in &req.conflicts {
        let (a, b) = (placed.allocation(c.a).unwrap(), placed.allocation(c.b).unwrap());
        assert!(!share_element(&a.range, &b.range), "conflict pair shares an element");
    }
});
