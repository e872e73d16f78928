//! The colour interpretation GDAL's NITF driver gives each band of an image
//! segment, from its IREPBANDn: R, G, B as red, green, blue, M as gray,
//! Y, Cb, Cr as YCbCr (GDAL 3.6 says so even of C3 blocks it decodes to
//! RGB); anything else undefined, but for an image GDAL hands whole to its
//! JPEG driver (IC = C3 in one block), which says gray of one band and red,
//! green, blue of three, and for a JPEG 2000 segment, what GDAL's JPEG 2000
//! driver says of that band.

use serde_json::{json, Map, Value};

use super::header::Image;
use super::lut::Reader;
use crate::conventions::attributes::COLOR_ATTRIBUTE;
use crate::conventions::colour::ColorInterp;

/// The `chunkref:color_interpretation` array attribute of image `img`.
pub(crate) fn attributes(img: &Image) -> Map<String, Value> {
    attributes_over(img, &[])
}

/// The `chunkref:color_interpretation` array attribute of image `img`
/// whose bands are otherwise `base` (the JPEG 2000 driver's view of a C8
/// segment): IREPBANDn decides where it names a colour.
pub(crate) fn attributes_over(img: &Image, base: &[ColorInterp]) -> Map<String, Value> {
    let jpeg = Reader::of(img) == Reader::Jpeg;
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
                _ => match (jpeg, img.band_reps.len(), i) {
                    (true, 1, _) => ColorInterp::Gray,
                    (true, 3, 0) => ColorInterp::Red,
                    (true, 3, 1) => ColorInterp::Green,
                    (true, 3, _) => ColorInterp::Blue,
                    _ => base.get(i).copied().unwrap_or(ColorInterp::Undefined),
                },
            }
            .name()
        })
        .collect();
    let mut attrs = Map::new();
    attrs.insert(COLOR_ATTRIBUTE.into(), json!(names));
    attrs
}
