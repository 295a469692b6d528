//! `ipuc inspect PACKAGE`: what a package holds — tiles, segments and sizes,
//! kernel symbols, bindings, exchange-table and host-descriptor bytes per
//! tile, host calls, step tables and the plan summary. `--json` prints the
//! same view as JSON.

use std::path::PathBuf;

use anyhow::Context;

use crate::report::package_view::{render_text, PackageView, TextDetail};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Package file (written by `ipuc compile` or `ipuc run --package`).
    pub package: PathBuf,
    /// Print the view as JSON (every tile, segment and slice).
    #[arg(long)]
    pub json: bool,
    /// List every segment under its tile.
    #[arg(long)]
    pub segments: bool,
    /// List every binding slice.
    #[arg(long)]
    pub slices: bool,
    /// Show only this physical tile (0..=1471), with its segments.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..i64::from(ipuc_target::ipu21::topology::TILE_COUNT)))]
    pub tile: Option<u32>,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    print!("{}", render(&args)?);
    Ok(())
}

/// The text (or JSON) `run` prints.
pub fn render(args: &Args) -> anyhow::Result<String> {
    let bytes = crate::fsio::read_package(&args.package)
        .with_context(|| format!("reading {}", args.package.display()))?;
    let package = ipuc_target::package::read(&bytes)
        .with_context(|| format!("{} is not a valid ipuc package", args.package.display()))?;
    if let Some(t) = args.tile.filter(|&t| package.tile(t).is_none()) {
        anyhow::bail!(
            "--tile {t}: {} has no image for tile {t} ({} tiles have one)",
            args.package.display(),
            package.tiles.len()
        );
    }
    let description = super::package_model::description_of(&package)
        .with_context(|| args.package.display().to_string())?;
    let view = PackageView::new(&package, &bytes, description);
    if args.json {
        let mut json =
            serde_json::to_string_pretty(&crate::report::artifact::PACKAGE_VIEW.wrap(&view))?;
        json.push('\n');
        return Ok(json);
    }
    let detail = TextDetail {
        segments: args.segments,
        slices: args.slices,
        tile: args.tile,
    };
    Ok(render_text(
        &view,
        &args.package.display().to_string(),
        detail,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ipuc_target::package::*;

    fn package() -> Package {
        let mut p = Package::new("ipuc test");
        for t in [0u32, 2] {
            let mut tile = TileImage::new(t, 0x4C010);
            tile.segments.push(Segment::code(
                0x4C010,
                SegmentRole::Runtime,
                &[0x19e0_0000; 4],
            ));
            tile.segments.push(Segment::code(
                0x5C000,
                SegmentRole::ExchangeRows,
                &[1, 2, 3],
            ));
            tile.segments.push(Segment::data(
                0x5D000,
                40 + t,
                SegmentRole::RepeatPatchTable,
                vec![1; 8],
            ));
            tile.segments.push(Segment::data(
                0x50000,
                268,
                SegmentRole::HostDescriptors,
                vec![0; 12],
            ));
            tile.segments.push(Segment::data(
                0x80000,
                0x100,
                SegmentRole::Tensor,
                Vec::new(),
            ));
            p.tiles.push(tile);
        }
        p.kernels.push(KernelSymbol {
            name: "gemm_f16".into(),
            address: 0x4E000,
        });
        p.bindings.push(Binding {
            name: "image".into(),
            kind: BindingKind::Input,
            dtype: DType::F16,
            scale: 0,
            shape: vec![2, 8],
            slices: vec![
                BindingSlice {
                    file_offset: 0,
                    tile: 0,
                    tile_address: 0x80000,
                    size: 16,
                },
                BindingSlice {
                    file_offset: 16,
                    tile: 2,
                    tile_address: 0x80000,
                    size: 16,
                },
            ],
        });
        p.steps.operations = vec!["layer.qkv".into()];
        p.steps.tiles.push(TileStepTable {
            physical_tile: 0,
            steps: vec![StepInfo {
                step: 0,
                kind: StepKind::Compute,
                operation: 0,
                code_address: 0x4C010,
                repeat: Some(RepeatScope {
                    repeat: 0,
                    trip_count: 27,
                }),
            }],
        });
        p.plan_summary
            .insert("beam width".into(), SummaryValue::Integer(64));
        p.plan_summary
            .insert("fp8 scale".into(), SummaryValue::Integer(-4));
        p
    }

    fn args(path: PathBuf, json: bool) -> Args {
        Args {
            package: path,
            json,
            segments: false,
            slices: false,
            tile: None,
        }
    }

    fn written(name: &str) -> PathBuf {
        let path =
            std::env::temp_dir().join(format!("ipuc-inspect-{name}-{}.ipuc", std::process::id()));
        std::fs::write(&path, write(&package()).unwrap()).unwrap();
        path
    }

    #[test]
    fn text_lists_per_tile_table_bytes_and_everything_else() {
        let path = written("text");
        let text = render(&args(path.clone(), false)).unwrap();
        // Exchange tables = 12 row bytes + 40 (tile 0) or 42 (tile 2) patch bytes.
        let row = |tile: &str| {
            text.lines()
                .find(|l| l.split_whitespace().next() == Some(tile))
                .unwrap()
                .to_string()
        };
        assert!(row("0").ends_with("52        268"), "{text}");
        assert!(row("2").ends_with("54        268"), "{text}");
        for needle in [
            "0x4e000  gemm_f16",
            "input  image  f16    [2×8]     32       2      2",
            "repeat 0: 27 iterations",
            "fp8 scale      -4",
            "SHA-256 ",
        ] {
            assert!(text.contains(needle), "missing `{needle}` in\n{text}");
        }
        let one = render(&Args {
            tile: Some(2),
            ..args(path.clone(), false)
        })
        .unwrap();
        assert!(
            one.contains("0x5d000..0x5d02a") && !one.contains("0x5d000..0x5d028"),
            "{one}"
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn json_carries_the_per_tile_figures() {
        let path = written("json");
        let v: serde_json::Value =
            serde_json::from_str(&render(&args(path.clone(), true)).unwrap()).unwrap();
        assert_eq!(v["tiles"][1]["exchange_table_bytes"], 54);
        assert_eq!(v["tiles"][1]["host_descriptor_bytes"], 268);
        assert_eq!(v["bindings"][0]["tiles"], 2);
        assert_eq!(v["sha256"].as_str().unwrap().len(), 64);
        let bytes = std::fs::read(&path).unwrap();
        let package = read(&bytes).unwrap();
        let description = ipuc_core::description::read(&package).unwrap();
        let view = PackageView::new(&package, &bytes, description);
        assert_eq!(view.max_table_bytes(), (54, 268));
        assert!(view
            .report_lines()
            .contains("exchange tables 54 B, host descriptors 268 B"));
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn malformed_packages_are_reported_with_the_reader_error() {
        let path =
            std::env::temp_dir().join(format!("ipuc-inspect-bad-{}.ipuc", std::process::id()));
        let bytes = write(&package()).unwrap();
        // Cut: the digest no longer matches.
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        let e = format!("{:#}", render(&args(path.clone(), false)).unwrap_err());
        assert!(
            e.contains("is not a valid ipuc package") && e.contains("package digest mismatch"),
            "{e}"
        );
        // A cut body sealed again: the section check behind the digest.
        let body = &bytes[..bytes.len() - ipuc_target::package::DIGEST_BYTES - 3];
        std::fs::write(&path, ipuc_target::package::seal(body.to_vec())).unwrap();
        let e = format!("{:#}", render(&args(path.clone(), false)).unwrap_err());
        assert!(
            e.contains("is not a valid ipuc package") && e.contains("truncated"),
            "{e}"
        );
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn a_tile_without_an_image_is_an_error() {
        let path = written("tile");
        let mut a = args(path.clone(), false);
        a.tile = Some(1);
        let e = render(&a).unwrap_err().to_string();
        assert!(e.contains("has no image for tile 1"), "{e}");
        a.tile = Some(2);
        assert!(render(&a).is_ok());
        let _ = std::fs::remove_file(path);
    }
}
