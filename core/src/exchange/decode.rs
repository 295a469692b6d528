//! Exchange row words → event timeline (the inverse of `encode`, and what the
//! simulator's fabric runs). Accepts any row, not only ours.

use alloc::vec::Vec;

use super::error::RowDecodeError;
use ipuc_target::ipu21::exchange_model::XPIC_NEUTRAL;
use ipuc_target::ipu21::isa::{decode, m, Instruction, PicField, PicTarget};

/// A contiguous run of items one instruction puts on the fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendRun {
    /// Event of the first item.
    pub start: u32,
    /// Items (one per event).
    pub items: u32,
    /// Address of the first item as the row encodes it: a word address, or
    /// 8-byte units for 64-bit items (`sctl` bit 2, §2.3). Relative to
    /// `$OUTGOING_BASE` for streams started by `send`; absolute for streams
    /// a transmitting `sendpicp` (re)started (see `absolute`).
    pub word_address: u32,
    /// The stream was (re)started by a transmitting `sendpicp`, whose address
    /// is absolute (§2.3); `send` streams (and their `sendoff`/`sendpic`
    /// continuations) are relative to `$OUTGOING_BASE`.
    pub absolute: bool,
    /// Route bits and width (bit 2 = 64-bit items).
    pub sctl: u32,
    /// Index of the instruction's first word in the row.
    pub word_index: usize,
}

/// What a receive control sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlKind {
    /// XPIC source (tile id, host mux or `0x640`).
    Xpic(u32),
    /// XPIC of the paired (64-bit) stream.
    XpicPaired(u32),
    /// PIC receive pointer (word address).
    PicPointer(u32),
    /// PIC 64-bit format.
    PicFormat(u32),
}

impl ControlKind {
    /// Is this the neutral XPIC (tear-down)?
    pub fn is_teardown(self) -> bool {
        matches!(self, ControlKind::Xpic(XPIC_NEUTRAL))
    }
}

/// A receive control and the event it takes effect at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodedControl {
    pub event: u32,
    pub kind: ControlKind,
    /// Index of the instruction's first word in the row.
    pub word_index: usize,
}

/// One decoded instruction with its position in the row and on the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimedInstruction {
    pub word_index: usize,
    pub start: u32,
    pub instruction: Instruction,
}

/// A row as an event timeline.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DecodedRow {
    pub instructions: Vec<TimedInstruction>,
    /// Items put on the fabric (runs with no route bit are omitted).
    pub sends: Vec<SendRun>,
    /// Receive controls in event order.
    pub controls: Vec<DecodedControl>,
    /// Event at which `br $m10` returns.
    pub events: u32,
    /// Words up to and including `br $m10`.
    pub words: usize,
}

/// Decodes a row starting at `words[0]` up to its `br $m10`.
pub fn decode_row(words: &[u32]) -> Result<DecodedRow, RowDecodeError> {
    let mut row = DecodedRow::default();
    let mut index = 0usize;
    let mut t = 0u32;
    // (next word address, sctl, absolute) of the current outgoing stream.
    let mut stream: Option<(u32, u32, bool)> = None;
    loop {
        if index >= words.len() {
            return Err(RowDecodeError::MissingReturn { words: words.len() });
        }
        let (instr, len) =
            decode(&words[index..]).map_err(|error| RowDecodeError::Isa { index, error })?;
        row.instructions.push(TimedInstruction {
            word_index: index,
            start: t,
            instruction: instr,
        });
        let overflow = RowDecodeError::EventOverflow { index };
        let run = |row: &mut DecodedRow, items: u32, addr: u32, sctl: u32, absolute: bool| {
            if sctl & 3 != 0 {
                row.sends.push(SendRun {
                    start: t,
                    items,
                    word_address: addr,
                    absolute,
                    sctl,
                    word_index: index,
                });
            }
        };
        let control = |row: &mut DecodedRow, event: u32, kind: ControlKind| {
            row.controls.push(DecodedControl {
                event,
                kind,
                word_index: index,
            });
        };
        let next = match instr {
            Instruction::Br { r } if r == m::M10 => {
                row.events = t;
                row.words = index + len;
                return Ok(row);
            }
            Instruction::Delay { n } => t.checked_add(n + 1).ok_or(overflow)?,
            Instruction::DelayPic { n, sel, value } => {
                let end = t.checked_add(n + 1).ok_or(overflow)?;
                control(&mut row, end, pic_kind(sel, value));
                end
            }
            Instruction::DelayXPic { n, paired, value } => {
                let end = t.checked_add(n + 1).ok_or(overflow)?;
                control(&mut row, end, xpic_kind(paired, value));
                end
            }
            Instruction::Send { n, addr, sctl } => {
                run(&mut row, n + 1, addr, sctl, false);
                stream = Some((addr.wrapping_add(n + 1), sctl, false));
                t.checked_add(n + 1).ok_or(overflow)?
            }
            Instruction::SendOff { n, delta, sctl } => {
                if delta != 0 {
                    return Err(RowDecodeError::NonZeroDelta { index, delta });
                }
                let (addr, _, absolute) = stream.ok_or(RowDecodeError::NoStream { index })?;
                run(&mut row, n + 1, addr, sctl, absolute);
                stream = Some((addr.wrapping_add(n + 1), sctl, absolute));
                t.checked_add(n + 1).ok_or(overflow)?
            }
            Instruction::SendPic { n, sel, value } => {
                let (addr, sctl, absolute) = stream.ok_or(RowDecodeError::NoStream { index })?;
                run(&mut row, n + 1, addr, sctl, absolute);
                stream = Some((addr.wrapping_add(n + 1), sctl, absolute));
                let at = t.checked_add(1).ok_or(overflow)?;
                let kind = match sel {
                    PicTarget::Xpic => ControlKind::Xpic(value),
                    PicTarget::XpicPaired => ControlKind::XpicPaired(value),
                    PicTarget::PicPointer => ControlKind::PicPointer(value),
                    PicTarget::PicFormat => ControlKind::PicFormat(value),
                };
                control(&mut row, at, kind);
                t.checked_add(n + 1).ok_or(overflow)?
            }
            Instruction::SendPicP {
                n,
                addr,
                sctl,
                psel,
                xpic,
                pic,
            } => {
                if !index.is_multiple_of(2) {
                    return Err(RowDecodeError::MisalignedSendpicp { index });
                }
                if sctl != 0 {
                    // §2.3: the transmitting `sendpicp` address is absolute.
                    run(&mut row, n + 1, addr, sctl, true);
                    stream = Some((addr.wrapping_add(n + 1), sctl, true));
                }
                let at = t.checked_add(1).ok_or(overflow)?;
                control(
                    &mut row,
                    at,
                    xpic_kind(xpic & (1 << 13) != 0, xpic & 0x1FFF),
                );
                control(&mut row, at, pic_kind(psel, pic));
                t.checked_add(n + 1).ok_or(overflow)?
            }
            _ => {
                return Err(RowDecodeError::NotExchange {
                    index,
                    word: words[index],
                })
            }
        };
        t = next;
        index += len;
    }
}

fn pic_kind(sel: PicField, value: u32) -> ControlKind {
    match sel {
        PicField::Pointer => ControlKind::PicPointer(value),
        PicField::Format => ControlKind::PicFormat(value),
    }
}

fn xpic_kind(paired: bool, value: u32) -> ControlKind {
    if paired {
        ControlKind::XpicPaired(value)
    } else {
        ControlKind::Xpic(value)
    }
}
