//! GDAL's colour interpretations, as indexes name them
//! ([`super::attributes::COLOR_ATTRIBUTE`]).

/// GDAL colour interpretations chunkref reports (values of `GDALColorInterp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum ColorInterp {
    /// GCI_Undefined.
    Undefined = 0,
    /// GCI_GrayIndex.
    Gray = 1,
    /// GCI_PaletteIndex.
    Palette = 2,
    /// GCI_RedBand.
    Red = 3,
    /// GCI_GreenBand.
    Green = 4,
    /// GCI_BlueBand.
    Blue = 5,
    /// GCI_AlphaBand.
    Alpha = 6,
    /// GCI_CyanBand.
    Cyan = 10,
    /// GCI_MagentaBand.
    Magenta = 11,
    /// GCI_YellowBand.
    Yellow = 12,
    /// GCI_BlackBand.
    Black = 13,
    /// GCI_YCbCr_YBand.
    YCbCrY = 14,
    /// GCI_YCbCr_CbBand.
    YCbCrCb = 15,
    /// GCI_YCbCr_CrBand.
    YCbCrCr = 16,
}

impl ColorInterp {
    /// GDAL's name of the interpretation.
    pub fn name(self) -> &'static str {
        match self {
            ColorInterp::Undefined => "Undefined",
            ColorInterp::Gray => "Gray",
            ColorInterp::Palette => "Palette",
            ColorInterp::Red => "Red",
            ColorInterp::Green => "Green",
            ColorInterp::Blue => "Blue",
            ColorInterp::Alpha => "Alpha",
            ColorInterp::Cyan => "Cyan",
            ColorInterp::Magenta => "Magenta",
            ColorInterp::Yellow => "Yellow",
            ColorInterp::Black => "Black",
            ColorInterp::YCbCrY => "YCbCr_Y",
            ColorInterp::YCbCrCb => "YCbCr_Cb",
            ColorInterp::YCbCrCr => "YCbCr_Cr",
        }
    }

    /// Parses a GDAL colour interpretation name (case-insensitive).
    pub fn from_name(name: &str) -> ColorInterp {
        match name.to_ascii_lowercase().as_str() {
            "gray" | "grey" => ColorInterp::Gray,
            "palette" => ColorInterp::Palette,
            "red" => ColorInterp::Red,
            "green" => ColorInterp::Green,
            "blue" => ColorInterp::Blue,
            "alpha" => ColorInterp::Alpha,
            "cyan" => ColorInterp::Cyan,
            "magenta" => ColorInterp::Magenta,
            "yellow" => ColorInterp::Yellow,
            "black" => ColorInterp::Black,
            "ycbcr_y" => ColorInterp::YCbCrY,
            "ycbcr_cb" => ColorInterp::YCbCrCb,
            "ycbcr_cr" => ColorInterp::YCbCrCr,
            _ => ColorInterp::Undefined,
        }
    }
}
