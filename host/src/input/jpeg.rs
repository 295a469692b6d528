//! JPEG decoding as PIL does it: libjpeg-turbo's decoder (through the
//! `mozjpeg` crate, a libjpeg-turbo fork built from source) with libjpeg's
//! defaults, which PIL keeps — islow IDCT, fancy upsampling, YCbCr (or
//! grey) converted to RGB by the library. A file that ends before its image
//! data does is an error, as in PIL ("image file is truncated"), where
//! libjpeg alone would warn and fill the rest with grey. A four-channel
//! (CMYK or YCCK) JPEG is read as CMYK and converted as PIL converts it.

use std::ffi::c_int;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

use mozjpeg_sys::{jpeg_common_struct, jpeg_error_mgr, jpeg_std_error, JWRN_JPEG_EOF};

/// Decoded RGB pixels may take at most this (PNG decoding has the same
/// bound from the `image` crate's default limits).
const MAX_DECODED_BYTES: usize = 512 << 20;

/// libjpeg's text for its current message.
fn message(cinfo: &mut jpeg_common_struct) -> String {
    // SAFETY: libjpeg calls the error manager with `err` set to ours.
    let err = unsafe { &*cinfo.err };
    let mut buffer = [0u8; 80];
    if let Some(format) = err.format_message {
        type Format = unsafe extern "C-unwind" fn(&mut jpeg_common_struct, &mut [u8; 80]);
        // SAFETY: the binding declares the buffer `&[u8; 80]` though
        // libjpeg writes its message (at most JMSG_LENGTH_MAX = 80 bytes)
        // into it; the function is the same, taking the buffer mutably.
        let format: Format = unsafe { std::mem::transmute(format) };
        // SAFETY: as above.
        unsafe { format(cinfo, &mut buffer) };
    }
    let text = buffer.split(|&c| c == 0).next().unwrap_or_default();
    String::from_utf8_lossy(text).into_owned()
}

/// A fatal libjpeg error: unwinds to [`decode`]'s `catch_unwind`.
extern "C-unwind" fn fatal(cinfo: &mut jpeg_common_struct) {
    resume_unwind(Box::new(message(cinfo)));
}

/// libjpeg's warnings: "premature end of data" is fatal (PIL refuses a
/// truncated file); others (e.g. extraneous bytes before a marker) are
/// ignored, as PIL ignores them.
extern "C-unwind" fn warning(cinfo: &mut jpeg_common_struct, level: c_int) {
    // SAFETY: as in `message`.
    let code = unsafe { (*cinfo.err).msg_code };
    if level < 0 && code == JWRN_JPEG_EOF as c_int {
        resume_unwind(Box::new(
            "the file is truncated: it ends before the image data does".to_string(),
        ));
    }
}

/// Decodes a JPEG to (width, height, RGB bytes).
pub fn decode(bytes: &[u8]) -> Result<(usize, usize, Vec<u8>), String> {
    let result = catch_unwind(AssertUnwindSafe(|| -> std::io::Result<_> {
        // SAFETY: a zeroed error manager is what jpeg_std_error fills in.
        let mut err: jpeg_error_mgr = unsafe { std::mem::zeroed() };
        // SAFETY: `err` is a valid error manager to initialise.
        unsafe { jpeg_std_error(&mut err) };
        err.error_exit = Some(fatal);
        err.emit_message = Some(warning);
        let decompress = mozjpeg::decompress::DecompressBuilder::new()
            .with_err(err)
            .from_mem(bytes)?;
        use mozjpeg_sys::J_COLOR_SPACE::{JCS_CMYK, JCS_YCCK};
        let (w, h) = decompress.size();
        let four_channels = matches!(decompress.color_space(), JCS_CMYK | JCS_YCCK);
        let channels = if four_channels { 4 } else { 3 };
        if w.saturating_mul(h).saturating_mul(channels) > MAX_DECODED_BYTES {
            return Err(std::io::Error::other(format!(
                "{w}×{h} pixels: more than {MAX_DECODED_BYTES} bytes decoded"
            )));
        }
        if four_channels {
            let mut image = decompress.to_colorspace(JCS_CMYK)?;
            let cmyk = image.read_scanlines::<[u8; 4]>()?;
            image.finish()?;
            return Ok((w, h, cmyk.into_iter().flat_map(cmyk_as_pil).collect()));
        }
        let mut image = decompress.rgb()?;
        let pixels = image.read_scanlines::<u8>()?;
        image.finish()?;
        Ok((w, h, pixels))
    }));
    match result {
        Ok(Ok(decoded)) => Ok(decoded),
        Ok(Err(e)) => Err(e.to_string()),
        Err(panic) => Err(panic
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_else(|| "libjpeg failed".into())),
    }
}

/// One CMYK pixel as libjpeg gives it, to RGB as PIL gives it: PIL reads
/// every CMYK JPEG with Adobe's inverted convention (raw mode `CMYK;I`, so
/// each of its values is 255 minus libjpeg's), then `convert("RGB")` makes
/// each channel `(255 − k) − c·(255 − k)/255` with Pillow's rounded integer
/// division by 255 (`((x >> 8) + x) >> 8` after adding 128).
fn cmyk_as_pil(raw: [u8; 4]) -> [u8; 3] {
    let [c, m, y, k] = raw.map(|v| 255 - u32::from(v));
    let not_k = 255 - k;
    [c, m, y].map(|v| {
        let x = v * not_k + 128;
        (not_k - (((x >> 8) + x) >> 8)) as u8
    })
}
