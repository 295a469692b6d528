//! `ipuc topology` (issue #3): C600 tile numbering and the route timing model.

use anyhow::Context;
use ipuc_target::ipu21::topology::{route, LogicalTile};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand, Debug)]
enum Command {
    /// Route `S -> D` between two logical tiles: physical ids, mux time T,
    /// displacement and send direction (facts §2.5).
    Route {
        /// Source logical tile (0..1472).
        source: u32,
        /// Destination logical tile (0..1472).
        destination: u32,
    },
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Route {
            source,
            destination,
        } => {
            println!("{}", route_line(source, destination)?);
            Ok(())
        }
    }
}

/// The one-line description printed by `ipuc topology route S D`.
pub fn route_line(source: u32, destination: u32) -> anyhow::Result<String> {
    let s = LogicalTile::new(source).context("source tile")?;
    let d = LogicalTile::new(destination).context("destination tile")?;
    let (p, q) = (s.physical(), d.physical());
    let r = route(p, q);
    Ok(format!(
        "logical {}->{} physical {}->{} T={} displacement={} direction={}",
        s.get(),
        d.get(),
        p.get(),
        q.get(),
        r.mux_time,
        r.displacement,
        r.direction.number()
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn route_line_matches_facts_vector() {
        assert_eq!(
            super::route_line(46, 2).unwrap(),
            "logical 46->2 physical 1409->64 T=17 displacement=-5 direction=2"
        );
        assert!(super::route_line(0, 1472).is_err());
    }
}
