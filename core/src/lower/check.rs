//! Structural checker for a [`TileSchedule`]: every operand and transfer
//! endpoint names a buffer that has a block on that tile, and stays inside
//! it; transfers move whole words and never target their sender.

use super::schedule::*;
use ipuc_target::ipu21::topology::LogicalTile;
use ipuc_target::kernel::Kernel;

/// What is wrong with a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScheduleError {
    /// A buffer id out of range.
    UnknownBuffer {
        /// Step.
        step: StepIndex,
        /// Buffer.
        buffer: BufferId,
    },
    /// A reference to a buffer on a tile where it has no block.
    NoBlockOnTile {
        /// Step.
        step: StepIndex,
        /// Buffer.
        buffer: BufferId,
        /// Tile.
        tile: LogicalTile,
    },
    /// An access past the end of the tile's block.
    OutOfBounds {
        /// Step.
        step: StepIndex,
        /// Buffer.
        buffer: BufferId,
        /// Tile.
        tile: LogicalTile,
        /// One past the last byte touched.
        end: u64,
        /// Block bytes.
        bytes: u32,
    },
    /// A transfer run that is not a whole number of words, or a self-send.
    BadTransfer {
        /// Step.
        step: StepIndex,
        /// Sender.
        tile: LogicalTile,
    },
}

impl core::fmt::Display for ScheduleError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::UnknownBuffer { step, buffer } => {
                write!(f, "step {}: unknown buffer {}", step.0, buffer.0)
            }
            Self::NoBlockOnTile { step, buffer, tile } => write!(
                f,
                "step {}: buffer {} has no block on logical tile {}",
                step.0,
                buffer.0,
                tile.get()
            ),
            Self::OutOfBounds {
                step,
                buffer,
                tile,
                end,
                bytes,
            } => write!(
                f,
                "step {}: access to byte {end} of buffer {}'s {bytes}-byte block on logical tile {}",
                step.0,
                buffer.0,
                tile.get()
            ),
            Self::BadTransfer { step, tile } => write!(
                f,
                "step {}: logical tile {} sends a run that is not whole words, or to itself",
                step.0,
                tile.get()
            ),
        }
    }
}

impl core::error::Error for ScheduleError {}

fn span(rows: u32, pitch: u32, row_bytes: u32, offset: u32) -> u64 {
    if rows == 0 {
        return offset as u64;
    }
    offset as u64 + (rows as u64 - 1) * pitch as u64 + row_bytes as u64
}

fn within(
    s: &TileSchedule,
    step: StepIndex,
    r: BufferRef,
    tile: LogicalTile,
    end: u64,
) -> Result<(), ScheduleError> {
    let buf = s.buffer(r.buffer).ok_or(ScheduleError::UnknownBuffer {
        step,
        buffer: r.buffer,
    })?;
    let b = buf.block_on(tile).ok_or(ScheduleError::NoBlockOnTile {
        step,
        buffer: r.buffer,
        tile,
    })?;
    if end > b.bytes as u64 {
        return Err(ScheduleError::OutOfBounds {
            step,
            buffer: r.buffer,
            tile,
            end,
            bytes: b.bytes,
        });
    }
    Ok(())
}

/// Checks references and bounds of every step.
pub fn check(s: &TileSchedule) -> Result<(), ScheduleError> {
    let mut result = Ok(());
    s.visit(|step, _| {
        if result.is_err() {
            return;
        }
        let idx = step.index();
        result = (|| {
            match step {
                Step::Compute(c) => {
                    for call in &c.calls {
                        for (i, r) in call.operands.iter().enumerate() {
                            let end = match (&call.kernel, i) {
                                (
                                    Kernel::Copy {
                                        rows,
                                        row_bytes,
                                        dst_pitch,
                                        ..
                                    },
                                    0,
                                ) => span(*rows, *dst_pitch, *row_bytes, r.offset),
                                (
                                    Kernel::Copy {
                                        rows,
                                        row_bytes,
                                        src_pitch,
                                        ..
                                    },
                                    _,
                                ) => span(*rows, *src_pitch, *row_bytes, r.offset),
                                _ => r.offset as u64,
                            };
                            within(s, idx, *r, call.tile, end)?;
                        }
                    }
                }
                Step::Exchange(e) => {
                    for t in &e.transfers {
                        if t.row_bytes % 4 != 0
                            || t.destinations.iter().any(|d| d.tile == t.source_tile)
                        {
                            return Err(ScheduleError::BadTransfer {
                                step: idx,
                                tile: t.source_tile,
                            });
                        }
                        within(
                            s,
                            idx,
                            t.source,
                            t.source_tile,
                            span(t.rows, t.source_pitch, t.row_bytes, t.source.offset),
                        )?;
                        for d in &t.destinations {
                            within(
                                s,
                                idx,
                                d.at,
                                d.tile,
                                span(t.rows, d.pitch, t.row_bytes, d.at.offset),
                            )?;
                        }
                    }
                }
                Step::Repeat(_) => {}
            }
            Ok(())
        })();
    });
    result
}
