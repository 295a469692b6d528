//! Each checkpoint's own preprocessing (issue #43 item 2): ipuc's image
//! processors read the committed `preprocessor_config.json` variants
//! (tests/fixtures/processors, made by make_processor_fixtures.py) and give
//! the pixel values transformers' PIL backend gave, bit for bit, for every
//! image: SigLIP (class defaults; ImageNet mean/std with bilinear; nearest),
//! CLIP (legacy int sizes; a crop padded with zeros), ViT (and its legacy
//! form) and DINOv2's BiT processor (resize by the shortest edge, crop).

use std::path::{Path, PathBuf};

use ipuc::input::preprocess::decode_image;
use ipuc::input::processor::{ImageProcessor, PREPROCESSOR_FILE};
use ipuc::input::NpyArray;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/processors")
}

/// Every case directory with its expected `.npy` files.
fn cases() -> Vec<(String, Vec<PathBuf>)> {
    let mut cases: Vec<(String, Vec<PathBuf>)> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join(PREPROCESSOR_FILE).is_file())
        .map(|dir| {
            let mut npys: Vec<PathBuf> = std::fs::read_dir(&dir)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "npy"))
                .collect();
            npys.sort();
            (
                dir.file_name().unwrap().to_string_lossy().into_owned(),
                npys,
            )
        })
        .collect();
    cases.sort();
    cases
}

#[test]
fn every_processor_matches_transformers_bit_for_bit() {
    let cases = cases();
    assert!(cases.len() >= 9, "{cases:?}");
    let mut failures = Vec::new();
    let mut table =
        String::from("| case | processor | images bit-exact | max abs |\n|---|---|---|---|\n");
    for (case, npys) in &cases {
        let dir = fixtures().join(case);
        let processor = ImageProcessor::from_file(&dir.join(PREPROCESSOR_FILE)).unwrap();
        let (mut exact, mut worst) = (0, 0f32);
        for npy in npys {
            let stem = npy.file_stem().unwrap().to_string_lossy();
            let img = decode_image(&fixtures().join(format!("images/{stem}.png"))).unwrap();
            let want = NpyArray::read(npy).unwrap();
            let (h, w, data) = processor.apply(&img);
            assert_eq!(want.shape, [1, 3, h, w], "{case}/{stem}");
            let err = data
                .iter()
                .zip(&want.data)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            worst = worst.max(err);
            let same = data
                .iter()
                .map(|v| v.to_bits())
                .eq(want.data.iter().map(|v| v.to_bits()));
            if same {
                exact += 1;
            } else {
                failures.push(format!("{case}/{stem}: max abs {err:e}"));
            }
        }
        table.push_str(&format!(
            "| {case} | {} | {exact}/{} | {worst:e} |\n",
            processor.class.name(),
            npys.len()
        ));
    }
    eprintln!("{table}");
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn the_family_defaults_are_transformers_class_defaults() {
    use ipuc::input::processor::ProcessorClass;
    use ipuc::model::Family;
    // The SigLIP default fixture names nothing but its size.
    let dir = fixtures().join("siglip-default");
    let file = ImageProcessor::from_file(&dir.join(PREPROCESSOR_FILE)).unwrap();
    assert_eq!(file, ImageProcessor::family_default(Family::Siglip, 24));
    assert_eq!(
        ImageProcessor::family_default(Family::Clip, 24),
        ImageProcessor::class_default(ProcessorClass::Clip, 24)
    );
}
