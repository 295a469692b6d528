//! Control/status register names and sync-zone names, as the listings print
//! them. Every entry cites docs/facts/ipu21-target.md §1.6 / §1.7.

use core::fmt;

use super::IsaError;

/// A lower-space CSR index (0..=255), the operand of `get`/`put`
/// (docs/facts/ipu21-target.md §1.6: "`get`/`put` address the lower CSR space").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Csr(pub u8);

/// Which execution context a CSR name belongs to (some indices are shared by
/// a supervisor name and a worker name, e.g. 0x01 = `$SSR` / `$WSR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrContext {
    Supervisor,
    Worker,
    Any,
}

/// CSR address space: `get`/`put` reach only `Lower`; `Upper` (256..511) needs
/// `uget`/`uput`, whose encodings are unknown (docs/facts/ipu21-target.md §3.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsrSpace {
    Lower,
    Upper,
}

/// One named CSR.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsrInfo {
    /// Name as the listings print it, including the `$`.
    pub name: &'static str,
    /// Index within its space (upper-space entries hold the full 9-bit number).
    pub index: u16,
    pub space: CsrSpace,
    pub context: CsrContext,
    /// One-line source note.
    pub source: &'static str,
}

const fn lower(
    name: &'static str,
    index: u16,
    context: CsrContext,
    source: &'static str,
) -> CsrInfo {
    CsrInfo {
        name,
        index,
        space: CsrSpace::Lower,
        context,
        source,
    }
}

use CsrContext::{Any, Supervisor, Worker};

/// Every CSR named in docs/facts/ipu21-target.md §1.6. Where one index has a
/// supervisor and a worker name, the supervisor name comes first and is the one
/// the disassembler prints (it has no context to choose by).
pub const CSR_TABLE: &[CsrInfo] = &[
    lower(
        "$PC",
        0x00,
        Any,
        "§1.6: ipu-stack ipu-driver TDI `get $m0, 0`",
    ),
    lower(
        "$SSR",
        0x01,
        Supervisor,
        "§1.6: gcr docs/csr.md; ETYPE bits 7:4",
    ),
    lower(
        "$WSR",
        0x01,
        Worker,
        "§1.6: gcr docs/csr.md; bits 2:0 = worker index",
    ),
    lower("$CR", 0x02, Any, "§1.6: gcr docs/csr.md"),
    lower("$TILE_ID", 0x03, Any, "§1.6: gcr docs/csr.md, IPU1 listing"),
    lower(
        "$WORKER0_BASE",
        0x21,
        Supervisor,
        "§1.6: ipu-stack static_runtime.S, gcr docs/csr.md",
    ),
    lower("$WORKER1_BASE", 0x22, Supervisor, "§1.6: as $WORKER0_BASE"),
    lower("$WORKER2_BASE", 0x23, Supervisor, "§1.6: as $WORKER0_BASE"),
    lower("$WORKER3_BASE", 0x24, Supervisor, "§1.6: as $WORKER0_BASE"),
    lower("$WORKER4_BASE", 0x25, Supervisor, "§1.6: as $WORKER0_BASE"),
    lower("$WORKER5_BASE", 0x26, Supervisor, "§1.6: as $WORKER0_BASE"),
    lower(
        "$SCOUNT_L",
        0x60,
        Supervisor,
        "§1.6: gcr docs/csr.md (cycle counter)",
    ),
    lower(
        "$COUNT_L",
        0x60,
        Worker,
        "§1.6: ipu-stack samples it from worker 0",
    ),
    lower("$SCOUNT_U", 0x61, Supervisor, "§1.6: gcr docs/csr.md"),
    lower("$COUNT_U", 0x61, Worker, "§1.6: gcr docs/csr.md"),
    lower(
        "$DBG_DATA",
        0x70,
        Any,
        "§1.6: ipu-stack ipu-driver TDI mailbox",
    ),
    lower("$CTXT_STS", 0x72, Any, "§1.6: gcr docs/csr.md"),
    lower(
        "$DBG_CTL",
        0x73,
        Any,
        "§1.6: IPU21 SDK arch-info per ipu-stack RE brief",
    ),
    lower("$DBG_ECSR", 0x74, Any, "§1.6: as $DBG_CTL"),
    lower("$DBG_ECLR", 0x75, Any, "§1.6: as $DBG_CTL"),
    lower(
        "$INCOMING_MUX",
        0xA0,
        Supervisor,
        "§1.6: ipu-stack emit.rs, exchange.rs",
    ),
    lower(
        "$INCOMING_MUXPAIR",
        0xA1,
        Supervisor,
        "§1.6: ipu-stack emit.rs, topology.rs",
    ),
    lower("$INCOMING_DELTA", 0xA2, Supervisor, "§1.6: gcr docs/csr.md"),
    lower(
        "$INCOMING_FORMAT",
        0xA3,
        Supervisor,
        "§1.6: ipu-stack program.rs",
    ),
    lower(
        "$INCOMING_BASE",
        0xA4,
        Supervisor,
        "§1.6: ipu-stack emit.rs",
    ),
    lower(
        "$INCOMINGS_SINIT",
        0xA5,
        Supervisor,
        "§1.6: gcr docs/csr.md",
    ),
    lower(
        "$INCOMING_DCOUNT",
        0xA6,
        Supervisor,
        "§1.6: ipu-stack emit.rs; IPU1 listing `put 166`",
    ),
    lower(
        "$OUTGOING_BASE",
        0xA7,
        Supervisor,
        "§1.6: ipu-stack static_runtime.S; IPU1 listing",
    ),
    lower("$OUTGOING_DELTA", 0xA8, Supervisor, "§1.6: gcr docs/csr.md"),
    lower(
        "$EXCHANGE_CTL",
        0xA9,
        Supervisor,
        "§1.6: IPU1 listing writes 7; gcr docs/csr.md",
    ),
    lower("$ANS_DCOUNT", 0xAA, Supervisor, "§1.6: gcr docs/csr.md"),
    lower("$EXCHANGE_ADJ", 0xAB, Supervisor, "§1.6: gcr docs/csr.md"),
    CsrInfo {
        name: "$PRNG_SEED",
        index: 0x107,
        space: CsrSpace::Upper,
        context: Worker,
        source: "§1.6: IPU1 ipu1_consts.c; ipu-stack static_runtime.S seeds it",
    },
];

/// Worker-side CSR 0x07, written at worker start-up with
/// `(physical_tile·8) | worker_index` ("worker sync context"); it has no name
/// in the public sources, so listings print it as the number 7
/// (docs/facts/ipu21-target.md §1.6).
pub const WORKER_SYNC_CONTEXT_CSR: Csr = Csr(0x07);

impl Csr {
    /// Looks up a CSR by its printed name (with `$`, case-sensitive as listed).
    pub fn by_name(name: &str) -> Result<Csr, IsaError> {
        match CSR_TABLE.iter().find(|c| c.name == name) {
            Some(info) if info.space == CsrSpace::Lower => Ok(Csr(info.index as u8)),
            Some(info) => Err(IsaError::UpperCsr { index: info.index }),
            None => Err(IsaError::UnknownCsrName),
        }
    }

    /// The name for code running in `context`: an entry of that context if
    /// the index has one, else the first name listed.
    pub fn name_in(self, context: CsrContext) -> Option<&'static str> {
        let mut names = CSR_TABLE
            .iter()
            .filter(|c| c.space == CsrSpace::Lower && c.index == self.0 as u16);
        let first = names.clone().next();
        names
            .find(|c| c.context == context)
            .or(first)
            .map(|c| c.name)
    }

    /// The name the disassembler prints, if the index has one.
    pub fn name(self) -> Option<&'static str> {
        CSR_TABLE
            .iter()
            .find(|c| c.space == CsrSpace::Lower && c.index == self.0 as u16)
            .map(|c| c.name)
    }

    pub const INCOMING_MUX: Csr = Csr(0xA0);
    pub const INCOMING_MUXPAIR: Csr = Csr(0xA1);
    pub const INCOMING_FORMAT: Csr = Csr(0xA3);
    pub const INCOMING_BASE: Csr = Csr(0xA4);
    pub const INCOMING_DCOUNT: Csr = Csr(0xA6);
    pub const OUTGOING_BASE: Csr = Csr(0xA7);
    pub const SSR: Csr = Csr(0x01);
    pub const WSR: Csr = Csr(0x01);
    pub const TILE_ID: Csr = Csr(0x03);
    pub const WORKER0_BASE: Csr = Csr(0x21);
    pub const COUNT_L: Csr = Csr(0x60);
}

impl fmt::Display for Csr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{}", self.0),
        }
    }
}

/// A sync zone, the 4-bit operand of `sync` (docs/facts/ipu21-target.md §1.7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SyncZone(u8);

/// Sync zone names as the SDK enum prints them (docs/facts/ipu21-target.md §1.7,
/// gcr docs/sync zones.md). Zones 8..11 have no public name.
pub const SYNC_ZONE_NAMES: &[(&str, u8)] = &[
    ("SYNCZONE_RECV", 0),
    ("SYNCZONE_ANS", 1),
    ("SYNCZONE_LOCAL", 2),
    ("SYNCZONE_INTERNAL", 3),
    ("SYNCZONE_EXTERNAL0_SLV", 4),
    ("SYNCZONE_EXTERNAL1_SLV", 5),
    ("SYNCZONE_EXTERNAL2_SLV", 6),
    ("SYNCZONE_EXTERNAL3_SLV", 7),
    ("SYNCZONE_EXTERNAL0_MSR", 12),
    ("SYNCZONE_EXTERNAL1_MSR", 13),
    ("SYNCZONE_EXTERNAL2_MSR", 14),
    ("SYNCZONE_EXTERNAL3_MSR", 15),
    // The SDK enum also spells zone 3 `INTERNAL0` (§1.7); accepted, never printed.
    ("SYNCZONE_INTERNAL0", 3),
];

impl SyncZone {
    pub const RECV: SyncZone = SyncZone(0);
    pub const ANS: SyncZone = SyncZone(1);
    pub const LOCAL: SyncZone = SyncZone(2);
    pub const INTERNAL: SyncZone = SyncZone(3);
    /// ipu-stack `SYNC_ALL` (start-up release, host operations), §1.7.
    pub const EXTERNAL3_SLV: SyncZone = SyncZone(7);
    /// ipu-stack `SYNC_HOST` (host request entry), §1.7.
    pub const EXTERNAL3_MSR: SyncZone = SyncZone(15);

    /// Zone `n`; errors when `n >= 16` (4-bit field).
    pub const fn new(n: u8) -> Result<SyncZone, IsaError> {
        if n < 16 {
            Ok(SyncZone(n))
        } else {
            Err(IsaError::FieldRange {
                field: "zone",
                value: n as i64,
                min: 0,
                max: 15,
            })
        }
    }

    pub(crate) const fn from_field(bits: u32) -> SyncZone {
        SyncZone((bits & 0xF) as u8)
    }

    pub const fn index(self) -> u8 {
        self.0
    }

    /// Looks a zone up by its SDK name.
    pub fn by_name(name: &str) -> Option<SyncZone> {
        SYNC_ZONE_NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, z)| SyncZone(z))
    }

    /// The printed name, if the zone has one.
    pub fn name(self) -> Option<&'static str> {
        SYNC_ZONE_NAMES
            .iter()
            .find(|&&(_, z)| z == self.0)
            .map(|&(n, _)| n)
    }
}

impl fmt::Display for SyncZone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => f.write_str(name),
            None => write!(f, "{}", self.0),
        }
    }
}
