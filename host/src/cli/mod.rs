//! Command-line front end: one module per subcommand.
pub mod asm;
pub mod checks;
pub mod compile;
pub mod device_args;
pub mod exchange;
pub mod exec;
pub mod execute;
pub mod hw_check;
pub mod inspect;
pub mod isa;
pub mod package_model;
pub mod reference;
pub mod rejection_reports;
pub mod run;
pub mod summary;
pub mod topology;
pub mod workload;
