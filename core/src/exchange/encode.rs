//! Timeline → exchange row words.
//!
//! Walks one tile's timeline in event order. Idle stretches become `delay`,
//! `delaypic`, `delayxpic` (controls at the *end* of the instruction) or a
//! receiver-only `sendpicp` (two controls at start + 1). Messages become a
//! first `send` (≤ 64 items) continued by `sendoff` (≤ 4096), with `sendpic`
//! (one control at start + 1) or a restarting `sendpicp` (two controls) placed
//! one event before each control that falls inside the message (§2.2–§2.4,
//! §3.4). A `sendpicp` that would land on an odd word is realigned by
//! splitting an earlier multi-event instruction in two, which keeps every
//! event time unchanged.

use alloc::vec::Vec;

use super::error::{ExchangeError, Result};
use super::timeline::{ControlEvent, OutgoingMessage, TileTimeline};
use ipuc_target::ipu21::exchange_model::{
    DELAYPIC_MAX_EVENTS, DELAYXPIC_MAX_EVENTS, DELAY_MAX_EVENTS, SENDOFF_MAX_ITEMS,
    SENDPIC_MAX_ITEMS, SEND_MAX_ITEMS,
};
use ipuc_target::ipu21::isa::{encode, m, Instruction, PicField, PicTarget};
use ipuc_target::ipu21::topology::PhysicalTile;

/// One tile's encoded exchange row for one phase.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExchangeRow {
    /// The tile that runs the row.
    pub tile: PhysicalTile,
    /// Instruction words, ending in `br $m10`; place at an 8-byte boundary.
    pub words: Vec<u32>,
    /// Events from the row's first instruction to its return.
    pub events: u32,
}

impl ExchangeRow {
    /// Bytes the row occupies.
    pub fn bytes(&self) -> u32 {
        (self.words.len() * 4) as u32
    }
}

struct RowBuilder {
    tile: PhysicalTile,
    instrs: Vec<Instruction>,
    /// `sctl` of the outgoing stream each instruction continues (0 when idle).
    sctls: Vec<u32>,
    /// `sctl` of the message being sent (0 when idle).
    stream_sctl: u32,
    words: usize,
    /// Instructions before this index may not be split (a `sendpicp` is at or
    /// before it and must keep its alignment).
    split_floor: usize,
    t: u32,
}

fn advance(i: &Instruction) -> u32 {
    match *i {
        Instruction::Delay { n }
        | Instruction::DelayPic { n, .. }
        | Instruction::DelayXPic { n, .. }
        | Instruction::Send { n, .. }
        | Instruction::SendOff { n, .. }
        | Instruction::SendPic { n, .. }
        | Instruction::SendPicP { n, .. } => n + 1,
        _ => 0,
    }
}

/// Splits `i` into two instructions with the same combined effect and event
/// times, or `None` when it advances one event only. `stream_sctl` is the
/// `sctl` of the outgoing stream `i` continues (for `sendpic`).
fn split(i: &Instruction, stream_sctl: u32) -> Option<(Instruction, Instruction)> {
    use Instruction as I;
    match *i {
        I::SendPic { n, sel, value } if n >= 1 && stream_sctl != 0 => Some((
            I::SendPic { n: 0, sel, value },
            I::SendOff {
                n: n - 1,
                delta: 0,
                sctl: stream_sctl,
            },
        )),
        I::Delay { n } if n >= 1 => Some((I::Delay { n: 0 }, I::Delay { n: n - 1 })),
        I::DelayPic { n, sel, value } if n >= 1 => Some((
            I::Delay { n: 0 },
            I::DelayPic {
                n: n - 1,
                sel,
                value,
            },
        )),
        I::DelayXPic { n, paired, value } if n >= 1 => Some((
            I::Delay { n: 0 },
            I::DelayXPic {
                n: n - 1,
                paired,
                value,
            },
        )),
        I::Send { n, addr, sctl } if n >= 1 => Some((
            I::Send { n: 0, addr, sctl },
            I::SendOff {
                n: n - 1,
                delta: 0,
                sctl,
            },
        )),
        I::SendOff { n, delta: 0, sctl } if n >= 1 => Some((
            I::SendOff {
                n: 0,
                delta: 0,
                sctl,
            },
            I::SendOff {
                n: n - 1,
                delta: 0,
                sctl,
            },
        )),
        I::SendPicP {
            n,
            addr,
            sctl,
            psel,
            xpic,
            pic,
        } if n >= 1 => {
            let rest = if sctl == 0 {
                I::Delay { n: n - 1 }
            } else {
                I::SendOff {
                    n: n - 1,
                    delta: 0,
                    sctl,
                }
            };
            Some((
                I::SendPicP {
                    n: 0,
                    addr,
                    sctl,
                    psel,
                    xpic,
                    pic,
                },
                rest,
            ))
        }
        _ => None,
    }
}

impl RowBuilder {
    fn push(&mut self, i: Instruction) -> Result<()> {
        // A receiver-only `sendpicp` absorbs the delay that follows it: same
        // events, one word less, and a multi-event instruction that a later
        // `sendpicp` can split for its own alignment.
        if let (
            Instruction::Delay { n: k },
            Some(Instruction::SendPicP {
                ref mut n, sctl: 0, ..
            }),
        ) = (i, self.instrs.last_mut())
        {
            if *n + k + 2 <= SENDPIC_MAX_ITEMS {
                *n += k + 1;
                self.t += k + 1;
                return Ok(());
            }
        }
        if let Instruction::SendPicP { .. } = i {
            if self.words % 2 == 1 {
                self.realign()?;
            }
            self.split_floor = self.instrs.len();
        }
        self.t = self
            .t
            .checked_add(advance(&i))
            .ok_or(ExchangeError::PhaseTooLong { events: u64::MAX })?;
        self.words += i.word_count();
        self.instrs.push(i);
        self.sctls.push(self.stream_sctl);
        Ok(())
    }

    /// Adds one word before the end by splitting the latest splittable
    /// instruction after the last `sendpicp`.
    fn realign(&mut self) -> Result<()> {
        for j in (self.split_floor..self.instrs.len()).rev() {
            if let Some((a, b)) = split(&self.instrs[j], self.sctls[j]) {
                self.instrs[j] = a;
                self.instrs.insert(j + 1, b);
                self.sctls.insert(j + 1, self.sctls[j]);
                self.words += 1;
                return Ok(());
            }
        }
        Err(ExchangeError::SendpicpAlignment {
            tile: self.tile,
            event: self.t + 1,
        })
    }

    fn delay_until(&mut self, target: u32) -> Result<()> {
        while self.t < target {
            let k = (target - self.t).min(DELAY_MAX_EVENTS);
            self.push(Instruction::Delay { n: k - 1 })?;
        }
        Ok(())
    }

    fn unencodable(&self, event: u32, reason: &'static str) -> ExchangeError {
        ExchangeError::Unencodable {
            tile: self.tile,
            event,
            reason,
        }
    }

    /// Applies one control event while not sending (`c > t`).
    fn idle_control(&mut self, c: &ControlEvent) -> Result<()> {
        if c.event <= self.t {
            return Err(self.unencodable(c.event, "receive control at or before the current event"));
        }
        let (psel, xsel) = selectors(c);
        match (c.xpic, c.pic) {
            (Some(xpic), Some(pic)) => {
                self.delay_until(c.event - 1)?;
                self.push(Instruction::SendPicP {
                    n: 0,
                    addr: 0,
                    sctl: 0,
                    psel,
                    xpic: xpic_word(c, xpic),
                    pic,
                })
            }
            (Some(value), None) => {
                self.delay_until(c.event.saturating_sub(DELAYXPIC_MAX_EVENTS))?;
                self.push(Instruction::DelayXPic {
                    n: c.event - self.t - 1,
                    paired: xsel == PicTarget::XpicPaired,
                    value,
                })
            }
            (None, Some(value)) => {
                self.delay_until(c.event.saturating_sub(DELAYPIC_MAX_EVENTS))?;
                self.push(Instruction::DelayPic {
                    n: c.event - self.t - 1,
                    sel: psel,
                    value,
                })
            }
            (None, None) => Ok(()),
        }
    }

    /// Sends one message, applying `controls` (all within `[start+2, end]`).
    fn message(&mut self, msg: &OutgoingMessage, controls: &[ControlEvent]) -> Result<()> {
        let end = msg.start + msg.items;
        let mut addr = msg.word_address;
        let mut first = true;
        self.stream_sctl = msg.sctl;
        for (k, c) in controls.iter().enumerate() {
            if c.event < msg.start + 2 || c.event > end {
                return Err(
                    self.unencodable(c.event, "receive control on a send's first two events")
                );
            }
            self.data_until(c.event - 1, &mut addr, &mut first, msg.sctl)?;
            if self.t != c.event - 1 || first {
                return Err(self.unencodable(c.event, "controls inside a message out of order"));
            }
            let boundary = controls.get(k + 1).map_or(end, |n| n.event - 1);
            let items = (boundary - self.t).min(SENDPIC_MAX_ITEMS);
            if items == 0 {
                return Err(self.unencodable(c.event, "control at the last event of a message"));
            }
            let (psel, xsel) = selectors(c);
            let instr = match (c.xpic, c.pic) {
                (Some(xpic), Some(pic)) => Instruction::SendPicP {
                    n: items - 1,
                    addr,
                    sctl: msg.sctl,
                    psel,
                    xpic: xpic_word(c, xpic),
                    pic,
                },
                (Some(value), None) => Instruction::SendPic {
                    n: items - 1,
                    sel: xsel,
                    value,
                },
                (None, Some(value)) => Instruction::SendPic {
                    n: items - 1,
                    sel: if psel == PicField::Format {
                        PicTarget::PicFormat
                    } else {
                        PicTarget::PicPointer
                    },
                    value,
                },
                (None, None) => continue,
            };
            self.push(instr)?;
            addr += items;
        }
        self.data_until(end, &mut addr, &mut first, msg.sctl)?;
        self.stream_sctl = 0;
        Ok(())
    }

    fn data_until(
        &mut self,
        until: u32,
        addr: &mut u32,
        first: &mut bool,
        sctl: u32,
    ) -> Result<()> {
        while self.t < until {
            let left = until - self.t;
            let instr = if *first {
                *first = false;
                let k = left.min(SEND_MAX_ITEMS);
                let i = Instruction::Send {
                    n: k - 1,
                    addr: *addr,
                    sctl,
                };
                *addr += k;
                i
            } else {
                let k = left.min(SENDOFF_MAX_ITEMS);
                *addr += k;
                Instruction::SendOff {
                    n: k - 1,
                    delta: 0,
                    sctl,
                }
            };
            self.push(instr)?;
        }
        Ok(())
    }
}

/// The PIC field and XPIC target a control event uses.
fn selectors(c: &ControlEvent) -> (PicField, PicTarget) {
    (
        if c.pic_format {
            PicField::Format
        } else {
            PicField::Pointer
        },
        if c.xpic_paired {
            PicTarget::XpicPaired
        } else {
            PicTarget::Xpic
        },
    )
}

/// The 14-bit XPIC payload of a `sendpicp` (bit 13 = paired stream, §3.4).
fn xpic_word(c: &ControlEvent, value: u32) -> u32 {
    if c.xpic_paired {
        value | 1 << 13
    } else {
        value
    }
}

/// Encodes one tile's timeline; returns the instruction list (for tests and
/// listings) and the row.
pub fn encode_timeline(
    tile: PhysicalTile,
    tl: &TileTimeline,
) -> Result<(Vec<Instruction>, ExchangeRow)> {
    let mut b = RowBuilder {
        tile,
        instrs: Vec::new(),
        sctls: Vec::new(),
        stream_sctl: 0,
        words: 0,
        split_floor: 0,
        t: 0,
    };
    let mut ci = 0;
    for msg in &tl.messages {
        if msg.start < b.t {
            return Err(b.unencodable(msg.start, "overlapping outgoing messages"));
        }
        while ci < tl.controls.len() && tl.controls[ci].event < msg.start {
            b.idle_control(&tl.controls[ci])?;
            ci += 1;
        }
        b.delay_until(msg.start)?;
        let end = msg.start + msg.items;
        let first = ci;
        while ci < tl.controls.len() && tl.controls[ci].event <= end {
            ci += 1;
        }
        b.message(msg, &tl.controls[first..ci])?;
    }
    for c in &tl.controls[ci..] {
        b.idle_control(c)?;
    }
    if tl.end < b.t {
        return Err(b.unencodable(tl.end, "row end before its last event"));
    }
    b.delay_until(tl.end)?;
    b.instrs.push(Instruction::Br { r: m::M10 });
    let mut words = Vec::with_capacity(b.words + 1);
    for i in &b.instrs {
        let enc = encode(i).map_err(|error| ExchangeError::Isa { tile, error })?;
        words.extend_from_slice(enc.words());
    }
    let events = b.t;
    Ok((
        b.instrs,
        ExchangeRow {
            tile,
            words,
            events,
        },
    ))
}
