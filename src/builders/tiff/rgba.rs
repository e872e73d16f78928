//! 8-bit CMYK and CIELab images, which GDAL's GTiff driver opens as RGBA
//! through libtiff's RGBA interface (4 bands: red, green, blue and an
//! opaque alpha, with GDAL's alpha mask): indexed the same way, their
//! stored tiles converted on decode by the `tiff-tile` codec's
//! `color_to_rgba`. The driver's `RAW_COLOR=YES` open option shows the
//! stored components, as GDAL's `GTIFF_RAW:` prefix does.

use serde_json::json;

use super::Image;
use crate::conventions::attributes::COLOR_ATTRIBUTE;
use crate::conventions::colour::ColorInterp;
use crate::formats::tiff::ifd::Ifd;
use crate::formats::tiff::tags;

/// TIFF Photometric of inks (CMYK with InkSet 1).
const SEPARATED: u64 = 5;
/// TIFF Photometric of CIE L*a*b*.
const CIELAB: u64 = 8;

/// Makes `image` (IFD `n` of `path`) the RGBA GDAL shows, when GDAL 3.6
/// converts it: 8-bit unsigned samples, CMYK (InkSet CMYK, 4 samples) or
/// CIELab (3 samples). Those in separate planes, which GDAL converts too,
/// stay as stored (a chunk holds one plane), with a warning.
pub(super) fn convert(image: &mut Image, ifd: &Ifd, path: &str, n: usize) {
    let Some(kind) = conversion(ifd) else {
        return;
    };
    if image.planar {
        eprintln!(
            "chunkref: warning: {path}: IFD {n}: {kind} in separate planes is served as stored \
             (GDAL shows it as RGBA)"
        );
        return;
    }
    image.codec["color_to_rgba"] = json!(kind);
    if kind == "cielab" {
        if let Some(white) = ifd.floats(tags::WHITE_POINT).filter(|w| w.len() == 2) {
            image.codec["white_point"] = json!(white);
        }
    }
    image.samples = 4;
    let names = [
        ColorInterp::Red,
        ColorInterp::Green,
        ColorInterp::Blue,
        ColorInterp::Alpha,
    ]
    .map(ColorInterp::name);
    image.attrs.insert(COLOR_ATTRIBUTE.into(), json!(names));
}

/// Whether `image` is converted to RGBA on decode.
pub(super) fn is_converted(image: &Image) -> bool {
    image.codec.get("color_to_rgba").is_some()
}

/// The `color_to_rgba` conversion GDAL applies to the IFD's pixels, if any.
fn conversion(ifd: &Ifd) -> Option<&'static str> {
    let bits = ifd.ints(tags::BITS_PER_SAMPLE)?;
    let unsigned = ifd.int(tags::SAMPLE_FORMAT).unwrap_or(1) == 1;
    if !unsigned || bits.iter().any(|&b| b != 8) {
        return None;
    }
    let samples = ifd.int(tags::SAMPLES_PER_PIXEL).unwrap_or(1);
    match ifd.int(tags::PHOTOMETRIC)? {
        SEPARATED if samples == 4 && ifd.int(tags::INK_SET).unwrap_or(1) == 1 => Some("cmyk"),
        CIELAB if samples == 3 => Some("cielab"),
        _ => None,
    }
}
