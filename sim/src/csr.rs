//! Which CSRs the simulator models and how (`docs/facts/ipu21-target.md
//! §1.6`). `get`/`put` of anything else is a fault rather than a silent
//! zero, so generated code that relies on an unmodelled register is caught.

use super::context::ContextState;
use super::fault::FaultKind;
use super::tile::Tile;

/// `$PC` — §1.6.
pub const PC: u16 = 0x00;
/// `$SSR` (supervisor) / `$WSR` (worker) — §1.6.
pub const SR: u16 = 0x01;
/// `$CR` — §1.6 (use unknown; stored).
pub const CR: u16 = 0x02;
/// `$TILE_ID` — §1.6.
pub const TILE_ID: u16 = 0x03;
/// Worker CSR 0x07, ipu-stack's "worker sync context" — §1.6 (meaning open; stored).
pub const WORKER_SYNC_CONTEXT: u16 = 0x07;
/// `$WORKER0_BASE`; `$WORKERk_BASE` = this + k — §1.6.
pub const WORKER0_BASE: u16 = 0x21;
/// `$SCOUNT_L`/`$COUNT_L` — §1.6.
pub const COUNT_L: u16 = 0x60;
/// `$SCOUNT_U`/`$COUNT_U` — §1.6.
pub const COUNT_U: u16 = 0x61;
/// `$DBG_DATA` — §1.6.
pub const DBG_DATA: u16 = 0x70;
/// `$CTXT_STS` — §1.3/§1.6.
pub const CTXT_STS: u16 = 0x72;
/// `$INCOMING_MUX` .. `$EXCHANGE_ADJ` (0xA0..=0xAB) — §1.6; stored for the
/// exchange fabric.
pub const EXCHANGE_FIRST: u16 = 0xA0;
/// Last exchange CSR.
pub const EXCHANGE_LAST: u16 = 0xAB;
/// Neutral `$INCOMING_MUX` value (no sender selected) — §1.6.
pub const INCOMING_MUX_NEUTRAL: u32 = 0x640;

fn supervisor_writable(csr: u16) -> bool {
    matches!(csr, SR | CR | DBG_DATA | 0x73..=0x75)
        || (WORKER0_BASE..WORKER0_BASE + 6).contains(&csr)
        || (EXCHANGE_FIRST..=EXCHANGE_LAST).contains(&csr)
}

impl Tile {
    /// `$CTXT_STS`: two bits per context, 0 idle, 1 running (§1.3).
    fn context_status(&self) -> u32 {
        self.contexts
            .iter()
            .enumerate()
            .map(|(i, c)| u32::from(c.state != ContextState::Idle) << (2 * i))
            .fold(0, |a, b| a | b)
    }

    pub(crate) fn read_csr(&self, c: usize, csr: u16, t: u64) -> Result<u32, FaultKind> {
        let unmodelled = FaultKind::UnmodelledCsr { csr, write: false };
        match (c, csr) {
            (_, PC) => Ok(self.contexts[c].pc),
            (_, COUNT_L) => Ok(t as u32),
            (_, COUNT_U) => Ok((t >> 32) as u32),
            // $WSR bits 2:0 = context id − 1 (§1.3); no exception pending.
            (1.., SR) => Ok((c - 1) as u32),
            (1.., WORKER_SYNC_CONTEXT) => Ok(self.contexts[c].sync_context),
            (1.., _) => Err(unmodelled),
            (0, TILE_ID) => Ok(u32::from(self.id().get())),
            (0, CTXT_STS) => Ok(self.context_status()),
            (0, _) if supervisor_writable(csr) => Ok(self.sup_csr[usize::from(csr)]),
            _ => Err(unmodelled),
        }
    }

    pub(crate) fn write_csr(&mut self, c: usize, csr: u16, v: u32) -> Result<(), FaultKind> {
        match c {
            0 if supervisor_writable(csr) => {
                self.sup_csr[usize::from(csr)] = v;
                Ok(())
            }
            1.. if csr == WORKER_SYNC_CONTEXT => {
                self.contexts[c].sync_context = v;
                Ok(())
            }
            _ => Err(FaultKind::UnmodelledCsr { csr, write: true }),
        }
    }
}
