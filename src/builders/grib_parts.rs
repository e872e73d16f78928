//! What the readers of GRIB1 and GRIB2 messages ([`super::grib1`],
//! [`super::grib2`]) share with [`super::grib`], which walks a file's
//! messages and assembles their bands: a message's bytes, read as needed,
//! and the band a field makes.

use std::borrow::Cow;

use crate::base::error::Result;
use crate::conventions::geozarr::Georef;
use crate::formats::grib2::units::Conversion;
use crate::formats::grib_grid::Shape;
use crate::io::source::Source;

/// Bytes read at the start of each message: its sections up to the data
/// usually fit; a section past them is read on its own.
const HEAD_BYTES: u64 = 4096;

/// One message of a GRIB file: where it starts and its first bytes.
pub(crate) struct MessageBytes<'a> {
    /// The file.
    pub(crate) src: &'a Source,
    /// Where the message starts in it.
    pub(crate) offset: u64,
    /// The message's first bytes (up to [`HEAD_BYTES`]).
    pub(crate) head: Vec<u8>,
}

impl<'a> MessageBytes<'a> {
    /// The message of `src` at `offset`, its first bytes read.
    pub(crate) fn at(src: &'a Source, offset: u64) -> Result<MessageBytes<'a>> {
        let head = src.read(offset, HEAD_BYTES.min(src.len() - offset))?;
        Ok(MessageBytes { src, offset, head })
    }

    /// Bytes from the message's start to the end of the file.
    pub(crate) fn room(&self) -> u64 {
        self.src.len() - self.offset
    }

    /// `len` bytes at `at` in the message, from its first bytes when
    /// they hold them.
    pub(crate) fn read(&self, at: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        match self.head.get(at as usize..(at + len) as usize) {
            Some(bytes) => Ok(Cow::Borrowed(bytes)),
            None => self.src.read(self.offset + at, len).map(Cow::Owned),
        }
    }
}

/// One band: a field of a message, as its edition's reader describes it.
#[derive(Debug)]
pub(crate) struct Band {
    /// The byte ranges `(offset, length)` of its chunk in the file: its
    /// whole message, or the sections of a field of a GRIB2 message
    /// holding several.
    pub(crate) ranges: Vec<(u64, u64)>,
    /// The message's GRIB edition.
    pub(crate) edition: u8,
    /// The grid's size and scanning mode.
    pub(crate) shape: Shape,
    /// The bytes defining the grid and earth: bands with equal ones share
    /// a georeferencing.
    pub(crate) grid_key: Vec<u8>,
    /// The grid's georeferencing.
    pub(crate) georef: Georef,
    /// The stored column GDAL serves first (a global grid split at the
    /// antimeridian).
    pub(crate) antimeridian_column: Option<u64>,
    /// The value of missing points, when the message has any.
    pub(crate) missing: Option<f64>,
    /// The conversion GDAL applies to its values.
    pub(crate) conversion: Conversion,
    /// Band metadata items.
    pub(crate) items: Vec<(&'static str, String)>,
    /// The band description.
    pub(crate) description: String,
    /// Valid time, seconds since 1970.
    pub(crate) valid_time: i64,
}

impl Band {
    /// The georeferencing of `previous` when its grid is `grid_key`, else
    /// `compute`'s.
    pub(crate) fn georef_after<E>(
        previous: Option<&Band>,
        grid_key: &[u8],
        compute: impl FnOnce() -> std::result::Result<(Georef, Option<u64>), E>,
    ) -> std::result::Result<(Georef, Option<u64>), E> {
        match previous {
            Some(p) if p.grid_key == grid_key => Ok((p.georef.clone(), p.antimeridian_column)),
            _ => compute(),
        }
    }
}
