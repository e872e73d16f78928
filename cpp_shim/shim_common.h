/*
 * What the shim's files share: error mapping and element types
 * (shim_common.cpp), and the multidimensional view's open
 * (chunkref_mdim.cpp).
 */
#ifndef CHUNKREF_SHIM_COMMON_H
#define CHUNKREF_SHIM_COMMON_H

#include <cstddef>
#include <cstdint>

#include "gdal_priv.h"

#include "chunkref.h"

namespace chunkref_shim {

/** Most bytes of the native-type copy a read in another data type goes
 *  through (a window of the raster view, a hyperslab of the
 *  multidimensional view). */
constexpr size_t MAX_CONVERSION_BYTES = 256 * 1024 * 1024;

/** Raises the CPLError described by a failed status. */
void RaiseStatus(const CrStatus &status);

/** Maps a Rust element type (enum CrDataKind, bytes) to GDAL's; GDT_Unknown
 *  if this GDAL has none. */
GDALDataType ToGDALType(uint32_t kind, uint32_t size);

/** Opens an index with GDAL_OF_MULTIDIM_RASTER: a dataset whose root group
 *  shows the whole store (chunkref_mdim.cpp). */
GDALDataset *OpenCube(GDALOpenInfo *info);

} // namespace chunkref_shim

#endif
