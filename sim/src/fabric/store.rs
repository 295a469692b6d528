//! Storing a phase's word moves into the tiles' memories, in event order when
//! a word is both read and written in the phase (all reads first otherwise).

use super::*;

/// Moves words in event order. When no word is both read and written in the
/// phase (the usual case) order cannot matter and all reads happen first.
pub fn apply_moves(moves: &[MoveRun], memory: &mut impl PhaseMemory) -> Result<(), FabricError> {
    let meet = reads_meet_writes(moves);
    let copies = if meet { Vec::new() } else { bulk_copies(moves) };
    apply_moves_knowing(moves, &copies, meet, memory)
}

/// The copies of `moves`' bulk runs ([`bulk_runs`]): source, destination
/// (tile, byte address) and words, in move order. A phase's moves give the
/// same copies whenever they recur, so the fabric's memo keeps them
/// ([`super::memo`]; #42: merging the runs was 1.2 s of serial time in a
/// 27-layer So400m inference).
pub(super) fn bulk_copies(moves: &[MoveRun]) -> Vec<CopyRun> {
    bulk_runs(moves)
        .map(|b| {
            let src = (b.src_tile, b.src_word.wrapping_mul(4));
            (src, (b.dst_tile, b.dst_word.wrapping_mul(4)), b.words)
        })
        .collect()
}

/// [`apply_moves`] given whether any word is both read and written
/// ([`reads_meet_writes`]) and, when none is, the moves' [`bulk_copies`].
pub(super) fn apply_moves_knowing(
    moves: &[MoveRun],
    copies: &[CopyRun],
    meet: bool,
    memory: &mut impl PhaseMemory,
) -> Result<(), FabricError> {
    if meet {
        return apply_moves_in_event_order(&singles(moves), memory);
    }
    // In bulk: each run of moves with consecutive source and destination
    // words between one pair of tiles is one slice read and one slice
    // write. A run that leaves memory is redone word by word, so the fault
    // (and the words stored before it) are those of the per-word order:
    // every read first, then every write, in move order.
    // Word moves of `moves` covering bulk run `b`, for the per-word redo.
    let words_of = |first: usize, n: u32| {
        singles(moves)
            .into_iter()
            .skip(first)
            .take(n as usize)
            .collect::<Vec<MoveRun>>()
    };
    let readable = copies
        .iter()
        .all(|&((tile, address), _, words)| memory.readable(tile, address, words));
    if readable {
        // Every source can be read, and no word is both read and written:
        // copying run by run stores what reading everything first would
        // (and a destination outside memory faults after the same stores).
        // The memory may copy them all at once (in parallel) when every
        // destination is inside it too.
        if memory.copy_disjoint_runs(copies) {
            return Ok(());
        }
        let mut first = 0usize;
        for b in bulk_runs(moves) {
            let src = (b.src_tile, b.src_word.wrapping_mul(4));
            let dst = (b.dst_tile, b.dst_word.wrapping_mul(4));
            if !memory.copy_words(src, dst, b.words) {
                for m in words_of(first, b.words) {
                    let v = read_word(memory, &m)?;
                    write_word(memory, &m, v)?;
                }
            }
            first += b.words as usize;
        }
        return Ok(());
    }
    let total: usize = moves.iter().map(|r| r.words as usize).sum();
    let mut values = Vec::with_capacity(total);
    let mut first = 0usize;
    for b in bulk_runs(moves) {
        let (tile, addr) = (b.src_tile, b.src_word.wrapping_mul(4));
        if !memory.read_words(tile, addr, b.words, &mut values) {
            for m in words_of(first, b.words) {
                values.push(read_word(memory, &m)?);
            }
        }
        first += b.words as usize;
    }
    let mut first = 0usize;
    for b in bulk_runs(moves) {
        let (tile, addr) = (b.dst_tile, b.dst_word.wrapping_mul(4));
        let vals = &values[first..first + b.words as usize];
        if !memory.write_words(tile, addr, vals) {
            for (m, &v) in words_of(first, b.words).iter().zip(vals) {
                write_word(memory, m, v)?;
            }
        }
        first += b.words as usize;
    }
    Ok(())
}

/// The bulk runs of `moves`: each run of moves with consecutive source and
/// destination words between one pair of tiles, merged into one. Events do
/// not matter here, only the words' order does (`per_event` of a merged run
/// is never read). Streamed, not collected: [`apply_moves`] walks them up to
/// three times, and regenerating them is cheaper than a vector of millions
/// of runs allocated (and page-faulted in) every superstep.
pub(super) fn bulk_runs(moves: &[MoveRun]) -> impl Iterator<Item = MoveRun> + '_ {
    let mut rest = moves.iter().peekable();
    std::iter::from_fn(move || {
        let mut b = *rest.next()?;
        while let Some(r) = rest.next_if(|r| {
            b.src_tile == r.src_tile
                && b.dst_tile == r.dst_tile
                && b.src_word.checked_add(b.words) == Some(r.src_word)
                && b.dst_word.checked_add(b.words) == Some(r.dst_word)
        }) {
            b.words += r.words;
        }
        Some(b)
    })
}

/// The word the one-word run `m` reads.
pub(super) fn read_word(memory: &impl PhaseMemory, m: &MoveRun) -> Result<u32, FabricError> {
    memory
        .read_u32(m.src_tile, m.src_word.wrapping_mul(4))
        .ok_or(FabricError::SourceOutsideMemory {
            tile: m.src_tile,
            event: m.read_event,
            address: m.src_word.wrapping_mul(4),
        })
}

/// Stores the word of the one-word run `m`.
pub(super) fn write_word(
    memory: &mut impl PhaseMemory,
    m: &MoveRun,
    v: u32,
) -> Result<(), FabricError> {
    if memory.write_u32(m.dst_tile, m.dst_word.wrapping_mul(4), v) {
        Ok(())
    } else {
        Err(FabricError::Witness(WitnessFault {
            tile: m.dst_tile,
            event: m.write_event,
            address: Some(m.dst_word.wrapping_mul(4)),
            kind: WitnessFaultKind::OutsideMemory,
        }))
    }
}

/// Every read and write of `moves` (one-word runs) in exact order: (event,
/// reads before writes at one event, index).
pub(super) fn apply_moves_in_event_order(
    moves: &[MoveRun],
    memory: &mut impl PhaseMemory,
) -> Result<(), FabricError> {
    let mut order: Vec<(u32, bool, usize)> = Vec::with_capacity(2 * moves.len());
    for (i, m) in moves.iter().enumerate() {
        order.push((m.read_event, false, i));
        order.push((m.write_event, true, i));
    }
    order.sort_unstable();
    let mut values = vec![0u32; moves.len()];
    for (_, is_write, i) in order {
        let m = &moves[i];
        if is_write {
            write_word(memory, m, values[i])?;
        } else {
            values[i] = read_word(memory, m)?;
        }
    }
    Ok(())
}

/// Word runs `(tile, first word, end word)` of `words` (runs of words in
/// order), merged and sorted.
pub(super) fn runs(
    mut words: impl Iterator<Item = (PhysicalTile, u32, u32)>,
) -> Vec<(PhysicalTile, u32, u32)> {
    // At most one run per item: reserving that up front spares the
    // doubling copies of a vector that can hold millions of runs.
    let mut out: Vec<(PhysicalTile, u32, u32)> = Vec::with_capacity(words.size_hint().0);
    if let Some((t, w, n)) = words.next() {
        let mut cur = (t, w, w + n);
        for (t, w, n) in words {
            if t == cur.0 && w == cur.2 {
                cur.2 += n;
            } else {
                out.push(cur);
                cur = (t, w, w + n);
            }
        }
        out.push(cur);
    }
    // Whole-tuple keys: the parallel sort's order is the serial one's (and
    // a phase's millions of runs are worth the second core).
    out.par_sort_unstable();
    out
}

/// Is any word both read and written by the phase?
pub(super) fn reads_meet_writes(moves: &[MoveRun]) -> bool {
    let reads = runs(moves.iter().map(|m| (m.src_tile, m.src_word, m.words)));
    let writes = runs(moves.iter().map(|m| (m.dst_tile, m.dst_word, m.words)));
    // Sweep both sorted run lists; runs within one list may overlap each other.
    let (mut i, mut j) = (0, 0);
    while i < reads.len() && j < writes.len() {
        let (r, w) = (reads[i], writes[j]);
        if (r.0, r.1) < (w.0, w.1) {
            if r.0 == w.0 && r.2 > w.1 {
                return true;
            }
            i += 1;
        } else {
            if r.0 == w.0 && w.2 > r.1 {
                return true;
            }
            j += 1;
        }
    }
    false
}
