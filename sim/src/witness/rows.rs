//! Row stepping (step 1 of the witness): each tile's row read from its SRAM
//! and stepped instruction by instruction into its wire and control events.

use super::*;

/// A run of items one instruction drives: events `start..start+items`,
/// the first item's SRAM byte address, the `sctl` route/width bits.
#[derive(Clone, Copy, Debug)]
pub(super) struct Burst {
    pub(super) start: u32,
    pub(super) items: u32,
    pub(super) first_byte: u32,
    pub(super) sctl: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Control {
    Xpic(u32),
    XpicPaired(u32),
    /// Resolved byte address (`$INCOMING_BASE + 4·value`).
    Pointer(u64),
    Format(u32),
}

/// A tile's row after stepping.
pub(super) struct Tile {
    pub(super) row: SteppedRow,
    pub(super) wire: Vec<Burst>,
    pub(super) controls: Vec<(u32, Control)>,
}

/// Where the current outgoing stream continues.
#[derive(Clone, Copy)]
pub(super) struct Stream {
    /// Next item's byte address.
    pub(super) next_byte: u32,
    pub(super) sctl: u32,
}

pub(super) fn item_bytes(sctl: u32) -> u32 {
    if sctl & SCTL_PAIRED != 0 {
        8
    } else {
        4
    }
}

/// Steps one tile's row from SRAM (step 1 of the module doc).
pub(super) fn step_row(call: RowLocation, memory: &impl PhaseMemory) -> Result<Tile, WitnessFault> {
    let tile = call.tile;
    check_bases(call)?;
    let mut row = RowSteps {
        call,
        wire: Vec::new(),
        controls: Vec::new(),
        stream: None,
    };
    let mut pc = call.address;
    let mut t: u32 = 0;
    let mut words = 0u32;
    loop {
        let fault = |kind: RowFault, event| WitnessFault {
            tile,
            event,
            address: Some(pc),
            kind: WitnessFaultKind::Row(kind),
        };
        if words as usize >= MAX_ROW_WORDS {
            return Err(fault(RowFault::NoReturn, t));
        }
        let w0 = memory
            .read_u32(tile, pc)
            .ok_or(fault(RowFault::Undecodable, t))?;
        // Two-word instructions (`sendpicp`) read their inline word too.
        let (pair, avail) = match memory.read_u32(tile, pc.wrapping_add(4)) {
            Some(w1) => ([w0, w1], 2),
            None => ([w0, 0], 1),
        };
        let (instr, len) = decode(&pair[..avail]).map_err(|_| fault(RowFault::Undecodable, t))?;
        match row.step(instr, w0, pc, t)? {
            Next::Return => {
                return Ok(Tile {
                    row: SteppedRow {
                        location: call,
                        words: words + 1,
                        events: t,
                    },
                    wire: row.wire,
                    controls: row.controls,
                })
            }
            Next::At(next_t) => t = next_t,
        }
        pc = pc.wrapping_add(4 * len as u32);
        words += len as u32;
    }
}

/// The row's bases must be word addresses within the 20-bit range the
/// facts cover.
fn check_bases(call: RowLocation) -> Result<(), WitnessFault> {
    for (csr, value) in [
        (Csr::OUTGOING_BASE, call.bases.outgoing),
        (Csr::INCOMING_BASE, call.bases.incoming),
    ] {
        if !value.is_multiple_of(4) || value >= 1 << 20 {
            return Err(WitnessFault {
                tile: call.tile,
                event: 0,
                address: None,
                kind: WitnessFaultKind::UncoveredCsr {
                    csr: u16::from(csr.0),
                    value,
                },
            });
        }
    }
    Ok(())
}

/// After one row instruction: the row returned, or the event the next
/// instruction starts at.
enum Next {
    Return,
    At(u32),
}

/// A row being stepped: where it was called, and its wire, controls and
/// outgoing stream so far.
struct RowSteps {
    call: RowLocation,
    wire: Vec<Burst>,
    controls: Vec<(u32, Control)>,
    stream: Option<Stream>,
}

impl RowSteps {
    /// Steps `instr` (first word `w0`, at `pc`), which starts at event `t`.
    fn step(&mut self, instr: Instruction, w0: u32, pc: u32, t: u32) -> Result<Next, WitnessFault> {
        let tile = self.call.tile;
        let bases = self.call.bases;
        let fault = |kind: RowFault, event| WitnessFault {
            tile,
            event,
            address: Some(pc),
            kind: WitnessFaultKind::Row(kind),
        };
        let advance = |n: u32| {
            t.checked_add(n + 1)
                .ok_or(fault(RowFault::EventOverflow, t))
        };
        let outgoing = bases.outgoing;
        let (wire, stream, controls) = (&mut self.wire, &mut self.stream, &mut self.controls);
        Ok(Next::At(match instr {
            Instruction::Br { r } if r == m::M10 => return Ok(Next::Return),
            Instruction::Delay { n } => advance(n)?,
            Instruction::DelayPic { n, sel, value } => {
                let end = advance(n)?;
                controls.push((end, pic(bases, sel, value)));
                end
            }
            Instruction::DelayXPic { n, paired, value } => {
                let end = advance(n)?;
                controls.push((end, xpic(paired, value)));
                end
            }
            Instruction::Send { n, addr, sctl } => {
                // §2.3: relative to $OUTGOING_BASE (32-bit words), or
                // 8-byte units for 64-bit items, whose base must be 0.
                let first_byte = if sctl & SCTL_PAIRED != 0 {
                    if outgoing != 0 {
                        return Err(WitnessFault {
                            tile,
                            event: t,
                            address: Some(pc),
                            kind: WitnessFaultKind::UncoveredCsr {
                                csr: u16::from(Csr::OUTGOING_BASE.0),
                                value: outgoing,
                            },
                        });
                    }
                    addr.wrapping_mul(8)
                } else {
                    outgoing.wrapping_add(addr.wrapping_mul(4))
                };
                drive(wire, stream, t, n + 1, first_byte, sctl);
                advance(n)?
            }
            Instruction::SendOff { n, delta, sctl } => {
                if delta != 0 {
                    return Err(fault(RowFault::NonZeroDelta { delta }, t));
                }
                let s = stream.ok_or(fault(RowFault::NoStream, t))?;
                drive(wire, stream, t, n + 1, s.next_byte, sctl);
                advance(n)?
            }
            Instruction::SendPic { n, sel, value } => {
                let s = stream.ok_or(fault(RowFault::NoStream, t))?;
                drive(wire, stream, t, n + 1, s.next_byte, s.sctl);
                let c = match sel {
                    PicTarget::Xpic => Control::Xpic(value),
                    PicTarget::XpicPaired => Control::XpicPaired(value),
                    PicTarget::PicPointer => pic(bases, PicField::Pointer, value),
                    PicTarget::PicFormat => Control::Format(value),
                };
                controls.push((t + 1, c));
                advance(n)?
            }
            Instruction::SendPicP {
                n,
                addr,
                sctl,
                psel,
                xpic: x,
                pic: p,
            } => {
                if !pc.is_multiple_of(8) {
                    return Err(fault(RowFault::MisalignedSendpicp, t));
                }
                if sctl != 0 {
                    // §2.3: a transmitting sendpicp restarts the stream at an
                    // absolute address.
                    let first_byte = addr.wrapping_mul(item_bytes(sctl));
                    drive(wire, stream, t, n + 1, first_byte, sctl);
                }
                controls.push((t + 1, xpic(x & (1 << 13) != 0, x & 0x1FFF)));
                controls.push((t + 1, pic(bases, psel, p)));
                advance(n)?
            }
            _ => return Err(fault(RowFault::NotExchange { word: w0 }, t)),
        }))
    }
}

/// Drives `items` items from `first_byte` (a burst on the wire when the
/// route bits say so) and moves the stream on.
pub(super) fn drive(
    wire: &mut Vec<Burst>,
    stream: &mut Option<Stream>,
    start: u32,
    items: u32,
    first_byte: u32,
    sctl: u32,
) {
    if sctl & 3 != 0 {
        wire.push(Burst {
            start,
            items,
            first_byte,
            sctl,
        });
    }
    *stream = Some(Stream {
        next_byte: first_byte.wrapping_add(items.wrapping_mul(item_bytes(sctl))),
        sctl,
    });
}

pub(super) fn pic(bases: RowBases, sel: PicField, value: u32) -> Control {
    match sel {
        PicField::Pointer => Control::Pointer(u64::from(bases.incoming) + 4 * u64::from(value)),
        PicField::Format => Control::Format(value),
    }
}

pub(super) fn xpic(paired: bool, value: u32) -> Control {
    if paired {
        Control::XpicPaired(value)
    } else {
        Control::Xpic(value)
    }
}
