//! `ipuc compile` (issue #5).

#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`ipuc compile` is not built yet (issue #5)")
}
