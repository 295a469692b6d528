//! Command-line front end: one module per subcommand.
pub mod isa;
pub mod asm;
pub mod hw_check;
pub mod topology;
pub mod exchange;
pub mod reference;
pub mod run;
pub mod compile;
pub mod inspect;
