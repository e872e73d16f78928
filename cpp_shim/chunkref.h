/*
 * The C ABI between the C++ GDAL shim and the Rust core of chunkref.
 *
 * Ownership: a CrHandle is created by chunkref_open and freed by
 * chunkref_close. String lists returned by the handle stay valid until the
 * handle is closed. No function unwinds across this boundary: failures are
 * reported through CrStatus (code = a CPLErrorNum, message = text for
 * CPLError).
 */
#ifndef CHUNKREF_H
#define CHUNKREF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Failure report filled by functions that can fail. code 0 = success. */
typedef struct CrStatus {
    int32_t code;
    char message[2048];
} CrStatus;

/** An opened index: a raster with levels, or a list of subdatasets. */
typedef struct CrHandle CrHandle;

/** Element kinds of CrLevelInfo.data_kind. */
enum CrDataKind { CR_BOOL = 0, CR_UINT = 1, CR_INT = 2, CR_FLOAT = 3, CR_COMPLEX = 4 };

/** Shape and type of one level (level 0 = full resolution). */
typedef struct CrLevelInfo {
    uint64_t width;
    uint64_t height;
    uint64_t block_width;
    uint64_t block_height;
    uint64_t band_count;
    uint32_t data_kind; /* enum CrDataKind */
    uint32_t data_size; /* bytes per element */
    int32_t has_nodata;
    double nodata;
    int32_t has_mask;           /* 1 if the level has a per-dataset mask */
    uint64_t mask_block_width;  /* mask chunk size, when has_mask */
    uint64_t mask_block_height;
} CrLevelInfo;

/** Many block planes of one level read at once: entry i is block
 *  (block_x[i], block_y[i]) of band bands[i], written to buffers[i]. Every
 *  chunk is fetched and decoded once for all the entries needing it. */
typedef struct CrBlocksRequest {
    uint32_t level;
    size_t count;
    const uint64_t *block_x;
    const uint64_t *block_y;
    const uint64_t *bands;   /* 0-based band numbers */
    void *const *buffers;    /* distinct block buffers */
    size_t buffer_bytes;     /* size of each buffer */
} CrBlocksRequest;

/** Where a read of several bands goes: element (band i, row r, column c)
 *  of what is read goes to byte
 *  i * band_space + r * line_space + c * pixel_space of `buffer`, in the
 *  level's native data type. */
typedef struct CrOutput {
    size_t band_count;
    const uint64_t *bands;   /* 0-based band numbers */
    void *buffer;
    size_t buffer_bytes;     /* bytes writable from `buffer` */
    size_t pixel_space;
    size_t line_space;
    size_t band_space;
} CrOutput;

/** A window of several bands read into one caller buffer. */
typedef struct CrWindowRequest {
    uint32_t level;
    uint64_t x;
    uint64_t y;
    uint64_t width;
    uint64_t height;
    CrOutput out;
} CrWindowRequest;

/** Chunks to fetch ahead of the reads expected next: those under window
 *  `x`, `y`, `width`, `height` of bands `first` .. `first + count - 1`
 *  (0-based) of `level`, less those of band `except`. */
typedef struct CrReadAhead {
    uint32_t level;
    uint64_t x;
    uint64_t y;
    uint64_t width;
    uint64_t height;
    uint64_t first;
    uint64_t count;
    uint64_t except;
} CrReadAhead;

/** A nearest-neighbour resampled read: source window `x`, `y`, `width`,
 *  `height` (fractional, as GDALRasterIOExtraArg may give it) into a buffer
 *  of `buf_width` x `buf_height` pixels. */
typedef struct CrSampledRequest {
    uint32_t level;
    double x;
    double y;
    double width;
    double height;
    uint64_t buf_width;
    uint64_t buf_height;
    CrOutput out;
} CrSampledRequest;

/** 1 if the name or first bytes belong to this driver, else 0.
 *  `is_directory` is GDALOpenInfo's bIsDirectory: only a directory is
 *  probed for the files a Kerchunk Parquet store or an Icechunk repository
 *  holds (nothing else is touched). */
int32_t chunkref_identify(const char *name, const uint8_t *header, size_t header_len,
                          int32_t is_directory);

/** Opens `name`; `options` is a NULL-terminated KEY=VALUE list (or NULL). */
CrHandle *chunkref_open(const char *name, const char *const *options, CrStatus *status);

/** Frees a handle (NULL is fine). */
void chunkref_close(CrHandle *handle);

/** Number of levels (0 when the handle only lists subdatasets). */
uint32_t chunkref_level_count(const CrHandle *handle);

/** Fills `out` for `level`; returns 0 on success. */
int32_t chunkref_level_info(const CrHandle *handle, uint32_t level, CrLevelInfo *out, CrStatus *status);

/** Georeferencing of one level. */
typedef struct CrGeoref {
    int32_t has_transform;
    double transform[6]; /* GDAL order: x0, dx, rx, y0, ry, dy (pixel corners) */
    const char *crs;     /* NULL, or a definition for OGRSpatialReference::SetFromUserInput
                            (WKT, PROJJSON, EPSG:n, URL, PROJ string); owned by the handle */
} CrGeoref;

/** What GDAL shows of one band besides its pixels and nodata. */
typedef struct CrBandInfo {
    int32_t has_scale;
    double scale;
    int32_t has_offset;
    double offset;
    uint32_t color;          /* a GDALColorInterp value (GCI_Undefined .. GCI_YCbCr_CrBand) */
    const char *unit;        /* "" when none; owned by the handle */
    const char *description; /* "" when none; owned by the handle */
    int32_t has_nodata;      /* the band's own nodata (GRIB: one per message) */
    double nodata;
    int32_t has_nodata_int64;  /* the nodata exactly, as a signed 64-bit integer */
    int64_t nodata_int64;
    int32_t has_nodata_uint64; /* the nodata exactly, as an unsigned 64-bit integer */
    uint64_t nodata_uint64;
} CrBandInfo;

/** Fills `out` with the georeferencing of `level`; returns 0 on success. */
int32_t chunkref_georef(const CrHandle *handle, uint32_t level, CrGeoref *out, CrStatus *status);

/** Ground control points of the dataset (full resolution), for images
 *  placed by GCPs instead of a geotransform: writes up to `cap` points
 *  (pixel, line, x, y, z: 5 doubles each) to `out` (NULL to count) and
 *  their CRS definition to `*crs` (owned by the handle; NULL when the
 *  points have none); returns how
 *  many points there are, or -1. */
int64_t chunkref_gcps(const CrHandle *handle, double *out, size_t cap, const char **crs,
                      CrStatus *status);

/** Fills `out` for `band` (0-based) of `level`; returns 0 on success. */
int32_t chunkref_band_info(const CrHandle *handle, uint32_t level, uint64_t band, CrBandInfo *out,
                           CrStatus *status);

/** Writes up to `cap` colour table entries (r, g, b, a; 0-255) of `level` to
 *  `out` (4 values each; NULL to count); returns how many there are (0: no
 *  table), or -1. */
int64_t chunkref_color_table(const CrHandle *handle, uint32_t level, int16_t *out, size_t cap,
                             CrStatus *status);

/** Metadata of `domain` ("" default, "IMAGE_STRUCTURE", "SUBDATASETS", "RPC",
 *  "GEOLOCATION") for
 *  the dataset (band = 0) or a 1-based band; NULL-terminated list. */
const char *const *chunkref_metadata(CrHandle *handle, const char *domain, uint32_t band);

/** Warnings found while opening; NULL-terminated list. */
const char *const *chunkref_warnings(CrHandle *handle);

/** Writes up to `cap` bands (0-based) that share chunks with `band` to `out`;
 *  returns how many there are, or -1 on error. */
int64_t chunkref_chunk_bands(const CrHandle *handle, uint32_t level, uint64_t band, uint64_t *out,
                             size_t cap, CrStatus *status);

/** The index file and the array or group path (empty when the name gave
 *  none) that the dataset name opened, as a NULL-terminated list of two
 *  strings owned by the handle. */
const char *const *chunkref_names(const CrHandle *handle);

/** The PAM sidecars (.aux.xml, Imagine .aux) next to the local index file
 *  `index`, when known without probing: calls `add(ctx, name)` with the
 *  file name of each one there and returns 1; returns 0 (and calls
 *  nothing) when GDAL must look for them itself. */
int32_t chunkref_sidecars(const char *index, void (*add)(void *ctx, const char *name),
                          void *ctx);

/** The files pixel (x, y) of `band` (0-based) of `level` is read from
 *  (GDAL names, as chunkref_files gives them): calls `add(ctx, name)` for
 *  each, none for a fill value or a chunk held in the index, and returns 0;
 *  -1 with `status` filled for a pixel or band outside the level. */
int32_t chunkref_location_files(const CrHandle *handle, uint32_t level, uint64_t band, uint64_t x,
                                uint64_t y, void (*add)(void *ctx, const char *name), void *ctx,
                                CrStatus *status);

/** GDAL names (local paths, /vsis3/..., /vsicurl/...) of every file the
 *  index refers to, NULL-terminated, owned by the handle. */
const char *const *chunkref_files(const CrHandle *handle);

/** Reads the block planes of `request`; returns 0 on success (on failure the
 *  buffers hold partial data and must be discarded). */
int32_t chunkref_read_blocks(const CrHandle *handle, const CrBlocksRequest *request,
                             CrStatus *status);

/** Reads a window: every chunk it needs is fetched in one batch (nearby
 *  ranges coalesced, requests concurrent) and decoded in parallel; returns 0
 *  on success. */
int32_t chunkref_read_window(const CrHandle *handle, const CrWindowRequest *request,
                             CrStatus *status);

/** Starts fetching the chunks of `request` on a thread of its own, in place
 *  of those fetched ahead before; reads that want them take their bytes
 *  (waiting for those still in flight) instead of requesting them. Only
 *  remote chunks are fetched ahead, at most a quarter of GDAL_CACHEMAX of
 *  them. Returns how many chunks are fetched ahead, or -1 on error. */
int64_t chunkref_read_ahead(const CrHandle *handle, const CrReadAhead *request,
                            CrStatus *status);

/** Stops the read ahead: requests not started are not made, and the chunks
 *  fetched ahead and not read are dropped. */
void chunkref_read_ahead_stop(const CrHandle *handle);

/** Reads a window resampled by nearest neighbour, picking the source pixels
 *  GDAL's own sampling picks; only the rows of chunks holding them are read
 *  (a strip at a time, each as chunkref_read_window). Returns 0 on success. */
int32_t chunkref_read_sampled(const CrHandle *handle, const CrSampledRequest *request,
                              CrStatus *status);

/** Reads mask block (block_x, block_y) of `level` into `buffer` (one byte per
 *  pixel of a mask block: 255 valid, 0 invalid); returns 0 on success. */
int32_t chunkref_read_mask_block(const CrHandle *handle, uint32_t level, uint64_t block_x,
                                 uint64_t block_y, void *buffer, size_t buffer_bytes,
                                 CrStatus *status);

/** A store opened whole for GDAL's multidimensional view. */
typedef struct CrCube CrCube;

/** A hyperslab read of array `array` of a cube (its number in the
 *  description's "arrays"): along dimension d, the count[d] elements at
 *  start[d] + i * step[d]; element (i_0, ..) goes to byte
 *  sum(i_d * stride[d]) from `buffer` (strides in bytes, any sign), in the
 *  array's native data type. */
typedef struct CrHyperslab {
    uint32_t array;
    size_t rank;
    const uint64_t *start;
    const uint64_t *count;
    const int64_t *step;
    const ptrdiff_t *stride;
    void *buffer;
} CrHyperslab;

/** Opens the whole store of `name` (open options as chunkref_open); NULL
 *  with `status` filled on failure. */
CrCube *chunkref_cube_open(const char *name, const char *const *options, CrStatus *status);

/** Frees a cube (NULL is fine). */
void chunkref_cube_close(CrCube *cube);

/** The cube as JSON, owned by the cube:
 *  {"groups": [{"path", "attributes"}] (parents first, "" the root),
 *   "dims": [{"scope", "listed", "name", "size", "type", "direction",
 *             "indexing": array number or null}],
 *   "arrays": [{"scope", "listed", "name", "dims": [dim numbers], "block",
 *               "kind" (enum CrDataKind), "size", "nodata", "scale",
 *               "offset", "unit", "crs", "xy": [x dim, y dim] positions,
 *               "attributes"}],
 *   "warnings": [text]}.
 *  "scope" is a group path (or an array's path, for a dimension of that
 *  array alone, "listed" false). */
const char *chunkref_cube_describe(const CrCube *cube);

/** Reads a hyperslab (only the chunks it needs, fetched together and
 *  decoded in parallel); returns 0 on success. */
int32_t chunkref_cube_read(const CrCube *cube, const CrHyperslab *request, CrStatus *status);

/** Where one chunk of a cube array lies, as the index records it.
 *  kind: 0 no reference (the chunk reads as the fill value), 1 a byte
 *  range of `file` (`size` 0: the whole object), 2 bytes held in the index
 *  (`data`, `size`), 3 several ranges of `file` (`ranges`: `range_count`
 *  offset/length pairs; `offset`, `size` the first and the sum). `codecs`
 *  names the codec chain in decode order. Pointers are valid during the
 *  callback only. */
typedef struct CrBlockInfo {
    int32_t kind;
    const char *file;
    uint64_t offset;
    uint64_t size;
    const uint8_t *data;
    const uint64_t *ranges;
    size_t range_count;
    const char *codecs;
} CrBlockInfo;

/** Answers where chunk `block` (`rank` chunk indices) of cube array `array`
 *  lies from the index, without fetching: calls `set(ctx, info)` once and
 *  returns 0; -1 with `status` filled for a block outside the chunk grid or
 *  an array computed at open (x/y/time), which has no stored chunks. */
int32_t chunkref_cube_block_info(const CrCube *cube, uint32_t array, const uint64_t *block,
                                 size_t rank, void (*set)(void *ctx, const CrBlockInfo *info),
                                 void *ctx, CrStatus *status);

/** Registers the driver with GDAL (defined by the C++ shim). */
void chunkref_shim_register(void);

#ifdef __cplusplus
}
#endif

#endif /* CHUNKREF_H */
