//! The arithmetic of key-split attention shared by the schedule oracle
//! (`lower::oracle`) and the simulator's codelet: one definition of how key
//! block partials combine, and of the values' transposition.

use alloc::vec;
use alloc::vec::Vec;

use super::{attention_mode, partials_type};
use crate::numeric::DType;

/// How a key block's partial row is stored, in elements of the attention's
/// partials type (`partials_type(attention_mode(dtype))`): `p·v`'s
/// `head_dim` values as the AMP produced them, then the row maximum `m`
/// and the sum `l` as F32 at `m` and `l`. With FP16 partials the values
/// take half the bytes of F32 and the statistics two FP16 slots each (the
/// values padded to an even count so they stay word-aligned); with F32
/// partials a row is `[o, m, l]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartialRecord {
    /// Elements of the partials type per row.
    pub len: u32,
    /// Element index of `m`.
    pub m: u32,
    /// Element index of `l`.
    pub l: u32,
    /// The partials type (the record's element type).
    pub element: DType,
}

impl PartialRecord {
    /// The record of attention over operands of `dtype`, `head_dim` wide.
    /// Saturating: `head_dim` comes from an argument block, and a
    /// saturated record exceeds any tile's SRAM, so the operand checks
    /// reject the call.
    pub fn of(head_dim: u32, dtype: DType) -> Self {
        let element = partials_type(attention_mode(dtype));
        let slots = (4 / element.size_bytes()) as u32;
        let m = head_dim.saturating_add(slots - 1) / slots * slots;
        PartialRecord {
            len: m.saturating_add(2 * slots),
            m,
            l: m.saturating_add(slots),
            element,
        }
    }

    /// Bytes per row.
    pub fn row_bytes(self) -> u32 {
        self.len.saturating_mul(self.element.size_bytes() as u32)
    }

    /// `rows` logical rows `[o (head_dim), m, l]` laid out as records, as
    /// element values (padding and the statistics' second slots zero).
    pub fn to_records(self, logical: &[f32], rows: usize, head_dim: usize) -> Vec<f32> {
        let mut out = vec![0f32; rows * self.len as usize];
        for (row, rec) in logical
            .chunks(head_dim + 2)
            .zip(out.chunks_mut(self.len as usize))
        {
            let n = head_dim.min(row.len());
            rec[..n].copy_from_slice(&row[..n]);
            rec[self.m as usize] = row.get(head_dim).copied().unwrap_or(0.0);
            rec[self.l as usize] = row.get(head_dim + 1).copied().unwrap_or(0.0);
        }
        out
    }

    /// The logical rows `[o (head_dim), m, l]` of `rows` as records in
    /// `out` (whole records, [`row_bytes`](Self::row_bytes) each): `o` in
    /// the record's element type by `encode` (the type's own encoding), `m`
    /// and `l` as little-endian F32 at their slots. Records past the rows
    /// or the bytes are left as they are.
    pub fn write_bytes(
        self,
        rows: &[f32],
        head_dim: usize,
        out: &mut [u8],
        mut encode: impl FnMut(&[f32], &mut [u8]),
    ) {
        let (size, row_bytes) = (self.element.size_bytes(), self.row_bytes() as usize);
        for (row, rec) in rows
            .chunks_exact(head_dim + 2)
            .zip(out.chunks_exact_mut(row_bytes.max(1)))
        {
            encode(&row[..head_dim], &mut rec[..head_dim * size]);
            for (at, v) in [(self.m, row[head_dim]), (self.l, row[head_dim + 1])] {
                let at = at as usize * size;
                rec[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
    }

    /// The logical rows `[o, m, l]` of the records in `bytes`, `o` by
    /// `decode` (appending the `head_dim` values of its bytes), as
    /// [`write_bytes`](Self::write_bytes) lays them out.
    pub fn read_bytes(
        self,
        bytes: &[u8],
        head_dim: usize,
        mut decode: impl FnMut(&[u8], &mut Vec<f32>),
    ) -> Vec<f32> {
        let (size, row_bytes) = (self.element.size_bytes(), self.row_bytes() as usize);
        let mut rows = Vec::with_capacity(bytes.len() / row_bytes.max(1) * (head_dim + 2));
        for rec in bytes.chunks_exact(row_bytes.max(1)) {
            decode(&rec[..head_dim * size], &mut rows);
            for at in [self.m, self.l] {
                let at = at as usize * size;
                let word = rec[at..at + 4].try_into().unwrap_or([0; 4]);
                rows.push(f32::from_le_bytes(word));
            }
        }
        rows
    }

    /// The logical rows `[o, m, l]` of `rows` records.
    pub fn from_records(self, records: &[f32], rows: usize, head_dim: usize) -> Vec<f32> {
        let mut out = Vec::with_capacity(rows * (head_dim + 2));
        for rec in records.chunks(self.len as usize).take(rows) {
            let get = |i: u32| rec.get(i as usize).copied().unwrap_or(0.0);
            out.extend((0..head_dim as u32).map(get));
            out.extend([get(self.m), get(self.l)]);
        }
        out
    }
}

/// The `rows × cols` block of `m` (rows `pitch` elements apart, `pitch ≥
/// cols`) transposed: `cols` rows of `rows` elements. Values transposed
/// for `p·v` (`Kernel::AttentionPartial::values_transposed`) are this of
/// the `[keys, head_dim]` block, and `Kernel::Transpose` writes it.
/// Generic over the element so the codelet can move raw element bytes
/// (`[u8; size]`) as the oracle moves f32 values.
pub fn transposed<T: Copy + Default>(
    m: &[T],
    (rows, cols): (usize, usize),
    pitch: usize,
) -> Vec<T> {
    (0..cols)
        .flat_map(|c| (0..rows).map(move |r| r * pitch + c))
        .map(|i| m.get(i).copied().unwrap_or_default())
        .collect()
}

/// Combines `parts` partial rows `[o (head_dim), m, l]` per query row
/// (stored part-major: part `p`'s `q_rows` rows, then part `p + 1`'s) into
/// `out[i] = Σ_p e^{m_p − M}·o_p / Σ_p e^{m_p − M}·l_p` with `M = max_p m_p`
/// (`q_rows × head_dim`, F32). A row whose total weight is zero gives zeros.
pub fn combine_attention_partials(
    partials: &[f32],
    q_rows: usize,
    head_dim: usize,
    parts: usize,
) -> Vec<f32> {
    let w = head_dim + 2;
    let mut out = vec![0f32; q_rows * head_dim];
    for i in 0..q_rows {
        let row = |p: usize| partials.get((p * q_rows + i) * w..(p * q_rows + i + 1) * w);
        let m = (0..parts)
            .filter_map(|p| row(p).map(|r| r[head_dim]))
            .fold(f32::NEG_INFINITY, f32::max);
        let mut total = 0f32;
        let acc = &mut out[i * head_dim..(i + 1) * head_dim];
        for p in 0..parts {
            let Some(r) = row(p) else { continue };
            let scale = libm::expf(r[head_dim] - m);
            total += scale * r[head_dim + 1];
            for (a, o) in acc.iter_mut().zip(&r[..head_dim]) {
                *a += scale * o;
            }
        }
        if total > 0.0 {
            acc.iter_mut().for_each(|a| *a /= total);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FP16 partials: `p·v` in FP16 slots padded to a word, then `m` and
    /// `l` as F32 (two slots each); F32 partials: `[o, m, l]`. Records
    /// round-trip the logical rows, and hostile widths saturate.
    #[test]
    fn partial_records_hold_the_rows_in_the_partials_type() {
        let r = PartialRecord::of(5, DType::F16);
        assert_eq!((r.len, r.m, r.l, r.element), (10, 6, 8, DType::F16));
        assert_eq!(r.row_bytes(), 20);
        let f = PartialRecord::of(5, DType::F32);
        assert_eq!((f.len, f.m, f.l, f.row_bytes()), (7, 5, 6, 28));
        let logical: Vec<f32> = (0..14).map(|i| i as f32).collect(); // 2 rows
        for record in [r, f] {
            let stored = record.to_records(&logical, 2, 5);
            assert_eq!(stored.len(), 2 * record.len as usize);
            assert_eq!(record.from_records(&stored, 2, 5), logical);
            // As bytes, with F32 standing in for the element encoding (the
            // values are small integers, exact in either type): `m` and
            // `l` are F32 at their slots, `o` at the start.
            let size = record.element.size_bytes();
            let mut bytes = vec![0u8; 2 * record.row_bytes() as usize];
            record.write_bytes(&logical, 5, &mut bytes, |o, out| {
                for (v, b) in o.iter().zip(out.chunks_exact_mut(size)) {
                    b.copy_from_slice(&v.to_le_bytes()[..size]);
                }
            });
            let m_at = record.m as usize * size;
            assert_eq!(bytes[m_at..m_at + 4], 5f32.to_le_bytes());
            let back = record.read_bytes(&bytes, 5, |b, rows| {
                rows.extend(b.chunks_exact(size).map(|c| {
                    let mut w = [0u8; 4];
                    w[..size].copy_from_slice(c);
                    f32::from_le_bytes(w)
                }))
            });
            if size == 4 {
                assert_eq!(back, logical);
            } else {
                // Only `m` and `l` survive a two-byte stand-in for `o`.
                let stats =
                    |v: &[f32]| -> Vec<f32> { v.chunks(7).flat_map(|r| r[5..].to_vec()).collect() };
                assert_eq!(stats(&back), stats(&logical));
            }
        }
        assert_eq!(
            PartialRecord::of(u32::MAX, DType::F16).row_bytes(),
            u32::MAX
        );
    }

    /// Splitting the keys in two and combining equals softmax over all keys.
    #[test]
    fn two_key_blocks_combine_to_the_full_softmax() {
        let scores = [0.5f32, -1.0, 2.0, 0.25];
        let values = [1.0f32, 2.0, 3.0, 4.0]; // head_dim 1
        let full: f32 = {
            let m = 2.0f32;
            let e: Vec<f32> = scores.iter().map(|s| libm::expf(s - m)).collect();
            e.iter().zip(&values).map(|(a, b)| a * b).sum::<f32>() / e.iter().sum::<f32>()
        };
        let partial = |s: &[f32], v: &[f32]| {
            let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let e: Vec<f32> = s.iter().map(|x| libm::expf(x - m)).collect();
            [e.iter().zip(v).map(|(a, b)| a * b).sum(), m, e.iter().sum()]
        };
        let mut partials = Vec::new();
        partials.extend(partial(&scores[..2], &values[..2]));
        partials.extend(partial(&scores[2..], &values[2..]));
        let out = combine_attention_partials(&partials, 1, 1, 2);
        assert!((out[0] - full).abs() < 1e-6, "{} vs {full}", out[0]);
    }
}
