//! `grib2` (chunkref's own codec, written by `chunkref index` on GRIB
//! files; also named `grib1`, the name it writes for files of GRIB1
//! messages only): one whole GRIB2 message, section 0 (`GRIB`) to section
//! 8 (`7777`), holding one field; or, for a field of a message holding
//! several, its sections 3 to 7 back to back (the section 3 in force, the
//! field's sections 4 and 5, the section 6 whose bitmap applies, its
//! section 7), told from a message by not starting with `GRIB`; or one
//! whole GRIB1 message (edition octet 1), grid point values in simple
//! packing unpacked in double precision as degrib unpacks them
//! ([`edition1`]).
//!
//! Output: the field as the array's float type (`<f4` as chunkref writes
//! it, or 8-byte floats), row-major, the first row the north edge and
//! columns west to east whatever the message's scanning mode, as GDAL's
//! GRIB driver shows it. Points a bitmap (section 6) leaves out are
//! `fill_value` (the codec's configuration, the array's `fill_value`;
//! NaN when absent; a list gives one per band, as `unit_conversion`);
//! complex packing's missing values are those its template declares, as
//! in GDAL.
//!
//! `unit_conversion` (optional) converts the values as GDAL's GRIB driver
//! does by default (`GRIB_NORMALIZE_UNITS=YES`), in double precision after
//! unpacking: `"kelvin_to_celsius"` (value - 273.15) or `"exp10"` (10 to
//! the power of the value, for fields stored as logarithms); a list gives
//! one conversion (or `null`) per band, the chunk's first grid coordinate
//! (an array of messages of several parameters). As in GDAL, points a
//! bitmap leaves out and values equal to a declared missing value are left
//! as they are. Converted values need 8-byte floats.
//!
//! The grid must have the chunk's size (the last two chunk dimensions
//! rows x columns, the others 1), checked before anything is unpacked;
//! with `other_grids: "top_left"` a field of another size is placed at the
//! chunk's top left (north-up), cut to the chunk and the rest 0, as GDAL's
//! GRIB driver reads a band whose grid is not the first message's.
//!
//! `grib` (kerchunk's `GRIBCodec`, written by `kerchunk.grib2.scan_grib`):
//! the same message decoded as kerchunk decodes it with eccodes (config
//! `var`, the variable, and `dtype`): the values in the message's stored
//! order (kerchunk's latitude and longitude coordinates follow that
//! order), points a bitmap leaves out and values equal to eccodes'
//! `missingValue` (9999) NaN, no unit conversion. `var` `latitude` or
//! `longitude` (coordinates eccodes computes, which kerchunk inlines) is
//! refused, and so are GRIB1 messages (eccodes unpacks them with other
//! arithmetic than degrib's).

pub(crate) mod edition1;
pub(crate) mod unpack;

use unpack::declared_missing_values;

use bytes::Bytes;

use super::{Codec, DecodeContext};
use crate::base::buffers::output_buffer;
use crate::base::dtype::{ByteOrder, ScalarKind};
use crate::base::error::{Error, Result};
use crate::codec::config::Config;
use crate::formats::grib1::sections::is_edition_1;
use crate::formats::grib1::Refusal;
use crate::formats::grib2::grid::Grid;
use crate::formats::grib2::sections::{be_u64, indicator, Layout};
use crate::formats::grib2::units::Conversion;
use crate::formats::grib_grid::Shape;

/// The first bytes of a whole message.
const GRIB: &[u8] = b"GRIB";

/// The codec's name.
pub(crate) const NAME: &str = "grib2";

/// The name `chunkref index` gives the codec of a file of GRIB1 messages.
pub(crate) const GRIB1_NAME: &str = "grib1";

/// Every name the codec answers to.
pub(super) const NAMES: &[&str] = &[NAME];

/// Every name the codec answers to as written for GRIB1 files.
pub(super) const GRIB1_NAMES: &[&str] = &[GRIB1_NAME];

/// kerchunk's GRIB codec.
pub(crate) const KERCHUNK_NAME: &str = "grib";

/// Every name kerchunk's GRIB codec answers to.
pub(super) const KERCHUNK_NAMES: &[&str] = &[KERCHUNK_NAME];

/// eccodes' `missingValue`, which kerchunk's codec turns into NaN.
const ECCODES_MISSING: f32 = 9999.0;

/// The configuration key of the unit conversion.
pub(crate) const CONVERSION_KEY: &str = "unit_conversion";

/// The configuration key saying how fields of another grid size fit the
/// chunk, and its one value.
pub(crate) const OTHER_GRIDS_KEY: &str = "other_grids";
const TOP_LEFT: &str = "top_left";

/// Most points of a field placed into a chunk of another size (1 GiB of
/// doubles).
const MAX_OTHER_FIELD_POINTS: usize = 1 << 27;

/// Decodes one GRIB2 message.
#[derive(Debug)]
struct Grib2 {
    /// The value of points a bitmap leaves out: one for every band, or
    /// one per band.
    fills: Vec<f64>,
    /// The unit conversion of the values: one for every band, or one per
    /// band (by the chunk's first grid coordinate).
    conversions: Vec<Conversion>,
    /// kerchunk's codec: values in stored order, eccodes' missing value NaN.
    kerchunk: bool,
    /// The name the codec was built by: [`NAME`], [`GRIB1_NAME`] or
    /// [`KERCHUNK_NAME`].
    name: &'static str,
    /// A field of another size than the chunk is placed at its top left
    /// (else it is an error).
    top_left: bool,
}

impl Codec for Grib2 {
    fn name(&self) -> &str {
        self.name
    }

    fn compression(&self) -> String {
        match self.name {
            GRIB1_NAME => "GRIB1".into(),
            _ => "GRIB2".into(),
        }
    }

    fn decode(&self, input: Bytes, ctx: &DecodeContext<'_>) -> Result<Bytes> {
        let dtype = ctx.dtype;
        if dtype.kind != ScalarKind::Float {
            return Err(Error::decode(
                NAME,
                format!(
                    "GRIB2 fields decode to floats, but the array's data type is {:?}",
                    dtype.kind
                ),
            ));
        }
        let plane = chunk_plane(ctx)?;
        if plane.0.saturating_mul(plane.1).saturating_mul(dtype.size) != ctx.decoded_len {
            return Err(Error::decode(
                NAME,
                "the chunk is not one field of the array's data type",
            ));
        }
        let conversion = Grib2::of_band(&self.conversions, ctx, CONVERSION_KEY)?;
        let fill = Grib2::of_band(&self.fills, ctx, "fill_value")?;
        let values = self.field(&input, plane, conversion, fill)?;
        let mut out = output_buffer(NAME, ctx.decoded_len)?;
        let big = dtype.order == ByteOrder::Big;
        for v in values {
            match (dtype.size, big) {
                (4, false) => out.extend_from_slice(&(v as f32).to_le_bytes()),
                (4, true) => out.extend_from_slice(&(v as f32).to_be_bytes()),
                (_, false) => out.extend_from_slice(&v.to_le_bytes()),
                (_, true) => out.extend_from_slice(&v.to_be_bytes()),
            }
        }
        Ok(Bytes::from(out))
    }
}

impl Grib2 {
    /// The entry of `list` (one for every band, or one per band: by the
    /// chunk's first grid coordinate) for the chunk `ctx` decodes.
    fn of_band<T: Copy>(list: &[T], ctx: &DecodeContext<'_>, key: &str) -> Result<T> {
        if let [one] = list {
            return Ok(*one);
        }
        let band = ctx.chunk_index.first().copied().unwrap_or_default();
        usize::try_from(band)
            .ok()
            .and_then(|b| list.get(b))
            .copied()
            .ok_or_else(|| {
                Error::decode(
                    NAME,
                    format!(
                        "'{key}' lists {} bands, but the chunk is band {band}",
                        list.len()
                    ),
                )
            })
    }

    /// The field of `message`, north-up (kerchunk's codec: in stored
    /// order), for a chunk of `(rows, cols)`, converted by `conversion`,
    /// points a bitmap leaves out `fill`.
    fn field(
        &self,
        message: &[u8],
        plane: (usize, usize),
        conversion: Conversion,
        fill: f64,
    ) -> Result<Vec<f64>> {
        let stored = if is_edition_1(message) {
            if self.kerchunk {
                return Err(Error::decode(
                    KERCHUNK_NAME,
                    "GRIB1 messages are not decoded as kerchunk's codec decodes them (eccodes \
                     unpacks GRIB1 with other arithmetic than GDAL's degrib); index the GRIB \
                     file with `chunkref index`",
                ));
            }
            let fits = |shape: &Shape| self.check_fits(shape, plane);
            Grib2::edition_1(message, fits, conversion)?
        } else {
            self.edition_2(message, plane, conversion)?
        };
        Ok(self.place(stored, plane, fill))
    }

    /// A GRIB1 message's present values, unpacked and converted, once
    /// `fits` accepts its grid.
    fn edition_1(
        message: &[u8],
        fits: impl Fn(&Shape) -> Result<()>,
        conversion: Conversion,
    ) -> Result<Stored> {
        let bad = |refusal: Refusal| Error::decode(NAME, format!("GRIB1: {}", refusal.text()));
        let m = edition1::Message::parse(message).map_err(bad)?;
        fits(&m.grid.shape)?;
        let values = m.values(conversion).map_err(bad)?;
        Ok(Stored {
            shape: m.grid.shape,
            present: m.present,
            values,
        })
    }

    /// A GRIB2 field's present values, unpacked and converted (values
    /// equal to a declared missing value as they are; kerchunk's codec:
    /// those and eccodes' missing value NaN, unconverted).
    fn edition_2(
        &self,
        message: &[u8],
        plane: (usize, usize),
        conversion: Conversion,
    ) -> Result<Stored> {
        let bad = |reason: String| Error::decode(NAME, reason);
        let read = |at: u64, len: u64| {
            message
                .get(at as usize..(at + len) as usize)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| bad(format!("bytes {at}..{} are past the chunk end", at + len)))
        };
        let layout = if message.starts_with(GRIB) {
            let total = indicator(message).map_err(bad)?.total_len;
            if total != message.len() as u64 {
                return Err(bad(format!(
                    "the message declares {total} bytes but the chunk holds {}",
                    message.len()
                )));
            }
            match Layout::walk(total, read, bad)?[..] {
                [one] => one,
                ref fields => {
                    return Err(bad(format!(
                        "the message holds {} fields: a chunk is one field",
                        fields.len()
                    )))
                }
            }
        } else {
            Layout::walk_field(message.len() as u64, read, bad)?
        };
        let section = |n: usize| {
            let (at, len) = layout.span(n).unwrap_or_default();
            &message[at as usize..(at + len) as usize]
        };
        let grid = Grid::parse(section(3)).map_err(bad)?;
        let shape = grid.shape();
        self.check_fits(&shape, plane)?;
        let present = bitmap(section(6), grid.points()).map_err(bad)?;
        let s5 = section(5);
        let declared = be_u64(s5.get(5..9).unwrap_or_default());
        let encoded = present
            .as_ref()
            .map_or(grid.points(), |p| p.iter().filter(|&&b| b).count());
        if declared != encoded as u64 {
            return Err(bad(format!(
                "section 5 declares {declared} values where the grid and bitmap have {encoded}"
            )));
        }
        let missing = declared_missing_values(s5);
        let values = unpack::unpack(s5, section(7), encoded)
            .map_err(bad)?
            .into_iter()
            .map(|v| match v {
                v if self.kerchunk && (missing.contains(&v) || v == ECCODES_MISSING) => f64::NAN,
                v if missing.contains(&v) || self.kerchunk => f64::from(v),
                v => conversion.apply(f64::from(v)),
            })
            .collect();
        Ok(Stored {
            shape,
            present,
            values,
        })
    }

    /// Refuses a grid of `shape` that does not fit a chunk of `(rows,
    /// cols)`: of another size, unless `other_grids` places it at the top
    /// left.
    fn check_fits(&self, shape: &Shape, (rows, cols): (usize, usize)) -> Result<()> {
        let (nj, ni) = (shape.nj as usize, shape.ni as usize);
        let fits = self.top_left && ni > 0 && shape.points() <= MAX_OTHER_FIELD_POINTS;
        if (nj, ni) != (rows, cols) && !fits {
            return Err(Error::decode(
                NAME,
                format!("the grid is {nj} x {ni} points, the chunk {rows} x {cols}"),
            ));
        }
        Ok(())
    }

    /// The grid of `stored` north-up (kerchunk's codec: in stored order),
    /// points a bitmap leaves out `fill`, placed at the top left of a
    /// chunk of `(rows, cols)` when its size differs.
    fn place(&self, stored: Stored, (rows, cols): (usize, usize), fill: f64) -> Vec<f64> {
        let Stored {
            shape,
            present,
            values,
        } = stored;
        let (nj, ni) = (shape.nj as usize, shape.ni as usize);
        let mut values = values.into_iter();
        let mut out = vec![fill; shape.points()];
        for k in 0..shape.points() {
            if present.as_ref().is_none_or(|p| p[k]) {
                let at = if self.kerchunk {
                    k
                } else {
                    shape.north_up_index(k)
                };
                out[at] = values.next().unwrap_or(fill);
            }
        }
        if (nj, ni) == (rows, cols) {
            return out;
        }
        let mut fitted = vec![0.0; rows * cols];
        let width = ni.min(cols);
        for (row, field) in fitted.chunks_exact_mut(cols).zip(out.chunks_exact(ni)) {
            row[..width].copy_from_slice(&field[..width]);
        }
        fitted
    }
}

/// A message's grid and present values, in stored order.
struct Stored {
    shape: Shape,
    /// The points the bitmap marks present (`None`: all).
    present: Option<Vec<bool>>,
    /// The present points' values, unpacked and converted.
    values: Vec<f64>,
}

/// The points section 6 marks present (`None`: all of them).
fn bitmap(s6: &[u8], points: usize) -> std::result::Result<Option<Vec<bool>>, String> {
    match s6.get(5) {
        Some(255) => Ok(None),
        Some(0) => {
            let bits = &s6[6..];
            if bits.len() < points.div_ceil(8) {
                return Err(format!(
                    "the bitmap holds {} bytes, {points} points need {}",
                    bits.len(),
                    points.div_ceil(8)
                ));
            }
            Ok(Some(
                (0..points)
                    .map(|k| bits[k / 8] >> (7 - k % 8) & 1 == 1)
                    .collect(),
            ))
        }
        other => Err(format!(
            "bitmap indicator {} (a predefined or previously defined bitmap) is not supported",
            other.copied().unwrap_or_default()
        )),
    }
}

/// Rows and columns of a chunk: its last two dimensions, the others 1.
fn chunk_plane(ctx: &DecodeContext<'_>) -> Result<(usize, usize)> {
    match ctx.chunk_shape {
        [lead @ .., rows, cols] if lead.iter().all(|&d| d == 1) => {
            Ok((*rows as usize, *cols as usize))
        }
        shape => Err(Error::decode(
            NAME,
            format!("a message is one field of rows x columns, but the chunk shape is {shape:?}"),
        )),
    }
}

/// Builds the `grib2` codec; `fill_value` (a number, or `"NaN"`; or a
/// list of one per band) is the value of points a bitmap leaves out,
/// `unit_conversion` the conversion of the values.
pub(super) fn from_config(config: &Config) -> Result<Box<dyn Codec>> {
    configured(config, NAME)
}

/// Builds the codec as `grib1` (the same decoder, named for GRIB1 files).
pub(super) fn grib1_from_config(config: &Config) -> Result<Box<dyn Codec>> {
    configured(config, GRIB1_NAME)
}

/// The codec of `config`, named `name`.
fn configured(config: &Config, name: &'static str) -> Result<Box<dyn Codec>> {
    let fills = match config.get("fill_value") {
        Some(serde_json::Value::Array(list)) if !list.is_empty() => {
            list.iter().map(fill_of).collect::<Result<Vec<_>>>()?
        }
        one => vec![fill_of(one.unwrap_or(&serde_json::Value::Null))?],
    };
    let conversions = match config.get(CONVERSION_KEY) {
        Some(serde_json::Value::Array(list)) if !list.is_empty() => {
            list.iter().map(conversion_of).collect::<Result<Vec<_>>>()?
        }
        one => vec![conversion_of(one.unwrap_or(&serde_json::Value::Null))?],
    };
    let top_left = match config.get(OTHER_GRIDS_KEY) {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::String(s)) if s == TOP_LEFT => true,
        Some(other) => {
            return Err(Error::codec_config(
                name,
                format!("'{OTHER_GRIDS_KEY}' should be \"{TOP_LEFT}\", found {other}"),
            ))
        }
    };
    Ok(Box::new(Grib2 {
        fills,
        conversions,
        kerchunk: false,
        name,
        top_left,
    }))
}

/// One value of `fill_value`: a number, `"NaN"` or `null` (NaN).
fn fill_of(value: &serde_json::Value) -> Result<f64> {
    match value {
        serde_json::Value::Null => Ok(f64::NAN),
        serde_json::Value::Number(n) => Ok(n.as_f64().unwrap_or(f64::NAN)),
        serde_json::Value::String(s) if s == "NaN" => Ok(f64::NAN),
        other => Err(Error::codec_config(
            NAME,
            format!(
                "'fill_value' should be a number, \"NaN\", null or a list of them (one per \
                 band), found {other}"
            ),
        )),
    }
}

/// One conversion of `unit_conversion`: a name, or `null` for none.
fn conversion_of(value: &serde_json::Value) -> Result<Conversion> {
    match value {
        serde_json::Value::Null => Ok(Conversion::None),
        serde_json::Value::String(s) if s == "kelvin_to_celsius" => Ok(Conversion::KelvinToCelsius),
        serde_json::Value::String(s) if s == "exp10" => Ok(Conversion::Exp10),
        other => Err(Error::codec_config(
            NAME,
            format!(
                "'{CONVERSION_KEY}' should be \"kelvin_to_celsius\", \"exp10\", null or a list of \
                 them (one per band), found {other}"
            ),
        )),
    }
}

/// Builds kerchunk's `grib` codec: `var` names the variable (values; the
/// eccodes-computed `latitude` / `longitude` are refused), `dtype` the
/// output type (the array's is used).
pub(super) fn kerchunk_from_config(config: &Config) -> Result<Box<dyn Codec>> {
    match config.get("var").and_then(serde_json::Value::as_str) {
        Some("latitude" | "longitude") => {
            return Err(Error::codec_config(
                KERCHUNK_NAME,
                "'var' latitude / longitude asks for coordinates eccodes computes from the grid; \
                 only field values are decoded (kerchunk inlines coordinates)",
            ))
        }
        Some(_) => {}
        None => {
            return Err(Error::codec_config(
                KERCHUNK_NAME,
                "'var' (the variable name) is missing",
            ))
        }
    }
    Ok(Box::new(Grib2 {
        fills: vec![f64::NAN],
        conversions: vec![Conversion::None],
        kerchunk: true,
        name: KERCHUNK_NAME,
        top_left: false,
    }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::unpack::tests::{complex_extra, section5};
    use super::*;
    use crate::base::dtype::DataType;
    use crate::codec::testing::config;
    use crate::formats::grib2::grid::tests::latlon_section;
    use crate::formats::grib2::product::tests::{identification, product_section};

    /// A message of a 3 x 2 grid, scanning mode `scan`, simple packing of
    /// 8-bit values `values` (the present ones), and `bitmap` (section 6).
    pub(crate) fn message(scan: u8, values: &[u8], bitmap: &[u8]) -> Vec<u8> {
        let s5 = section5(0, values.len() as u32, 0.0, 0, 0, 8, &[]);
        message_with(scan, s5, values, bitmap)
    }

    /// A message of a 3 x 2 grid with section 5 `s5`, section 7 data
    /// `values` and section 6 `bitmap`.
    fn message_with(scan: u8, s5: Vec<u8>, values: &[u8], bitmap: &[u8]) -> Vec<u8> {
        let mut s6 = vec![0, 0, 0, 0, 6];
        s6.extend_from_slice(bitmap);
        s6[3] = s6.len() as u8;
        let mut s7 = vec![0, 0, 0, 0, 7];
        s7.extend_from_slice(values);
        s7[3] = s7.len() as u8;
        let body = [
            identification(),
            latlon_section(
                3,
                2,
                (1_000_000, 0),
                (0, 2_000_000),
                (1_000_000, 1_000_000),
                scan,
            ),
            product_section(6),
            s5,
            s6,
            s7,
        ]
        .concat();
        let mut m = b"GRIB\0\0\0\x02".to_vec();
        m.extend_from_slice(&(body.len() as u64 + 20).to_be_bytes());
        m.extend_from_slice(&body);
        m.extend_from_slice(b"7777");
        m
    }

    fn decode(message: &[u8], json: &str, shape: &[u64], dtype: &str) -> Result<Vec<f64>> {
        let dtype = DataType::from_v2(dtype).unwrap();
        let ctx = DecodeContext {
            chunk_shape: shape,
            chunk_index: &[0, 0, 0],
            dtype,
            decoded_len: shape.iter().product::<u64>() as usize * dtype.size,
            needed: shape.iter().product::<u64>() as usize * dtype.size,
            first_needed: 0,
        };
        let out = from_config(&config(json))?.decode(Bytes::copy_from_slice(message), &ctx)?;
        Ok(match dtype.size {
            4 => out
                .chunks_exact(4)
                .map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())))
                .collect(),
            _ => out
                .chunks_exact(8)
                .map(|b| f64::from_be_bytes(b.try_into().unwrap()))
                .collect(),
        })
    }

    #[test]
    fn decodes_north_up_with_bitmap_fill() {
        // Stored south row first (+j): 0 1 2 / 3 4 5; north-up: 3 4 5 / 0 1 2.
        let m = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        assert_eq!(
            decode(&m, "{}", &[1, 2, 3], "<f4").unwrap(),
            [3.0, 4.0, 5.0, 0.0, 1.0, 2.0]
        );
        assert_eq!(
            decode(&m, "{}", &[1, 2, 3], ">f8").unwrap(),
            [3.0, 4.0, 5.0, 0.0, 1.0, 2.0]
        );
        // Bitmap 101101: points 1 and 4 missing.
        let m = message(0x00, &[7, 8, 9, 10], &[0, 0b1011_0100]);
        assert_eq!(
            decode(&m, r#"{"fill_value": 9999}"#, &[1, 2, 3], "<f4").unwrap(),
            [7.0, 9999.0, 8.0, 9.0, 9999.0, 10.0]
        );
        assert!(decode(&m, "{}", &[1, 2, 3], "<f4").unwrap()[1].is_nan());
        // One fill per band: the chunk is band 0.
        assert_eq!(
            decode(&m, r#"{"fill_value": [5, 9999]}"#, &[1, 2, 3], "<f4").unwrap(),
            [7.0, 5.0, 8.0, 9.0, 5.0, 10.0]
        );
    }

    #[test]
    fn fields_of_other_grids_sit_at_the_top_left() {
        // North-up 3 4 5 / 0 1 2, into a 3 x 2 chunk: cut to 2 columns,
        // a third row of zeros; into 1 x 4: one row, one zero column.
        let m = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        let top_left = r#"{"other_grids": "top_left"}"#;
        assert_eq!(
            decode(&m, top_left, &[1, 3, 2], ">f8").unwrap(),
            [3.0, 4.0, 0.0, 1.0, 0.0, 0.0]
        );
        assert_eq!(
            decode(&m, top_left, &[1, 1, 4], ">f8").unwrap(),
            [3.0, 4.0, 5.0, 0.0]
        );
        let refused = decode(&m, "{}", &[1, 3, 2], ">f8").unwrap_err().to_string();
        assert!(refused.contains("the grid is 2 x 3 points"), "{refused}");
        assert!(from_config(&config(r#"{"other_grids": "stretch"}"#)).is_err());
    }

    #[test]
    fn kerchunk_codec_keeps_the_stored_order_and_nans_missing_points() {
        let ctx = DecodeContext {
            chunk_shape: &[2, 3],
            chunk_index: &[0, 0],
            dtype: DataType::from_v2("<f8").unwrap(),
            decoded_len: 48,
            needed: 48,
            first_needed: 0,
        };
        let codec = kerchunk_from_config(&config(r#"{"var": "u", "dtype": "float64"}"#)).unwrap();
        assert_eq!(codec.name(), "grib");
        let values = |m: Vec<u8>| -> Vec<f64> {
            let out = codec.decode(Bytes::from(m), &ctx).unwrap();
            out.chunks_exact(8)
                .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
                .collect()
        };
        // Stored south row first (+j): eccodes keeps that order.
        let got = values(message(0x40, &[0, 1, 2, 3, 4, 5], &[255]));
        assert_eq!(got, [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let got = values(message(0x00, &[7, 8, 9, 10], &[0, 0b1011_0100]));
        assert!(got[1].is_nan() && got[4].is_nan() && got[0] == 7.0);
        let grib1 =
            super::edition1::tests::message(0, (super::edition1::tests::ONE, 0, 0), &[0; 6], None);
        let e = codec
            .decode(Bytes::from(grib1), &ctx)
            .unwrap_err()
            .to_string();
        assert!(e.contains("GRIB1 messages are not decoded"), "{e}");
        for bad in [r#"{"var": "latitude"}"#, "{}"] {
            assert!(kerchunk_from_config(&config(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn converts_units_but_not_left_out_points() {
        let m = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        let kelvin = r#"{"unit_conversion": "kelvin_to_celsius"}"#;
        let want: Vec<f64> = [3.0, 4.0, 5.0, 0.0, 1.0, 2.0]
            .iter()
            .map(|v| v - 273.15)
            .collect();
        assert_eq!(decode(&m, kelvin, &[1, 2, 3], ">f8").unwrap(), want);
        let m = message(0x00, &[7, 8, 9, 10], &[0, 0b1011_0100]);
        let exp10 = r#"{"fill_value": 9999, "unit_conversion": "exp10"}"#;
        assert_eq!(
            decode(&m, exp10, &[1, 2, 3], ">f8").unwrap(),
            [1e7, 9999.0, 1e8, 1e9, 9999.0, 1e10]
        );
        assert!(from_config(&config(r#"{"unit_conversion": "F"}"#)).is_err());
    }

    #[test]
    fn converts_each_band_as_its_list_entry_says() {
        let m = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        let codec = from_config(&config(
            r#"{"unit_conversion": [null, "kelvin_to_celsius"]}"#,
        ))
        .unwrap();
        let band = |b: u64| {
            let ctx = DecodeContext {
                chunk_shape: &[1, 2, 3],
                chunk_index: &[b, 0, 0],
                dtype: DataType::from_v2("<f8").unwrap(),
                decoded_len: 48,
                needed: 48,
                first_needed: 0,
            };
            codec
                .decode(Bytes::copy_from_slice(&m), &ctx)
                .map(|out| f64::from_le_bytes(out[..8].try_into().unwrap()))
        };
        assert_eq!(band(0).unwrap(), 3.0);
        assert_eq!(band(1).unwrap(), 3.0 - 273.15);
        let e = band(2).unwrap_err().to_string();
        assert!(e.contains("lists 2 bands") && e.contains("band 2"), "{e}");
        assert!(from_config(&config(r#"{"unit_conversion": [1]}"#)).is_err());
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let m = message(0x40, &[0, 1, 2, 3, 4, 5], &[255]);
        let e = decode(&m, "{}", &[1, 3, 2], "<f4").unwrap_err().to_string();
        assert!(e.contains("2 x 3 points, the chunk 3 x 2"), "{e}");
        assert!(decode(&m, "{}", &[2, 2, 3], "<f4").is_err());
        assert!(decode(&m, "{}", &[1, 2, 3], "<i4").is_err());
        let e = decode(&m[..m.len() - 1], "{}", &[1, 2, 3], "<f4")
            .unwrap_err()
            .to_string();
        assert!(e.contains("declares"), "{e}");
        let short = message(0x40, &[0, 1, 2, 3, 4], &[255]);
        assert!(decode(&short, "{}", &[1, 2, 3], "<f4").is_err());
        assert!(from_config(&config(r#"{"fill_value": [[1]]}"#)).is_err());
    }

    #[test]
    fn survives_mutations() {
        // Second-order differences over six values: 10, 12, then 0 0 1 2 1 1
        // (placeholders first) in one group 2 bits wide.
        let s5 = section5(
            3,
            6,
            0.0,
            0,
            0,
            8,
            &complex_extra(0, 0.0, 1, (0, 6), Some((2, 1))),
        );
        let complex = message_with(
            0x40,
            s5,
            &[10, 12, 0x81, 0, 2, 0, 0b0000_0110, 0b0101_0000],
            &[255],
        );
        let shape = [1u64, 2, 3];
        let ctx = DecodeContext {
            chunk_shape: &shape,
            dtype: DataType::from_v2("<f4").unwrap(),
            ..crate::codec::testing::ctx(24)
        };
        let codec = from_config(&config("{}")).unwrap();
        let out = codec
            .decode(Bytes::copy_from_slice(&complex), &ctx)
            .unwrap();
        let values: Vec<f32> = out
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
            .collect();
        // Stored 10 12 14 17 20 23 (south row first); north-up.
        assert_eq!(values, [17.0, 20.0, 23.0, 10.0, 12.0, 14.0]);
        mutate(&complex, &ctx);
        // The same field as a field's chunk of a multi-field message:
        // sections 3 to 7 alone (section 1 is 21 bytes).
        let fields = &complex[16 + 21..complex.len() - 4];
        let alone = codec.decode(Bytes::copy_from_slice(fields), &ctx).unwrap();
        assert_eq!(alone, out);
        mutate(fields, &ctx);
        mutate(&message(0x40, &[0, 1, 2, 3, 4, 5], &[0, 0xff]), &ctx);
    }

    /// Decodes many corrupted variants of `m` (changed bytes, cut tails):
    /// any result but a panic.
    fn mutate(m: &[u8], ctx: &DecodeContext<'_>) {
        let codec = from_config(&config("{}")).unwrap();
        let mut state = 7u64;
        for round in 0..3000 {
            let mut bytes = m.to_vec();
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let at = (state >> 33) as usize % bytes.len();
            bytes[at] = (state >> 20) as u8;
            if round % 5 == 0 {
                bytes.truncate(at);
            }
            let _ = codec.decode(Bytes::from(bytes), ctx);
        }
    }

    #[test]
    fn decodes_a_bitmap_message_whole() {
        let m = message(0x40, &[0, 1, 2, 3, 4, 5], &[0, 0xff]);
        let shape = [1u64, 2, 3];
        let codec = from_config(&config("{}")).unwrap();
        let ctx = DecodeContext {
            chunk_shape: &shape,
            dtype: DataType::from_v2("<f4").unwrap(),
            ..crate::codec::testing::ctx(24)
        };
        assert_eq!(
            codec
                .decode(Bytes::copy_from_slice(&m), &ctx)
                .unwrap()
                .len(),
            24
        );
    }

    #[test]
    fn decodes_grib1_messages_north_up() {
        use super::edition1::tests::{message as grib1, ONE};
        // Stored south row first (+j): 1 2 3 / 4 5 6; north-up 4 5 6 / 1 2 3.
        let m = grib1(0x40, (ONE, 0, 0), &[0, 1, 2, 3, 4, 5], None);
        assert_eq!(
            decode(&m, "{}", &[1, 2, 3], ">f8").unwrap(),
            [4.0, 5.0, 6.0, 1.0, 2.0, 3.0]
        );
        let m = grib1(0x00, (ONE, 0, 0), &[7, 8, 9, 10], Some(0b1011_0100));
        let json = r#"{"fill_value": 9999, "unit_conversion": "kelvin_to_celsius"}"#;
        let c = |v: f64| v - 273.15;
        assert_eq!(
            decode(&m, json, &[1, 2, 3], ">f8").unwrap(),
            [c(8.0), 9999.0, c(9.0), c(10.0), 9999.0, c(11.0)]
        );
        let e = decode(&m, "{}", &[1, 3, 2], ">f8").unwrap_err().to_string();
        assert!(e.contains("the grid is 2 x 3 points"), "{e}");
        let e = decode(&m[..m.len() - 1], "{}", &[1, 2, 3], ">f8")
            .unwrap_err()
            .to_string();
        assert!(e.contains("GRIB1"), "{e}");
        let ctx = DecodeContext {
            chunk_shape: &[1, 2, 3],
            dtype: DataType::from_v2("<f8").unwrap(),
            ..crate::codec::testing::ctx(48)
        };
        mutate(&m, &ctx);
        let grib1 = crate::codec::registry::build(GRIB1_NAME, &config("{}")).unwrap();
        assert_eq!(
            (grib1.name(), grib1.compression()),
            ("grib1", "GRIB1".into())
        );
    }
}
