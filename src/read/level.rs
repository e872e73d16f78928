//! A level as the raster view serves it: its array, size, bands and mask,
//! how its plane maps to the stored one, and, for a mosaic, its scenes.

use serde_json::{Map, Value};

use crate::read::assemble::Nodata;
use crate::read::axes::AxisMap;
use crate::read::mosaic::grid::Placement;

/// One resolution level: an array whose last two axes are (y, x).
#[derive(Debug)]
pub struct Level {
    /// Index into [`Index::arrays`].
    pub array: usize,
    /// Width in pixels.
    pub width: u64,
    /// Height in pixels.
    pub height: u64,
    /// Number of bands (product of the leading axes).
    pub bands: u64,
    /// The level's mask: index into [`Index::arrays`] of a sibling array
    /// `mask` with one band of the same size (as `chunkref index` writes
    /// for TIFF mask IFDs). Non-zero is valid, zero is not.
    pub mask: Option<usize>,
    /// Asset name in the multiscale group, if the level comes from one.
    pub asset: Option<String>,
    /// The level's `multiscales.layout` entry, if any.
    pub entry: Option<Map<String, Value>>,
    /// The scenes of a mosaic level (then `array` is the first scene's).
    pub mosaic: Option<Scenes>,
    /// How the served plane maps to the stored one (rows reversed,
    /// columns rolled), as the level's georeferencing decided.
    pub axes: AxisMap,
}

/// One scene of a mosaic level as the reader sees it.
#[derive(Debug)]
pub struct Scene {
    /// Index into [`Index::arrays`] of the scene's array at this level.
    pub array: usize,
    /// Where it lies in the level.
    pub place: Placement,
    /// Its nodata, left out when pasting (what lies beneath shows through).
    pub nodata: Option<Nodata>,
}

/// The scenes of one mosaic level, in paste order.
#[derive(Debug)]
pub struct Scenes {
    /// Level width in pixels.
    pub width: u64,
    /// Level height in pixels.
    pub height: u64,
    /// The scenes.
    pub scenes: Vec<Scene>,
    /// The native-order element gaps read as: the first scene's nodata, else 0.
    pub gap: Vec<u8>,
}
