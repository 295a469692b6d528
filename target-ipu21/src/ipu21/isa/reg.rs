//! Register newtypes: MRF (`$m0..$m15`) and ARF (`$a0..$a15`).

use core::fmt;

use super::IsaError;

/// Number of MRF registers; register fields are 4 bits wide
/// (docs/facts/ipu21-target.md §1.5, §3).
pub const MRF_COUNT: u8 = 16;
/// ARF capacity (16 on IPU1, assumed for IPU21; `zero $aD` has a 4-bit field)
/// (docs/facts/ipu21-target.md §1.5, §3.3).
pub const ARF_COUNT: u8 = 16;

/// A main-register-file register `$m0..$m15`. `$m15` reads as zero (`$mzero`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MReg(u8);

impl MReg {
    /// `$m15` always reads as zero (docs/facts/ipu21-target.md §1.5).
    pub const ZERO: MReg = MReg(15);

    /// `$mN`; errors when `n >= 16`.
    pub const fn new(n: u8) -> Result<MReg, IsaError> {
        if n < MRF_COUNT {
            Ok(MReg(n))
        } else {
            Err(IsaError::BadRegister {
                file: 'm',
                index: n as u32,
            })
        }
    }

    /// `$mN` from a 4-bit field (the mask makes it always valid).
    pub(crate) const fn from_field(bits: u32) -> MReg {
        MReg((bits & 0xF) as u8)
    }

    /// The register number (0..=15).
    pub const fn index(self) -> u8 {
        self.0
    }

    pub(crate) const fn bits(self) -> u32 {
        self.0 as u32
    }
}

/// `$m0`..`$m15` as constants, for readable code generators.
pub mod m {
    use super::MReg;
    pub const M0: MReg = MReg(0);
    pub const M1: MReg = MReg(1);
    pub const M2: MReg = MReg(2);
    pub const M3: MReg = MReg(3);
    pub const M4: MReg = MReg(4);
    pub const M5: MReg = MReg(5);
    pub const M6: MReg = MReg(6);
    pub const M7: MReg = MReg(7);
    pub const M8: MReg = MReg(8);
    pub const M9: MReg = MReg(9);
    pub const M10: MReg = MReg(10);
    pub const M11: MReg = MReg(11);
    pub const M12: MReg = MReg(12);
    pub const M13: MReg = MReg(13);
    pub const M14: MReg = MReg(14);
    pub const M15: MReg = MReg(15);
}

impl fmt::Display for MReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "$m{}", self.0)
    }
}

/// An auxiliary-register-file register `$a0..$a15`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AReg(u8);

impl AReg {
    /// `$aN`; errors when `n >= 16`.
    pub const fn new(n: u8) -> Result<AReg, IsaError> {
        if n < ARF_COUNT {
            Ok(AReg(n))
        } else {
            Err(IsaError::BadRegister {
                file: 'a',
                index: n as u32,
            })
        }
    }

    pub(crate) const fn from_field(bits: u32) -> AReg {
        AReg((bits & 0xF) as u8)
    }

    /// The register number (0..=15).
    pub const fn index(self) -> u8 {
        self.0
    }

    pub(crate) const fn bits(self) -> u32 {
        self.0 as u32
    }
}

impl fmt::Display for AReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "$a{}", self.0)
    }
}
