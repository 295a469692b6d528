//! Dense `u32` ids indexing the graph's arenas (cranelift-entity style).

use core::fmt;

macro_rules! dense_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        impl $name {
            /// The id with arena index `index`.
            pub const fn new(index: u32) -> Self {
                $name(index)
            }

            /// Arena index.
            pub const fn index(self) -> usize {
                self.0 as usize
            }

            /// Raw number (what the dump prints).
            pub const fn as_u32(self) -> u32 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

dense_id!(
    /// An SSA value: an op result or a region argument. Printed `%N`.
    ValueId,
    "%"
);
dense_id!(
    /// An operation. Printed `opN`.
    OpId,
    "op"
);
dense_id!(
    /// A region (the top level or a Repeat body). Printed `^rN`.
    RegionId,
    "^r"
);
