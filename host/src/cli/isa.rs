//! `ipuc isa` (issue #2).

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`ipuc isa` is not built yet (issue #2)")
}
