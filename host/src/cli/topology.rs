//! `ipuc topology` (issue #3).

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`ipuc topology` is not built yet (issue #3)")
}
