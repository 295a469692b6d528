//! Helpers for exchange fabrics: the row call that follows a global sync.
//!
//! By the runtime's convention (`docs/facts/ipu21-target.md §2.7`) every
//! tile's supervisor executes `sync 3` (or `sans 0; sync 1`) and then
//! `call $m10, row`. After the device releases the sync, the fabric finds each
//! tile's pending call with [`Tile::pending_row_call`], decodes and times the
//! row from SRAM itself, moves the words, and retires the call with
//! [`Tile::finish_row_call`] — the supervisor then continues at the return
//! address as if it had executed the row and its closing `br $m10`.

use std::sync::Arc;

use super::fault::{FaultKind, SimFault};
use super::op::Op;
use super::profile::{CycleSample, SampleKind};
use super::tile::Tile;
use super::ContextId;

/// A supervisor `call` waiting to be run by the exchange fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowCall {
    /// Address of the `call` instruction.
    pub pc: u32,
    /// Link register (`$m10` by convention).
    pub link: u8,
    /// First word of the row.
    pub row: u32,
}

impl RowCall {
    /// Where the supervisor continues after the row.
    pub fn return_address(&self) -> u32 {
        self.pc.wrapping_add(4)
    }
}

impl Tile {
    /// The `call` at the supervisor's PC, if the next instruction is one.
    /// Words that do not decode are reported as the fault the interpreter
    /// would raise.
    pub fn pending_row_call(&self) -> Result<Option<RowCall>, SimFault> {
        let pc = self.supervisor().pc;
        let fault = |kind| SimFault {
            tile: self.id(),
            context: ContextId::SUPERVISOR,
            pc,
            kind,
        };
        if !ipuc_target::ipu21::sram::is_executable(pc) {
            return Ok(None);
        }
        let word = self
            .memory()
            .read_u32(pc)
            .map_err(|_| fault(FaultKind::FetchOutsideExecutable { addr: pc }))?;
        match Op::decode(&[word]) {
            Ok(Op::Call { link, target }) => Ok(Some(RowCall {
                pc,
                link,
                row: target,
            })),
            Ok(_) => Ok(None),
            Err(_) => Err(fault(FaultKind::Undecodable { word })),
        }
    }

    /// Retire `call` as executed: the call issues at the supervisor's next
    /// issue slot `t0`, the supervisor's following instruction issues at
    /// `t0 + cycles` (row plus return), the link register holds the return
    /// address. Records an [`SampleKind::Exchange`] sample `[t0, t0 + cycles)`.
    pub fn finish_row_call(&mut self, call: RowCall, cycles: u64, label: Arc<str>) {
        let t0 = self.supervisor().ready_at.max(self.next_free);
        let superstep = self.superstep();
        let s = self.supervisor_mut();
        s.set_reg(call.link, call.return_address());
        s.pc = call.return_address();
        s.issued += 1;
        s.ready_at = t0 + cycles.max(1);
        self.next_free = t0 + 1;
        self.push_sample(CycleSample {
            kind: SampleKind::Exchange { superstep, label },
            start: t0,
            end: t0 + cycles.max(1),
        });
    }
}
