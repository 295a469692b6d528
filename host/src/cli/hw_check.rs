//! `ipuc hw-check` (issue #2).

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`ipuc hw-check` is not built yet (issue #2)")
}
