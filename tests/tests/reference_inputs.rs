//! Input handling against HF: SigLIP image preprocessing matches
//! `SiglipImageProcessorPil` on the committed fixture images, and bad
//! images / `.npy` files give errors that say what is wrong.

use std::path::{Path, PathBuf};

use ipuc::input::{NpyArray, NpyErrorKind, PixelValues};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/siglip")
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn png_preprocessing_matches_hf_exactly() {
    let dir = fixtures().join("image");
    for stem in ["stripes", "pattern"] {
        let ours = PixelValues::from_image(&dir.join(format!("{stem}.png")), 42).unwrap();
        let hf = NpyArray::read(&dir.join(format!("{stem}_png_pixel_values_42.npy"))).unwrap();
        assert_eq!(ours.shape.to_vec(), hf.shape);
        assert_eq!(max_abs_diff(&ours.data, &hf.data), 0.0, "{stem}.png");
    }
}

#[test]
fn bad_images_are_reported() {
    let tmp = std::env::temp_dir().join(format!("ipuc-img-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let txt = tmp.join("notes.png");
    std::fs::write(&txt, b"hello, not an image").unwrap();
    let e = PixelValues::from_image(&txt, 42).unwrap_err().to_string();
    assert!(
        e.contains("notes.png") && e.contains("not a PNG or JPEG"),
        "{e}"
    );

    let png = std::fs::read(fixtures().join("image/pattern.png")).unwrap();
    let cut = tmp.join("cut.png");
    std::fs::write(&cut, &png[..png.len() / 2]).unwrap();
    let e = format!("{:#}", PixelValues::from_image(&cut, 42).unwrap_err());
    assert!(e.contains("cut.png") && e.contains("decoding"), "{e}");

    let gif = tmp.join("x.gif");
    std::fs::write(&gif, b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap();
    let e = PixelValues::from_image(&gif, 42).unwrap_err().to_string();
    assert!(e.contains("x.gif"), "{e}");

    let missing = tmp.join("missing.png");
    let e = format!("{:#}", PixelValues::from_image(&missing, 42).unwrap_err());
    assert!(e.contains("missing.png"), "{e}");
}

#[test]
fn npy_inputs_are_validated() {
    let tmp = std::env::temp_dir().join(format!("ipuc-npy-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let good = fixtures().join("vision-f16/pixel_values.npy");
    let pv = PixelValues::from_npy(&good, None, 3, 42).unwrap();
    assert_eq!(pv.shape, [1, 3, 42, 42]);

    // Wrong spatial size names both shapes.
    let e = PixelValues::from_npy(&good, None, 3, 28).unwrap_err();
    assert!(matches!(e.kind, NpyErrorKind::ShapeMismatch { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("[1, 3, 42, 42]") && msg.contains("[*, 3, 28, 28]"),
        "{msg}"
    );

    // Truncated data.
    let bytes = std::fs::read(&good).unwrap();
    let cut = tmp.join("cut.npy");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    let e = PixelValues::from_npy(&cut, None, 3, 42).unwrap_err();
    assert!(matches!(e.kind, NpyErrorKind::DataLength { .. }), "{e}");
    assert!(e.to_string().contains("cut.npy"));

    // Non-finite pixels.
    let mut a = NpyArray::read(&good).unwrap();
    a.data[5] = f32::NAN;
    let nan = tmp.join("nan.npy");
    a.write(&nan).unwrap();
    let e = PixelValues::from_npy(&nan, None, 3, 42).unwrap_err();
    assert!(
        matches!(e.kind, NpyErrorKind::NonFinite { index: 5, .. }),
        "{e}"
    );

    // Not an npy at all.
    let png = fixtures().join("image/pattern.png");
    let e = PixelValues::from_npy(&png, None, 3, 42).unwrap_err();
    assert!(matches!(e.kind, NpyErrorKind::NotNpy), "{e}");
}

/// #28: JPEG (4:2:0, 4:4:4 and grey, noisy so every IDCT and upsampling
/// rounding shows), 16-bit PNG (RGB: PIL keeps the high byte; grey: PIL
/// clips to 255), PNG with transparency (alpha, `tRNS`) and CMYK JPEG
/// preprocess bit for bit as transformers' SigLIP processor
/// with PIL (libjpeg-turbo 3.2.0) does; `make_image_fixtures.py` made them.
#[test]
fn jpeg_and_16_bit_png_match_pil_bit_for_bit() {
    let dir = fixtures().join("image");
    for (stem, ext) in [
        ("noisy420", "jpg"),
        ("noisy444", "jpg"),
        ("gray", "jpg"),
        ("stripes", "jpg"),
        ("rgb16", "png"),
        ("gray16", "png"),
        // Transparency: transformers composites onto white (PIL's integer
        // alpha_composite); dropping the alpha differs on every one.
        ("rgba", "png"),
        ("rgba16", "png"),
        ("gray_alpha", "png"),
        ("palette_trns", "png"),
        ("rgb_trns", "png"),
        // CMYK: PIL's inverted (Adobe) reading, then its own conversion.
        ("cmyk", "jpg"),
        // Pillow resizes these vertical pass first (the height shrinks by
        // more than twice what the width does); the other order differs.
        ("portrait", "png"),
        ("tall_narrow", "png"),
    ] {
        let ours = PixelValues::from_image(&dir.join(format!("{stem}.{ext}")), 42).unwrap();
        let hf = NpyArray::read(&dir.join(format!("{stem}_{ext}_pixel_values_42.npy"))).unwrap();
        assert_eq!(ours.shape.to_vec(), hf.shape);
        let d = max_abs_diff(&ours.data, &hf.data);
        assert_eq!(d, 0.0, "{stem}.{ext}: max abs difference {d}");
    }
}

/// #28: half a JPEG decoded with a grey remainder and exit 0; PIL refuses
/// it ("image file is truncated"), and so does ipuc.
#[test]
fn a_truncated_jpeg_is_an_error() {
    let e = format!(
        "{:#}",
        PixelValues::from_image(&fixtures().join("image/truncated.jpg"), 42).unwrap_err()
    );
    assert!(
        e.contains("truncated.jpg") && e.contains("truncated"),
        "{e}"
    );
}
