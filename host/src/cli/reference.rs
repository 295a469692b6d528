//! `ipuc reference` (issue #4).

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`ipuc reference` is not built yet (issue #4)")
}
