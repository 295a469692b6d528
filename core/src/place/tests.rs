//! Placement properties: no overlap of live buffers, alignment, region and
//! element rules, Repeat strides, and the failure report.

use alloc::format;
use alloc::string::ToString;
use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::ir::DType;
use ipuc_target::ipu21::sram::{EXECUTABLE_MEMORY_LIMIT, INTERLEAVED_BASE, LOADER_REACHABLE_LIMIT};
use ipuc_target::ipu21::topology::LogicalTile;

/// Logical tile `n` (tests name tiles by number).
fn lt(n: u32) -> LogicalTile {
    LogicalTile::new(n).unwrap()
}

fn buf(key: u32, bytes: u32, class: RegionClass, life: (u32, u32)) -> BufferRequest {
    BufferRequest {
        key: BufferId(key),
        name: format!("b{key}"),
        bytes,
        copies: 1,
        align: 8,
        class,
        first_step: life.0,
        last_step: life.1,
    }
}

/// The runtime layout a package reserves: entry stub + runtime code in the
/// first element, state block, and a code + exchange-row region.
fn runtime_reserved() -> Vec<ReservedRange> {
    vec![
        ReservedRange {
            name: "runtime code".to_string(),
            kind: ReservedKind::Code,
            range: 0x4C010..0x4D000,
        },
        ReservedRange {
            name: "runtime state".to_string(),
            kind: ReservedKind::State,
            range: 0x58000..0x586E0,
        },
        ReservedRange {
            name: "supervisor code".to_string(),
            kind: ReservedKind::Code,
            range: 0x5C000..0x5E000,
        },
        ReservedRange {
            name: "exchange rows".to_string(),
            kind: ReservedKind::ExchangeRows,
            range: 0x60000..0x61000,
        },
    ]
}

/// Checks every invariant placement promises for `req`.
fn check_invariants(req: &PlacementRequest, placed: &TilePlacement) {
    assert!(placed.peak.bytes <= ipuc_target::ipu21::sram::TILE_MEMORY_BUDGET);
    let blocked: Vec<_> = req.reserved.iter().map(regions::blocked_span).collect();
    for b in &req.buffers {
        let a = placed.allocation(b.key).expect("every buffer placed");
        assert_eq!(a.range.start % b.align, 0, "{} misaligned", b.name);
        assert_eq!(a.stride % b.align, 0, "{} stride misaligned", b.name);
        assert!(a.stride >= b.bytes);
        assert_eq!(a.range.end - a.range.start, a.stride * b.copies.max(1));
        if a.range.is_empty() {
            continue;
        }
        match b.class {
            RegionClass::Interleaved => {
                assert!(a.range.start >= INTERLEAVED_BASE && a.range.end <= LOADER_REACHABLE_LIMIT)
            }
            RegionClass::Standard => {
                let in0 = a.range.end <= EXECUTABLE_MEMORY_LIMIT;
                let in1 =
                    a.range.start >= INTERLEAVED_BASE && a.range.end <= LOADER_REACHABLE_LIMIT;
                assert!(in0 || in1, "{} straddles regions: {:x?}", b.name, a.range);
            }
        }
        for s in &blocked {
            assert!(
                a.range.end <= s.start || a.range.start >= s.end,
                "{} hits reserved {s:x?}",
                b.name
            );
        }
        for c in &req.buffers {
            if c.key <= b.key || !c.overlaps_in_time(b) {
                continue;
            }
            let o = placed.allocation(c.key).unwrap();
            assert!(
                o.range.is_empty() || a.range.end <= o.range.start || o.range.end <= a.range.start,
                "{} {:x?} overlaps {} {:x?}",
                b.name,
                a.range,
                c.name,
                o.range
            );
        }
    }
    for c in &req.conflicts {
        let (a, b) = (
            placed.allocation(c.a).unwrap(),
            placed.allocation(c.b).unwrap(),
        );
        assert!(
            !share_element(&a.range, &b.range),
            "conflict pair shares an element"
        );
    }
}

#[test]
fn disjoint_lifetimes_reuse_memory_and_overlapping_ones_do_not() {
    let req = PlacementRequest {
        tile: lt(3),
        buffers: vec![
            buf(0, 4000, RegionClass::Standard, (0, 2)),
            buf(1, 4000, RegionClass::Standard, (1, 3)),
            buf(2, 4000, RegionClass::Standard, (3, 5)),
        ],
        ..Default::default()
    };
    let p = place_tile(&req).unwrap();
    check_invariants(&req, &p);
    // Buffer 2 starts after buffer 0 dies, so it takes buffer 0's place.
    assert_eq!(p.address(BufferId(0)), p.address(BufferId(2)));
    assert_ne!(p.address(BufferId(0)), p.address(BufferId(1)));
    assert_eq!(p.peak.bytes, 8000);
}

#[test]
fn standard_fills_region1_then_region0_top_down_and_interleaved_stays_in_region1() {
    let req = PlacementRequest {
        tile: lt(0),
        reserved: runtime_reserved(),
        buffers: vec![
            buf(0, 400_000, RegionClass::Standard, (0, 9)),
            buf(1, 100_000, RegionClass::Standard, (0, 9)),
            buf(3, 20_000, RegionClass::Standard, (0, 9)),
            buf(2, 5_000, RegionClass::Interleaved, (0, 9)),
        ],
        conflicts: vec![],
        apart: vec![],
    };
    let p = place_tile(&req).unwrap();
    check_invariants(&req, &p);
    // Interleaved first, at the bottom of region 1; the large standard
    // buffer fills region 1 after it.
    assert_eq!(p.address(BufferId(2)), Some(INTERLEAVED_BASE));
    assert_eq!(p.address(BufferId(0)), Some(INTERLEAVED_BASE + 5_000));
    // Region 0's data area is 0x50000..0x58000, 0x586E0..0x5C000 and
    // 0x64000..0x80000, filled from the top down: the 100 000 bytes end
    // at the top of region 0, the 20 000 at the top of the lowest window
    // (the only one left large enough).
    assert_eq!(
        p.address(BufferId(1)),
        Some(EXECUTABLE_MEMORY_LIMIT - 100_000)
    );
    assert_eq!(p.address(BufferId(3)), Some(0x58000 - 20_000));
    // Code's first element is blocked whole: nothing below 0x50000.
    assert!(p.allocations.iter().all(|a| a.range.start >= 0x50000));
    let names: Vec<_> = p.reserved.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "runtime code",
            "runtime state",
            "supervisor code",
            "exchange rows"
        ]
    );
    assert_eq!(p.reserved[3].blocked, 0x60000..0x64000);
}

#[test]
fn code_end_guard_covers_fetch_lookahead() {
    // Code ending 32 bytes before an element boundary: the 64-byte look-ahead
    // reaches into the next element, which must stay free of data too.
    // Region 1 has 100 000 bytes left, so the larger standard buffer can
    // only use region 0.
    let code = ReservedRange {
        name: "code".to_string(),
        kind: ReservedKind::Code,
        range: 0x4C010..0x4FFE0,
    };
    let full = BufferRequest {
        align: 16,
        ..buf(
            9,
            LOADER_REACHABLE_LIMIT - INTERLEAVED_BASE - 100_000,
            RegionClass::Interleaved,
            (0, 0),
        )
    };
    let req = PlacementRequest {
        tile: lt(0),
        reserved: vec![code.clone()],
        buffers: vec![
            full.clone(),
            buf(
                0,
                EXECUTABLE_MEMORY_LIMIT - 0x54000,
                RegionClass::Standard,
                (0, 0),
            ),
        ],
        conflicts: vec![],
        apart: vec![],
    };
    let p = place_tile(&req).unwrap();
    assert_eq!(p.address(BufferId(0)), Some(0x54000));
    // The image may end 64 bytes below the data's element.
    assert_eq!(p.code_limit(), 0x54000 - 64);
    assert!(p.check_code(0x54000 - 64 - 0x4C010).is_ok());
    assert_eq!(
        p.check_code(0x54000 - 60 - 0x4C010),
        Err(PlaceError::CodeDoesNotFit {
            tile: lt(0),
            image_bytes: 0x54000 - 60 - 0x4C010,
            free_bytes: 0x54000 - 64 - 0x4C010,
            limit: 0x54000 - 64,
        })
    );
    // Eight bytes more do not fit anywhere.
    let over = PlacementRequest {
        buffers: vec![
            full,
            buf(
                0,
                EXECUTABLE_MEMORY_LIMIT - 0x54000 + 8,
                RegionClass::Standard,
                (0, 0),
            ),
        ],
        ..req
    };
    assert!(matches!(place_tile(&over), Err(PlaceError::NoRoom { .. })));
    // With nothing in region 0 the whole region below the top element is free.
    let empty = place_tile(&PlacementRequest {
        tile: lt(0),
        reserved: vec![code],
        ..Default::default()
    })
    .unwrap();
    assert_eq!(empty.code_limit(), EXECUTABLE_MEMORY_LIMIT - 64);
}

#[test]
fn repeat_sequences_use_a_constant_aligned_stride() {
    let mut weights = buf(0, 1000, RegionClass::Interleaved, (1, 40));
    weights.copies = 27;
    weights.align = 32;
    let mut carried = buf(1, 4096, RegionClass::Standard, (1, 40));
    carried.align = 32;
    let req = PlacementRequest {
        tile: lt(1),
        buffers: vec![weights, carried, buf(2, 512, RegionClass::Standard, (5, 6))],
        ..Default::default()
    };
    let p = place_tile(&req).unwrap();
    check_invariants(&req, &p);
    let w = p.allocation(BufferId(0)).unwrap();
    assert_eq!((w.stride, w.copies), (1024, 27));
    assert_eq!(w.range.end - w.range.start, 27 * 1024);
    assert_eq!(w.copy_address(26), Some(w.range.start + 26 * 1024));
    assert_eq!(w.copy_address(27), None);
    let c = p.allocation(BufferId(1)).unwrap();
    assert_eq!(c.copy_address(0), Some(c.range.start));
}

#[test]
fn gemm_left_operand_and_output_get_different_elements() {
    let mut a = buf(0, 2048, RegionClass::Interleaved, (0, 3));
    a.align = 32;
    let mut out = buf(1, 2048, RegionClass::Interleaved, (2, 4));
    out.align = 32;
    let req = PlacementRequest {
        tile: lt(9),
        buffers: vec![a, out],
        conflicts: vec![ElementConflict {
            a: BufferId(0),
            b: BufferId(1),
        }],
        ..Default::default()
    };
    let p = place_tile(&req).unwrap();
    check_invariants(&req, &p);
    // Without the conflict the output would sit right after `a` at 0x80800.
    assert_eq!(p.address(BufferId(1)), Some(0x88000));
}

#[test]
fn send_and_receive_buffers_go_apart_where_there_is_room() {
    let apart = vec![ElementConflict {
        a: BufferId(0),
        b: BufferId(1),
    }];
    // Whether the sent (0) and received (1) buffers share an element.
    let share = |buffers: Vec<BufferRequest>| {
        let req = PlacementRequest {
            tile: lt(9),
            buffers,
            apart: apart.clone(),
            ..Default::default()
        };
        let p = place_tile(&req).unwrap();
        check_invariants(&req, &p);
        let (a, b) = (
            p.allocation(BufferId(0)).unwrap(),
            p.allocation(BufferId(1)).unwrap(),
        );
        share_element(&a.range, &b.range)
    };
    let sent = buf(0, 2048, RegionClass::Interleaved, (0, 3));
    let received = buf(1, 2048, RegionClass::Standard, (0, 3));
    // Region 0 full: the received buffer overflows into region 1, outside
    // the element of the sent one.
    let full = buf(2, 0x80000 - 0x4C000, RegionClass::Standard, (0, 3));
    assert!(!share(vec![sent.clone(), received.clone(), full]));
    // No room for both apart: placed anyway, sharing the element.
    let region1 = LOADER_REACHABLE_LIMIT - INTERLEAVED_BASE;
    let filler = buf(2, region1 - 4096, RegionClass::Interleaved, (0, 3));
    let received = BufferRequest {
        class: RegionClass::Interleaved,
        ..received
    };
    assert!(share(vec![sent, received, filler]));
}

/// Found by `cargo xtask fuzz` (placement target): an empty buffer on a
/// tile whose region is full was `NoRoom` with 0 bytes needed and 0 free.
#[test]
fn an_empty_buffer_fits_where_no_gap_is_left() {
    let region1 = LOADER_REACHABLE_LIMIT - INTERLEAVED_BASE;
    let req = PlacementRequest {
        tile: lt(3),
        buffers: vec![
            buf(0, region1, RegionClass::Interleaved, (0, 5)),
            buf(1, 0, RegionClass::Interleaved, (1, 2)),
        ],
        ..Default::default()
    };
    let placed = place_tile(&req).expect("an empty buffer needs no room");
    check_invariants(&req, &placed);
    let empty = placed.allocation(BufferId(1)).unwrap();
    assert!(empty.range.is_empty() && empty.range.start.is_multiple_of(8));
}

#[test]
fn a_tile_first_use_fragments_is_placed_again_largest_first() {
    // By first use, `a` takes the bottom half and `b` the quarter above
    // it, so `c` (a half and 8 bytes, live with `b`) finds two gaps of
    // about a quarter and a half: no room. Largest first, `c` goes to the
    // bottom (it never lives with `a`, which reuses it) and `b` above it.
    let region1 = LOADER_REACHABLE_LIMIT - INTERLEAVED_BASE;
    let q = region1 / 4 / 8 * 8;
    let req = PlacementRequest {
        tile: lt(5),
        buffers: vec![
            buf(0, 2 * q, RegionClass::Interleaved, (0, 1)),
            buf(1, q, RegionClass::Interleaved, (1, 5)),
            buf(2, 2 * q + 8, RegionClass::Interleaved, (2, 5)),
        ],
        ..Default::default()
    };
    let placed = place_tile(&req).expect("largest first fits");
    check_invariants(&req, &placed);
    let start = |k| placed.allocation(BufferId(k)).unwrap().range.start;
    assert_eq!((start(2), start(0)), (INTERLEAVED_BASE, INTERLEAVED_BASE));
    assert_eq!(start(1), INTERLEAVED_BASE + 2 * q + 8);
}

#[test]
fn failure_names_tile_buffer_and_sizes() {
    let req = PlacementRequest {
        tile: lt(1471),
        buffers: vec![
            buf(0, 300_000, RegionClass::Interleaved, (0, 5)),
            buf(1, 200_000, RegionClass::Interleaved, (2, 3)),
        ],
        ..Default::default()
    };
    let err = place_tile(&req).unwrap_err();
    let region1 = LOADER_REACHABLE_LIMIT - INTERLEAVED_BASE;
    assert_eq!(
        err,
        PlaceError::NoRoom {
            tile: lt(1471),
            buffer: BufferId(1),
            name: "b1".to_string(),
            class: RegionClass::Interleaved,
            bytes_needed: 200_000,
            largest_free: region1 - 300_000,
            live_bytes: 300_000,
            first_step: 2,
        }
    );
    let text = err.to_string();
    assert!(text.contains("tile 1471") && text.contains("`b1`") && text.contains("200000"));
}

#[test]
fn malformed_requests_are_typed_errors() {
    let mut bad = buf(0, 8, RegionClass::Standard, (0, 0));
    bad.align = 12;
    let req = PlacementRequest {
        tile: lt(2),
        buffers: vec![bad],
        ..Default::default()
    };
    assert!(matches!(
        place_tile(&req),
        Err(PlaceError::BadAlignment {
            tile,
            align: 12,
            ..
        }) if tile == lt(2)
    ));

    let req = PlacementRequest {
        tile: lt(2),
        buffers: vec![buf(0, 8, RegionClass::Standard, (4, 3))],
        ..Default::default()
    };
    assert!(matches!(
        place_tile(&req),
        Err(PlaceError::BadLifetime { .. })
    ));

    let mut huge = buf(0, u32::MAX / 2, RegionClass::Standard, (0, 0));
    huge.copies = 3;
    let req = PlacementRequest {
        tile: lt(2),
        buffers: vec![huge],
        ..Default::default()
    };
    assert!(matches!(
        place_tile(&req),
        Err(PlaceError::SizeOverflow { .. })
    ));

    let req = PlacementRequest {
        tile: lt(2),
        buffers: vec![
            buf(0, 8, RegionClass::Standard, (0, 0)),
            buf(0, 8, RegionClass::Standard, (0, 0)),
        ],
        ..Default::default()
    };
    assert!(matches!(
        place_tile(&req),
        Err(PlaceError::DuplicateBuffer { .. })
    ));

    let req = PlacementRequest {
        tile: lt(2),
        buffers: vec![buf(0, 8, RegionClass::Standard, (0, 0))],
        conflicts: vec![ElementConflict {
            a: BufferId(0),
            b: BufferId(5),
        }],
        ..Default::default()
    };
    assert_eq!(
        place_tile(&req),
        Err(PlaceError::UnknownConflictBuffer {
            tile: lt(2),
            buffer: BufferId(5)
        })
    );

    // Found by `cargo xtask fuzz` (placement): a buffer in conflict with
    // itself was accepted and then, trivially, shared its own element.
    let req = PlacementRequest {
        tile: lt(2),
        buffers: vec![buf(0, 8, RegionClass::Standard, (0, 0))],
        conflicts: vec![ElementConflict {
            a: BufferId(0),
            b: BufferId(0),
        }],
        ..Default::default()
    };
    assert_eq!(
        place_tile(&req),
        Err(PlaceError::SelfConflict {
            tile: lt(2),
            buffer: BufferId(0)
        })
    );

    let req = PlacementRequest {
        tile: lt(2),
        reserved: vec![ReservedRange {
            name: "bad".to_string(),
            kind: ReservedKind::State,
            range: 0xE7000..0xE9000,
        }],
        ..Default::default()
    };
    assert!(matches!(
        place_tile(&req),
        Err(PlaceError::ReservedOutsideSram { .. })
    ));
}

fn arb_request() -> impl Strategy<Value = PlacementRequest> {
    let one = (
        1u32..40_000,
        1u32..4,
        prop_oneof![Just(8u32), Just(32), Just(64)],
        any::<bool>(),
        0u32..20,
        0u32..8,
    );
    (
        prop::collection::vec(one, 1..40),
        prop::collection::vec((0usize..40, 0usize..40), 0..6),
    )
        .prop_map(|(bufs, pairs)| {
            let buffers: Vec<BufferRequest> = bufs
                .iter()
                .enumerate()
                .map(
                    |(i, &(bytes, copies, align, inter, first, len))| BufferRequest {
                        key: BufferId(i as u32),
                        name: format!("b{i}"),
                        bytes,
                        copies,
                        align,
                        class: if inter {
                            RegionClass::Interleaved
                        } else {
                            RegionClass::Standard
                        },
                        first_step: first,
                        last_step: first + len,
                    },
                )
                .collect();
            let n = buffers.len();
            let conflicts = pairs
                .into_iter()
                .filter(|&(a, b)| a < n && b < n && a != b)
                .map(|(a, b)| ElementConflict {
                    a: BufferId(a as u32),
                    b: BufferId(b as u32),
                })
                .collect();
            PlacementRequest {
                tile: lt(5),
                reserved: runtime_reserved(),
                buffers,
                conflicts,
                apart: vec![],
            }
        })
}

proptest! {
    #![proptest_config(crate::proptest_config(200))]
    #[test]
    fn placements_satisfy_every_rule_or_report_no_room(req in arb_request()) {
        match place_tile(&req) {
            Ok(p) => check_invariants(&req, &p),
            Err(PlaceError::NoRoom { bytes_needed, largest_free, .. }) => {
                prop_assert!(largest_free < bytes_needed)
            }
            Err(PlaceError::OverBudget { charged, reserved, budget, live, step, .. }) => {
                // The report adds up: reserved + every listed live span.
                prop_assert!(charged > budget);
                let listed: u32 = live.iter().map(|l| l.1).sum();
                prop_assert_eq!(charged, reserved + listed);
                let at_step = req.buffers.iter().filter(|b| b.first_step <= step && step <= b.last_step).count();
                prop_assert_eq!(live.len(), at_step);
            }
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}

#[test]
fn a_peak_over_the_budget_is_an_error_naming_tile_step_and_live_buffers() {
    use ipuc_target::ipu21::sram::{code_charge_bytes, SUPPORT_CHARGE_BYTES, TILE_MEMORY_BUDGET};
    // Two buffers that fit SRAM physically (region 0 data area + region 1)
    // but whose span plus the support and code charges exceeds the budget
    // by 40 bytes at step 3, where both are live.
    let reserved_bytes = SUPPORT_CHARGE_BYTES + code_charge_bytes(20_000).unwrap();
    let room = TILE_MEMORY_BUDGET - reserved_bytes;
    let low = buf(0, 150_000, RegionClass::Standard, (0, 9));
    let high = BufferRequest {
        align: 32,
        ..buf(1, room - 4096 - 150_000, RegionClass::Interleaved, (0, 9))
    };
    let late = buf(2, 4096 + 40, RegionClass::Standard, (3, 4));
    let req = PlacementRequest {
        tile: lt(9),
        reserved: support_reserved(20_000),
        buffers: vec![low.clone(), high.clone(), late],
        ..Default::default()
    };
    match place_tile(&req) {
        Err(PlaceError::OverBudget {
            tile,
            step,
            charged,
            reserved,
            budget,
            live,
        }) => {
            assert_eq!(
                (tile, step, reserved, budget),
                (lt(9), 3, reserved_bytes, TILE_MEMORY_BUDGET)
            );
            assert_eq!(charged - budget, 40);
            assert_eq!(
                live,
                vec![
                    ("b1".to_string(), room - 4096 - 150_000),
                    ("b0".to_string(), 150_000),
                    ("b2".to_string(), 4136)
                ]
            );
        }
        other => panic!("expected OverBudget, got {other:?}"),
    }
    // Exactly at the budget is fine, and the peak says so.
    let fits = PlacementRequest {
        buffers: vec![low, high, buf(2, 4096, RegionClass::Standard, (3, 4))],
        ..req
    };
    let placed = place_tile(&fits).unwrap();
    assert_eq!(placed.peak.bytes, TILE_MEMORY_BUDGET);
    assert_eq!(placed.peak.step, 3);
}

#[test]
fn constant_blocks_are_charged_at_every_step_and_avoid_every_buffer() {
    use ipuc_target::ipu21::sram::{code_charge_bytes, SUPPORT_CHARGE_BYTES, TILE_MEMORY_BUDGET};
    let reserved_bytes = SUPPORT_CHARGE_BYTES + code_charge_bytes(0).unwrap();
    let req = PlacementRequest {
        tile: lt(4),
        reserved: support_reserved(0),
        buffers: vec![
            buf(0, 4000, RegionClass::Standard, (0, 2)),
            buf(1, 4000, RegionClass::Standard, (3, 5)),
        ],
        ..Default::default()
    };
    let mut placed = place_tile(&req).unwrap();
    // The two buffers share an address (disjoint lifetimes); the constant,
    // live at every step, must avoid both.
    assert_eq!(placed.peak.bytes, reserved_bytes + 4000);
    let c = placed.add_constant("patch data", 1000, 8).unwrap();
    for a in &placed.allocations {
        assert!(c.end <= a.range.start || a.range.end <= c.start);
    }
    assert_eq!(c.start % 8, 0);
    assert_eq!(placed.peak.bytes, reserved_bytes + 5000);
    assert_eq!(placed.constants.len(), 1);
    // A block past the budget is an error naming it among the live data.
    let over = TILE_MEMORY_BUDGET - placed.peak.bytes + 1;
    match placed.clone().add_constant("tables", over, 8) {
        Err(PlaceError::OverBudget {
            tile,
            charged,
            live,
            ..
        }) => {
            assert_eq!((tile, charged), (lt(4), TILE_MEMORY_BUDGET + 1));
            assert!(live.contains(&("tables".to_string(), over)));
            assert!(live.contains(&("patch data".to_string(), 1000)));
        }
        other => panic!("expected OverBudget, got {other:?}"),
    }
}

/// The estimator bounds what placement charges, tile by tile: placing the
/// lowered plan with the runtime's ranges (the code area sized by the
/// planner's image estimate) never charges a tile more than
/// `SUPPORT_CHARGE_BYTES` + the planner's peak for that tile, which includes
/// the code charge in whole elements. (Before
/// statics were charged at every moment, the bytes of weights whose
/// storage the planner chose late were missing from earlier moments.)
#[test]
fn placement_never_charges_more_than_the_estimate() {
    use crate::place::{place_schedule, support_reserved};
    use crate::plan::tests::{projected_residual_mlp, residual_mlp};
    use crate::plan::{code::CodeCharge, plan_graph, PlanConfig};
    use ipuc_target::ipu21::sram::SUPPORT_CHARGE_BYTES;
    let graphs = [
        projected_residual_mlp(64, 128, 256, 4),
        residual_mlp(32, 128, 256, 5, DType::F16),
    ];
    for g in &graphs {
        for tiles in [2, 3, 4, 8, 16] {
            let plan = plan_graph(
                g,
                PlanConfig {
                    tiles,
                    beam_width: 8,
                    ..PlanConfig::default()
                },
            )
            .unwrap();
            let s = crate::lower::lower(g, &plan).unwrap();
            let placed =
                place_schedule(&s, |t| support_reserved(plan.code_bytes[t.index()] as u32))
                    .unwrap();
            for t in &placed.tiles {
                assert_eq!(plan.config.code_charge, CodeCharge::WholeElements);
                let estimate = plan.tile_peaks[t.tile.index()];
                assert!(
                    u64::from(t.peak.bytes) <= u64::from(SUPPORT_CHARGE_BYTES) + estimate,
                    "{tiles} tiles: tile {} charged {} at step {} > {} + estimate {estimate}",
                    t.tile.get(),
                    t.peak.bytes,
                    t.peak.step,
                    SUPPORT_CHARGE_BYTES
                );
            }
            assert_eq!(
                plan.peak_bytes,
                plan.tile_peaks.iter().copied().max().unwrap()
            );
        }
    }
}
