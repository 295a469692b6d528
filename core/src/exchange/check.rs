//! The independent checker: decodes every emitted row, replays the phase with
//! the route model and proves each receiver stores exactly the promised words
//! at the promised addresses and nothing else.

use alloc::vec::Vec;

use super::decode::{decode_row, DecodedRow};
use super::encode::ExchangeRow;
use super::error::{CheckError, ExchangeError, Result};
use super::replay::{replay, RowBases, TileRowView, WordMove};
use super::request::ExchangePhase;
use crate::ipu21::topology::PhysicalTile;

/// What a successful check saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckReport {
    /// Words written on receivers.
    pub words_delivered: u64,
    /// Longest row in events.
    pub events: u32,
}

/// Decodes `rows` (each must match its claimed event length) and checks them
/// against `phase`, every tile running with both base CSRs 0.
pub fn check_phase(phase: &ExchangePhase, rows: &[ExchangeRow]) -> Result<CheckReport> {
    check_phase_with_bases(phase, rows, |_| RowBases::ZERO)
}

/// As [`check_phase`], with the base CSRs `bases(tile)` each tile holds when
/// its row runs (send addresses relative to `$OUTGOING_BASE`, PIC pointers to
/// `$INCOMING_BASE`, §2.3–§2.4).
pub fn check_phase_with_bases(
    phase: &ExchangePhase,
    rows: &[ExchangeRow],
    bases: impl Fn(PhysicalTile) -> RowBases,
) -> Result<CheckReport> {
    let mut decoded: Vec<(PhysicalTile, DecodedRow)> = Vec::with_capacity(rows.len());
    for r in rows {
        let d = decode_row(&r.words)?;
        if d.events != r.events || d.words != r.words.len() {
            return Err(CheckError::LengthMismatch {
                tile: r.tile,
                scheduled: r.events,
                decoded: d.events,
            }
            .into());
        }
        decoded.push((r.tile, d));
    }
    let views: Vec<TileRowView<'_>> = decoded
        .iter()
        .map(|(tile, row)| TileRowView {
            tile: *tile,
            row,
            bases: bases(*tile),
            fetch_span: None,
        })
        .collect();
    let moves = replay(&views)?;
    compare(phase, &moves)?;
    Ok(CheckReport {
        words_delivered: moves.len() as u64,
        events: decoded.iter().map(|(_, d)| d.events).max().unwrap_or(0),
    })
}

/// Compares replayed moves (sorted by destination) with the request.
pub fn compare(phase: &ExchangePhase, moves: &[WordMove]) -> Result<()> {
    // (dst tile, dst word, src tile, src word, transfer)
    let mut promised: Vec<(u16, u32, u16, u32, usize)> = Vec::new();
    for (ti, t) in phase.transfers.iter().enumerate() {
        for d in &t.destinations {
            for k in 0..t.words {
                promised.push((
                    d.tile.get(),
                    d.address / 4 + k,
                    t.source.get(),
                    t.source_address / 4 + k,
                    ti,
                ));
            }
        }
    }
    promised.sort_unstable();
    let tile =
        |id: u16| PhysicalTile::new(u32::from(id)).map_err(|_| ExchangeError::Internal("tile id"));
    let (mut i, mut j) = (0usize, 0usize);
    while i < promised.len() || j < moves.len() {
        let p = promised.get(i);
        let m = moves.get(j);
        if let (Some(m), Some(next)) = (m, moves.get(j + 1)) {
            if (m.dst_tile, m.dst_word) == (next.dst_tile, next.dst_word) {
                return Err(CheckError::WrittenTwice {
                    tile: tile(m.dst_tile)?,
                    address: m.dst_word * 4,
                }
                .into());
            }
        }
        match (p, m) {
            (Some(p), Some(m)) if (p.0, p.1) == (m.dst_tile, m.dst_word) => {
                if (p.2, p.3) != (m.src_tile, m.src_word) {
                    return Err(CheckError::WrongSource {
                        tile: tile(p.0)?,
                        address: p.1 * 4,
                        expected_tile: p.2,
                        expected_address: p.3 * 4,
                        got_tile: m.src_tile,
                        got_address: m.src_word * 4,
                    }
                    .into());
                }
                i += 1;
                j += 1;
            }
            (Some(p), m) if m.is_none_or(|m| (p.0, p.1) < (m.dst_tile, m.dst_word)) => {
                return Err(CheckError::Missing {
                    tile: tile(p.0)?,
                    address: p.1 * 4,
                    transfer: p.4,
                }
                .into());
            }
            (_, Some(m)) => {
                return Err(CheckError::Unexpected {
                    tile: tile(m.dst_tile)?,
                    address: m.dst_word * 4,
                }
                .into());
            }
            (None, None) => break,
            (Some(_), None) => return Err(ExchangeError::Internal("checker merge")),
        }
    }
    Ok(())
}
