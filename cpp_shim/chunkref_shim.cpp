/*
 * ChunkRef GDAL driver: the thin C++ side.
 *
 * Holds only GDAL classes, option plumbing and error mapping. Every decision
 * about indexes, chunks and pixels is made in Rust behind chunkref.h.
 */

#include <climits>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cpl_error.h"
#include "cpl_string.h"
#include "gdal_pam.h"
#include "gdal_priv.h"
#include "ogr_spatialref.h"

#include "chunkref.h"

namespace {

/** Driver short name. */
constexpr const char *DRIVER_NAME = "ChunkRef";
/** Connection prefix. */
constexpr const char *CONNECTION_PREFIX = "CHUNKREF:";
/** Where users find the driver documentation. */
constexpr const char *HELP_TOPIC = "https://github.com/chunkref/chunkref/blob/main/docs/driver.md";
/** Metadata domains the Rust core serves. */
constexpr const char *DOMAINS[] = {"", "IMAGE_STRUCTURE", "SUBDATASETS", "RPC", "GEOLOCATION"};
/** At most this many bytes of sibling-band blocks are decoded along with one block. */
constexpr size_t MAX_SIBLING_BYTES = 256 * 1024 * 1024;

constexpr const char *OPEN_OPTIONS =
    "<OpenOptionList>"
    "  <Option name='TEMPLATE_*' type='string' description='Value of a Kerchunk "
    "template, e.g. TEMPLATE_base=/new/dir/ replaces {{base}} in reference URLs'/>"
    "</OpenOptionList>";

using HandlePtr = std::shared_ptr<CrHandle>;

/** Raises the CPLError described by a failed status. */
void RaiseStatus(const CrStatus &status) {
    CPLError(CE_Failure, status.code != 0 ? status.code : CPLE_AppDefined, "ChunkRef: %s",
             status.message);
}

/** Maps a Rust element type to GDAL's; GDT_Unknown if GDAL 3.6 has none. */
GDALDataType ToGDALType(const CrLevelInfo &info) {
    switch (info.data_kind) {
    case CR_BOOL:
        return GDT_Byte;
    case CR_UINT:
        return info.data_size == 1   ? GDT_Byte
               : info.data_size == 2 ? GDT_UInt16
               : info.data_size == 4 ? GDT_UInt32
                                     : GDT_UInt64;
    case CR_INT:
        return info.data_size == 1   ? GDT_Byte /* PIXELTYPE=SIGNEDBYTE */
               : info.data_size == 2 ? GDT_Int16
               : info.data_size == 4 ? GDT_Int32
                                     : GDT_Int64;
    case CR_FLOAT:
        return info.data_size == 4 ? GDT_Float32 : GDT_Float64;
    case CR_COMPLEX:
        return info.data_size == 8 ? GDT_CFloat32 : GDT_CFloat64;
    default:
        return GDT_Unknown;
    }
}

class ChunkRefRasterBand;
class ChunkRefMaskBand;

/** One level of an index: level 0 owns the overview datasets. */
class ChunkRefDataset final : public GDALPamDataset {
    friend class ChunkRefRasterBand;
    friend class ChunkRefMaskBand;

    /** The Rust handle, shared by a dataset and its overviews. */
    HandlePtr m_handle;
    /** Level of this dataset (0 = full resolution). */
    uint32_t m_level = 0;
    /** Overview datasets, owned by level 0. */
    std::vector<std::unique_ptr<ChunkRefDataset>> m_overviews;
    /** The level's per-dataset mask band, if the index has one. */
    std::unique_ptr<ChunkRefMaskBand> m_mask;
    /** Geotransform of this level, if the index georeferences it. */
    bool m_hasGeoTransform = false;
    double m_geoTransform[6] = {0, 1, 0, 0, 0, 1};
    /** CRS of this level (empty when none). */
    OGRSpatialReference m_srs;

    bool Init(HandlePtr handle, uint32_t level);
    void LoadMetadata();
    void LoadGeoref();

  public:
    static int Identify(GDALOpenInfo *info);
    static GDALDataset *Open(GDALOpenInfo *info);

    CPLErr GetGeoTransform(double *transform) override;
    const OGRSpatialReference *GetSpatialRef() const override;
};

/** A band: IReadBlock decodes one chunk and fills sibling bands' blocks too. */
class ChunkRefRasterBand final : public GDALPamRasterBand {
    /** 0-based band number in the Rust core. */
    uint64_t m_band0;
    bool m_hasNoData;
    double m_noData;
    /** Scale, offset, unit and colour interpretation from the index. */
    CrBandInfo m_info{};
    std::string m_unit;
    /** Colour table of palette bands. */
    std::unique_ptr<GDALColorTable> m_colorTable;

  public:
    ChunkRefRasterBand(ChunkRefDataset *ds, int band, GDALDataType type, const CrLevelInfo &info)
        : m_band0(static_cast<uint64_t>(band - 1)), m_hasNoData(info.has_nodata != 0),
          m_noData(info.nodata) {
        poDS = ds;
        nBand = band;
        eDataType = type;
        nBlockXSize = static_cast<int>(info.block_width);
        nBlockYSize = static_cast<int>(info.block_height);
    }

    CPLErr IReadBlock(int blockX, int blockY, void *image) override;
    int GetOverviewCount() override;
    GDALRasterBand *GetOverview(int i) override;
    double GetNoDataValue(int *success) override {
        if (success != nullptr)
            *success = m_hasNoData;
        return m_noData;
    }
    bool LoadInfo();
    double GetScale(int *success) override {
        if (success != nullptr)
            *success = m_info.has_scale;
        return m_info.has_scale ? m_info.scale : GDALPamRasterBand::GetScale(success);
    }
    double GetOffset(int *success) override {
        if (success != nullptr)
            *success = m_info.has_offset;
        return m_info.has_offset ? m_info.offset : GDALPamRasterBand::GetOffset(success);
    }
    const char *GetUnitType() override {
        return m_unit.empty() ? GDALPamRasterBand::GetUnitType() : m_unit.c_str();
    }
    GDALColorTable *GetColorTable() override {
        return m_colorTable ? m_colorTable.get() : GDALPamRasterBand::GetColorTable();
    }
    GDALColorInterp GetColorInterpretation() override {
        return m_info.color != GCI_Undefined ? static_cast<GDALColorInterp>(m_info.color)
                                             : GDALPamRasterBand::GetColorInterpretation();
    }
    int GetMaskFlags() override;
    GDALRasterBand *GetMaskBand() override;
};

/** The per-dataset mask of a level: 255 valid, 0 invalid. */
class ChunkRefMaskBand final : public GDALRasterBand {
  public:
    ChunkRefMaskBand(ChunkRefDataset *ds, const CrLevelInfo &info) {
        poDS = ds;
        nBand = 0;
        nRasterXSize = ds->GetRasterXSize();
        nRasterYSize = ds->GetRasterYSize();
        eDataType = GDT_Byte;
        nBlockXSize = static_cast<int>(info.mask_block_width);
        nBlockYSize = static_cast<int>(info.mask_block_height);
    }

    CPLErr IReadBlock(int blockX, int blockY, void *image) override {
        auto *ds = static_cast<ChunkRefDataset *>(poDS);
        CrStatus status{};
        if (chunkref_read_mask_block(ds->m_handle.get(), ds->m_level,
                                     static_cast<uint64_t>(blockX), static_cast<uint64_t>(blockY),
                                     image, static_cast<size_t>(nBlockXSize) * nBlockYSize,
                                     &status) != 0) {
            RaiseStatus(status);
            return CE_Failure;
        }
        return CE_None;
    }
    int GetOverviewCount() override {
        return static_cast<int>(static_cast<ChunkRefDataset *>(poDS)->m_overviews.size());
    }
    GDALRasterBand *GetOverview(int i) override {
        auto *ds = static_cast<ChunkRefDataset *>(poDS);
        if (i < 0 || i >= GetOverviewCount())
            return nullptr;
        return ds->m_overviews[static_cast<size_t>(i)]->m_mask.get();
    }
};

bool ChunkRefRasterBand::LoadInfo() {
    auto *ds = static_cast<ChunkRefDataset *>(poDS);
    CrStatus status{};
    if (chunkref_band_info(ds->m_handle.get(), ds->m_level, m_band0, &m_info, &status) != 0) {
        RaiseStatus(status);
        return false;
    }
    if (m_info.color > GCI_YCbCr_CrBand)
        m_info.color = GCI_Undefined;
    m_unit = m_info.unit != nullptr ? m_info.unit : "";
    if (m_info.color == GCI_PaletteIndex) {
        const int64_t n =
            chunkref_color_table(ds->m_handle.get(), ds->m_level, nullptr, 0, &status);
        if (n < 0) {
            RaiseStatus(status);
            return false;
        }
        std::vector<int16_t> entries(static_cast<size_t>(n) * 4);
        chunkref_color_table(ds->m_handle.get(), ds->m_level, entries.data(),
                             static_cast<size_t>(n), &status);
        if (n > 0)
            m_colorTable = std::make_unique<GDALColorTable>();
        for (int64_t i = 0; i < n; ++i) {
            const GDALColorEntry entry{entries[4 * i], entries[4 * i + 1], entries[4 * i + 2],
                                       entries[4 * i + 3]};
            m_colorTable->SetColorEntry(static_cast<int>(i), &entry);
        }
    }
    // Not through SetDescription: PAM would mark the band dirty.
    if (m_info.description != nullptr && m_info.description[0] != '\0')
        GDALMajorObject::SetDescription(m_info.description);
    return true;
}

CPLErr ChunkRefDataset::GetGeoTransform(double *transform) {
    if (!m_hasGeoTransform)
        return GDALPamDataset::GetGeoTransform(transform);
    memcpy(transform, m_geoTransform, sizeof(m_geoTransform));
    return CE_None;
}

const OGRSpatialReference *ChunkRefDataset::GetSpatialRef() const {
    return m_srs.IsEmpty() ? GDALPamDataset::GetSpatialRef() : &m_srs;
}

void ChunkRefDataset::LoadGeoref() {
    CrGeoref geo{};
    CrStatus status{};
    if (chunkref_georef(m_handle.get(), m_level, &geo, &status) != 0) {
        RaiseStatus(status);
        return;
    }
    m_hasGeoTransform = geo.has_transform != 0;
    if (m_hasGeoTransform)
        memcpy(m_geoTransform, geo.transform, sizeof(m_geoTransform));
    if (geo.crs != nullptr) {
        m_srs.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
        if (m_srs.SetFromUserInput(geo.crs) != OGRERR_NONE) {
            CPLError(CE_Warning, CPLE_AppDefined,
                     "ChunkRef: level %u: CRS '%.200s' is not understood by OSR; no CRS is set",
                     m_level, geo.crs);
            m_srs.Clear();
        }
    }
    if (m_level == 0 && !m_hasGeoTransform && geo.crs == nullptr)
        CPLDebug(DRIVER_NAME,
                 "%s: no georeferencing (no proj:/spatial:, _CRS, grid_mapping, coordinate "
                 "arrays or tile matrix set); opened as a pixel grid",
                 GetDescription());
}

int ChunkRefDataset::Identify(GDALOpenInfo *info) {
    return chunkref_identify(info->pszFilename, info->pabyHeader,
                             static_cast<size_t>(info->nHeaderBytes));
}

GDALDataset *ChunkRefDataset::Open(GDALOpenInfo *info) {
    if (!Identify(info))
        return nullptr;
    if (info->eAccess == GA_Update) {
        CPLError(CE_Failure, CPLE_NotSupported, "ChunkRef: the driver is read-only");
        return nullptr;
    }
    CrStatus status{};
    CrHandle *raw = chunkref_open(info->pszFilename, info->papszOpenOptions, &status);
    if (raw == nullptr) {
        RaiseStatus(status);
        return nullptr;
    }
    HandlePtr handle(raw, chunkref_close);
    for (const char *const *w = chunkref_warnings(raw); w != nullptr && *w != nullptr; ++w)
        CPLError(CE_Warning, CPLE_AppDefined, "ChunkRef: %s", *w);

    auto ds = std::make_unique<ChunkRefDataset>();
    ds->SetDescription(info->pszFilename);
    if (!ds->Init(handle, 0))
        return nullptr;
    const uint32_t levels = chunkref_level_count(raw);
    for (uint32_t level = 1; level < levels; ++level) {
        auto ov = std::make_unique<ChunkRefDataset>();
        if (!ov->Init(handle, level))
            return nullptr;
        ds->m_overviews.push_back(std::move(ov));
    }
    ds->TryLoadXML();
    return ds.release();
}

bool ChunkRefDataset::Init(HandlePtr handle, uint32_t level) {
    m_handle = std::move(handle);
    m_level = level;
    if (chunkref_level_count(m_handle.get()) == 0) {
        LoadMetadata(); // subdatasets only
        return true;
    }
    CrLevelInfo info{};
    CrStatus status{};
    if (chunkref_level_info(m_handle.get(), level, &info, &status) != 0) {
        RaiseStatus(status);
        return false;
    }
    const GDALDataType type = ToGDALType(info);
    if (type == GDT_Unknown || info.width > INT_MAX || info.height > INT_MAX ||
        info.block_width > INT_MAX || info.block_height > INT_MAX ||
        info.band_count > static_cast<uint64_t>(INT_MAX)) {
        CPLError(CE_Failure, CPLE_NotSupported,
                 "ChunkRef: level %u (%llu x %llu pixels, %llu bands, blocks %llu x %llu) "
                 "exceeds what GDAL can represent",
                 level, static_cast<unsigned long long>(info.width),
                 static_cast<unsigned long long>(info.height),
                 static_cast<unsigned long long>(info.band_count),
                 static_cast<unsigned long long>(info.block_width),
                 static_cast<unsigned long long>(info.block_height));
        return false;
    }
    nRasterXSize = static_cast<int>(info.width);
    nRasterYSize = static_cast<int>(info.height);
    for (int b = 1; b <= static_cast<int>(info.band_count); ++b) {
        auto *band = new ChunkRefRasterBand(this, b, type, info);
        SetBand(b, band);
        if (!band->LoadInfo())
            return false;
    }
    if (info.has_mask != 0 && info.mask_block_width <= INT_MAX && info.mask_block_height <= INT_MAX)
        m_mask = std::make_unique<ChunkRefMaskBand>(this, info);
    LoadGeoref();
    if (level == 0)
        LoadMetadata();
    return true;
}

void ChunkRefDataset::LoadMetadata() {
    // Set through the base class so PAM does not mark the dataset dirty.
    for (const char *domain : DOMAINS) {
        auto items = const_cast<char **>(chunkref_metadata(m_handle.get(), domain, 0));
        if (items != nullptr && items[0] != nullptr)
            GDALDataset::SetMetadata(items, domain);
    }
    for (int b = 1; b <= nBands; ++b) {
        for (const char *domain : DOMAINS) {
            auto items =
                const_cast<char **>(chunkref_metadata(m_handle.get(), domain, static_cast<uint32_t>(b)));
            if (items != nullptr && items[0] != nullptr)
                GetRasterBand(b)->GDALRasterBand::SetMetadata(items, domain);
        }
    }
}

int ChunkRefRasterBand::GetOverviewCount() {
    auto *ds = static_cast<ChunkRefDataset *>(poDS);
    return static_cast<int>(ds->m_overviews.size());
}

GDALRasterBand *ChunkRefRasterBand::GetOverview(int i) {
    auto *ds = static_cast<ChunkRefDataset *>(poDS);
    if (i < 0 || i >= static_cast<int>(ds->m_overviews.size()))
        return nullptr;
    return ds->m_overviews[static_cast<size_t>(i)]->GetRasterBand(nBand);
}

int ChunkRefRasterBand::GetMaskFlags() {
    if (static_cast<ChunkRefDataset *>(poDS)->m_mask)
        return GMF_PER_DATASET;
    return GDALPamRasterBand::GetMaskFlags();
}

GDALRasterBand *ChunkRefRasterBand::GetMaskBand() {
    if (ChunkRefMaskBand *mask = static_cast<ChunkRefDataset *>(poDS)->m_mask.get())
        return mask;
    return GDALPamRasterBand::GetMaskBand();
}

CPLErr ChunkRefRasterBand::IReadBlock(int blockX, int blockY, void *image) {
    auto *ds = static_cast<ChunkRefDataset *>(poDS);
    CrHandle *handle = ds->m_handle.get();
    const size_t blockBytes = static_cast<size_t>(nBlockXSize) * nBlockYSize *
                              static_cast<size_t>(GDALGetDataTypeSizeBytes(eDataType));
    try {
        // Bands decoded from the same chunk: fill their blocks while we have it.
        CrStatus status{};
        std::vector<uint64_t> sharing(16);
        int64_t n = chunkref_chunk_bands(handle, ds->m_level, m_band0, sharing.data(),
                                         sharing.size(), &status);
        if (n < 0) {
            RaiseStatus(status);
            return CE_Failure;
        }
        sharing.resize(static_cast<size_t>(n));
        if (static_cast<size_t>(n) > 16)
            chunkref_chunk_bands(handle, ds->m_level, m_band0, sharing.data(), sharing.size(),
                                 &status);

        std::vector<uint64_t> bands{m_band0};
        std::vector<void *> buffers{image};
        std::vector<std::vector<GByte>> siblings;
        siblings.reserve(sharing.size());
        for (uint64_t b : sharing) {
            if (b == m_band0 || (siblings.size() + 1) * blockBytes > MAX_SIBLING_BYTES)
                continue;
            GDALRasterBand *other = ds->GetRasterBand(static_cast<int>(b + 1));
            if (GDALRasterBlock *cached = other->TryGetLockedBlockRef(blockX, blockY)) {
                cached->DropLock();
                continue;
            }
            siblings.emplace_back(blockBytes);
            bands.push_back(b);
            buffers.push_back(siblings.back().data());
        }

        CrBlockRequest request{};
        request.level = ds->m_level;
        request.block_x = static_cast<uint64_t>(blockX);
        request.block_y = static_cast<uint64_t>(blockY);
        request.band_count = bands.size();
        request.bands = bands.data();
        request.buffers = buffers.data();
        request.buffer_bytes = blockBytes;
        if (chunkref_read_block(handle, &request, &status) != 0) {
            RaiseStatus(status);
            return CE_Failure;
        }
        for (size_t i = 1; i < bands.size(); ++i) {
            GDALRasterBand *other = ds->GetRasterBand(static_cast<int>(bands[i] + 1));
            if (GDALRasterBlock *block = other->GetLockedBlockRef(blockX, blockY, TRUE)) {
                memcpy(block->GetDataRef(), siblings[i - 1].data(), blockBytes);
                block->DropLock();
            }
        }
        return CE_None;
    } catch (const std::bad_alloc &) {
        CPLError(CE_Failure, CPLE_OutOfMemory, "ChunkRef: out of memory reading block %d,%d",
                 blockX, blockY);
        return CE_Failure;
    }
}

} // namespace

extern "C" void chunkref_shim_register(void) {
    if (!GDAL_CHECK_VERSION(DRIVER_NAME))
        return;
    if (GDALGetDriverByName(DRIVER_NAME) != nullptr)
        return;
    auto *driver = new GDALDriver();
    driver->SetDescription(DRIVER_NAME);
    driver->SetMetadataItem(GDAL_DCAP_RASTER, "YES");
    driver->SetMetadataItem(GDAL_DMD_LONGNAME, "Chunk reference index (Kerchunk JSON)");
    driver->SetMetadataItem(GDAL_DMD_HELPTOPIC, HELP_TOPIC);
    driver->SetMetadataItem(GDAL_DMD_EXTENSIONS, "json");
    driver->SetMetadataItem(GDAL_DMD_CONNECTION_PREFIX, CONNECTION_PREFIX);
    driver->SetMetadataItem(GDAL_DMD_SUBDATASETS, "YES");
    driver->SetMetadataItem(GDAL_DMD_OPENOPTIONLIST, OPEN_OPTIONS);
    driver->pfnIdentify = ChunkRefDataset::Identify;
    driver->pfnOpen = ChunkRefDataset::Open;
    GetGDALDriverManager()->RegisterDriver(driver);
}
