//! The independent checker: decodes every emitted row, replays the phase with
//! the route model and proves each receiver stores exactly the promised words
//! at the promised addresses and nothing else.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use super::decode::{decode_row, DecodedRow};
use super::encode::ExchangeRow;
use super::error::{CheckError, ExchangeError, Result};
use super::replay::{
    replay_each, replay_runs, run_index_at, run_source_word, validate_bases, RowBases, TileRowView,
    WordMove,
};
use super::request::ExchangePhase;
use ipuc_target::ipu21::topology::{PhysicalTile, TILE_COUNT};

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
    check_observing(phase, decoded, bases, |_, _| {})
}

/// [`check_decoded_with_bases`], calling `matched` with promised words and
/// the moves that delivered them: with every word, or (checked in runs)
/// with the first word of each piece of consecutive words one send run
/// delivers for one transfer, so `matched` may rely only on what a piece's
/// words share (transfer, source tile, send run).
fn check_observing(
    phase: &ExchangePhase,
    decoded: &[(PhysicalTile, &DecodedRow)],
    bases: impl Fn(PhysicalTile) -> RowBases,
    mut matched: impl FnMut(&Promised, &WordMove),
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
    let spans = promised_spans(phase);
    let events = decoded.iter().map(|(_, d)| d.events).max().unwrap_or(0);
    if let Some(words_delivered) = check_runs(&spans, &views, &mut matched) {
        return Ok(CheckReport {
            words_delivered,
            events,
        });
    }
    // Each receiver's moves are compared as they are replayed (the phase's
    // moves are never held at once); a replay error still wins over a
    // difference found earlier, as when the whole replay came first.
    let mut words_delivered = 0u64;
    let result = with_promised(&spans, |promised| {
        let mut merge = Merge::observing(promised, matched);
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
        events,
    })
}

/// The check in runs of words ([`replay_runs`] against the promised
/// spans): the words delivered when every receiver stores exactly the
/// promised words, `None` when anything may differ (the word-by-word check
/// then finds the error, or agrees). `matched` is called once per piece of
/// consecutive words that one send run delivers for one transfer, with the
/// piece's first word.
fn check_runs(
    spans: &[Span],
    views: &[TileRowView<'_>],
    matched: &mut impl FnMut(&Promised, &WordMove),
) -> Option<u64> {
    if !simple_spans(spans) {
        return None;
    }
    // The next promised word: `spans[next].1 + offset`.
    let (mut next, mut offset) = (0usize, 0u32);
    let mut words = 0u64;
    replay_runs(views, |tile, runs| {
        let d = tile.get();
        // A tile before this one with a promised word left: missing.
        if spans.get(next).is_some_and(|s| s.0 < d) {
            return false;
        }
        for r in runs {
            let mut done = 0u32;
            while done < r.words {
                let Some(&(dt, dw, n, st, sw, ti)) = spans.get(next) else {
                    return false;
                };
                let m = r.word(d, done);
                let p = (dt, dw + offset, st, sw + offset, ti);
                if (p.0, p.1, p.2, p.3) != (m.dst_tile, m.dst_word, m.src_tile, m.src_word) {
                    return false;
                }
                matched(&p, &m);
                let take = (n - offset).min(r.words - done);
                done += take;
                offset += take;
                words += u64::from(take);
                if offset == n {
                    next += 1;
                    offset = 0;
                }
            }
        }
        true
    })?;
    (next == spans.len()).then_some(words)
}

/// The rows of a Repeat phase in every iteration.
pub struct IterationRows<'a> {
    /// Every row in phase order: its tile and, unless a table patches it,
    /// its decoding (the same in every iteration; an error is the
    /// iteration's when its turn comes).
    pub fixed: &'a [(PhysicalTile, Option<&'a Result<DecodedRow>>)],
    /// Iteration `i`'s patched rows (an index into `fixed` each), decoded.
    pub patched: &'a dyn Fn(u32) -> Vec<(usize, Result<DecodedRow>)>,
}

/// [`check_decoded_with_bases`] for `iterations` iterations of a Repeat
/// phase: iteration `i` is `phase(i)`, run by `rows`' rows of iteration `i`
/// with the tiles holding `bases(tile, i)`. The result is the first failing
/// iteration's error, exactly as checking the iterations one by one gives
/// it, or iteration 0's report.
///
/// Only iteration 0 is replayed word by word unless a later one may differ.
/// Rows that decode to the same structure (events, controls, send runs'
/// events, widths, routes and kinds) in every iteration, differing at most
/// in their runs' source addresses, replay to the same moves (destinations,
/// events, source tiles, order) and the same errors: a run's source enters
/// only as the source word of the items it delivers, moved by as much as
/// the run's first source word ([`run_source_word`]: its address, through
/// `$OUTGOING_BASE` for a `send` stream). So once iteration 0 matches its
/// request, iteration `i` matches its own exactly when its request differs
/// from iteration 0's only in source addresses, and each transfer's source
/// moved by as many words as every run that delivered its words in
/// iteration 0. An iteration where that does not hold — or whose incoming
/// bases differ from iteration 0's, whose bases the model does not cover,
/// or whose request wraps past 2^32 words — is replayed in full.
pub fn check_iterations(
    phase: &dyn Fn(u32) -> ExchangePhase,
    rows: &IterationRows<'_>,
    bases: &dyn Fn(PhysicalTile, u32) -> RowBases,
    iterations: u32,
) -> Result<CheckReport> {
    let patched_0 = (rows.patched)(0);
    let views_0 = iteration_views(rows.fixed, &patched_0)?;
    let first = phase(0);
    // Each tile's row, by index into the views (the same in every iteration).
    let mut by_tile: Vec<Option<usize>> = alloc::vec![None; usize::from(TILE_COUNT)];
    for (k, (tile, _)) in views_0.iter().enumerate() {
        by_tile[tile.index()] = Some(k);
    }
    // (transfer, send run of its source tile) of every delivered word (a
    // matched word came from its transfer's source); runs of equal keys
    // (consecutive words of one run) are inserted once.
    let mut keys: BTreeSet<(usize, usize)> = BTreeSet::new();
    let mut last: Option<(usize, usize)> = None;
    let report = check_observing(
        &first,
        &views_0,
        |tile| bases(tile, 0),
        |p, m| {
            let run = by_tile
                .get(usize::from(m.src_tile))
                .copied()
                .flatten()
                .and_then(|k| run_index_at(views_0[k].1, m.read_event));
            // A delivered word always has its run; `usize::MAX` makes a
            // key no iteration can derive.
            let key = (p.4, run.unwrap_or(usize::MAX));
            if last != Some(key) {
                keys.insert(key);
                last = Some(key);
            }
        },
    )?;
    for i in 1..iterations {
        let phase_i = phase(i);
        let patched_i = (rows.patched)(i);
        let views_i = iteration_views(rows.fixed, &patched_i)?;
        let derived = Iteration {
            first: (&first, &views_0),
            this: (&phase_i, &views_i),
            by_tile: &by_tile,
            bases,
            i,
        };
        if !derived.checks_as_the_first(&keys) {
            check_decoded_with_bases(&phase_i, &views_i, |tile| bases(tile, i))?;
        }
    }
    Ok(report)
}

/// One iteration's rows: the fixed ones with `patched` in their places;
/// the first row (in phase order) that did not decode is the error.
fn iteration_views<'a>(
    fixed: &[(PhysicalTile, Option<&'a Result<DecodedRow>>)],
    patched: &'a [(usize, Result<DecodedRow>)],
) -> Result<Vec<(PhysicalTile, &'a DecodedRow)>> {
    fixed
        .iter()
        .enumerate()
        .map(|(k, &(tile, row))| {
            let decoded = row
                .or_else(|| patched.iter().find(|(j, _)| *j == k).map(|(_, d)| d))
                .ok_or(ExchangeError::Internal(
                    "a patched row without its decoding",
                ))?;
            match decoded {
                Ok(d) => Ok((tile, d)),
                Err(e) => Err(e.clone()),
            }
        })
        .collect()
}

/// Iteration `i` beside iteration 0, for [`check_iterations`].
struct Iteration<'a> {
    first: (&'a ExchangePhase, &'a [(PhysicalTile, &'a DecodedRow)]),
    this: (&'a ExchangePhase, &'a [(PhysicalTile, &'a DecodedRow)]),
    /// Each tile's row, by index into both iterations' views.
    by_tile: &'a [Option<usize>],
    bases: &'a dyn Fn(PhysicalTile, u32) -> RowBases,
    i: u32,
}

impl Iteration<'_> {
    /// Whether this iteration provably checks as iteration 0 did.
    fn checks_as_the_first(&self, keys: &BTreeSet<(usize, usize)>) -> bool {
        let ((p0, v0), (pi, vi)) = (self.first, self.this);
        let limit = u64::from(u32::MAX) + 1;
        let same_request = p0.transfers.len() == pi.transfers.len()
            && p0.transfers.iter().zip(&pi.transfers).all(|(a, b)| {
                a.source == b.source
                    && a.words == b.words
                    && a.destinations == b.destinations
                    && u64::from(b.source_address / 4) + u64::from(b.words) <= limit
            });
        // The same structure: only the send runs' addresses may differ.
        let same_rows = v0.len() == vi.len()
            && v0.iter().zip(vi).all(|(&(t0, r0), &(ti, ri))| {
                t0 == ti
                    && r0.events == ri.events
                    && r0.words == ri.words
                    && r0.controls == ri.controls
                    && r0.sends.len() == ri.sends.len()
                    && r0.sends.iter().zip(&ri.sends).all(|(a, b)| {
                        (a.start, a.items, a.absolute, a.sctl, a.word_index)
                            == (b.start, b.items, b.absolute, b.sctl, b.word_index)
                    })
            });
        if !same_request || !same_rows {
            return false;
        }
        // Destinations are iteration 0's only with the same incoming bases.
        let (bases, i) = (self.bases, self.i);
        if vi.iter().any(|&(tile, row)| {
            let b = bases(tile, i);
            b.incoming != bases(tile, 0).incoming || validate_bases(b, tile, row).is_err()
        }) {
            return false;
        }
        keys.iter().all(|&(t, run)| {
            let (Some(a), Some(b)) = (p0.transfers.get(t), pi.transfers.get(t)) else {
                return false;
            };
            let moved = (b.source_address / 4).wrapping_sub(a.source_address / 4);
            let Some(k) = self.by_tile.get(a.source.index()).copied().flatten() else {
                return false;
            };
            let (r0, ri) = (v0[k].1, vi[k].1);
            let (Some(run0), Some(runi)) = (r0.sends.get(run), ri.sends.get(run)) else {
                return false;
            };
            let run_moved = run_source_word(bases(a.source, i), runi)
                .wrapping_sub(run_source_word(bases(a.source, 0), run0));
            moved == run_moved
        })
    }
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

/// Whether no span of `spans` (sorted) wraps past 2^32 words and no two
/// destination spans of one tile overlap.
fn simple_spans(spans: &[Span]) -> bool {
    let end = |s: &Span| u64::from(s.1) + u64::from(s.2);
    let src_end = |s: &Span| u64::from(s.4) + u64::from(s.2);
    let limit = u64::from(u32::MAX) + 1;
    spans.iter().all(|s| end(s) <= limit && src_end(s) <= limit)
        && spans
            .windows(2)
            .all(|w| w[0].0 != w[1].0 || end(&w[0]) <= u64::from(w[1].1))
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
    if simple_spans(spans) {
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
struct Merge<'a, F = fn(&Promised, &WordMove)> {
    promised: core::iter::Peekable<&'a mut dyn Iterator<Item = Promised>>,
    held: Option<WordMove>,
    error: Option<ExchangeError>,
    /// Called with every promised word and the move that delivered it.
    matched: F,
}

impl<'a> Merge<'a> {
    fn new(promised: &'a mut dyn Iterator<Item = Promised>) -> Self {
        Merge::observing(promised, |_, _| {})
    }
}

impl<'a, F: FnMut(&Promised, &WordMove)> Merge<'a, F> {
    fn observing(promised: &'a mut dyn Iterator<Item = Promised>, matched: F) -> Self {
        Self {
            promised: promised.peekable(),
            held: None,
            error: None,
            matched,
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
                (self.matched)(&p, m);
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
    use crate::exchange::replay::replay;
    use crate::exchange::request::{Destination, Transfer, Width};
    use alloc::collections::BTreeMap;
    use alloc::format;
    use ipuc_target::ipu21::topology::LogicalTile;

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

    /// A random phase of 20 tiles (every third of mixed widths) and the
    /// rows the scheduler makes for it.
    fn scheduled_random_phase(seed: u64) -> (ExchangePhase, Vec<crate::exchange::ExchangeRow>) {
        use crate::exchange::{schedule_phase, ScheduleOptions};
        let phase = random_phase(RandomPhaseSpec {
            tiles: 20,
            words: 48,
            fanout: 3,
            seed,
            exact_words: false,
            mixed_width: seed % 3 == 2,
        });
        let rows = schedule_phase(&phase, ScheduleOptions::default())
            .unwrap()
            .rows;
        (phase, rows)
    }

    #[test]
    fn the_check_in_runs_agrees_with_the_word_by_word_check() {
        for seed in 0..24 {
            let (phase, rows) = scheduled_random_phase(seed);
            let decoded: Vec<DecodedRow> =
                rows.iter().map(|r| decode_checked(r).unwrap()).collect();
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
            let row_of =
                |tile: u16| &decoded[rows.iter().position(|r| r.tile.get() == tile).unwrap()];
            // (transfer, source tile, send run) of every matched word.
            let key = |p: &Promised, m: &WordMove| {
                (
                    p.4,
                    m.src_tile,
                    run_index_at(row_of(m.src_tile), m.read_event),
                )
            };
            let spans = promised_spans(&phase);
            let mut fast_keys = BTreeSet::new();
            let fast = check_runs(&spans, &views, &mut |p, m| {
                fast_keys.insert(key(p, m));
            });
            let moves = replay(&views).unwrap();
            assert_eq!(fast, Some(moves.len() as u64), "seed {seed}");
            let mut slow_keys = BTreeSet::new();
            with_promised(&spans, |promised| {
                let mut merge = Merge::observing(promised, |p: &Promised, m: &WordMove| {
                    slow_keys.insert(key(p, m));
                });
                merge.feed(&moves);
                merge.finish()
            })
            .unwrap();
            assert_eq!(fast_keys, slow_keys, "seed {seed}");
            // A request the rows do not deliver is left to the word-by-word
            // check.
            for t in 0..phase.transfers.len() {
                let mut wrong = phase.clone();
                wrong.transfers[t].source_address += 4;
                let spans = promised_spans(&wrong);
                assert_eq!(check_runs(&spans, &views, &mut |_, _| {}), None);
                assert!(check_phase(&wrong, &rows).is_err());
            }
        }
    }

    #[test]
    fn iterations_derived_from_the_first_match_checking_each_one() {
        let mut rng = SplitMix64::new(11);
        let (mut derived_ok, mut failing) = (0, 0);
        for seed in 0..24 {
            let (phase, rows) = scheduled_random_phase(seed);
            let decoded: Vec<Result<DecodedRow>> = rows.iter().map(decode_checked).collect();
            for case in 0..8 {
                // Each transfer's source moves by `shift[t]` words per
                // iteration; its sender's base does too, or (odd cases) a
                // patch moves the addresses of its row's 32-bit runs. Some
                // cases break one sender: one word more, an incoming base,
                // an unaligned base.
                let shift: Vec<u32> = phase
                    .transfers
                    .iter()
                    .map(|_| rng.below(3) as u32)
                    .collect();
                let by_patch = case % 2 == 1;
                let mut moves: BTreeMap<u16, (u32, u32)> = phase
                    .transfers
                    .iter()
                    .zip(&shift)
                    .map(|(t, &k)| (t.source.get(), (k, 0)))
                    .collect();
                let broken = case % 4 == 2;
                if broken {
                    let t = &phase.transfers[rng.below(phase.transfers.len() as u64) as usize];
                    let e = moves.get_mut(&t.source.get()).unwrap();
                    match rng.below(3) {
                        0 => e.0 += 1,
                        1 => e.1 = 4,
                        _ => e.1 = 2,
                    }
                }
                let request = |i: u32| {
                    let mut p = phase.clone();
                    for (t, k) in p.transfers.iter_mut().zip(&shift) {
                        t.source_address += 4 * k * i;
                    }
                    p
                };
                let bases = |tile: PhysicalTile, i: u32| {
                    let (k, inc) = moves.get(&tile.get()).copied().unwrap_or((0, 0));
                    RowBases {
                        outgoing: if by_patch { 0 } else { 4 * k * i },
                        incoming: inc * i,
                    }
                };
                let patched_rows: Vec<usize> = if by_patch {
                    (0..rows.len()).collect()
                } else {
                    Vec::new()
                };
                let fixed: Vec<(PhysicalTile, Option<&Result<DecodedRow>>)> = rows
                    .iter()
                    .zip(&decoded)
                    .enumerate()
                    .map(|(k, (r, d))| (r.tile, (!patched_rows.contains(&k)).then_some(d)))
                    .collect();
                let row_at = |k: usize, i: u32| -> Result<DecodedRow> {
                    let mut d = decoded[k].clone()?;
                    let (m, _) = moves.get(&rows[k].tile.get()).copied().unwrap_or((0, 0));
                    for run in d.sends.iter_mut().filter(|r| r.sctl & 4 == 0) {
                        run.word_address += m * i;
                    }
                    Ok(d)
                };
                let patched = |i: u32| patched_rows.iter().map(|&k| (k, row_at(k, i))).collect();
                let one_by_one = (0..4)
                    .map(|i| {
                        let owned: Vec<DecodedRow> = (0..rows.len())
                            .map(|k| {
                                if by_patch {
                                    row_at(k, i).unwrap()
                                } else {
                                    decoded[k].clone().unwrap()
                                }
                            })
                            .collect();
                        let views: Vec<(PhysicalTile, &DecodedRow)> =
                            rows.iter().map(|r| r.tile).zip(&owned).collect();
                        check_decoded_with_bases(&request(i), &views, |t| bases(t, i))
                    })
                    .collect::<Vec<_>>();
                let expected = one_by_one
                    .iter()
                    .find(|r| r.is_err())
                    .unwrap_or(&one_by_one[0])
                    .clone();
                let fast = check_iterations(
                    &request,
                    &IterationRows {
                        fixed: &fixed,
                        patched: &patched,
                    },
                    &bases,
                    4,
                );
                assert_eq!(
                    format!("{fast:?}"),
                    format!("{expected:?}"),
                    "seed {seed} case {case}"
                );
                match fast {
                    Ok(_) if !broken => derived_ok += 1,
                    Err(_) => failing += 1,
                    Ok(_) => {}
                }
            }
        }
        // Both paths are exercised: iterations derived and iterations that fail.
        assert!(
            derived_ok > 20 && failing > 5,
            "{derived_ok} derived, {failing} failing"
        );
    }
}
