//! Tests of patch generation: patched rows are re-checked with the exchange
//! checker for every iteration / every use.

use alloc::vec;
use alloc::vec::Vec;

use super::audit::{audit, AuditedPhase, BaseEligibility};
use super::repeat::{phase_for_iteration, repeat_patch_plan, IteratedSource};
use super::sharing::{share_rows, Patcher, BULK_PATCH_MIN_WORDS};
use super::*;
use crate::exchange::{
    check_phase, schedule_phase, Destination, ExchangePhase, ExchangeRow, ScheduleOptions,
    Transfer, Width,
};
use ipuc_target::ipu21::tile_set::TileSet;
use ipuc_target::ipu21::topology::{LogicalTile, PhysicalTile};

fn tile(l: u32) -> PhysicalTile {
    LogicalTile::new(l).unwrap().physical()
}

fn phase(src_base: u32, dst_base: u32) -> ExchangePhase {
    let mut transfers = Vec::new();
    for s in 0..8u32 {
        transfers.push(Transfer {
            source: tile(s),
            source_address: src_base + 0x400 * (s % 2),
            words: 40 + 30 * s,
            destinations: (1..=2)
                .map(|k| Destination {
                    tile: tile((s + 3 * k) % 8),
                    address: dst_base + 0x1000 * s,
                })
                .collect(),
            width: Width::Word32,
        });
    }
    ExchangePhase { transfers }
}

#[test]
fn repeat_tables_move_each_iterations_source() {
    let p = phase(0x60000, 0x90000);
    let s = schedule_phase(&p, ScheduleOptions::default()).unwrap();
    let iterated = [
        IteratedSource {
            transfer: 1,
            stride_bytes: 0x2000,
        },
        IteratedSource {
            transfer: 4,
            stride_bytes: -0x800,
        },
    ];
    let plan = repeat_patch_plan(&p, &s, &iterated, 5).unwrap();
    assert!(!plan.tables.is_empty());
    for t in &plan.tables {
        assert_eq!(t.words[0], s.rows[t.tile.index()].words[t.word_index]);
        assert!(t.transfer == 1 || t.transfer == 4);
    }
    for i in 0..5 {
        let mut rows = s.rows.clone();
        plan.apply(&mut rows, i);
        let pi = phase_for_iteration(&p, &iterated, i);
        check_phase(&pi, &rows).unwrap();
        if i > 0 {
            // The unpatched rows must not deliver iteration i's sources.
            assert!(check_phase(&pi, &s.rows).is_err());
        }
    }
    let calls = plan.calls_for_tile(tile(1), 0x50000, 0x54000);
    assert!(!calls.is_empty());
    let instrs = calls[0].instructions(0x4C100).unwrap();
    assert_eq!(instrs.len(), 5);
}

#[test]
fn repeat_rejects_strides_leaving_memory() {
    let p = phase(0x60000, 0x90000);
    let s = schedule_phase(&p, ScheduleOptions::default()).unwrap();
    let far = [IteratedSource {
        transfer: 0,
        stride_bytes: 0x40000,
    }];
    assert!(matches!(
        repeat_patch_plan(&p, &s, &far, 8),
        Err(PatchError::AddressOutOfRange { .. })
    ));
    let odd = [IteratedSource {
        transfer: 0,
        stride_bytes: 6,
    }];
    assert!(matches!(
        repeat_patch_plan(&p, &s, &odd, 2),
        Err(PatchError::MisalignedStride { .. })
    ));
}

#[test]
fn shared_rows_deliver_for_both_phases() {
    let p0 = phase(0x60000, 0x90000);
    let p1 = phase(0x61000, 0xA0000);
    let s0 = schedule_phase(&p0, ScheduleOptions::default()).unwrap();
    let s1 = schedule_phase(&p1, ScheduleOptions::default()).unwrap();
    let mut shared = share_rows(&[&s0.rows, &s1.rows], &[]).unwrap();
    let active = s0.active_rows().count();
    // Same structure, different addresses: one stored row per tile.
    assert_eq!(
        shared.stored.values().map(|v| v.len()).sum::<usize>(),
        active
    );
    for (p, phase) in [(1usize, &p1), (0, &p0), (1, &p1)] {
        let uses = shared.uses[p].clone();
        let rows: Vec<ExchangeRow> = uses
            .iter()
            .map(|u| shared.apply(u).unwrap().clone())
            .collect();
        check_phase(phase, &rows).unwrap();
        for u in &uses {
            let list = u.patch.as_ref().unwrap();
            assert_eq!(list.patcher, Patcher::for_len(list.words.len()));
        }
    }
    assert_eq!(Patcher::for_len(BULK_PATCH_MIN_WORDS - 1), Patcher::Scalar);
    assert_eq!(Patcher::for_len(BULK_PATCH_MIN_WORDS), Patcher::Bulk);
}

/// Only real sharing is patched: a row used by one phase, or re-used with
/// the same words, runs as stored; a shared row whose uses differ is
/// patched on every use, with only the address words that differ.
#[test]
fn rows_used_once_or_unchanged_are_not_patched() {
    let p0 = phase(0x60000, 0x90000);
    // Same sources, other destinations: only PIC pointer words differ.
    let p1 = phase(0x60000, 0xA0000);
    let s0 = schedule_phase(&p0, ScheduleOptions::default()).unwrap();
    let s1 = schedule_phase(&p1, ScheduleOptions::default()).unwrap();
    let active = s0.active_rows().count();

    let once = share_rows(&[&s0.rows], &[]).unwrap();
    assert_eq!(once.uses[0].len(), active);
    assert!(once.uses[0].iter().all(|u| u.patch.is_none() && !u.shared));

    let same = share_rows(&[&s0.rows, &s0.rows], &[]).unwrap();
    assert_eq!(same.stored_words(), once.stored_words());
    assert!(same
        .uses
        .iter()
        .flatten()
        .all(|u| u.patch.is_none() && u.shared));

    let mut differ = share_rows(&[&s0.rows, &s1.rows, &s0.rows], &[]).unwrap();
    assert_eq!(differ.stored_words(), once.stored_words());
    let mut patched_sends = 0;
    for (p, rows) in [(0usize, &s0.rows), (1, &s1.rows), (2, &s0.rows)] {
        for u in differ.uses[p].clone() {
            let list = u.patch.as_ref().expect("a shared row whose uses differ");
            let want = rows.iter().find(|r| r.tile == u.row.tile).unwrap();
            let fields = address_fields(&want.words).unwrap();
            for &o in &list.offsets {
                let i = o as usize / 4;
                // Every patched word differs between the two phases' rows.
                let other = if p == 1 { &s0.rows } else { &s1.rows };
                let other = other.iter().find(|r| r.tile == u.row.tile).unwrap();
                assert_ne!(
                    want.words[i], other.words[i],
                    "word {i} is patched but equal"
                );
                let f = fields.iter().find(|f| f.word_index == i).unwrap();
                patched_sends += usize::from(f.kind == AddressFieldKind::Send);
            }
            assert_eq!(differ.apply(&u).unwrap(), want);
        }
    }
    assert_eq!(patched_sends, 0, "send addresses are equal in both phases");

    let a = audit(
        &[
            AuditedPhase {
                rows: &s0.rows,
                repeat: None,
                executions: 1,
            },
            AuditedPhase {
                rows: &s1.rows,
                repeat: None,
                executions: 3,
            },
            AuditedPhase {
                rows: &s0.rows,
                repeat: None,
                executions: 1,
            },
        ],
        Some(&differ),
    )
    .unwrap();
    let lists: Vec<usize> = differ
        .uses
        .iter()
        .map(|u| {
            u.iter()
                .filter_map(|u| u.patch.as_ref())
                .map(|l| l.words.len())
                .sum()
        })
        .collect();
    assert_eq!(a.sharing_uses, 3 * active);
    assert_eq!(a.sharing_shared_rows, active);
    assert_eq!(a.sharing_sites, 3 * active);
    assert_eq!(a.sharing_lists_per_inference, 5 * active as u64);
    assert_eq!(
        a.sharing_words_per_inference,
        (lists[0] + 3 * lists[1] + lists[2]) as u64
    );
    let once_audit = audit(
        &[AuditedPhase {
            rows: &s0.rows,
            repeat: None,
            executions: 1,
        }],
        Some(&once),
    )
    .unwrap();
    assert_eq!(
        (
            once_audit.sharing_sites,
            once_audit.sharing_shared_rows,
            once_audit.sharing_words_per_inference
        ),
        (0, 0, 0)
    );
}

#[test]
fn repeat_patched_rows_are_not_shared() {
    let p0 = phase(0x60000, 0x90000);
    let s0 = schedule_phase(&p0, ScheduleOptions::default()).unwrap();
    let private: TileSet<PhysicalTile> = [tile(0)].into_iter().collect();
    let shared = share_rows(&[&s0.rows, &s0.rows], &[private.clone(), private]).unwrap();
    assert_eq!(shared.stored[&tile(0)].len(), 2);
    assert_eq!(shared.stored[&tile(1)].len(), 1);
}

#[test]
fn audit_counts_runs_and_eligibility() {
    // A tile sending two transfers, only one iterated → mixed runs.
    let p = ExchangePhase {
        transfers: vec![
            Transfer {
                source: tile(0),
                source_address: 0x60000,
                words: 100,
                destinations: vec![Destination {
                    tile: tile(2),
                    address: 0x90000,
                }],
                width: Width::Word32,
            },
            Transfer {
                source: tile(0),
                source_address: 0x62000,
                words: 100,
                destinations: vec![Destination {
                    tile: tile(3),
                    address: 0x90000,
                }],
                width: Width::Word32,
            },
            Transfer {
                source: tile(5),
                source_address: 0x62000,
                words: 10,
                destinations: vec![Destination {
                    tile: tile(6),
                    address: 0x90000,
                }],
                width: Width::Word32,
            },
        ],
    };
    let s = schedule_phase(&p, ScheduleOptions::default()).unwrap();
    let mixed = [IteratedSource {
        transfer: 0,
        stride_bytes: 1152,
    }];
    let plan = repeat_patch_plan(&p, &s, &mixed, 2).unwrap();
    let uniform = [IteratedSource {
        transfer: 2,
        stride_bytes: 2304,
    }];
    let plan2 = repeat_patch_plan(&p, &s, &uniform, 2).unwrap();
    let a = audit(
        &[
            AuditedPhase {
                rows: &s.rows,
                repeat: Some(&plan),
                executions: 2,
            },
            AuditedPhase {
                rows: &s.rows,
                repeat: Some(&plan2),
                executions: 2,
            },
            AuditedPhase {
                rows: &s.rows,
                repeat: None,
                executions: 1,
            },
        ],
        None,
    )
    .unwrap();
    assert!(matches!(a.phases[0].eligibility, BaseEligibility::Mixed(ref t) if t[0].0 == tile(0)));
    assert_eq!(a.phases[1].eligibility, BaseEligibility::ConstantBase);
    assert_eq!(a.phases[2].eligibility, BaseEligibility::Stationary);
    assert_eq!(a.rows_with_changing_sources, 2);
    assert_eq!(a.uniform_rows, 1);
    assert!(alloc::format!("{a}").contains("constant outgoing base eligible"));
}

#[test]
fn shapes_ignore_addresses_only() {
    let p0 = phase(0x60000, 0x90000);
    let s0 = schedule_phase(&p0, ScheduleOptions::default()).unwrap();
    let row = &s0.rows[tile(0).index()];
    let fields = address_fields(&row.words).unwrap();
    assert!(fields.iter().any(|f| f.kind == AddressFieldKind::Send));
    assert!(fields
        .iter()
        .any(|f| f.kind == AddressFieldKind::PicPointer));
    let shape = row_shape(&row.words).unwrap();
    for (i, (a, b)) in row.words.iter().zip(&shape).enumerate() {
        if fields.iter().all(|f| f.word_index != i) {
            assert_eq!(a, b, "non-address word {i} changed");
        }
    }
}

/// §2.10 rule 5 holds in every iteration: a stride that moves a send source
/// into the element a concurrent receive writes is found by the patch plan,
/// and scheduling with the sweep keeps them apart.
#[test]
fn repeat_checks_element_conflicts_in_every_iteration() {
    let p = ExchangePhase {
        transfers: vec![
            Transfer {
                source: tile(0),
                source_address: 0x60000,
                words: 2000,
                destinations: vec![Destination {
                    tile: tile(1),
                    address: 0x90000,
                }],
                width: Width::Word32,
            },
            Transfer {
                source: tile(1),
                source_address: 0x60000,
                words: 2000,
                destinations: vec![Destination {
                    tile: tile(0),
                    address: 0x90000,
                }],
                width: Width::Word32,
            },
        ],
    };
    // Iteration 1 reads 0x92000.., the element tile 0 receives into at 0x90000.
    let iterated = [IteratedSource {
        transfer: 0,
        stride_bytes: 0x32000,
    }];
    let s = schedule_phase(&p, ScheduleOptions::default()).unwrap();
    assert!(matches!(
        repeat_patch_plan(&p, &s, &iterated, 2),
        Err(PatchError::ElementConflict {
            transfer: 0,
            iteration: 1,
            address: 0x92000,
            ..
        })
    ));
    let sweeps = [crate::exchange::SourceSweep {
        transfer: 0,
        stride_bytes: 0x32000,
        iterations: 2,
    }];
    let s =
        crate::exchange::schedule_phase_sweeping(&p, ScheduleOptions::default(), &sweeps).unwrap();
    let plan = repeat_patch_plan(&p, &s, &iterated, 2).unwrap();
    for i in 0..2 {
        let mut rows = s.rows.clone();
        plan.apply(&mut rows, i);
        check_phase(&phase_for_iteration(&p, &iterated, i), &rows).unwrap();
    }
}

/// A 64-bit (paired) send is patched in 8-byte units: every iteration's
/// rows deliver that iteration's source.
#[test]
fn repeat_tables_move_paired_sources_in_8_byte_units() {
    let p = ExchangePhase {
        transfers: vec![Transfer {
            source: tile(0),
            source_address: 0x64000,
            words: 256,
            destinations: vec![
                Destination {
                    tile: tile(10),
                    address: 0x90000,
                },
                Destination {
                    tile: tile(11),
                    address: 0x90000,
                },
            ],
            width: Width::Paired64,
        }],
    };
    let s = schedule_phase(&p, ScheduleOptions::default()).unwrap();
    assert!(s.pieces.iter().all(|piece| piece.paired));
    let iterated = [IteratedSource {
        transfer: 0,
        stride_bytes: -0x808,
    }];
    let plan = repeat_patch_plan(&p, &s, &iterated, 4).unwrap();
    assert!(!plan.tables.is_empty());
    for i in 0..4 {
        let mut rows = s.rows.clone();
        plan.apply(&mut rows, i);
        check_phase(&phase_for_iteration(&p, &iterated, i), &rows).unwrap();
    }
}
