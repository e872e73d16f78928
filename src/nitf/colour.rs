//! The colour interpretation GDAL's NITF driver gives each band of an image
//! segment, from its IREPBANDn: R, G, B as red, green, blue, M as gray,
//! Y, Cb, Cr as YCbCr (GDAL 3.6 says so even of C3 blocks it decodes to
//! RGB); anything else undefined, or, for a JPEG 2000 segment, what GDAL's
//! JPEG 2000 driver says of that band.

use serde_json::{json, Map, Value};

use super::header::Image;
use crate::georef::band::{ColorInterp, COLOR_ATTRIBUTE};

/// The `chunkref:color_interpretation` array attribute of image `img`.
pub(super) fn attributes(img: &Image) -> Map<String, Value> {
    attributes_over(img, &[])
}

/// The `chunkref:color_interpretation` array attribute of image `img`
/// whose bands are otherwise `base` (the JPEG 2000 driver's view of a C8
/// segment): IREPBANDn decides where it names a colour.
pub(super) fn attributes_over(img: &Image, base: &[ColorInterp]) -> Map<String, Value> {
    let names: Vec<&str> = img
        .band_reps
        .iter()
        .enumerate()
        .map(|(i, rep)| {
            match rep.to_ascii_uppercase().as_str() {
                "R" => ColorInterp::Red,
                "G" => ColorInterp::Green,
                "B" => ColorInterp::Blue,
                "M" => ColorInterp::Gray,
                "Y" => ColorInterp::YCbCrY,
                "CB" => ColorInterp::YCbCrCb,
                "CR" => ColorInterp::YCbCrCr,
                _ => base.get(i).copied().unwrap_or(ColorInterp::Undefined),
            }
            .name()
        })
        .collect();
    let mut attrs = Map::new();
    attrs.insert(COLOR_ATTRIBUTE.into(), json!(names));
    attrs
}
