//! TIFF tag numbers and GeoKey ids used by the index builder.

/// NewSubfileType.
pub const NEW_SUBFILE_TYPE: u16 = 254;
/// ImageWidth.
pub const IMAGE_WIDTH: u16 = 256;
/// ImageLength.
pub const IMAGE_LENGTH: u16 = 257;
/// BitsPerSample.
pub const BITS_PER_SAMPLE: u16 = 258;
/// Compression.
pub const COMPRESSION: u16 = 259;
/// PhotometricInterpretation.
pub const PHOTOMETRIC: u16 = 262;
/// FillOrder (2: bits least-significant first).
pub const FILL_ORDER: u16 = 266;
/// StripOffsets.
pub const STRIP_OFFSETS: u16 = 273;
/// SamplesPerPixel.
pub const SAMPLES_PER_PIXEL: u16 = 277;
/// RowsPerStrip.
pub const ROWS_PER_STRIP: u16 = 278;
/// StripByteCounts.
pub const STRIP_BYTE_COUNTS: u16 = 279;
/// DateTime (`YYYY:MM:DD HH:MM:SS`).
pub const DATE_TIME: u16 = 306;
/// PlanarConfiguration.
pub const PLANAR_CONFIG: u16 = 284;
/// T4Options (Group3Options: bit 0 2-D coding, bit 1 uncompressed mode,
/// bit 2 fill bits before EOLs).
pub const T4_OPTIONS: u16 = 292;
/// T6Options (Group4Options: bit 1 uncompressed mode).
pub const T6_OPTIONS: u16 = 293;
/// Predictor.
pub const PREDICTOR: u16 = 317;
/// WhitePoint (two chromaticities).
pub const WHITE_POINT: u16 = 318;
/// ColorMap.
pub const COLOR_MAP: u16 = 320;
/// InkSet (1: CMYK).
pub const INK_SET: u16 = 332;
/// TileWidth.
pub const TILE_WIDTH: u16 = 322;
/// TileLength.
pub const TILE_LENGTH: u16 = 323;
/// TileOffsets.
pub const TILE_OFFSETS: u16 = 324;
/// TileByteCounts.
pub const TILE_BYTE_COUNTS: u16 = 325;
/// ExtraSamples.
pub const EXTRA_SAMPLES: u16 = 338;
/// SampleFormat.
pub const SAMPLE_FORMAT: u16 = 339;
/// JPEGTables.
pub const JPEG_TABLES: u16 = 347;
/// ModelPixelScaleTag.
pub const MODEL_PIXEL_SCALE: u16 = 33550;
/// ModelTiepointTag.
pub const MODEL_TIEPOINT: u16 = 33922;
/// ModelTransformationTag.
pub const MODEL_TRANSFORMATION: u16 = 34264;
/// GeoKeyDirectoryTag.
pub const GEO_KEY_DIRECTORY: u16 = 34735;
/// GeoDoubleParamsTag (values of DOUBLE GeoKeys).
pub const GEO_DOUBLE_PARAMS: u16 = 34736;
/// GeoAsciiParamsTag (values of ASCII GeoKeys, `|`-terminated).
pub const GEO_ASCII_PARAMS: u16 = 34737;
/// GDAL_METADATA (XML).
pub const GDAL_METADATA: u16 = 42112;
/// GDAL_NODATA.
pub const GDAL_NODATA: u16 = 42113;

/// GTModelTypeGeoKey.
pub const GT_MODEL_TYPE: u16 = 1024;
/// GTRasterTypeGeoKey (1 PixelIsArea, 2 PixelIsPoint).
pub const GT_RASTER_TYPE: u16 = 1025;
/// GeographicTypeGeoKey.
pub const GEOGRAPHIC_TYPE: u16 = 2048;
/// ProjectedCSTypeGeoKey.
pub const PROJECTED_CS_TYPE: u16 = 3072;

/// NewSubfileType bit: reduced-resolution version of another image.
pub const SUBFILE_REDUCED: u64 = 1;
/// NewSubfileType bit: transparency mask of another image.
pub const SUBFILE_MASK: u64 = 4;
/// NewSubfileType value of one page of a multi-page image.
pub const SUBFILE_PAGE: u64 = 2;
