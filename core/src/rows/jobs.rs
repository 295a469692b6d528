//! One [`PhaseJob`] per lowered exchange phase: its wire request with
//! iteration-0 addresses, the sources that move per Repeat iteration and
//! their Repeat frame slots.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::{RowsError, WORD};
use crate::exchange::{Destination, ExchangePhase as WirePhase, Transfer as WireTransfer, Width};
use crate::lower::{
    Buffer, BufferId, BufferRef, BufferRole, ExchangeStep, RepeatFrame, RepeatStep, Step,
    StepIndex, TileSchedule,
};
use crate::patch::repeat::IteratedSource;
use crate::place::{address, BufferAddresses};
use ipuc_target::ipu21::topology::LogicalTile;

/// Per-iteration byte stride of `at`'s buffer on `tile`, when it is iterated.
fn iterated_stride(buffer: &Buffer, tile: LogicalTile) -> Option<u32> {
    if !matches!(buffer.role, BufferRole::Iterated { .. }) || buffer.copies <= 1 {
        return None;
    }
    buffer
        .block_on(tile)
        .map(|block| buffer.iteration_stride(block))
}

/// The wire phase of a lowered phase (iteration-0 addresses), the
/// transfers whose sources move per iteration, and each wire transfer's
/// source (logical tile, buffer).
fn wire_phase(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    phase: &ExchangeStep,
) -> Result<WireParts, RowsError> {
    let step = phase.index.0;
    let mut wire = WirePhase::default();
    let mut iterated = Vec::new();
    let mut sources = Vec::new();
    for t in &phase.transfers {
        if t.row_bytes % WORD != 0 || t.source_pitch % WORD != 0 {
            return Err(RowsError::UnalignedTransfer {
                step,
                row_bytes: t.row_bytes,
            });
        }
        let source = t.source_tile.physical();
        let src0 = address(schedule, addrs, t.source, t.source_tile)?;
        let mut dests = Vec::with_capacity(t.destinations.len());
        for d in &t.destinations {
            dests.push((
                d.tile.physical(),
                address(schedule, addrs, d.at, d.tile)?,
                d.pitch,
            ));
        }
        let stride = schedule
            .buffer(t.source.buffer)
            .and_then(|b| iterated_stride(b, t.source_tile));
        // Runs that are contiguous at the source and at every destination
        // travel as one message; otherwise one message per run.
        let contiguous =
            t.source_pitch == t.row_bytes && t.destinations.iter().all(|d| d.pitch == t.row_bytes);
        let (runs, run_bytes) = if contiguous {
            (1, t.rows * t.row_bytes)
        } else {
            (t.rows, t.row_bytes)
        };
        if run_bytes == 0 {
            continue;
        }
        for r in 0..runs {
            let destinations = dests
                .iter()
                .map(|&(tile, base, pitch)| Destination {
                    tile,
                    address: base + r * pitch,
                })
                .collect();
            if let Some(stride) = stride {
                iterated.push(IteratedSource {
                    transfer: wire.transfers.len(),
                    stride_bytes: i64::from(stride),
                });
            }
            wire.transfers.push(WireTransfer {
                source,
                source_address: src0 + r * t.source_pitch,
                words: run_bytes / WORD,
                destinations,
                width: Width::Word32,
            });
            sources.push((t.source_tile, t.source.buffer));
        }
    }
    Ok((wire, iterated, sources))
}

type WireParts = (WirePhase, Vec<IteratedSource>, Vec<(LogicalTile, BufferId)>);

/// Where a moving source's outgoing base would come from: its buffer's
/// Repeat frame slot on the sending tile, the slot's per-iteration stride
/// and its iteration-0 value (the buffer's address).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceFrame {
    /// Word slot of the Repeat frame.
    pub slot: u32,
    /// Bytes the slot's value moves per iteration.
    pub stride: u32,
    /// The slot's value in iteration 0.
    pub base: u32,
}

/// Each wire transfer's [`SourceFrame`], if its buffer has a frame slot in
/// `repeat` on the sending tile.
fn source_frames(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
    repeat: &RepeatStep,
    sources: &[(LogicalTile, BufferId)],
) -> Result<Vec<Option<SourceFrame>>, RowsError> {
    let mut frames: BTreeMap<LogicalTile, RepeatFrame> = BTreeMap::new();
    let mut out = Vec::with_capacity(sources.len());
    for &(logical, buffer) in sources {
        let frame = frames
            .entry(logical)
            .or_insert_with(|| RepeatFrame::new(schedule, repeat, logical));
        out.push(match (frame.slot_of(buffer), frame.stride_of(buffer)) {
            (Some(slot), Some(stride)) => Some(SourceFrame {
                slot,
                stride,
                base: address(schedule, addrs, BufferRef { buffer, offset: 0 }, logical)?,
            }),
            _ => None,
        });
    }
    Ok(out)
}

/// One exchange phase ready to schedule: its wire request (iteration-0
/// addresses) and, inside a Repeat, the sources that move per iteration and
/// where their outgoing bases would come from. Jobs are independent of each
/// other once buffers are placed, so a host may run [`PhaseJob::schedule`]
/// for many of them in parallel.
#[derive(Clone, Debug)]
pub struct PhaseJob {
    /// The lowered phase's step.
    pub step: StepIndex,
    /// The request the rows must carry out.
    pub wire: WirePhase,
    /// Transfers whose sources move per Repeat iteration.
    pub iterated: Vec<IteratedSource>,
    /// Trip count of the enclosing Repeat, if any.
    pub trip_count: Option<u32>,
    /// Each wire transfer's Repeat frame slot (inside a Repeat with moving
    /// sources; empty otherwise).
    pub frames: Vec<Option<SourceFrame>>,
}

impl PhaseJob {
    /// Transfer words times destinations: a size measure for progress and
    /// for ordering work (larger jobs first balances threads).
    pub fn weight(&self) -> u64 {
        self.wire
            .transfers
            .iter()
            .map(|t| u64::from(t.words) * t.destinations.len().max(1) as u64)
            .sum()
    }
}

/// Every exchange phase of `schedule` as a [`PhaseJob`], in program (pre-)order.
pub fn exchange_jobs(
    schedule: &TileSchedule,
    addrs: &dyn BufferAddresses,
) -> Result<Vec<PhaseJob>, RowsError> {
    let mut lowered: Vec<(&ExchangeStep, Option<&RepeatStep>)> = Vec::new();
    schedule.visit(|step, parent| {
        if let Step::Exchange(p) = step {
            lowered.push((p, parent));
        }
    });
    lowered
        .into_iter()
        .map(|(phase, repeat)| {
            let (wire, iterated, sources) = wire_phase(schedule, addrs, phase)?;
            let frames = match repeat {
                Some(r) if !iterated.is_empty() => source_frames(schedule, addrs, r, &sources)?,
                _ => Vec::new(),
            };
            Ok(PhaseJob {
                step: phase.index,
                wire,
                iterated,
                trip_count: repeat.map(|r| r.trip_count),
                frames,
            })
        })
        .collect()
}
