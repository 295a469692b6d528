//! The simulator's exchange fabric running rows the compiler's exchange
//! scheduler wrote: these tests need both crates (`ipuc-sim` cannot name
//! the scheduler), so they live in the cross-crate suite.

use ipuc_core::exchange::{
    check_phase, decode_row, random_phase, replay, schedule_phase, Destination, ExchangePhase,
    RandomPhaseSpec, ReceiveError, ScheduleOptions, TileRowView, Transfer, Width,
};
use ipuc_target::ipu21::exchange_model::{RowBases, XPIC_NEUTRAL};
use ipuc_target::ipu21::isa::Csr;
use ipuc_target::ipu21::isa::{encode, m, Instruction, MReg, SyncZone};
use ipuc_target::ipu21::sram::APPLICATION_LOAD_BASE;
use ipuc_target::ipu21::topology::{LogicalTile, PhysicalTile};

use ipuc_sim::fabric::*;
use ipuc_sim::witness::{singles, step_rows, MoveRun, SteppedRow, WitnessFault, WitnessFaultKind};
use ipuc_sim::{Device, DeviceError, FaultKind, Tile};

const ROW: u32 = 0x5_0000;

fn phys(l: u32) -> PhysicalTile {
    LogicalTile::new(l).unwrap().physical()
}

fn program_calling(row: u32) -> Vec<u8> {
    [
        Instruction::sync(SyncZone::INTERNAL),
        Instruction::call(m::M10, row),
        Instruction::br(MReg::ZERO),
    ]
    .iter()
    .flat_map(|i| encode(i).unwrap().words().to_vec())
    .flat_map(|w| w.to_le_bytes())
    .collect()
}

fn device(phase: &ExchangePhase, rows: &[(PhysicalTile, Vec<u32>)]) -> Device {
    device_with_rows_at(phase, rows, &|_| ROW)
}

/// As [`device`], each tile's row at `row_at(tile)`.
fn device_with_rows_at(
    phase: &ExchangePhase,
    rows: &[(PhysicalTile, Vec<u32>)],
    row_at: &dyn Fn(PhysicalTile) -> u32,
) -> Device {
    let mut tiles = Vec::new();
    for (tile, words) in rows {
        let mut t = Tile::new(*tile);
        let at = row_at(*tile);
        t.load(APPLICATION_LOAD_BASE, &program_calling(at)).unwrap();
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        t.load(at, &bytes).unwrap();
        for tr in phase.transfers.iter().filter(|tr| tr.source == *tile) {
            let data: Vec<u8> = (0..tr.words * 4)
                .map(|k| (k as u8) ^ (tile.get() as u8).wrapping_mul(31))
                .collect();
            t.load(tr.source_address, &data).unwrap();
        }
        // What the runtime's start-up and the phase sequence set (§2.7).
        t.set_supervisor_csr(Csr::INCOMING_MUX.0, XPIC_NEUTRAL);
        t.set_supervisor_csr(Csr::INCOMING_DCOUNT.0, 1);
        t.start_supervisor(APPLICATION_LOAD_BASE);
        tiles.push(t);
    }
    Device::with_fabric(tiles, Box::new(RouteFabric::default()))
}

fn small_phase() -> ExchangePhase {
    ExchangePhase {
        transfers: (0..6u32)
            .map(|s| Transfer {
                source: phys(s),
                source_address: 0x6_0000,
                words: 70 + 13 * s,
                destinations: (1..=2)
                    .map(|k| Destination {
                        tile: phys((s + k) % 6),
                        address: 0x9_0000 + 0x1000 * s,
                    })
                    .collect(),
                width: Width::Word32,
            })
            .collect(),
    }
}

#[test]
fn device_runs_scheduled_rows_after_the_sync() {
    let phase = small_phase();
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    let rows: Vec<_> = (0..6)
        .map(|l| (phys(l), s.rows[phys(l).index()].words.clone()))
        .collect();
    let mut dev = device(&phase, &rows);
    dev.run(10_000_000).unwrap();
    let by_id = |id: PhysicalTile| dev.tiles().iter().find(|t| t.id() == id).unwrap();
    for tr in &phase.transfers {
        let src = by_id(tr.source)
            .memory()
            .slice(tr.source_address, tr.words * 4)
            .unwrap()
            .to_vec();
        for d in &tr.destinations {
            let got = by_id(d.tile)
                .memory()
                .slice(d.address, tr.words * 4)
                .unwrap();
            assert_eq!(got, &src[..], "transfer to {}", d.tile);
        }
    }
    // Each supervisor spent the row's events inside the call.
    for (tile, _) in &rows {
        let t = by_id(*tile);
        assert!(t.cycle() >= u64::from(s.rows[tile.index()].events));
    }
}

#[test]
fn device_moves_paired_items_two_words_per_event() {
    // Logical 2, 3 are a physical pair; logical 1 (the sender's partner)
    // receives 32-bit words, so partner busy is exercised too.
    let phase = ExchangePhase {
        transfers: vec![
            Transfer {
                source: phys(0),
                source_address: 0x6_0000,
                words: 256,
                destinations: vec![
                    Destination {
                        tile: phys(2),
                        address: 0x9_0000,
                    },
                    Destination {
                        tile: phys(3),
                        address: 0x9_2000,
                    },
                ],
                width: Width::Paired64,
            },
            Transfer {
                source: phys(4),
                source_address: 0x6_0000,
                words: 100,
                destinations: vec![Destination {
                    tile: phys(1),
                    address: 0x9_0000,
                }],
                width: Width::Word32,
            },
        ],
    };
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    assert_eq!(s.pairing.paired, 1);
    let sender = decode_row(&s.rows[phys(0).index()].words).unwrap();
    assert_eq!(sender.sends.iter().map(|r| r.items).sum::<u32>(), 128);
    let rows: Vec<_> = (0..6)
        .map(|l| (phys(l), s.rows[phys(l).index()].words.clone()))
        .collect();
    let mut dev = device(&phase, &rows);
    dev.run(10_000_000).unwrap();
    let by_id = |id: PhysicalTile| dev.tiles().iter().find(|t| t.id() == id).unwrap();
    for tr in &phase.transfers {
        let src = by_id(tr.source)
            .memory()
            .slice(tr.source_address, tr.words * 4)
            .unwrap()
            .to_vec();
        for d in &tr.destinations {
            let got = by_id(d.tile)
                .memory()
                .slice(d.address, tr.words * 4)
                .unwrap();
            assert_eq!(got, &src[..], "transfer to {}", d.tile);
        }
    }
}

#[test]
fn patched_row_words_in_sram_take_effect() {
    let phase = small_phase();
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    let mut rows: Vec<_> = (0..6)
        .map(|l| (phys(l), s.rows[phys(l).index()].words.clone()))
        .collect();
    // Move tile 0's sources by 0x1000 bytes, as a Repeat patch would.
    let mut moved = phase.clone();
    moved.transfers[0].source_address += 0x1000;
    let decoded = decode_row(&rows[0].1).unwrap();
    for ti in &decoded.instructions {
        if let ipuc_target::ipu21::isa::Instruction::Send { n, addr, sctl } = ti.instruction {
            let w = encode(&ipuc_target::ipu21::isa::Instruction::Send {
                n,
                addr: addr + 0x400,
                sctl,
            })
            .unwrap();
            rows[0].1[ti.word_index] = w.words()[0];
        }
    }
    let mut dev = device(&moved, &rows);
    dev.run(10_000_000).unwrap();
    let by_id = |id: PhysicalTile| dev.tiles().iter().find(|t| t.id() == id).unwrap();
    let tr = &moved.transfers[0];
    let src = by_id(tr.source)
        .memory()
        .slice(tr.source_address, tr.words * 4)
        .unwrap()
        .to_vec();
    for d in &tr.destinations {
        assert_eq!(
            by_id(d.tile)
                .memory()
                .slice(d.address, tr.words * 4)
                .unwrap(),
            &src[..]
        );
    }
}

/// `small_phase` with every active row rebased: senders hold
/// `$OUTGOING_BASE = 0x1_0000 + 0x400·l`, receivers `$INCOMING_BASE =
/// 0x2_0000 + 0x800·l`.
type TileRows = Vec<(PhysicalTile, Vec<u32>)>;

fn rebased_small_phase() -> (ExchangePhase, TileRows, Vec<RowBases>) {
    let phase = small_phase();
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    let mut rows = Vec::new();
    let mut bases = Vec::new();
    for l in 0..6 {
        let b = RowBases {
            outgoing: 0x1_0000 + 0x400 * l,
            incoming: 0x2_0000 + 0x800 * l,
        };
        let words = &s.rows[phys(l).index()].words;
        let rebased = ipuc_core::patch::relocate::rebase_row(phys(l), words, b).unwrap();
        assert_ne!(&rebased, words, "tile {l} sends and receives");
        rows.push((phys(l), rebased));
        bases.push(b);
    }
    (phase, rows, bases)
}

fn set_bases(dev: &mut Device, rows: &[(PhysicalTile, Vec<u32>)], bases: &[RowBases]) {
    for ((tile, _), b) in rows.iter().zip(bases) {
        let t = dev
            .tiles_mut()
            .iter_mut()
            .find(|t| t.id() == *tile)
            .unwrap();
        t.set_supervisor_csr(Csr::OUTGOING_BASE.0, b.outgoing);
        t.set_supervisor_csr(Csr::INCOMING_BASE.0, b.incoming);
    }
}

fn delivered(dev: &Device, phase: &ExchangePhase) -> bool {
    let by_id = |id: PhysicalTile| dev.tiles().iter().find(|t| t.id() == id).unwrap();
    phase.transfers.iter().all(|tr| {
        let src = by_id(tr.source)
            .memory()
            .slice(tr.source_address, tr.words * 4)
            .unwrap();
        tr.destinations.iter().all(|d| {
            by_id(d.tile)
                .memory()
                .slice(d.address, tr.words * 4)
                .unwrap()
                == src
        })
    })
}

#[test]
fn rows_run_relative_to_the_base_csrs_their_tiles_hold() {
    let (phase, rows, bases) = rebased_small_phase();
    let mut dev = device(&phase, &rows);
    set_bases(&mut dev, &rows, &bases);
    dev.run(10_000_000).unwrap();
    assert!(delivered(&dev, &phase));
}

#[test]
fn a_wrong_or_missing_base_fails() {
    let (phase, rows, bases) = rebased_small_phase();
    // Bases never written (0): the rebased rows read and write elsewhere.
    let mut dev = device(&phase, &rows);
    let ok = dev.run(10_000_000).is_ok() && delivered(&dev, &phase);
    assert!(
        !ok,
        "rows relative to non-zero bases ran correctly with bases 0"
    );
    // One sender's base off by one word: its receivers get shifted data.
    let mut wrong = bases.clone();
    wrong[0].outgoing += 4;
    let mut dev = device(&phase, &rows);
    set_bases(&mut dev, &rows, &wrong);
    let ok = dev.run(10_000_000).is_ok() && delivered(&dev, &phase);
    assert!(!ok, "a wrong outgoing base went unnoticed");
}

#[test]
fn uncovered_exchange_csr_values_are_typed_faults() {
    let (phase, rows, bases) = rebased_small_phase();
    let cases = [
        (Csr::OUTGOING_BASE, bases[1].outgoing + 2),
        (Csr::INCOMING_BASE, 1 << 20),
        (Csr::INCOMING_MUX, 0),
        (Csr::INCOMING_DCOUNT, 7),
    ];
    for (csr, value) in cases {
        let mut dev = device(&phase, &rows);
        set_bases(&mut dev, &rows, &bases);
        dev.tiles_mut()
            .iter_mut()
            .find(|t| t.id() == phys(1))
            .unwrap()
            .set_supervisor_csr(csr.0, value);
        match dev.run(10_000_000) {
            Err(DeviceError::Fault(f)) => {
                assert_eq!(f.tile, phys(1));
                assert_eq!(
                    f.kind,
                    FaultKind::ExchangeCsr {
                        phase: 0,
                        csr: u16::from(csr.0),
                        value
                    }
                );
            }
            other => panic!("{csr}: expected a CSR fault, got {other:?}"),
        }
    }
}

#[test]
fn selecting_a_silent_source_is_a_receive_error() {
    // Tile 1 selects tile 0 at event 5 although tile 0 sends nothing.
    let rx = [
        0x6400_0000 | (4 << 14) | u32::from(phys(0).get()), // delayxpic 4, 0, phys(0)
        0x6400_0000 | (9 << 14) | 0x640,                    // delayxpic 9, 0, 0x640
        0x43A0_0000,
    ];
    let rows = vec![(phys(0), vec![0x43A0_0000]), (phys(1), rx.to_vec())];
    let mut dev = device(&ExchangePhase::default(), &rows);
    match dev.run(1_000_000) {
        Err(DeviceError::Fault(f)) => {
            assert_eq!(f.tile, phys(1));
            let FaultKind::ExchangeWitness {
                phase: 0, fault, ..
            } = f.kind
            else {
                panic!("{f:?}")
            };
            assert_eq!(fault.event, 5);
            assert_eq!(
                fault.kind,
                WitnessFaultKind::NothingOnRoute {
                    source: phys(0),
                    paired: false
                }
            );
            assert!(f.to_string().contains("event 5"), "{f}");
        }
        other => panic!("expected a receive error, got {other:?}"),
    }
}

/// The exchange fault detail of a run that must fail on `tile`.
fn exchange_fault(dev: &mut Device, tile: PhysicalTile) -> (ipuc_sim::ExchangeError, String) {
    match dev.run(10_000_000) {
        Err(DeviceError::Fault(f)) => {
            assert_eq!(f.tile, tile, "{f:?}");
            match f.kind {
                FaultKind::Exchange { error, detail } => (error, detail),
                other => panic!("expected an exchange fault, got {other:?}"),
            }
        }
        other => panic!("expected a fault, got {other:?}"),
    }
}

fn rows_of(s: &ipuc_core::exchange::ScheduledPhase) -> Vec<(PhysicalTile, Vec<u32>)> {
    (0..6)
        .map(|l| (phys(l), s.rows[phys(l).index()].words.clone()))
        .collect()
}

#[test]
fn a_row_outside_executable_memory_is_an_error() {
    let phase = small_phase();
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    // Tile 3's row sits in interleaved memory, where nothing is fetched.
    let bad = phys(3);
    let mut dev = device_with_rows_at(&phase, &rows_of(&s), &|t| {
        if t == bad {
            0xA_0000
        } else {
            ROW
        }
    });
    let (class, detail) = exchange_fault(&mut dev, bad);
    assert_eq!(class, ipuc_sim::ExchangeError::ClashIfetch);
    assert!(
        detail.contains("exchange phase 0")
            && detail.contains("row 0xa0000..")
            && detail.contains("not in executable memory"),
        "{detail}"
    );
}

#[test]
fn a_send_source_in_the_rows_element_is_an_error() {
    // Tile 2 sends from 0x51000: the element 0x50000..0x54000 its row
    // is fetched from.
    let mut phase = small_phase();
    phase.transfers[2].source_address = ROW + 0x1000;
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    let mut dev = device(&phase, &rows_of(&s));
    let (class, detail) = exchange_fault(&mut dev, phys(2));
    assert_eq!(class, ipuc_sim::ExchangeError::ClashIfetch);
    assert!(
        detail.contains("send source 0x51000")
            && detail.contains("executing row 0x50000..")
            && detail.contains("rule 2"),
        "{detail}"
    );
}

#[test]
fn the_fetch_look_ahead_past_the_row_counts() {
    // A source starting in the next element, but inside the 64-byte
    // look-ahead of a row ending just below it.
    let mut phase = small_phase();
    let s0 = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    let words = s0.rows[phys(2).index()].words.len() as u32;
    let at = 0x5_4000 - 4 * words - 16;
    phase.transfers[2].source_address = 0x5_4000 + 8;
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    assert_eq!(s.rows[phys(2).index()].words.len() as u32, words);
    let mut dev = device_with_rows_at(&phase, &rows_of(&s), &|t| {
        if t == phys(2) {
            at
        } else {
            ROW
        }
    });
    let (_, detail) = exchange_fault(&mut dev, phys(2));
    assert!(detail.contains("send source 0x54008"), "{detail}");
}

/// Re-points every PIC pointer control of `row` by `delta_words`.
fn move_receives(row: &mut [u32], delta_words: i64) {
    let shift = |v: u32| u32::try_from(i64::from(v) + delta_words).unwrap();
    use ipuc_target::ipu21::isa::PicField;
    let decoded = decode_row(row).unwrap();
    for ti in &decoded.instructions {
        let moved = match ti.instruction {
            Instruction::DelayPic {
                n,
                sel: PicField::Pointer,
                value,
            } => Instruction::DelayPic {
                n,
                sel: PicField::Pointer,
                value: shift(value),
            },
            Instruction::SendPic {
                n,
                sel: ipuc_target::ipu21::isa::PicTarget::PicPointer,
                value,
            } => Instruction::SendPic {
                n,
                sel: ipuc_target::ipu21::isa::PicTarget::PicPointer,
                value: shift(value),
            },
            Instruction::SendPicP {
                n,
                addr,
                sctl,
                psel: PicField::Pointer,
                xpic,
                pic,
            } => Instruction::SendPicP {
                n,
                addr,
                sctl,
                psel: PicField::Pointer,
                xpic,
                pic: shift(pic),
            },
            _ => continue,
        };
        let w = encode(&moved).unwrap();
        for (k, word) in w.words().iter().enumerate() {
            row[ti.word_index + k] = *word;
        }
    }
}

#[test]
fn a_send_and_a_receive_in_one_element_at_once_is_an_element_conflict() {
    // Tiles 0 and 1 swap 200 words at the same time; then tile 0's
    // receive is re-pointed from 0x90000 into the element it sends from
    // (0x60000..0x64000), as a wrong placement would.
    let t = |s: u32, d: u32| Transfer {
        source: phys(s),
        source_address: 0x6_0000,
        words: 200,
        destinations: vec![Destination {
            tile: phys(d),
            address: 0x9_0000,
        }],
        width: Width::Word32,
    };
    let phase = ExchangePhase {
        transfers: vec![t(0, 1), t(1, 0)],
    };
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    let mut rows = rows_of(&s);
    // The unmodified rows run.
    device(&phase, &rows).run(10_000_000).unwrap();
    move_receives(&mut rows[0].1, (0x6_2000 - 0x9_0000) / 4);
    let mut dev = device(&phase, &rows);
    let (class, detail) = exchange_fault(&mut dev, phys(0));
    assert_eq!(class, ipuc_sim::ExchangeError::ClashInstr);
    assert!(
        detail.contains("send source 0x60000")
            && detail.contains("receive destination 0x62000")
            && detail.contains("rule 5"),
        "{detail}"
    );
}

/// The compiler's replay and the fabric's witness are separate code for
/// one timing model: on scheduled phases (32-bit and paired 64-bit,
/// multicasts, pointer continuation, tiny messages) they must produce
/// exactly the same word moves — same source and destination words, same
/// read and write events. A timing error in either breaks this.
#[test]
fn the_witness_and_the_compile_time_replay_agree_move_for_move() {
    let specs = [
        (6, 300, 2, false),
        (40, 64, 5, false),
        (24, 3, 7, false),
        (16, 200, 3, true),
        (251, 3, 45, false),
        (64, 1100, 2, true),
    ];
    let (mut compared, mut paired) = (0usize, 0usize);
    for (k, &(tiles, words, fanout, mixed_width)) in specs.iter().enumerate() {
        let phase = random_phase(RandomPhaseSpec {
            tiles,
            words,
            fanout,
            seed: 0x5EED_0000 + k as u64,
            exact_words: false,
            mixed_width,
        });
        let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
        paired += s.pairing.paired;
        let rows: Vec<_> = s.active_rows().cloned().collect();
        let (memory, calls) = ipuc::phase_image::build_image(&phase, &rows, ROW, k as u32).unwrap();
        let run = ipuc_sim::witness::witness_phase(&calls, &memory).unwrap();
        let decoded: Vec<_> = rows.iter().map(|r| decode_row(&r.words).unwrap()).collect();
        let views: Vec<TileRowView<'_>> = rows
            .iter()
            .zip(&decoded)
            .map(|(r, row)| TileRowView {
                tile: r.tile,
                row,
                bases: RowBases::ZERO,
                fetch_span: None,
            })
            .collect();
        let replayed = replay(&views).unwrap();
        assert_eq!(run.moves.len(), replayed.len(), "spec {k}");
        assert_eq!(run.moves, replayed, "spec {k}");
        for (r, d) in run.rows.iter().zip(&decoded) {
            assert_eq!((r.events, r.words as usize), (d.events, d.words));
        }
        compared += replayed.len();
    }
    assert!(compared > 10_000, "{compared} moves compared");
    assert!(paired > 0, "no 64-bit transfer compared");
}

/// Stepping steady stretches in bulk changes nothing. On scheduled
/// phases, and on the same rows with delays stretched or shortened by
/// up to two events (so receivers fault in the ways timing can make
/// them), the bulk and the event-by-event receivers give the same word
/// moves or the same fault; and the fabric's rule checks and stores give
/// the same result and memory from the runs as from single-word moves.
#[test]
fn stepping_steady_events_in_bulk_changes_nothing() {
    let specs = [
        (6, 300, 2, false),
        (40, 64, 5, false),
        (16, 200, 3, true),
        (64, 700, 3, false),
    ];
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (k, &(tiles, words, fanout, mixed_width)) in specs.iter().enumerate() {
        let phase = random_phase(RandomPhaseSpec {
            tiles,
            words,
            fanout,
            seed: 0xB01C_0000 + k as u64,
            exact_words: false,
            mixed_width,
        });
        let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
        let clean: Vec<_> = s.active_rows().cloned().collect();
        for variant in 0..60 {
            let mut rows = clean.clone();
            for _ in 0..(variant % 3) + usize::from(variant > 0) {
                let r = (next() % rows.len() as u64) as usize;
                let d = decode_row(&rows[r].words).unwrap();
                let delays: Vec<(usize, u32)> = d
                    .instructions
                    .iter()
                    .enumerate()
                    .filter_map(|(i, t)| match t.instruction {
                        Instruction::Delay { n }
                        | Instruction::DelayPic { n, .. }
                        | Instruction::DelayXPic { n, .. } => Some((i, n)),
                        _ => None,
                    })
                    .collect();
                if delays.is_empty() {
                    continue;
                }
                let (i, n) = delays[(next() % delays.len() as u64) as usize];
                let delta = [-2, -1, 1, 2][(next() % 4) as usize];
                if n.checked_add_signed(delta).is_some() {
                    stretch(&mut rows[r].words, i, delta);
                }
            }
            let (mut memory, calls) =
                ipuc::phase_image::build_image(&phase, &rows, ROW, k as u32).unwrap();
            let stepped = match step_rows(&calls, &memory) {
                Ok(s) => s,
                Err(f) => {
                    *outcomes.entry(format!("row {:?}", f.kind)).or_default() += 1;
                    continue;
                }
            };
            let bulk = stepped.receive_runs(true);
            let single = stepped.receive_runs(false);
            let runs = match (bulk, single) {
                (Ok(b), Ok(s)) => {
                    assert_eq!(
                        ipuc_sim::witness::expand(&b),
                        ipuc_sim::witness::expand(&s),
                        "spec {k} variant {variant}"
                    );
                    b
                }
                (b, s) => {
                    let (b, s) = (b.err(), s.err());
                    assert_eq!(b, s, "spec {k} variant {variant}");
                    let kind = format!("{:?}", b.map(|f| f.kind));
                    let name = kind.split(['(', ' ', '{']).nth(1).unwrap_or("").to_string();
                    *outcomes.entry(name).or_default() += 1;
                    continue;
                }
            };
            let singles: Vec<MoveRun> = singles(&runs);
            let stepped_rows: Vec<SteppedRow> = stepped.rows().collect();
            let mut other = memory.clone();
            let a = check_element_rules(&stepped_rows, &runs)
                .and_then(|()| apply_moves(&runs, &mut memory));
            let b = check_element_rules(&stepped_rows, &singles)
                .and_then(|()| apply_moves(&singles, &mut other));
            assert_eq!(a, b, "spec {k} variant {variant}");
            assert!(
                memory.regions().eq(other.regions()),
                "spec {k} variant {variant}"
            );
            *outcomes
                .entry(if a.is_ok() {
                    "ok".into()
                } else {
                    "fabric".into()
                })
                .or_default() += 1;
        }
    }
    // Clean runs and several kinds of receive fault were compared.
    assert!(outcomes.get("ok").is_some_and(|&n| n >= 4), "{outcomes:?}");
    assert!(outcomes.len() >= 4, "{outcomes:?}");
}

/// One transfer of 10 words from logical 0 to logical 2, scheduled.
fn one_transfer() -> (ExchangePhase, Vec<(PhysicalTile, Vec<u32>)>) {
    let phase = ExchangePhase {
        transfers: vec![Transfer {
            source: phys(0),
            source_address: 0x6_0000,
            words: 10,
            destinations: vec![Destination {
                tile: phys(2),
                address: 0x9_0000,
            }],
            width: Width::Word32,
        }],
    };
    let s = schedule_phase(&phase, ScheduleOptions::default()).unwrap();
    let rows = [0, 2]
        .iter()
        .map(|&l| (phys(l), s.rows[phys(l).index()].words.clone()))
        .collect();
    (phase, rows)
}

/// Rewrites instruction `i` (a `delay`, `delaypic` or `delayxpic`) of
/// `row` to last `delta` events more.
fn stretch(row: &mut [u32], i: usize, delta: i32) {
    let d = decode_row(row).unwrap();
    let add = |n: u32| n.checked_add_signed(delta).unwrap();
    let t = d.instructions[i];
    let grown = match t.instruction {
        Instruction::Delay { n } => Instruction::Delay { n: add(n) },
        Instruction::DelayPic { n, sel, value } => Instruction::DelayPic {
            n: add(n),
            sel,
            value,
        },
        Instruction::DelayXPic { n, paired, value } => Instruction::DelayXPic {
            n: add(n),
            paired,
            value,
        },
        other => panic!("cannot stretch {other:?}"),
    };
    row[t.word_index] = encode(&grown).unwrap().words()[0];
}

/// Index of the first instruction of `row` matching `pick`.
fn find(row: &[u32], pick: impl Fn(&Instruction) -> bool) -> usize {
    let d = decode_row(row).unwrap();
    d.instructions
        .iter()
        .position(|t| pick(&t.instruction))
        .unwrap()
}

fn witness_fault(dev: &mut Device) -> (PhysicalTile, WitnessFault) {
    match dev.run(10_000_000) {
        Err(DeviceError::Fault(f)) => match f.kind {
            FaultKind::ExchangeWitness { phase, fault, .. } => {
                assert_eq!(phase, 0);
                assert_eq!(fault.tile, f.tile);
                (f.tile, fault)
            }
            other => panic!("expected a witness fault, got {other:?}"),
        },
        other => panic!("expected a fault, got {other:?}"),
    }
}

/// A receiver's tear-down one event late: its mux stays on the sender
/// one event after the 10th word. The compile-time checker and the
/// witness each reject it; the witness names the receiving tile, the
/// event, and the address the 11th word would be written to.
#[test]
fn a_receive_one_event_too_long_is_a_typed_witness_fault() {
    let (phase, mut rows) = one_transfer();
    device(&phase, &rows).run(10_000_000).unwrap();
    // The tear-down one event later, the next instruction one shorter:
    // every other event of the row stays where it was.
    let events = decode_row(&rows[1].1).unwrap().events;
    let teardown = find(
        &rows[1].1,
        |i| matches!(i, Instruction::DelayXPic { value, .. } if *value == XPIC_NEUTRAL),
    );
    stretch(&mut rows[1].1, teardown, 1);
    stretch(&mut rows[1].1, teardown + 1, -1);
    assert_eq!(decode_row(&rows[1].1).unwrap().events, events);
    let as_rows: Vec<_> = rows
        .iter()
        .map(|(t, w)| ipuc_core::exchange::ExchangeRow {
            tile: *t,
            words: w.clone(),
            events: decode_row(w).unwrap().events,
        })
        .collect();
    assert!(
        check_phase(&phase, &as_rows).is_err(),
        "the compile-time checker accepts a receive one event too long"
    );
    let (tile, fault) = witness_fault(&mut device(&phase, &rows));
    assert_eq!(tile, phys(2));
    assert_eq!(
        fault.kind,
        WitnessFaultKind::NothingOnRoute {
            source: phys(0),
            paired: false
        }
    );
    assert_eq!(fault.address, Some(0x9_0000 + 4 * 10));
}

/// The sender's first word one event early: the receiver's mux then
/// takes words 2..10 and nothing at its last event. Both witnesses reject
/// it; the fabric's names the receiver, the event and where the 10th word
/// would have gone.
#[test]
fn a_send_one_event_early_is_a_typed_witness_fault() {
    let (phase, mut rows) = one_transfer();
    let lead = find(
        &rows[0].1,
        |i| matches!(i, Instruction::Delay { n } if *n > 0),
    );
    stretch(&mut rows[0].1, lead, -1);
    let as_rows: Vec<_> = rows
        .iter()
        .map(|(t, w)| ipuc_core::exchange::ExchangeRow {
            tile: *t,
            words: w.clone(),
            events: decode_row(w).unwrap().events,
        })
        .collect();
    assert!(matches!(
        check_phase(&phase, &as_rows),
        Err(ipuc_core::exchange::ExchangeError::Receive(
            ReceiveError::NoSender { .. }
        ))
    ));
    let (tile, fault) = witness_fault(&mut device(&phase, &rows));
    assert_eq!(tile, phys(2));
    assert!(matches!(
        fault.kind,
        WitnessFaultKind::NothingOnRoute { .. }
    ));
    assert_eq!(fault.address, Some(0x9_0000 + 4 * 9));
}
