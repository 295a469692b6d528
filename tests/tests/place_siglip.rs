//! SRAM placement of the lowered siglip-small program: every block on every
//! tile gets an address that respects liveness, alignment, region classes,
//! the code/row element guards, the AMP element rule and the Repeat stride.

use ipuc::model::{build_siglip, ModelOptions, VisionConfig};
use ipuc_core::lower::schedule::{BufferRole, MemoryClass, Step, TileSchedule};
use ipuc_core::lower::{check::check, lower};
use ipuc_core::place::{
    place_schedule, share_element, PlaceError, ReservedKind, ReservedRange, REGION0, REGION1,
};
use ipuc_core::plan::{plan_graph, PlanConfig};
use ipuc_target::ipu21::sram::layout;
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::kernel::Kernel;

fn schedule(layers: usize) -> TileSchedule {
    let opts = ModelOptions {
        vit_layers: Some(layers),
        ..ModelOptions::default()
    };
    let graph = build_siglip(&VisionConfig::siglip_small(), &opts)
        .unwrap()
        .graph;
    let plan = plan_graph(&graph, PlanConfig::default()).unwrap();
    let s = lower(&graph, &plan).unwrap();
    check(&s).unwrap();
    s
}

/// The runtime's fixed ranges plus a code region and a row table.
fn reserved(_tile: LogicalTile) -> Vec<ReservedRange> {
    vec![
        ReservedRange {
            name: "runtime + entry".into(),
            kind: ReservedKind::Code,
            range: 0x4C010..0x4E000,
        },
        ReservedRange {
            name: "runtime state".into(),
            kind: ReservedKind::State,
            range: layout::STATE_BASE..layout::STATE_END,
        },
        ReservedRange {
            name: "supervisor program".into(),
            kind: ReservedKind::Code,
            range: 0x5C000..0x5F000,
        },
        ReservedRange {
            name: "exchange rows".into(),
            kind: ReservedKind::ExchangeRows,
            range: 0x60000..0x61800,
        },
    ]
}

#[test]
fn siglip_small_two_layers_places_every_block_by_the_rules() {
    let s = schedule(2);
    let placed = place_schedule(&s, reserved).unwrap();
    let guards: Vec<_> = reserved(LogicalTile::default())
        .iter()
        .filter(|r| r.kind.isolates_elements())
        .map(|r| r.range.start..r.range.end + 64)
        .collect();
    let mut blocks = 0;
    for buf in &s.buffers {
        for block in &buf.blocks {
            blocks += 1;
            let tile = placed.tile(block.tile).expect("tile placed");
            let a = tile.allocation(buf.id).expect("block placed");
            assert_eq!(a.range.start % buf.align, 0);
            // The allocation stride is the schedule's per-iteration stride.
            assert_eq!(a.stride, buf.iteration_stride(block), "{}", buf.name);
            assert_eq!(a.range.end - a.range.start, buf.allocation_bytes(block));
            let in_region =
                |r: &std::ops::Range<u32>| a.range.start >= r.start && a.range.end <= r.end;
            match buf.class {
                MemoryClass::Interleaved => assert!(in_region(&REGION1), "{}", buf.name),
                MemoryClass::Standard => assert!(in_region(&REGION0) || in_region(&REGION1)),
            }
            for g in &guards {
                assert!(
                    !share_element(&a.range, g),
                    "{} shares an element with code",
                    buf.name
                );
            }
            if matches!(buf.role, BufferRole::Iterated { .. }) {
                assert_eq!(a.copies, buf.copies);
                assert_eq!(
                    placed.resolve(
                        block.tile,
                        ipuc_core::lower::schedule::BufferRef {
                            buffer: buf.id,
                            offset: 4
                        },
                        1
                    ),
                    Some(a.range.start + a.stride + 4)
                );
            }
        }
    }
    // No two buffers live at a common step overlap on any tile.
    for tile in &placed.tiles {
        let allocs = tile.by_address();
        for (i, x) in allocs.iter().enumerate() {
            for y in &allocs[i + 1..] {
                let live_together = x.first_step <= y.last_step && y.first_step <= x.last_step;
                let overlap = x.range.start < y.range.end && y.range.start < x.range.end;
                assert!(
                    !live_together || !overlap || x.range.is_empty() || y.range.is_empty(),
                    "tile {}: {} and {} overlap",
                    tile.tile.get(),
                    x.name,
                    y.name
                );
            }
        }
    }
    // AMP left operands and outputs sit in different elements.
    let mut amp_calls = 0;
    s.visit(|step, _| {
        if let Step::Compute(c) = step {
            for call in &c.calls {
                if matches!(call.kernel, Kernel::Gemm { .. })
                    && call.operands[0].buffer != call.operands[1].buffer
                {
                    amp_calls += 1;
                    let t = placed.tile(call.tile).unwrap();
                    let out = t.allocation(call.operands[0].buffer).unwrap();
                    let left = t.allocation(call.operands[1].buffer).unwrap();
                    assert!(!share_element(&out.range, &left.range));
                }
            }
        }
    });
    assert!(amp_calls > 0);
    let peak = placed.peak_tile().unwrap();
    println!(
        "placed {blocks} blocks on {} tiles; peak {} B at step {} on tile {}",
        placed.tiles.len(),
        peak.peak.bytes,
        peak.peak.step,
        peak.tile.get()
    );
}

#[test]
fn a_reservation_that_leaves_no_room_is_reported_per_tile() {
    let s = schedule(1);
    // Everything except 4 KiB of region 1 taken by code.
    let greedy = |_t: LogicalTile| {
        vec![
            ReservedRange {
                name: "code".into(),
                kind: ReservedKind::State,
                range: 0x4C000..0x80000,
            },
            ReservedRange {
                name: "tables".into(),
                kind: ReservedKind::State,
                range: 0x81000..0xE7BB0,
            },
        ]
    };
    match place_schedule(&s, greedy) {
        Err(PlaceError::NoRoom {
            bytes_needed,
            largest_free,
            ..
        }) => assert!(largest_free < bytes_needed && largest_free <= 4096),
        other => panic!("expected NoRoom, got {other:?}"),
    }
}

#[test]
fn placement_renders_as_a_valid_memory_map() {
    let s = schedule(1);
    let placed = place_schedule(&s, reserved).unwrap();
    let map = ipuc::report::placement_map::memory_map_from_placement(
        "siglip-small ×1",
        &s,
        &placed.tiles,
    );
    map.validate().unwrap();
    assert_eq!(map.tiles.len(), placed.tiles.len());
    assert_eq!(map.moments.len(), s.step_count as usize);
    let t0 = &map.tiles[0];
    // Four reserved ranges, then one allocation per block on the tile.
    assert_eq!(t0.allocations.len(), 4 + placed.tiles[0].allocations.len());
    // The map charges exactly what placement charges (support ranges once,
    // at their blocked spans; no second reserve on top).
    for (tile, placement) in map.tiles.iter().zip(&placed.tiles) {
        let peak = tile.peak(map.moments.len()).live_bytes + map.budget.support_reserve;
        assert_eq!(peak, u64::from(placement.peak.bytes), "tile {}", tile.tile);
    }
    let html = ipuc::report::memory_html::render_memory_map(&map).unwrap();
    assert!(html.contains("siglip-small"));
}

/// The configuration that used to place 611,384 bytes on a tile while the
/// planner estimated 537,632 + reserve: placement must never charge a tile
/// more than the support charge plus the planner's estimate for that tile
/// (which includes the code charge of its estimated image),
/// and the charged peak stays within the budget (placement fails otherwise).
#[test]
fn siglip_small_27_layers_on_32_tiles_places_within_the_estimate() {
    use ipuc_core::place::support_reserved;
    use ipuc_target::ipu21::sram::{SUPPORT_CHARGE_BYTES, TILE_MEMORY_BUDGET};
    let opts = ModelOptions {
        vit_layers: Some(27),
        ..ModelOptions::default()
    };
    let graph = build_siglip(&VisionConfig::siglip_small(), &opts)
        .unwrap()
        .graph;
    let plan = plan_graph(
        &graph,
        PlanConfig {
            tiles: 32,
            ..PlanConfig::default()
        },
    )
    .unwrap();
    let s = lower(&graph, &plan).unwrap();
    let placed =
        place_schedule(&s, |t| support_reserved(plan.code_bytes[t.index()] as u32)).unwrap();
    for t in &placed.tiles {
        let bound = u64::from(SUPPORT_CHARGE_BYTES) + plan.tile_peaks[t.tile.index()];
        assert!(
            u64::from(t.peak.bytes) <= bound,
            "tile {}: placed {} at step {} > estimate bound {bound}",
            t.tile.get(),
            t.peak.bytes,
            t.peak.step
        );
        assert!(t.peak.bytes <= TILE_MEMORY_BUDGET);
    }
}

/// A late placement failure (issue #14): a linked image larger than the
/// room below a tile's lowest region-0 data is `CodeDoesNotFit`, and
/// `report::placement_rejection::code_rejection` turns it into the same
/// interactive report as placement's: the tile, bytes needed and free, the
/// image's parts at their real addresses (runtime, program, rows) instead of
/// the estimate's reservation, and the tile's data by region and class.
#[test]
fn a_code_image_that_does_not_fit_gets_a_rejection_report() {
    use ipuc::report::placement_rejection::{code_rejection, ImageParts};
    use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;
    let s = schedule(1);
    let placed = place_schedule(&s, reserved).unwrap();
    let tile = &placed.tiles[0];
    let free = tile.code_limit() - APPLICATION_LOAD_BASE;
    let parts = ImageParts {
        runtime: 528,
        program: free - 528,
        rows: 100,
        patch_data: 0,
    };
    let error = tile
        .check_code(parts.runtime + parts.program + parts.rows)
        .unwrap_err();
    assert!(matches!(error, PlaceError::CodeDoesNotFit { .. }));
    let rejected = code_rejection(&s, &placed.tiles, tile, parts, error);
    let r = &rejected.report;
    let short = r
        .shortfall
        .as_ref()
        .expect("a late failure has a shortfall");
    assert_eq!(short.tile, u32::from(tile.tile.get()));
    assert_eq!(short.needed_bytes, u64::from(free) + 100);
    assert_eq!(short.free_bytes, u64::from(free));
    assert_eq!(r.peak_tile, u32::from(tile.tile.get()));
    assert_eq!(
        r.tiles[0].tile,
        u32::from(tile.tile.get()),
        "the refused tile first"
    );
    let names: Vec<&str> = short.parts.iter().map(|p| p.name.as_str()).collect();
    assert!(names.contains(&"exchange rows"), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("region ")), "{names:?}");
    // The image at its addresses replaces the estimate's code reservation.
    let rows = &r.tiles[0].allocations;
    assert_eq!(rows[0].address, Some(APPLICATION_LOAD_BASE));
    assert_eq!(rows[2].address, Some(APPLICATION_LOAD_BASE + free));
    assert!(!rows
        .iter()
        .any(|a| a.name == "runtime + entry" || a.name == "supervisor program"));
    let message = rejected.to_string();
    for needle in [
        format!(
            "logical tile {}: code, argument blocks and exchange rows need",
            tile.tile.get()
        ),
        format!("{} bytes needed, {free} free", free + 100),
        "exchange rows".to_owned(),
    ] {
        assert!(
            message.contains(&needle),
            "missing `{needle}` in:\n{message}"
        );
    }
    let html = ipuc::report::memory_html::render_rejection(r).unwrap();
    assert!(html.contains("Did not fit: the code image"));
    assert!(html.contains("short by"));
}
