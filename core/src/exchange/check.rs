//! The independent checker: decodes every emitted row, replays the phase with
//! the route model and proves each receiver stores exactly the promised words
//! at the promised addresses and nothing else.

use alloc::vec::Vec;

use super::decode::{decode_row, DecodedRow};
use super::encode::ExchangeRow;
use super::error::{CheckError, ExchangeError, Result};
use super::replay::{replay_each, RowBases, TileRowView, WordMove};
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
        decoded.push((r.tile, decode_checked(r)?));
    }
    let refs: Vec<(PhysicalTile, &DecodedRow)> = decoded.iter().map(|(t, d)| (*t, d)).collect();
    check_decoded_with_bases(phase, &refs, bases)
}

/// Decodes one row, which must match its claimed event length (the first
/// step of [`check_phase_with_bases`], for a caller checking the same rows
/// many times).
pub fn decode_checked(r: &ExchangeRow) -> Result<DecodedRow> {
    let d = decode_row(&r.words)?;
    if d.events != r.events || d.words != r.words.len() {
        return Err(CheckError::LengthMismatch {
            tile: r.tile,
            scheduled: r.events,
            decoded: d.events,
        }
        .into());
    }
    Ok(d)
}

/// [`check_phase_with_bases`] for rows already decoded with
/// [`decode_checked`] (same order, same result).
pub fn check_decoded_with_bases(
    phase: &ExchangePhase,
    decoded: &[(PhysicalTile, &DecodedRow)],
    bases: impl Fn(PhysicalTile) -> RowBases,
) -> Result<CheckReport> {
    let views: Vec<TileRowView<'_>> = decoded
        .iter()
        .map(|&(tile, row)| TileRowView {
            tile,
            row,
            bases: bases(tile),
            fetch_span: None,
        })
        .collect();
    // Each receiver's moves are compared as they are replayed (the phase's
    // moves are never held at once); a replay error still wins over a
    // difference found earlier, as when the whole replay came first.
    let spans = promised_spans(phase);
    let mut words_delivered = 0u64;
    let result = with_promised(&spans, |promised| {
        let mut merge = Merge::new(promised);
        let replayed = replay_each(&views, |moves| {
            words_delivered += moves.len() as u64;
            merge.feed(moves);
        });
        replayed?;
        merge.finish()
    });
    result?;
    Ok(CheckReport {
        words_delivered,
        events: decoded.iter().map(|(_, d)| d.events).max().unwrap_or(0),
    })
}

/// A promised word: (dst tile, dst word, src tile, src word, transfer).
type Promised = (u16, u32, u16, u32, usize);

/// A promised span: (dst tile, first dst word, words, src tile, first src
/// word, transfer).
type Span = (u16, u32, u32, u16, u32, usize);

/// Every transfer destination's span, sorted.
fn promised_spans(phase: &ExchangePhase) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for (ti, t) in phase.transfers.iter().enumerate() {
        if t.words == 0 {
            continue;
        }
        for d in &t.destinations {
            spans.push((
                d.tile.get(),
                d.address / 4,
                t.words,
                t.source.get(),
                t.source_address / 4,
                ti,
            ));
        }
    }
    spans.sort_unstable();
    spans
}

/// Calls `f` with the promised words of `spans` in (destination tile,
/// destination word) order.
///
/// Destination spans are sorted (one per transfer destination, not one per
/// word), so walking them span by span costs time linear in the words moved
/// plus a sort of the spans. When two destination spans of one tile overlap
/// (an invalid request), the words are listed and sorted one by one
/// instead, which reports exactly what the span walk would for a valid
/// request.
fn with_promised<R>(spans: &[Span], f: impl FnOnce(&mut dyn Iterator<Item = Promised>) -> R) -> R {
    let end = |s: &Span| u64::from(s.1) + u64::from(s.2);
    let src_end = |s: &Span| u64::from(s.4) + u64::from(s.2);
    let limit = u64::from(u32::MAX) + 1;
    let simple = spans.iter().all(|s| end(s) <= limit && src_end(s) <= limit)
        && spans
            .windows(2)
            .all(|w| w[0].0 != w[1].0 || end(&w[0]) <= u64::from(w[1].1));
    if simple {
        let mut words = spans
            .iter()
            .flat_map(|&(dt, dw, n, st, sw, ti)| (0..n).map(move |k| (dt, dw + k, st, sw + k, ti)));
        f(&mut words)
    } else {
        let mut promised: Vec<Promised> = spans
            .iter()
            .flat_map(|&(dt, dw, n, st, sw, ti)| {
                (0..n).map(move |k| (dt, dw.wrapping_add(k), st, sw.wrapping_add(k), ti))
            })
            .collect();
        promised.sort_unstable();
        f(&mut promised.into_iter())
    }
}

/// Compares replayed moves (sorted by destination) with the request.
pub fn compare(phase: &ExchangePhase, moves: &[WordMove]) -> Result<()> {
    with_promised(&promised_spans(phase), |promised| {
        let mut merge = Merge::new(promised);
        merge.feed(moves);
        merge.finish()
    })
}

/// The error for promised word `p` arriving from the wrong source in move `m`.
fn wrong_source(p: &Promised, m: &WordMove) -> ExchangeError {
    match PhysicalTile::new(u32::from(p.0)) {
        Ok(tile) => CheckError::WrongSource {
            tile,
            address: p.1.wrapping_mul(4),
            expected_tile: p.2,
            expected_address: p.3.wrapping_mul(4),
            got_tile: m.src_tile,
            got_address: m.src_word.wrapping_mul(4),
        }
        .into(),
        Err(_) => ExchangeError::Internal("tile id"),
    }
}

/// Merges promised words (sorted by destination) with replayed moves
/// (sorted by destination, fed in pieces); the first difference is the
/// error. One move is held back so a word written twice is seen across
/// pieces.
struct Merge<'a> {
    promised: core::iter::Peekable<&'a mut dyn Iterator<Item = Promised>>,
    held: Option<WordMove>,
    error: Option<ExchangeError>,
}

impl<'a> Merge<'a> {
    fn new(promised: &'a mut dyn Iterator<Item = Promised>) -> Self {
        Self {
            promised: promised.peekable(),
            held: None,
            error: None,
        }
    }

    /// The next moves in destination order (ignored after a difference).
    fn feed(&mut self, moves: &[WordMove]) {
        for m in moves {
            if self.error.is_some() {
                return;
            }
            if let Some(h) = self.held.take() {
                if let Err(e) = self.step(Some(&h), Some(m)) {
                    self.error = Some(e);
                    return;
                }
            }
            self.held = Some(*m);
        }
    }

    /// The first difference, if any, once every move has been fed.
    fn finish(mut self) -> Result<()> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(h) = self.held.take() {
            self.step(Some(&h), None)?;
        }
        self.step(None, None)
    }

    /// Consumes move `m` (followed by `next`) against the promised words;
    /// with `m = None`, checks that nothing promised is left.
    fn step(&mut self, m: Option<&WordMove>, next: Option<&WordMove>) -> Result<()> {
        let tile = |id: u16| {
            PhysicalTile::new(u32::from(id)).map_err(|_| ExchangeError::Internal("tile id"))
        };
        if let (Some(m), Some(next)) = (m, next) {
            if (m.dst_tile, m.dst_word) == (next.dst_tile, next.dst_word) {
                return Err(CheckError::WrittenTwice {
                    tile: tile(m.dst_tile)?,
                    address: m.dst_word.wrapping_mul(4),
                }
                .into());
            }
        }
        let p = self.promised.peek().copied();
        match (p, m) {
            (Some(p), Some(m)) if (p.0, p.1) == (m.dst_tile, m.dst_word) => {
                if (p.2, p.3) != (m.src_tile, m.src_word) {
                    return Err(wrong_source(&p, m));
                }
                self.promised.next();
                Ok(())
            }
            (Some(p), m) if m.is_none_or(|m| (p.0, p.1) < (m.dst_tile, m.dst_word)) => {
                Err(CheckError::Missing {
                    tile: tile(p.0)?,
                    address: p.1.wrapping_mul(4),
                    transfer: p.4,
                }
                .into())
            }
            (_, Some(m)) => Err(CheckError::Unexpected {
                tile: tile(m.dst_tile)?,
                address: m.dst_word.wrapping_mul(4),
            }
            .into()),
            (None, None) => Ok(()),
            (Some(_), None) => Err(ExchangeError::Internal("checker merge")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::random::{random_phase, RandomPhaseSpec, SplitMix64};
    use crate::exchange::request::{Destination, Transfer, Width};
    use crate::ipu21::topology::LogicalTile;

    /// The reference: every promised word listed and sorted.
    fn compare_words(phase: &ExchangePhase, moves: &[WordMove]) -> Result<()> {
        let mut promised: Vec<Promised> = Vec::new();
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
        merge_reference(promised.into_iter(), moves)
    }

    /// The merge as it was before moves were fed in pieces (one slice).
    fn merge_reference(promised: impl Iterator<Item = Promised>, moves: &[WordMove]) -> Result<()> {
        let tile = |id: u16| {
            PhysicalTile::new(u32::from(id)).map_err(|_| ExchangeError::Internal("tile id"))
        };
        let mut promised = promised.peekable();
        let mut j = 0usize;
        loop {
            let p = promised.peek().copied();
            let m = moves.get(j);
            if let (Some(m), Some(next)) = (m, moves.get(j + 1)) {
                if (m.dst_tile, m.dst_word) == (next.dst_tile, next.dst_word) {
                    return Err(CheckError::WrittenTwice {
                        tile: tile(m.dst_tile)?,
                        address: m.dst_word.wrapping_mul(4),
                    }
                    .into());
                }
            }
            match (p, m) {
                (Some(p), Some(m)) if (p.0, p.1) == (m.dst_tile, m.dst_word) => {
                    if (p.2, p.3) != (m.src_tile, m.src_word) {
                        return Err(wrong_source(&p, m));
                    }
                    promised.next();
                    j += 1;
                }
                (Some(p), m) if m.is_none_or(|m| (p.0, p.1) < (m.dst_tile, m.dst_word)) => {
                    return Err(CheckError::Missing {
                        tile: tile(p.0)?,
                        address: p.1.wrapping_mul(4),
                        transfer: p.4,
                    }
                    .into());
                }
                (_, Some(m)) => {
                    return Err(CheckError::Unexpected {
                        tile: tile(m.dst_tile)?,
                        address: m.dst_word.wrapping_mul(4),
                    }
                    .into());
                }
                (None, None) => return Ok(()),
                (Some(_), None) => return Err(ExchangeError::Internal("checker merge")),
            }
        }
    }

    fn moves_of(phase: &ExchangePhase) -> Vec<WordMove> {
        let mut moves = Vec::new();
        for t in &phase.transfers {
            for d in &t.destinations {
                for k in 0..t.words {
                    moves.push(WordMove {
                        dst_tile: d.tile.get(),
                        dst_word: d.address / 4 + k,
                        src_tile: t.source.get(),
                        src_word: t.source_address / 4 + k,
                        read_event: 0,
                        write_event: 0,
                    });
                }
            }
        }
        moves.sort_unstable_by_key(|m| (m.dst_tile, m.dst_word));
        moves
    }

    #[test]
    fn span_walk_matches_the_word_list() {
        let mut rng = SplitMix64::new(7);
        for seed in 0..12 {
            let mut phase = random_phase(RandomPhaseSpec {
                tiles: 24,
                words: 40,
                fanout: 3,
                seed,
                exact_words: false,
                mixed_width: seed % 2 == 1,
            });
            if seed % 4 == 3 {
                // An invalid request: a destination span overlapping another.
                let t = phase.transfers[1].clone();
                let d = t.destinations[0];
                phase.transfers.push(Transfer {
                    destinations: alloc::vec![Destination {
                        tile: d.tile,
                        address: d.address + 8,
                    }],
                    width: Width::Word32,
                    ..t
                });
            }
            let good = moves_of(&phase);
            assert_eq!(compare(&phase, &good), compare_words(&phase, &good));
            for _ in 0..40 {
                let mut m = good.clone();
                let i = rng.below(m.len() as u64) as usize;
                match rng.below(4) {
                    0 => {
                        m.remove(i);
                    }
                    1 => {
                        let dup = m[i];
                        m.insert(i, dup);
                    }
                    2 => m[i].src_word += 1,
                    _ => {
                        let mut extra = m[i];
                        extra.dst_word = extra.dst_word.wrapping_add(100_000);
                        m.push(extra);
                        m.sort_unstable_by_key(|w| (w.dst_tile, w.dst_word));
                    }
                }
                let got = compare(&phase, &m);
                assert!(got.is_err());
                assert_eq!(got, compare_words(&phase, &m), "seed {seed}");
                // Fed in pieces (as `check_phase` feeds receivers), the
                // first difference is the same, also across a piece boundary.
                let piece = 1 + rng.below(7) as usize;
                let pieces = with_promised(&promised_spans(&phase), |promised| {
                    let mut merge = Merge::new(promised);
                    for chunk in m.chunks(piece) {
                        merge.feed(chunk);
                    }
                    merge.finish()
                });
                assert_eq!(pieces, got, "seed {seed}, pieces of {piece}");
            }
        }
        // An empty transfer promises nothing.
        let tile = |l| LogicalTile::new(l).unwrap().physical();
        let phase = ExchangePhase {
            transfers: alloc::vec![Transfer {
                source: tile(0),
                source_address: 0x60000,
                words: 0,
                destinations: alloc::vec![Destination {
                    tile: tile(1),
                    address: 0x70000,
                }],
                width: Width::Word32,
            }],
        };
        assert_eq!(compare(&phase, &[]), Ok(()));
    }
}
