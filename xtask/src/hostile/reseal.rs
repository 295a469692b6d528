//! Re-sealed packages: the base package edited in place (a branch to
//! itself at the entry, a loop that never ends, outputs aliasing one SRAM
//! range, a 64 GiB output) and sealed again, so each carries a valid
//! digest and no sense.

use anyhow::{bail, Context, Result};
use ipuc_target::ipu21::isa::{encode, Imm16Op, Instruction, MReg};
use ipuc_target::package::{self, BindingKind, Package, SegmentRole, DIGEST_BYTES};

/// Re-seals `body` (package bytes without their digest).
fn reseal(bytes: &[u8], edit: impl FnOnce(&mut Vec<u8>) -> Result<()>) -> Result<Vec<u8>> {
    let mut body = bytes[..bytes.len() - DIGEST_BYTES].to_vec();
    edit(&mut body)?;
    Ok(package::seal(body))
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

/// The package with its first tile's entry word (or every tile's, `all`)
/// replaced by a branch to itself.
pub(super) fn self_loop(bytes: &[u8], p: &Package, all: bool) -> Result<Vec<u8>> {
    let entry = p.tiles.first().context("package has no tiles")?.entry_point;
    let branch = encode(&Instruction::Bri { target: entry })?.words()[0];
    at_entry(bytes, p, all, &[branch])
}

/// The package with its first tile's entry replaced by a loop that counts
/// in `$m1` and never exits: its state changes every time round, so only
/// the cycle budget ends it.
pub(super) fn counting_loop(bytes: &[u8], p: &Package) -> Result<Vec<u8>> {
    let entry = p.tiles.first().context("package has no tiles")?.entry_point;
    let m1 = MReg::new(1)?;
    let add = Instruction::AluImm16 {
        op: Imm16Op::Add,
        d: m1,
        s: m1,
        imm: 1,
    };
    let words = [
        encode(&add)?.words()[0],
        encode(&Instruction::Bri { target: entry })?.words()[0],
    ];
    at_entry(bytes, p, false, &words)
}

/// The package with `words` written over the code at its first tile's
/// entry (or every tile's with the same entry code, `all`), re-sealed.
fn at_entry(bytes: &[u8], p: &Package, all: bool, words: &[u32]) -> Result<Vec<u8>> {
    let tile = p.tiles.first().context("package has no tiles")?;
    let seg = tile
        .segments
        .iter()
        .find(|s| s.address <= tile.entry_point && u64::from(tile.entry_point) < s.end())
        .context("no segment holds the entry")?;
    let at = (tile.entry_point - seg.address) as usize;
    let window = seg
        .data
        .get(at..at + 64)
        .context("entry too near the end")?;
    let new: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    reseal(bytes, |body| {
        let hits = find_all(body, window);
        if hits.is_empty() {
            bail!("entry code not found in the package bytes");
        }
        for &h in hits.iter().take(if all { hits.len() } else { 1 }) {
            body[h..h + new.len()].copy_from_slice(&new);
        }
        Ok(())
    })
}

/// The package with every slice of its first output moved onto the first
/// slice's SRAM range.
pub(super) fn aliased_output(bytes: &[u8], p: &Package) -> Result<Vec<u8>> {
    let b = p
        .bindings_of(BindingKind::Output)
        .find(|b| b.slices.len() > 1)
        .context("no output with several slices")?;
    let first = b.slices[0];
    reseal(bytes, |body| {
        let mut moved = 0;
        for sl in &b.slices[1..] {
            if sl.size > first.size {
                continue;
            }
            let mut old = sl.file_offset.to_le_bytes().to_vec();
            old.extend_from_slice(&sl.tile.to_le_bytes());
            old.extend_from_slice(&sl.tile_address.to_le_bytes());
            old.extend_from_slice(&sl.size.to_le_bytes());
            for h in find_all(body, &old) {
                body[h + 8..h + 12].copy_from_slice(&first.tile.to_le_bytes());
                body[h + 12..h + 16].copy_from_slice(&first.tile_address.to_le_bytes());
                moved += 1;
            }
        }
        if moved == 0 {
            bail!("no slice could be moved");
        }
        Ok(())
    })
}

/// The package with its first output's leading dimension grown so the
/// tensor declares 64 GiB.
pub(super) fn huge_output(bytes: &[u8], p: &Package) -> Result<Vec<u8>> {
    let b = p
        .bindings_of(BindingKind::Output)
        .next()
        .context("no output")?;
    let mut record = (b.name.len() as u32).to_le_bytes().to_vec();
    record.extend_from_slice(b.name.as_bytes());
    record.extend_from_slice(&(b.shape.len() as u32).to_le_bytes());
    let rest: u64 = b.shape[1..].iter().product::<u64>() * b.dtype.size_bytes();
    let dim0 = (1u64 << 36) / rest.max(1);
    reseal(bytes, |body| {
        let h = *find_all(body, &record)
            .first()
            .context("binding not found")?;
        let at = h + record.len();
        body[at..at + 8].copy_from_slice(&dim0.to_le_bytes());
        Ok(())
    })
}

/// What a re-sealed binding slice is moved onto.
#[derive(Clone, Copy, Debug)]
pub(super) enum Onto {
    /// A slice of another binding of this class.
    Binding(BindingKind),
    /// The start of a segment of this role (code, rows, state, …).
    Segment(SegmentRole),
}

/// The base package with one slice of a `from` binding moved onto `onto`
/// (same size or smaller, so only the sharing is wrong), re-sealed; `None`
/// when the package has no such pair.
pub(super) fn moved_slice(p: &Package, from: BindingKind, onto: Onto) -> Option<Vec<u8>> {
    let mut q = p.clone();
    let (dest_tile, dest_address, room, skip) = match onto {
        Onto::Binding(kind) => {
            // The class's largest slice, so most slices fit onto it.
            let (i, s) = p
                .bindings
                .iter()
                .enumerate()
                .filter(|(_, b)| b.kind == kind)
                .flat_map(|(i, b)| b.slices.iter().map(move |s| (i, *s)))
                .max_by_key(|(_, s)| s.size)?;
            (s.tile, s.tile_address, s.size, Some(i))
        }
        Onto::Segment(role) => {
            let (tile, seg) = p.tiles.iter().find_map(|t| {
                t.segments
                    .iter()
                    .find(|s| s.role == role)
                    .map(|s| (t.physical_tile, s))
            })?;
            (tile, seg.address, seg.memory_size, None)
        }
    };
    let (bi, si) = p.bindings.iter().enumerate().find_map(|(i, b)| {
        if b.kind != from || Some(i) == skip {
            return None;
        }
        b.slices
            .iter()
            .position(|s| s.size <= room)
            .map(|si| (i, si))
    })?;
    let slice = &mut q.bindings[bi].slices[si];
    slice.tile = dest_tile;
    slice.tile_address = dest_address;
    package::write_unvalidated(&q).ok()
}

/// The base package with `edit` applied to its structure, re-sealed
/// without validation (`None` if it no longer encodes).
pub(super) fn edited(p: &Package, edit: impl FnOnce(&mut Package)) -> Option<Vec<u8>> {
    let mut q = p.clone();
    edit(&mut q);
    package::write_unvalidated(&q).ok()
}
