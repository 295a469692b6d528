use super::*;

fn parse(text: &str) -> Result<ImageProcessor, ProcessorError> {
    json::parse(text, Path::new("ck/preprocessor_config.json"))
}

#[test]
fn presets_read_their_published_processors() {
    let so400m = ImageProcessor::preset("siglip-so400m").unwrap();
    assert_eq!(so400m.nominal_size(), Some((384, 384)));
    assert_eq!(so400m.normalize, Some((HALF, HALF)));
    let clip = ImageProcessor::preset("clip-vit-l14-336").unwrap();
    assert_eq!(
        clip.resize,
        Some((Resize::ShortestEdge(336), Resample::Bicubic))
    );
    assert_eq!(clip.crop, Some((336, 336)));
    assert_eq!(clip.normalize, Some((CLIP_MEAN, CLIP_STD)));
    let vit = ImageProcessor::preset("vit-b16-224").unwrap();
    assert_eq!(vit.resize.unwrap().1, Resample::Bilinear);
    assert_eq!(vit.nominal_size(), Some((224, 224)));
    let dino = ImageProcessor::preset("dinov2-l14-224").unwrap();
    assert_eq!(dino, ImageProcessor::family_default(Family::Dinov2, 224));
    assert!(ImageProcessor::preset("siglip-small").is_none());
}

#[test]
fn options_ipuc_does_not_implement_are_named() {
    let e = parse(r#"{"image_processor_type": "ConvNextImageProcessor"}"#).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("ck/preprocessor_config.json")
            && msg.contains("`image_processor_type`")
            && msg.contains("ConvNextImageProcessor"),
        "{msg}"
    );
    for (text, key) in [
        (
            r#"{"image_processor_type": "CLIPImageProcessor", "data_format": "channels_last"}"#,
            "data_format",
        ),
        (
            r#"{"image_processor_type": "ViTImageProcessor", "do_pad": true}"#,
            "do_pad",
        ),
        (
            r#"{"image_processor_type": "SiglipImageProcessor", "resample": 9}"#,
            "resample",
        ),
        (
            r#"{"image_processor_type": "BitImageProcessor", "size": {"longest_edge": 9}}"#,
            "size",
        ),
        (
            r#"{"image_processor_type": "SiglipImageProcessor", "do_center_crop": true}"#,
            "crop_size",
        ),
        (r#"{"do_resize": true}"#, "image_processor_type"),
    ] {
        let msg = parse(text).unwrap_err().to_string();
        assert!(msg.contains(&format!("`{key}`")), "{text}: {msg}");
    }
    // Naming keys and inert values are accepted.
    let p = parse(
        r#"{"image_processor_type": "SiglipImageProcessorFast", "processor_class": "SiglipProcessor",
            "do_pad": false, "data_format": "channels_first"}"#,
    )
    .unwrap();
    assert_eq!(
        p,
        ImageProcessor::class_default(ProcessorClass::Siglip, 224)
    );
}

#[test]
fn legacy_int_sizes_follow_get_size_dict() {
    // CLIP: an int `size` is the shortest edge, an int crop square.
    let clip =
        parse(r#"{"feature_extractor_type": "CLIPFeatureExtractor", "size": 30, "crop_size": 20}"#)
            .unwrap();
    assert_eq!(clip.resize.unwrap().0, Resize::ShortestEdge(30));
    assert_eq!(clip.crop, Some((20, 20)));
    // ViT: square (default_to_square); SigLIP's PIL processor is not.
    let vit = parse(r#"{"feature_extractor_type": "ViTFeatureExtractor", "size": 30}"#).unwrap();
    assert_eq!(vit.nominal_size(), Some((30, 30)));
    let siglip = parse(r#"{"image_processor_type": "SiglipImageProcessor", "size": 30}"#).unwrap();
    assert_eq!(siglip.resize.unwrap().0, Resize::ShortestEdge(30));
    let listed =
        parse(r#"{"image_processor_type": "SiglipImageProcessor", "size": [30, 20]}"#).unwrap();
    assert_eq!(listed.nominal_size(), Some((30, 20)));
}

#[test]
fn shortest_edge_keeps_the_aspect_ratio_truncating() {
    // 53 wide, 61 high → 30 wide, int(30·61/53) = 34 high.
    assert_eq!(resized_size(Resize::ShortestEdge(30), 53, 61), (34, 30));
    assert_eq!(resized_size(Resize::ShortestEdge(30), 61, 53), (30, 34));
}

#[test]
fn centre_crop_pads_small_images_with_zeros() {
    let img = Rgb8 {
        width: 3,
        height: 2,
        pixels: (1..=18).collect(),
    };
    // 3×2 into 4×5: padded by ⌈1/2⌉ = 1 left, ⌈3/2⌉ = 2 top.
    let c = center_crop(&img, 5, 4);
    assert_eq!((c.width, c.height), (4, 5));
    let at = |x: usize, y: usize| c.pixels[(y * 4 + x) * 3];
    assert_eq!(at(0, 2), 0);
    assert_eq!(at(1, 2), 1);
    assert_eq!(at(3, 3), 16);
    assert_eq!(at(1, 4), 0);
    // A larger image: offsets (size − crop) // 2.
    let d = center_crop(&img, 1, 1);
    assert_eq!(d.pixels, vec![4, 5, 6]);
}

#[test]
fn resizing_to_the_model_keeps_the_crop_ratio() {
    let dino = ImageProcessor::family_default(Family::Dinov2, 224).resized_to(112);
    assert_eq!(dino.resize.unwrap().0, Resize::ShortestEdge(128));
    assert_eq!(dino.crop, Some((112, 112)));
    let siglip = ImageProcessor::preset("siglip-so400m")
        .unwrap()
        .resized_to(56);
    assert_eq!(siglip.nominal_size(), Some((56, 56)));
}
