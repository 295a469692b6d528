//! `--image` with each checkpoint's own processor and `--image-size` in
//! every family, at the command line (issue #43 items 2 and 4):
//! * a DINOv2 checkpoint with DINOv2's BiT processor, run at a larger
//!   size (its position table interpolated), gives from `--image` exactly
//!   what it gives from the pixel values transformers made of the image;
//! * a checkpoint without `preprocessor_config.json` falls back to its
//!   family's default and says so;
//! * an option ipuc does not implement is an error naming the key and the
//!   file (exit 4).

use std::path::{Path, PathBuf};

fn ipuc(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_ipuc"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("running ipuc")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures")
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli-image")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of the tower fixture `tower` with `processor` (a processors/
/// case) as its `preprocessor_config.json`, if any.
fn checkpoint(name: &str, tower: &str, processor: Option<&str>) -> PathBuf {
    let dir = scratch(name);
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(fixtures().join("towers").join(tower).join(f), dir.join(f)).unwrap();
    }
    if let Some(case) = processor {
        let src = fixtures()
            .join("processors")
            .join(case)
            .join("preprocessor_config.json");
        std::fs::copy(src, dir.join("preprocessor_config.json")).unwrap();
    }
    dir
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn image_through_the_checkpoints_processor_equals_transformers_pixels() {
    // DINOv2 (positions for 4×4 patches of 4 px) at 28 px: 7×7, with the
    // BiT processor (shortest edge 32, crop 28, ImageNet mean/std).
    let dir = checkpoint("dinov2-bit", "dinov2-interp-up-f32", Some("dinov2-bit"));
    let image = fixtures().join("processors/images/portrait.png");
    let pixels = fixtures().join("processors/dinov2-bit/portrait.npy");
    let (from_image, from_pixels) = (dir.join("image.npy"), dir.join("pixels.npy"));
    let common = [
        "reference",
        "--checkpoint",
        dir.to_str().unwrap(),
        "--image-size",
        "28",
    ];
    let run = |input: &[&str], out: &Path| {
        let mut args = common.to_vec();
        args.extend_from_slice(input);
        args.extend(["--output-embedding", out.to_str().unwrap(), "-v"]);
        let o = ipuc(&args);
        assert!(o.status.success(), "{args:?}: {}", text(&o.stderr));
        text(&o.stdout)
    };
    let stdout = run(&["--image", image.to_str().unwrap()], &from_image);
    assert!(
        stdout.contains("preprocessing: BitImageProcessor: resize shortest edge to 32 BICUBIC, centre crop 28×28"),
        "{stdout}"
    );
    run(&["--input", pixels.to_str().unwrap()], &from_pixels);
    assert_eq!(
        std::fs::read(&from_image).unwrap(),
        std::fs::read(&from_pixels).unwrap()
    );
}

#[test]
fn a_missing_processor_falls_back_to_the_family_default_and_says_so() {
    let dir = checkpoint("vit-default", "vit-f32", None);
    let image = fixtures().join("processors/images/landscape.png");
    let out = dir.join("e.npy");
    let o = ipuc(&[
        "reference",
        "--checkpoint",
        dir.to_str().unwrap(),
        "--image",
        image.to_str().unwrap(),
        "--output-embedding",
        out.to_str().unwrap(),
    ]);
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("has no preprocessor_config.json; --image is preprocessed by ViT's default processor at 28 px (ViTImageProcessor: resize to 28×28 BILINEAR"),
        "{err}"
    );
}

#[test]
fn options_ipuc_does_not_implement_are_named_errors() {
    let dir = checkpoint("clip-pad", "clip-vision-f32", None);
    let config = dir.join("preprocessor_config.json");
    std::fs::write(
        &config,
        r#"{"image_processor_type": "CLIPImageProcessor", "do_pad": true}"#,
    )
    .unwrap();
    let image = fixtures().join("processors/images/tiny.png");
    let out = dir.join("e.npy");
    let args = [
        "reference",
        "--checkpoint",
        dir.to_str().unwrap(),
        "--image",
        image.to_str().unwrap(),
        "--output-embedding",
        out.to_str().unwrap(),
    ];
    let o = ipuc(&args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains(config.to_str().unwrap()) && err.contains("`do_pad`"),
        "{err}"
    );
    std::fs::write(&config, r#"{"image_processor_type": "DeiTImageProcessor"}"#).unwrap();
    let o = ipuc(&args);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(
        err.contains("`image_processor_type`") && err.contains("DeiTImageProcessor"),
        "{err}"
    );
}
