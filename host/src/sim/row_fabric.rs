//! The device's exchange hook: after every internal sync, each supervisor's
//! next instruction is `call $m10, row` (the phase sequence of
//! `docs/facts/ipu21-target.md` §2.7). The fabric reads that call from SRAM,
//! decodes every tile's row from SRAM (so patched words take effect), moves
//! the words with [`super::fabric::execute_phase`], and resumes each
//! supervisor after its call once its row's events have elapsed (one event
//! per cycle, §6).

use std::sync::Arc;

use ipuc_core::target::isa::{decode, Instruction};
use ipuc_core::target::topology::PhysicalTile;

use ipuc_core::exchange::ReceiveError;

use super::fabric::{execute_phase, FabricError, PhaseMemory, RowCall};
use super::{
    ContextId, CycleSample, ExchangeError, ExchangeFabric, FaultKind, SampleKind, SimFault,
    Superstep, Tile,
};

/// Zone of the internal sync that opens every exchange phase (§1.7).
const INTERNAL_ZONE: u8 = 3;
/// Link register of row calls (§2.7).
const ROW_LINK: u8 = 10;

/// Executes exchange rows between the tiles of a [`super::Device`].
#[derive(Clone, Copy, Debug, Default)]
pub struct RowFabric;

struct Tiles<'a> {
    tiles: &'a mut [Tile],
    /// Physical id → index in `tiles`.
    index: Vec<Option<usize>>,
}

impl PhaseMemory for Tiles<'_> {
    fn read_u32(&self, tile: PhysicalTile, addr: u32) -> Option<u32> {
        let i = (*self.index.get(tile.index())?)?;
        self.tiles[i].memory().read_u32(addr).ok()
    }
    fn write_u32(&mut self, tile: PhysicalTile, addr: u32, value: u32) -> bool {
        match self.index.get(tile.index()).copied().flatten() {
            Some(i) => self.tiles[i].memory_mut().write_u32(addr, value).is_ok(),
            None => false,
        }
    }
}

fn exchange_fault(tile: &Tile, error: ExchangeError, detail: String) -> SimFault {
    SimFault {
        tile: tile.id(),
        context: ContextId::SUPERVISOR,
        pc: tile.supervisor().pc,
        kind: FaultKind::Exchange { error, detail },
    }
}

/// The tile that raises a receive error.
fn receiver(e: &ReceiveError) -> PhysicalTile {
    match *e {
        ReceiveError::NoSender { tile, .. }
        | ReceiveError::Overrun { tile, .. }
        | ReceiveError::OutsideMemory { tile, .. }
        | ReceiveError::BadSource { tile, .. }
        | ReceiveError::PairedUnsupported { tile, .. }
        | ReceiveError::FetchClash { tile, .. } => tile,
    }
}

/// The hardware class of a fabric error (§1.8).
fn class(e: &FabricError) -> ExchangeError {
    match e {
        FabricError::Row { .. } => ExchangeError::Conf,
        FabricError::Receive(ReceiveError::OutsideMemory { .. })
        | FabricError::SourceOutsideMemory { .. } => ExchangeError::Addr,
        FabricError::Receive(ReceiveError::FetchClash { .. }) => ExchangeError::ClashIfetch,
        FabricError::Receive(_) => ExchangeError::Other,
    }
}

impl ExchangeFabric for RowFabric {
    fn superstep(&self, step: &mut Superstep<'_>) -> Result<(), SimFault> {
        let mut calls = Vec::new();
        let mut callers = Vec::new();
        for (i, tile) in step.tiles.iter().enumerate() {
            if step.zones[i] != Some(INTERNAL_ZONE) {
                continue;
            }
            let pc = tile.supervisor().pc;
            let word = tile.memory().read_u32(pc).map_err(|e| {
                exchange_fault(
                    tile,
                    ExchangeError::Conf,
                    format!("fetching the row call at {pc:#x}: {e:?}"),
                )
            })?;
            // A sync not followed by a row call (e.g. the runtime's start-up
            // `sync 3`) is a plain barrier: this tile takes no part.
            let target = match decode(&[word]) {
                Ok((Instruction::Call { link, target }, _)) if link.index() == ROW_LINK => target,
                _ => continue,
            };
            let physical = PhysicalTile::new(u32::from(tile.id())).map_err(|_| {
                exchange_fault(tile, ExchangeError::Conf, "tile id outside the C600".into())
            })?;
            calls.push(RowCall {
                tile: physical,
                address: target,
            });
            callers.push((i, pc));
        }
        let mut index = vec![None; usize::from(ipuc_core::target::topology::TILE_COUNT)];
        for (i, t) in step.tiles.iter().enumerate() {
            if let Some(slot) = index.get_mut(usize::from(t.id())) {
                *slot = Some(i);
            }
        }
        let run = {
            let mut memory = Tiles {
                tiles: step.tiles,
                index,
            };
            execute_phase(&calls, &mut memory)
        };
        let run = match run {
            Ok(run) => run,
            Err(e) => {
                // Blame the tile the error names (the receiver or sender).
                let named = match &e {
                    FabricError::Row { tile, .. }
                    | FabricError::SourceOutsideMemory { tile, .. } => Some(*tile),
                    FabricError::Receive(r) => Some(receiver(r)),
                };
                let i = named
                    .and_then(|t| step.tiles.iter().position(|x| x.id() == t.get()))
                    .or(callers.first().map(|&(i, _)| i))
                    .unwrap_or(0);
                return Err(exchange_fault(&step.tiles[i], class(&e), e.to_string()));
            }
        };
        let label: Arc<str> = Arc::from("exchange");
        let end = step.release_cycle + u64::from(run.events);
        for (i, pc) in callers {
            let tile = &mut step.tiles[i];
            let sup = tile.supervisor_mut();
            sup.set_reg(ROW_LINK, pc + 4);
            sup.pc = pc + 4;
            tile.charge_supervisor(u64::from(run.events));
            tile.push_sample(CycleSample {
                kind: SampleKind::Exchange {
                    superstep: step.index,
                    label: label.clone(),
                },
                start: step.release_cycle,
                end,
            });
        }
        Ok(())
    }
}
