/*
 * What differs between the GDAL versions the shim builds against, chosen by
 * GDAL_VERSION_NUM: the one place of the shim with version tests (the Rust
 * side's is src/base/gdal/compat.rs; docs/gdal-versions.md lists both).
 */
#ifndef CHUNKREF_GDAL_COMPAT_H
#define CHUNKREF_GDAL_COMPAT_H

#include "gdal_priv.h"
#include "gdal_version.h"

/* build.rs passes the version gdal-config (or pkg-config) reports: headers
 * of another GDAL found first would make the Rust side's choices differ. */
#if defined(CHUNKREF_GDAL_VERSION_NUM)
static_assert(CHUNKREF_GDAL_VERSION_NUM / 10000 == GDAL_VERSION_NUM / 10000,
              "the GDAL headers found are not those of the GDAL gdal-config reports");
#endif

/** The GDAL type of bands of 16-bit floats: Float16 from GDAL 3.11; before,
 *  none (the Rust core then serves them widened to Float32). */
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 11, 0)
constexpr GDALDataType CR_FLOAT16_TYPE = GDT_Float16;
#else
constexpr GDALDataType CR_FLOAT16_TYPE = GDT_Unknown;
#endif

/** The GDAL type of bands of 1-byte signed integers: Int8 from GDAL 3.7;
 *  before, Byte (the Rust core then adds PIXELTYPE=SIGNEDBYTE). */
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 7, 0)
constexpr GDALDataType CR_SIGNED_BYTE_TYPE = GDT_Int8;
#else
constexpr GDALDataType CR_SIGNED_BYTE_TYPE = GDT_Byte;
#endif

/* GetGeoTransform: GDAL 3.12 made it `GetGeoTransform(GDALGeoTransform &)
 * const`; before, `GetGeoTransform(double *)`. Declared and defined as
 *   CPLErr GetGeoTransform(CrGeoTransformOut gt) CR_GEOTRANSFORM_CONST override;
 * with CrGeoTransformData(gt) the six coefficients to fill. */
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 12, 0)
using CrGeoTransformOut = GDALGeoTransform &;
#define CR_GEOTRANSFORM_CONST const
inline double *CrGeoTransformData(GDALGeoTransform &gt) { return gt.data(); }
#else
using CrGeoTransformOut = double *;
#define CR_GEOTRANSFORM_CONST
inline double *CrGeoTransformData(double *gt) { return gt; }
#endif

/** The options of AdviseRead: a CSLConstList from GDAL 3.13 (also for
 *  CreateCopy, AddBand, ...: the shim overrides only AdviseRead). */
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 13, 0)
using CrOptionList = CSLConstList;
#else
using CrOptionList = char **;
#endif

/** GDALMDArray::GetRawBlockInfo (where a chunk lies, without reading it):
 *  from GDAL 3.12 (GDALMDArrayRawBlockInfo is "@since 3.12" in gdal.h). */
#if GDAL_VERSION_NUM >= GDAL_COMPUTE_VERSION(3, 12, 0)
#define CR_HAS_RAW_BLOCK_INFO 1
#else
#define CR_HAS_RAW_BLOCK_INFO 0
#endif

#endif
