//! IPU21 tile SRAM map (hardware facts) and ipuc's fixed per-tile runtime
//! layout (our choice, modelled on a layout that runs on C600 hardware).
//!
//! Hardware facts cite `docs/facts/ipu21-target.md §1.2`; the runtime layout
//! constants are design choices and say so.

/// First byte of tile SRAM — `docs/facts/ipu21-target.md §1.2` (`TILE_MEMORY_BASE`).
pub const SRAM_BASE: u32 = 0x4_C000;
/// SRAM size in bytes (624 KiB) — `docs/facts/ipu21-target.md §1.2` (`TILE_MEMORY_SIZE`).
pub const SRAM_SIZE: u32 = 0x9_C000;
/// One past the last SRAM byte — `docs/facts/ipu21-target.md §1.2`.
pub const SRAM_END: u32 = SRAM_BASE + SRAM_SIZE;
/// Physical memory element size (16 KiB) — `docs/facts/ipu21-target.md §1.2` (`TMEM_ELEMSIZE`).
pub const ELEMENT_SIZE: u32 = 0x4000;
/// Instructions can only be fetched below this address (region 0) —
/// `docs/facts/ipu21-target.md §1.2` (`IPU21_EXECUTABLE_MEMORY_LIMIT`).
pub const EXECUTABLE_LIMIT: u32 = 0x8_0000;
/// Start of the interleaved region 1 — `docs/facts/ipu21-target.md §1.2`.
pub const INTERLEAVED_BASE: u32 = 0x8_0000;
/// Effective element size in the interleaved region (two physical elements) —
/// `docs/facts/ipu21-target.md §1.2` (`IPU21_INTERLEAVED_ELEMENT_SIZE`).
pub const INTERLEAVED_ELEMENT_SIZE: u32 = 0x8000;
/// Highest address + 1 the SDK secondary loader can initialise —
/// `docs/facts/ipu21-target.md §1.2` (`0x4C010 + 643·992`).
pub const LOADER_REACHABLE_LIMIT: u32 = 0xE_7BB0;
/// Application load and entry address; every tile image starts here —
/// `docs/facts/ipu21-target.md §1.2` (`APPLICATION_LOAD_BASE`).
pub const APPLICATION_ENTRY: u32 = 0x4_C010;
/// Bytes of supervisor instruction look-ahead to keep clear of data placed
/// after code — `docs/facts/ipu21-target.md §1.2` (`IPU21_SUPERVISOR_FETCH_LOOKAHEAD`).
pub const SUPERVISOR_FETCH_LOOKAHEAD: u32 = 64;
/// Call/branch targets are 19-bit word addresses, so code lives below 2 MiB —
/// `docs/facts/ipu21-target.md §1.2`.
pub const ADDRESS_SPACE_LIMIT: u32 = 1 << 21;

/// Is `[addr, addr + len)` inside tile SRAM?
pub const fn in_sram(addr: u32, len: u32) -> bool {
    addr >= SRAM_BASE && len <= SRAM_SIZE && addr - SRAM_BASE <= SRAM_SIZE - len
}

/// Can an instruction word be fetched from `addr`? (inside SRAM, below the
/// executable limit, word aligned).
pub const fn is_executable(addr: u32) -> bool {
    addr >= SRAM_BASE && addr < EXECUTABLE_LIMIT && addr.is_multiple_of(4)
}

/// Effective memory element of an SRAM address, numbered as ipu-stack does:
/// standard region `addr / 0x4000` (absolute, so region 0 is 19..=31),
/// interleaved region `(addr − 0x80000) / 0x8000` offset by 32 so the two
/// numberings never collide — `docs/facts/ipu21-target.md §1.2`.
pub const fn effective_element(addr: u32) -> u32 {
    if addr < INTERLEAVED_BASE {
        addr / ELEMENT_SIZE
    } else {
        32 + (addr - INTERLEAVED_BASE) / INTERLEAVED_ELEMENT_SIZE
    }
}

/// ipuc's fixed per-tile layout of runtime state. These are layout *choices*
/// (not hardware facts), taken from the layout ipu-stack runs on C600
/// hardware — `docs/facts/ipu21-target.md §1.2` (second table) — so that the
/// reserved state block sits in its own element away from code and data.
pub mod layout {
    /// Completion word: the runtime's completion routine stores 1 here.
    pub const COMPLETION_WORD: u32 = 0x5_8000;
    /// Two cycle-sample words used by timing wrappers (start, end).
    pub const CYCLE_SAMPLE_START: u32 = 0x5_8004;
    /// See [`CYCLE_SAMPLE_START`].
    pub const CYCLE_SAMPLE_END: u32 = 0x5_8008;
    /// Top (exclusive) of the supervisor stack; it grows down from here into
    /// the reserved block `0x58010..0x580E0` (208 bytes).
    pub const SUPERVISOR_STACK_TOP: u32 = 0x5_80E0;
    /// Lowest address the supervisor stack may reach.
    pub const SUPERVISOR_STACK_LIMIT: u32 = 0x5_8010;
    /// Base of worker 0's area; worker k's area is `WORKER_AREA + k·WORKER_AREA_STRIDE`
    /// (its `$WORKERk_BASE`). Word 0 of each area holds the worker identity
    /// word `(tile·8) | k` written at start-up.
    pub const WORKER_AREA: u32 = 0x5_80E0;
    /// Bytes per worker area (also that worker's stack).
    pub const WORKER_AREA_STRIDE: u32 = 0x100;
    /// First byte after the reserved state block usable for data.
    pub const DATA_BASE: u32 = 0x5_86E0;
    /// End (exclusive) of the reserved state block, padded to an element.
    pub const RESERVED_END: u32 = 0x5_C000;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sram_bounds() {
        assert_eq!(SRAM_END, 0xE_8000);
        assert!(in_sram(SRAM_BASE, 4));
        assert!(in_sram(SRAM_END - 4, 4));
        assert!(!in_sram(SRAM_END - 2, 4));
        assert!(!in_sram(SRAM_BASE - 4, 4));
        assert!(!in_sram(u32::MAX, 4));
        assert!(is_executable(APPLICATION_ENTRY));
        assert!(!is_executable(EXECUTABLE_LIMIT));
        assert!(!is_executable(APPLICATION_ENTRY + 2));
    }

    #[test]
    fn elements_match_facts() {
        assert_eq!(effective_element(0x4_C000), 19);
        assert_eq!(effective_element(0x7_FFFC), 31);
        assert_eq!(effective_element(0x8_0000), 32);
        assert_eq!(effective_element(0xE_7FFC), 32 + 12);
    }

    #[test]
    fn layout_is_consistent() {
        use layout::*;
        assert_eq!(WORKER_AREA + 6 * WORKER_AREA_STRIDE, DATA_BASE);
        const { assert!(SUPERVISOR_STACK_LIMIT > CYCLE_SAMPLE_END) };
        assert_eq!(RESERVED_END % ELEMENT_SIZE, 0);
    }
}
