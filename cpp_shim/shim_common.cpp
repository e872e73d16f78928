/*
 * The helpers both views of the shim use (shim_common.h): error mapping
 * and element types. A file of their own, so that the raster view
 * (chunkref_shim.cpp) and the multidimensional view (chunkref_mdim.cpp)
 * each depend on them and the raster view on the other, with no loop.
 */

#include "cpl_error.h"
#include "gdal_priv.h"

#include "chunkref.h"
#include "gdal_compat.h"
#include "shim_common.h"

namespace chunkref_shim {

void RaiseStatus(const CrStatus &status) {
    CPLError(CE_Failure, status.code != 0 ? status.code : CPLE_AppDefined, "ChunkRef: %s",
             status.message);
}

GDALDataType ToGDALType(uint32_t kind, uint32_t size) {
    switch (kind) {
    case CR_BOOL:
        return GDT_Byte;
    case CR_UINT:
        return size == 1 ? GDT_Byte : size == 2 ? GDT_UInt16 : size == 4 ? GDT_UInt32 : GDT_UInt64;
    case CR_INT:
        return size == 1   ? CR_SIGNED_BYTE_TYPE
               : size == 2 ? GDT_Int16
               : size == 4 ? GDT_Int32
                           : GDT_Int64;
    case CR_FLOAT:
        return size == 2 ? CR_FLOAT16_TYPE : size == 4 ? GDT_Float32 : GDT_Float64;
    case CR_COMPLEX:
        return size == 8 ? GDT_CFloat32 : GDT_CFloat64;
    default:
        return GDT_Unknown;
    }
}

} // namespace chunkref_shim
