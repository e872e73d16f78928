/*
 * ChunkRef GDAL driver: the thin C++ side.
 *
 * Holds only GDAL classes, option plumbing and error mapping. Every decision
 * about indexes, chunks and pixels is made in Rust behind chunkref.h.
 */

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

#include "cpl_error.h"
#include "cpl_string.h"
#include "gdal_pam.h"
#include "gdal_priv.h"
#include "ogr_spatialref.h"

#include "chunkref.h"
#include "gdal_compat.h"
#include "shim_common.h"

namespace {

/** Driver short name. */
constexpr const char *DRIVER_NAME = "ChunkRef";
/** Connection prefix. */
constexpr const char *CONNECTION_PREFIX = "CHUNKREF:";
/** Where users find the driver documentation. */
constexpr const char *HELP_TOPIC = "https://github.com/chunkref/chunkref/blob/main/docs/driver.md";
/** Metadata domains the Rust core serves. */
constexpr const char *DOMAINS[] = {"", "IMAGE_STRUCTURE", "SUBDATASETS", "RPC", "GEOLOCATION"};
/** The metadata domains bands have (raster.rs `Dataset::metadata`); asking for the others costs each open. */
constexpr const char *BAND_DOMAINS[] = {"", "IMAGE_STRUCTURE"};
/** Config option: NO sends every window read through IReadBlock and the block cache. */
constexpr const char *WINDOW_READS_OPTION = "CHUNKREF_WINDOW_READS";
/** Most bytes of blocks filled by one batched block read. */
constexpr size_t MAX_BATCH_BYTES = 128 * 1024 * 1024;
/** Most bands read ahead at once when bands are read one after another at
 *  the same block (the read-ahead doubles from 4 up to this). */
constexpr int MAX_READ_AHEAD_BANDS = 256;
/** Most bytes a band-by-band drill reads ahead: the window of the following
 *  bands, read at once through the window reader (see ReadDrill). */
constexpr size_t MAX_DRILL_BYTES = 16 * 1024 * 1024;
/** Bands the first drill read ahead reads after the one asked for; each
 *  next one reads DRILL_GROWTH times as many (365 steps in 3 rounds). */
constexpr int FIRST_DRILL_BANDS = 32;
constexpr int DRILL_GROWTH = 16;

/** Metadata domain of the files a pixel is read from (as VRT and GTI serve it). */
constexpr const char *LOCATION_INFO_DOMAIN = "LocationInfo";

/** Callback of the Rust core's name lists: appends to a CPLStringList. */
void AddToList(void *list, const char *name) {
    static_cast<CPLStringList *>(list)->AddString(name);
}

constexpr const char *OPEN_OPTIONS =
    "<OpenOptionList>"
    "  <Option name='TEMPLATE_*' type='string' description='Value of a Kerchunk "
    "template, e.g. TEMPLATE_base=/new/dir/ replaces {{base}} in reference URLs'/>"
    "  <Option name='TIME_STEP' type='string' description='Time stack: the one time "
    "step to open, a 0-based step number or an ISO 8601 datetime'/>"
    "  <Option name='TIME_START' type='string' description='Time stack: first time "
    "step to open (step number or ISO 8601 datetime, inclusive)'/>"
    "  <Option name='TIME_END' type='string' description='Time stack: last time "
    "step to open (step number or ISO 8601 datetime, inclusive)'/>"
    "  <Option name='BRANCH' type='string' description='Icechunk repository: the "
    "branch to read (default main)'/>"
    "  <Option name='TAG' type='string' description='Icechunk repository: the tag "
    "to read'/>"
    "  <Option name='SNAPSHOT' type='string' description='Icechunk repository: the "
    "snapshot id to read'/>"
    "  <Option name='Y_ORDER' type='string-select' default='NORTH_UP' description='Row "
    "order of grids whose y coordinate increases (south-up NetCDF): NORTH_UP as "
    "GDAL netCDF driver serves them, or STORED'>"
    "    <Value>NORTH_UP</Value><Value>STORED</Value></Option>"
    "  <Option name='RAW_COLOR' type='boolean' default='NO' description='8-bit CMYK "
    "and CIELab TIFF images: the stored components (as GDAL GTIFF_RAW: shows them) "
    "instead of RGBA'/>"
    "</OpenOptionList>";

using HandlePtr = std::shared_ptr<CrHandle>;

using chunkref_shim::MAX_CONVERSION_BYTES;
using chunkref_shim::RaiseStatus;
using chunkref_shim::ToGDALType;

/** A CRS the index defines, made into an OGRSpatialReference when a client
 *  first asks for it: as GTiff, a read of pixels never opens PROJ's
 *  database (10-15 ms on a process's first CRS). */
class LazySrs {
  public:
    /** Records `definition` (anything SetFromUserInput takes); `what` names
     *  it in the warning given if OSR does not understand it. */
    void Define(const char *definition, std::string what) {
        m_definition = definition;
        m_what = std::move(what);
    }
    /** The CRS, or NULL when none is defined or OSR does not understand it. */
    const OGRSpatialReference *Get() const;

  private:
    std::string m_definition;
    std::string m_what;
    mutable OGRSpatialReference m_srs;
    mutable bool m_made = false;
};

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
    /** The index file the dataset name opened. */
    std::string m_indexPath;
    /** Overview datasets, owned by level 0 and made when first asked for
     *  (an open and a read at full resolution need none; GTiff too scans
     *  its overview directories only then): use Overviews(). */
    std::vector<std::unique_ptr<ChunkRefDataset>> m_overviews;
    bool m_overviewsMade = false;
    /** The level's per-dataset mask band, if the index has one. */
    std::unique_ptr<ChunkRefMaskBand> m_mask;
    /** Geotransform of this level, if the index georeferences it. */
    bool m_hasGeoTransform = false;
    double m_geoTransform[6] = {0, 1, 0, 0, 0, 1};
    /** CRS of this level, as the index defines it (empty when none). */
    LazySrs m_srs;
    /** Ground control points (level 0 of images placed by GCPs) and their CRS. */
    std::vector<GDAL_GCP> m_gcps;
    std::vector<std::string> m_gcpIds;
    LazySrs m_gcpSrs;

    bool Init(HandlePtr handle, uint32_t level);
    const std::vector<std::unique_ptr<ChunkRefDataset>> &Overviews();
    void LoadMetadata();
    void LoadGeoref();
    void LoadGcps();
    bool ReadWindow(int xOff, int yOff, int xSize, int ySize, void *data, int bufXSize,
                    int bufYSize, GDALDataType bufType, int bandCount, const int *bandMap,
                    GSpacing pixelSpace, GSpacing lineSpace, GSpacing bandSpace, CPLErr *err);
    bool ReadSampled(int xOff, int yOff, int xSize, int ySize, void *data, int bufXSize,
                     int bufYSize, GDALDataType bufType, int bandCount, const int *bandMap,
                     GSpacing pixelSpace, GSpacing lineSpace, GSpacing bandSpace,
                     const GDALRasterIOExtraArg *extra, CPLErr *err);
    bool ReadDrill(int band, int xOff, int yOff, int xSize, int ySize, void *data, int bufXSize,
                   int bufYSize, GDALDataType bufType, GSpacing pixelSpace, GSpacing lineSpace,
                   CPLErr *err);
    bool CoversSharing(const int *bandMap, int bandCount);
    bool AnyBlockCached(int blockX, int blockY, const int *bandMap, int bandCount);
    CPLErr ReadNative(int xOff, int yOff, int xSize, int ySize, GByte *data, int bandCount,
                      const int *bandMap, size_t pixelSpace, size_t lineSpace, size_t bandSpace,
                      size_t bufferBytes);

    /** One block buffer of a band to fill; `block` is the cache block
     *  locked for it (NULL for the buffer GDAL passed to IReadBlock). */
    struct Plane {
        int x;
        int y;
        int band;
        void *buffer;
        GDALRasterBlock *block;
    };
    std::vector<int> SharingBands(const int *bands, int count);
    size_t BlockBytes();
    CPLErr ReadPlanes(std::vector<Plane> &planes, bool window = false);
    void RaiseReadStatus(const CrStatus &status, std::vector<int> bands) const;
    CPLErr LoadBlocks(int firstX, int lastX, int firstY, int lastY, const std::vector<int> &bands);
    bool FitsInCache(size_t blocks, size_t bands);
    int ReadAhead(int blockX, int blockY, int band);

    /** Read-ahead state: the block and band the next read of the band after
     *  the last one read would ask for, and how many bands were read ahead. */
    int m_nextBlockX = -1;
    int m_nextBlockY = -1;
    int m_nextBand = 0;
    int m_readAhead = 0;
    /** The block of the last read of part of one block of several bands. */
    int m_partBlockX = -1;
    int m_partBlockY = -1;

    /** Band-by-band drill state (see ReadDrill): the window of the last
     *  one-band read of part of one block, the band a read in sequence asks
     *  for next, and the bands the last drill read ahead. */
    int m_drillWindow[4] = {-1, -1, -1, -1};
    int m_drillNext = 0;
    int m_drillAhead = 0;
    /** The window m_heldWindow of bands [m_drillFirst, m_drillFirst +
     *  m_drillCount) read ahead, in the native type, band after band. */
    int m_heldWindow[4] = {-1, -1, -1, -1};
    int m_drillFirst = 0;
    int m_drillCount = 0;
    std::vector<GByte> m_drill;
    /** The block where reading bands ahead failed (a damaged chunk of a
     *  later band): its bands are read one at a time from then on. */
    int m_aheadFailedX = -1;
    int m_aheadFailedY = -1;
    /** Guessing state (see GuessNextBands): whether guesses are still
     *  made (the first wrong one ends them), and how many bands the
     *  outstanding guess fetches ahead (0: none outstanding). */
    bool m_guessing = true;
    int m_guessedBands = 0;
    /** Whether the drill held was made on a guess. */
    bool m_drillGuessed = false;
    void GuessNextBands(int band, const int window[4], size_t bandBytes);
    bool WindowCached(GDALRasterBand *band, const int window[4]);

  protected:
    CPLErr IRasterIO(GDALRWFlag rw, int xOff, int yOff, int xSize, int ySize, void *data,
                     int bufXSize, int bufYSize, GDALDataType bufType, int bandCount,
                     int *bandMap, GSpacing pixelSpace, GSpacing lineSpace, GSpacing bandSpace,
                     GDALRasterIOExtraArg *extra) override;

  public:
    CPLErr AdviseRead(int xOff, int yOff, int xSize, int ySize, int bufXSize, int bufYSize,
                      GDALDataType bufType, int bandCount, int *bandList,
                      CrOptionList options) override;
    static int Identify(GDALOpenInfo *info);
    static GDALDataset *Open(GDALOpenInfo *info);
    char **GetFileList() override;
    CPLErr IBuildOverviews(const char *resampling, int overviewCount, const int *overviewList,
                           int bandCount, const int *bandList, GDALProgressFunc progress,
                           void *progressData, CSLConstList options) override;

    CPLErr GetGeoTransform(CrGeoTransformOut transform) CR_GEOTRANSFORM_CONST override;
    const OGRSpatialReference *GetSpatialRef() const override;
    int GetGCPCount() override { return static_cast<int>(m_gcps.size()); }
    const GDAL_GCP *GetGCPs() override { return m_gcps.empty() ? nullptr : m_gcps.data(); }
    const OGRSpatialReference *GetGCPSpatialRef() const override {
        return m_gcps.empty() ? nullptr : m_gcpSrs.Get();
    }
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
    /** The last LocationInfo answer (GetMetadataItem returns a pointer into it). */
    std::string m_locationInfo;

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
    CPLErr IRasterIO(GDALRWFlag rw, int xOff, int yOff, int xSize, int ySize, void *data,
                     int bufXSize, int bufYSize, GDALDataType bufType, GSpacing pixelSpace,
                     GSpacing lineSpace, GDALRasterIOExtraArg *extra) override;
    CPLErr AdviseRead(int xOff, int yOff, int xSize, int ySize, int bufXSize, int bufYSize,
                      GDALDataType bufType, CrOptionList options) override {
        return poDS->AdviseRead(xOff, yOff, xSize, ySize, bufXSize, bufYSize, bufType, 1, &nBand,
                                options);
    }
    int GetOverviewCount() override;
    GDALRasterBand *GetOverview(int i) override;
    const char *GetMetadataItem(const char *name, const char *domain) override;
    char **GetMetadataDomainList() override;
    double GetNoDataValue(int *success) override {
        if (success != nullptr)
            *success = m_hasNoData;
        return m_noData;
    }
    /** The exact nodata of an Int64 band (a double cannot hold every one). */
    int64_t GetNoDataValueAsInt64(int *success) override {
        const bool ok = eDataType == GDT_Int64 && m_hasNoData && m_info.has_nodata_int64 != 0;
        if (success != nullptr)
            *success = ok;
        return ok ? m_info.nodata_int64 : std::numeric_limits<int64_t>::min();
    }
    /** The exact nodata of a UInt64 band. */
    uint64_t GetNoDataValueAsUInt64(int *success) override {
        const bool ok = eDataType == GDT_UInt64 && m_hasNoData && m_info.has_nodata_uint64 != 0;
        if (success != nullptr)
            *success = ok;
        return ok ? m_info.nodata_uint64 : std::numeric_limits<uint64_t>::max();
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
        return static_cast<int>(static_cast<ChunkRefDataset *>(poDS)->Overviews().size());
    }
    GDALRasterBand *GetOverview(int i) override {
        auto *ds = static_cast<ChunkRefDataset *>(poDS);
        if (i < 0 || i >= GetOverviewCount())
            return nullptr;
        return ds->Overviews()[static_cast<size_t>(i)]->m_mask.get();
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
    m_hasNoData = m_info.has_nodata != 0;
    m_noData = m_info.nodata;
    m_unit = m_info.unit != nullptr ? m_info.unit : "";
    // A palette band's table, or the table GDAL gives some other bands (a
    // MinIsWhite TIFF's greys): whichever the index holds.
    {
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

CPLErr ChunkRefDataset::GetGeoTransform(CrGeoTransformOut transform) CR_GEOTRANSFORM_CONST {
    if (!m_hasGeoTransform)
        return GDALPamDataset::GetGeoTransform(transform);
    memcpy(CrGeoTransformData(transform), m_geoTransform, sizeof(m_geoTransform));
    return CE_None;
}

const OGRSpatialReference *ChunkRefDataset::GetSpatialRef() const {
    const OGRSpatialReference *srs = m_srs.Get();
    return srs != nullptr ? srs : GDALPamDataset::GetSpatialRef();
}

const OGRSpatialReference *LazySrs::Get() const {
    if (!m_made) {
        m_made = true;
        if (!m_definition.empty()) {
            m_srs.SetAxisMappingStrategy(OAMS_TRADITIONAL_GIS_ORDER);
            if (m_srs.SetFromUserInput(m_definition.c_str()) != OGRERR_NONE) {
                CPLError(CE_Warning, CPLE_AppDefined,
                         "ChunkRef: %s '%.200s' is not understood by OSR; no CRS is set",
                         m_what.c_str(), m_definition.c_str());
                m_srs.Clear();
            }
        }
    }
    return m_srs.IsEmpty() ? nullptr : &m_srs;
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
    if (geo.crs != nullptr)
        m_srs.Define(geo.crs, "level " + std::to_string(m_level) + ": CRS");
    if (m_level == 0)
        LoadGcps();
    if (m_level == 0 && !m_hasGeoTransform && geo.crs == nullptr && m_gcps.empty())
        CPLDebug(DRIVER_NAME,
                 "%s: no georeferencing (no proj:/spatial:, _CRS, grid_mapping, coordinate "
                 "arrays or tile matrix set); opened as a pixel grid",
                 GetDescription());
}

void ChunkRefDataset::LoadGcps() {
    CrStatus status{};
    const char *crs = nullptr;
    const int64_t n = chunkref_gcps(m_handle.get(), nullptr, 0, &crs, &status);
    if (n < 0) {
        RaiseStatus(status);
        return;
    }
    if (n == 0 || n > INT_MAX)
        return;
    std::vector<double> points(static_cast<size_t>(n) * 5);
    chunkref_gcps(m_handle.get(), points.data(), static_cast<size_t>(n), &crs, &status);
    m_gcpIds.resize(static_cast<size_t>(n));
    m_gcps.resize(static_cast<size_t>(n));
    for (size_t i = 0; i < m_gcps.size(); ++i) {
        m_gcpIds[i] = std::to_string(i + 1);
        GDAL_GCP &gcp = m_gcps[i];
        gcp.pszId = const_cast<char *>(m_gcpIds[i].c_str());
        gcp.pszInfo = const_cast<char *>("");
        gcp.dfGCPPixel = points[5 * i];
        gcp.dfGCPLine = points[5 * i + 1];
        gcp.dfGCPX = points[5 * i + 2];
        gcp.dfGCPY = points[5 * i + 3];
        gcp.dfGCPZ = points[5 * i + 4];
    }
    if (crs != nullptr)
        m_gcpSrs.Define(crs, "GCP CRS");
}

int ChunkRefDataset::Identify(GDALOpenInfo *info) {
    return chunkref_identify(info->pszFilename, info->pabyHeader,
                             static_cast<size_t>(info->nHeaderBytes), info->bIsDirectory);
}

GDALDataset *ChunkRefDataset::Open(GDALOpenInfo *info) {
    if (!Identify(info))
        return nullptr;
    if (info->eAccess == GA_Update) {
        CPLError(CE_Failure, CPLE_NotSupported, "ChunkRef: the driver is read-only");
        return nullptr;
    }
    if ((info->nOpenFlags & GDAL_OF_MULTIDIM_RASTER) != 0)
        return chunkref_shim::OpenCube(info);
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
    // Sidecars (.aux.xml, .ovr) live next to the index file, also for
    // CHUNKREF: names; each array of a store keeps its own PAM entry.
    const char *const *names = chunkref_names(raw);
    ds->m_indexPath = names != nullptr && names[0] != nullptr ? names[0] : info->pszFilename;
    const std::string target = names != nullptr && names[0] != nullptr && names[1] != nullptr
                                   ? names[1]
                                   : std::string();
    const bool plainName = ds->m_indexPath == info->pszFilename;
    if (!plainName)
        ds->SetPhysicalFilename(ds->m_indexPath.c_str());
    if (!target.empty())
        ds->SetSubdatasetName(target.c_str());
    if (!ds->Init(handle, 0))
        return nullptr;
    // Sibling names spare remote indexes one request per sidecar probe; a
    // local index probes its sidecars instead of listing a directory that
    // may hold thousands of indexes (a tile server opens one per request).
    char **siblings = plainName && (info->AreSiblingFilesLoaded() ||
                                    !VSIIsLocal(ds->m_indexPath.c_str()))
                          ? info->GetSiblingFiles()
                          : nullptr;
    // Or the sidecars Rust has seen in the unchanged directory: GDAL's PAM
    // then looks only for those (a list even with none in it).
    CPLStringList sidecars;
    if (siblings == nullptr && plainName &&
        chunkref_sidecars(ds->m_indexPath.c_str(), AddToList, &sidecars) != 0)
        sidecars.AddString("");
    ds->TryLoadXML(siblings != nullptr ? siblings : sidecars.List());
    // External overviews (gdaladdo, QGIS "Build Pyramids"): <index>.ovr, or
    // <index>.<array>.ovr for one array of a store.
    std::string ovrBase = ds->m_indexPath;
    if (!target.empty()) {
        std::string array = target;
        std::replace(array.begin(), array.end(), '/', '_');
        ovrBase += "." + array;
    }
    ds->oOvManager.Initialize(ds.get(), ovrBase.c_str(), target.empty() ? siblings : nullptr);
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
    const GDALDataType type = ToGDALType(info.data_kind, info.data_size);
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

/** The overview datasets of level 0 (none for the others), made on first
 *  use; a level that cannot be made (an error is raised) ends the list. */
const std::vector<std::unique_ptr<ChunkRefDataset>> &ChunkRefDataset::Overviews() {
    if (!m_overviewsMade) {
        m_overviewsMade = true;
        const uint32_t levels = m_level == 0 ? chunkref_level_count(m_handle.get()) : 0;
        for (uint32_t level = 1; level < levels; ++level) {
            auto ov = std::make_unique<ChunkRefDataset>();
            if (!ov->Init(m_handle, level))
                break;
            m_overviews.push_back(std::move(ov));
        }
    }
    return m_overviews;
}

void ChunkRefDataset::LoadMetadata() {
    // Set through the base class so PAM does not mark the dataset dirty.
    for (const char *domain : DOMAINS) {
        auto items = const_cast<char **>(chunkref_metadata(m_handle.get(), domain, 0));
        if (items != nullptr && items[0] != nullptr)
            GDALDataset::SetMetadata(items, domain);
    }
    for (int b = 1; b <= nBands; ++b) {
        for (const char *domain : BAND_DOMAINS) {
            auto items =
                const_cast<char **>(chunkref_metadata(m_handle.get(), domain, static_cast<uint32_t>(b)));
            if (items != nullptr && items[0] != nullptr)
                GetRasterBand(b)->GDALRasterBand::SetMetadata(items, domain);
        }
    }
}

/** The index's own levels, else external overviews (an .ovr file). */
int ChunkRefRasterBand::GetOverviewCount() {
    const auto &overviews = static_cast<ChunkRefDataset *>(poDS)->Overviews();
    if (overviews.empty())
        return GDALPamRasterBand::GetOverviewCount();
    return static_cast<int>(overviews.size());
}

GDALRasterBand *ChunkRefRasterBand::GetOverview(int i) {
    const auto &overviews = static_cast<ChunkRefDataset *>(poDS)->Overviews();
    if (overviews.empty())
        return GDALPamRasterBand::GetOverview(i);
    if (i < 0 || i >= static_cast<int>(overviews.size()))
        return nullptr;
    return overviews[static_cast<size_t>(i)]->GetRasterBand(nBand);
}

/** `Pixel_<x>_<y>` or `GeoPixel_<X>_<Y>` in the LocationInfo domain: the
 *  files the pixel is read from, as `<LocationInfo><File>...</File></LocationInfo>`
 *  (what gdallocationinfo prints); NULL outside the raster. */
const char *ChunkRefRasterBand::GetMetadataItem(const char *name, const char *domain) {
    if (name == nullptr || domain == nullptr || !EQUAL(domain, LOCATION_INFO_DOMAIN))
        return GDALPamRasterBand::GetMetadataItem(name, domain);
    auto *ds = static_cast<ChunkRefDataset *>(poDS);
    double pixel = 0;
    double line = 0;
    if (STARTS_WITH_CI(name, "Pixel_")) {
        // strtol, not sscanf: a number past the int range saturates
        // (then falls outside the raster) instead of being undefined.
        char *end = nullptr;
        pixel = static_cast<double>(strtol(name + 6, &end, 10));
        if (end == name + 6 || *end != '_')
            return nullptr;
        const char *rest = end + 1;
        line = static_cast<double>(strtol(rest, &end, 10));
        if (end == rest)
            return nullptr;
    } else if (STARTS_WITH_CI(name, "GeoPixel_")) {
        const char *underscore = strchr(name + 9, '_');
        double transform[6];
        double inverse[6];
        if (underscore == nullptr || GDALGetGeoTransform(ds, transform) != CE_None ||
            !GDALInvGeoTransform(transform, inverse))
            return nullptr;
        const double geoX = CPLAtof(name + 9);
        const double geoY = CPLAtof(underscore + 1);
        pixel = std::floor(inverse[0] + inverse[1] * geoX + inverse[2] * geoY);
        line = std::floor(inverse[3] + inverse[4] * geoX + inverse[5] * geoY);
    } else {
        return GDALPamRasterBand::GetMetadataItem(name, domain);
    }
    if (!(pixel >= 0 && line >= 0 && pixel < nRasterXSize && line < nRasterYSize))
        return nullptr;
    CPLStringList files;
    CrStatus status{};
    if (chunkref_location_files(ds->m_handle.get(), ds->m_level, m_band0,
                                static_cast<uint64_t>(pixel), static_cast<uint64_t>(line),
                                AddToList, &files, &status) != 0) {
        RaiseStatus(status);
        return nullptr;
    }
    m_locationInfo = "<LocationInfo>";
    for (int i = 0; i < files.size(); ++i) {
        char *escaped = CPLEscapeString(files[i], -1, CPLES_XML);
        m_locationInfo += std::string("<File>") + escaped + "</File>";
        CPLFree(escaped);
    }
    m_locationInfo += "</LocationInfo>";
    return m_locationInfo.c_str();
}

char **ChunkRefRasterBand::GetMetadataDomainList() {
    return CSLAddString(GDALPamRasterBand::GetMetadataDomainList(), LOCATION_INFO_DOMAIN);
}

/** External overviews (gdaladdo, QGIS pyramids), unless the index has
 *  levels of its own: GDAL would try to write into those. */
CPLErr ChunkRefDataset::IBuildOverviews(const char *resampling, int overviewCount,
                                        const int *overviewList, int bandCount,
                                        const int *bandList, GDALProgressFunc progress,
                                        void *progressData, CSLConstList options) {
    const size_t own = Overviews().size();
    if (own != 0) {
        CPLError(CE_Failure, CPLE_NotSupported,
                 "ChunkRef: cannot add external overviews to %s: the index already has %d "
                 "overview levels of its own (they are read as its overviews; build "
                 "overviews of a copy instead, e.g. gdal_translate to a GTiff)",
                 m_indexPath.c_str(), static_cast<int>(own));
        return CE_Failure;
    }
    return GDALPamDataset::IBuildOverviews(resampling, overviewCount, overviewList, bandCount,
                                           bandList, progress, progressData, options);
}

/** The index, its sidecars and every file its chunks are read from. */
char **ChunkRefDataset::GetFileList() {
    CPLStringList files(GDALPamDataset::GetFileList());
    std::unordered_set<std::string> seen;
    for (int i = 0; i < files.size(); ++i)
        seen.insert(files[i]);
    if (!m_indexPath.empty() && seen.insert(m_indexPath).second)
        files.InsertString(0, m_indexPath.c_str());
    for (const char *const *f = chunkref_files(m_handle.get()); f != nullptr && *f != nullptr; ++f)
        if (seen.insert(*f).second)
            files.AddString(*f);
    return files.StealList();
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
    try {
        // Bands decoded from the same chunk: fill their blocks while we have
        // it; and the blocks of the bands read ahead.
        std::vector<ChunkRefDataset::Plane> planes{{blockX, blockY, nBand, image, nullptr}};
        const size_t blockBytes = ds->BlockBytes();
        std::vector<int> wanted{nBand};
        const int ahead = ds->ReadAhead(blockX, blockY, nBand);
        for (int b = nBand + 1; b <= nBand + ahead; ++b)
            wanted.push_back(b);
        for (int b : ds->SharingBands(wanted.data(), static_cast<int>(wanted.size()))) {
            if (b == nBand || (planes.size() + 1) * blockBytes > MAX_BATCH_BYTES)
                continue;
            GDALRasterBand *other = ds->GetRasterBand(b);
            if (GDALRasterBlock *cached = other->TryGetLockedBlockRef(blockX, blockY)) {
                cached->DropLock();
                continue;
            }
            if (GDALRasterBlock *block = other->GetLockedBlockRef(blockX, blockY, TRUE))
                planes.push_back({blockX, blockY, b, block->GetDataRef(), block});
        }
        if (ahead == 0)
            return ds->ReadPlanes(planes);
        // A batch with bands read ahead that fails (a damaged chunk of a
        // later band) is dropped quietly and this block read alone: the
        // later band's failure is met when that band is read.
        CPLPushErrorHandler(CPLQuietErrorHandler);
        const CPLErr batch = ds->ReadPlanes(planes);
        CPLPopErrorHandler();
        if (batch == CE_None)
            return CE_None;
        CPLErrorReset();
        ds->m_aheadFailedX = blockX;
        ds->m_aheadFailedY = blockY;
        std::vector<ChunkRefDataset::Plane> alone{{blockX, blockY, nBand, image, nullptr}};
        return ds->ReadPlanes(alone);
    } catch (const std::bad_alloc &) {
        CPLError(CE_Failure, CPLE_OutOfMemory, "ChunkRef: out of memory reading block %d,%d",
                 blockX, blockY);
        return CE_Failure;
    }
}

CPLErr ChunkRefRasterBand::IRasterIO(GDALRWFlag rw, int xOff, int yOff, int xSize, int ySize,
                                     void *data, int bufXSize, int bufYSize,
                                     GDALDataType bufType, GSpacing pixelSpace,
                                     GSpacing lineSpace, GDALRasterIOExtraArg *extra) {
    auto *ds = static_cast<ChunkRefDataset *>(poDS);
    CPLErr err = CE_None;
    if (rw == GF_Read && ds->ReadDrill(nBand, xOff, yOff, xSize, ySize, data, bufXSize, bufYSize,
                                       bufType, pixelSpace, lineSpace, &err))
        return err;
    if (rw == GF_Read && (ds->ReadWindow(xOff, yOff, xSize, ySize, data, bufXSize, bufYSize,
                                         bufType, 1, &nBand, pixelSpace, lineSpace, 0, &err) ||
                          ds->ReadSampled(xOff, yOff, xSize, ySize, data, bufXSize, bufYSize,
                                          bufType, 1, &nBand, pixelSpace, lineSpace, 0, extra,
                                          &err)))
        return err;
    return GDALPamRasterBand::IRasterIO(rw, xOff, yOff, xSize, ySize, data, bufXSize, bufYSize,
                                        bufType, pixelSpace, lineSpace, extra);
}

CPLErr ChunkRefDataset::IRasterIO(GDALRWFlag rw, int xOff, int yOff, int xSize, int ySize,
                                  void *data, int bufXSize, int bufYSize, GDALDataType bufType,
                                  int bandCount, int *bandMap, GSpacing pixelSpace,
                                  GSpacing lineSpace, GSpacing bandSpace,
                                  GDALRasterIOExtraArg *extra) {
    CPLErr err = CE_None;
    if (rw == GF_Read &&
        (ReadWindow(xOff, yOff, xSize, ySize, data, bufXSize, bufYSize, bufType, bandCount,
                    bandMap, pixelSpace, lineSpace, bandSpace, &err) ||
         ReadSampled(xOff, yOff, xSize, ySize, data, bufXSize, bufYSize, bufType, bandCount,
                     bandMap, pixelSpace, lineSpace, bandSpace, extra, &err)))
        return err;
    // A zoomed-out read an overview serves: all bands from the overview
    // dataset at once, as GTiff does (GDAL's default reads band by band).
    if (rw == GF_Read && (bufXSize < xSize || bufYSize < ySize)) {
        int tried = FALSE;
        err = TryOverviewRasterIO(rw, xOff, yOff, xSize, ySize, data, bufXSize, bufYSize, bufType,
                                  bandCount, bandMap, pixelSpace, lineSpace, bandSpace, extra,
                                  &tried);
        if (tried)
            return err;
    }
    return GDALPamDataset::IRasterIO(rw, xOff, yOff, xSize, ySize, data, bufXSize, bufYSize,
                                     bufType, bandCount, bandMap, pixelSpace, lineSpace,
                                     bandSpace, extra);
}

/** Where a read of `bands` (0-based, owned by the caller until the read
 *  returns) goes: `bytes` of `data`, so spaced. */
static CrOutput Output(const std::vector<uint64_t> &bands, void *data, size_t pixel, size_t line,
                       size_t band, size_t bytes) {
    CrOutput out{};
    out.band_count = bands.size();
    out.bands = bands.data();
    out.buffer = data;
    out.buffer_bytes = bytes;
    out.pixel_space = pixel;
    out.line_space = line;
    out.band_space = band;
    return out;
}

/** Bytes from the start of a buffer of `bands` bands of `width` x `height`
 *  elements of `size` bytes, so spaced, to the end of its last element. */
static size_t BufferExtent(int bands, int width, int height, size_t pixel, size_t line,
                           size_t band, size_t size) {
    return (static_cast<size_t>(bands) - 1) * band + (static_cast<size_t>(height) - 1) * line +
           (static_cast<size_t>(width) - 1) * pixel + size;
}

/** Serves a full-resolution read of more than one block, or of one whole
 *  block of every band sharing its chunk that is not cached yet (a tile
 *  server's request). A window made of
 *  whole chunks of every band they hold is read straight into the caller's
 *  buffer by the Rust window reader (all chunks fetched together, decoded in
 *  parallel). Any other window (a scanline, a strip, one band of
 *  pixel-interleaved chunks, an off-grid rectangle) would leave decoded
 *  pixels behind that the next read needs: its missing blocks, and those of
 *  the bands sharing their chunks, are loaded into GDAL's block cache in one
 *  batch, and the read is left to GDAL's block path, which copies them out
 *  (unless they would not fit in the cache; then the window reader serves
 *  it). Part of one block of several bands has the missing blocks of those
 *  bands loaded in one batch too. Returns false, leaving the read to GDAL,
 *  for resampled reads, other single-block reads of one band, negative
 *  spacings, when CHUNKREF_WINDOW_READS=NO, or once the blocks are cached. */
bool ChunkRefDataset::ReadWindow(int xOff, int yOff, int xSize, int ySize, void *data,
                                 int bufXSize, int bufYSize, GDALDataType bufType, int bandCount,
                                 const int *bandMap, GSpacing pixelSpace, GSpacing lineSpace,
                                 GSpacing bandSpace, CPLErr *err) {
    if (bufXSize != xSize || bufYSize != ySize || bandCount < 1 || xSize < 1 || ySize < 1 ||
        pixelSpace <= 0 || lineSpace <= 0 || bandSpace < 0 ||
        !CPLTestBool(CPLGetConfigOption(WINDOW_READS_OPTION, "YES")))
        return false;
    int blockWidth = 0;
    int blockHeight = 0;
    GetRasterBand(bandMap[0])->GetBlockSize(&blockWidth, &blockHeight);
    const int firstX = xOff / blockWidth;
    const int lastX = (xOff + xSize - 1) / blockWidth;
    const int firstY = yOff / blockHeight;
    const int lastY = (yOff + ySize - 1) / blockHeight;
    const bool wholeBlocks =
        xOff % blockWidth == 0 && yOff % blockHeight == 0 &&
        ((xOff + xSize) % blockWidth == 0 || xOff + xSize == nRasterXSize) &&
        ((yOff + ySize) % blockHeight == 0 || yOff + ySize == nRasterYSize);
    const bool partOfOneBlock = firstX == lastX && firstY == lastY &&
                                !(wholeBlocks && CoversSharing(bandMap, bandCount) &&
                                  !AnyBlockCached(firstX, firstY, bandMap, bandCount));
    if (partOfOneBlock) {
        // Part of one block of several bands (a pixel drill through a time
        // stack, whose steps are separate chunks, often of separate files).
        // The first read at a block goes to the window reader: every chunk
        // fetched at once, each decoded only down to the window's last row,
        // nothing put in the block cache. A second read at that block (a
        // second pixel nearby, rasterio sampling points of one tile), or
        // one whose blocks are partly cached already, loads the missing
        // blocks into the block cache in one batch (the chunks' fetched
        // bytes are kept from the first read: no new requests), and the
        // reads after it are served from there.
        if (bandCount == 1)
            return false;
        const bool again = firstX == m_partBlockX && firstY == m_partBlockY;
        m_partBlockX = firstX;
        m_partBlockY = firstY;
        const std::vector<int> sharing = SharingBands(bandMap, bandCount);
        if ((again || AnyBlockCached(firstX, firstY, sharing.data(),
                                     static_cast<int>(sharing.size()))) &&
            FitsInCache(1, sharing.size())) {
            *err = LoadBlocks(firstX, lastX, firstY, lastY, sharing);
            return *err != CE_None;
        }
    }
    const size_t blocks =
        static_cast<size_t>(lastX - firstX + 1) * static_cast<size_t>(lastY - firstY + 1);
    if (!partOfOneBlock && !(wholeBlocks && CoversSharing(bandMap, bandCount))) {
        const std::vector<int> sharing = SharingBands(bandMap, bandCount);
        if (FitsInCache(blocks, sharing.size())) {
            *err = LoadBlocks(firstX, lastX, firstY, lastY, sharing);
            return *err != CE_None;
        }
    }
    const GDALDataType native = GetRasterBand(bandMap[0])->GetRasterDataType();
    const size_t nativeSize = static_cast<size_t>(GDALGetDataTypeSizeBytes(native));
    const auto extent = [&](size_t pixel, size_t line, size_t band, size_t size) {
        return BufferExtent(bandCount, xSize, ySize, pixel, line, band, size);
    };
    if (bufType == native) {
        *err = ReadNative(xOff, yOff, xSize, ySize, static_cast<GByte *>(data), bandCount,
                          bandMap, static_cast<size_t>(pixelSpace),
                          static_cast<size_t>(lineSpace), static_cast<size_t>(bandSpace),
                          extent(static_cast<size_t>(pixelSpace), static_cast<size_t>(lineSpace),
                                 static_cast<size_t>(bandSpace), nativeSize));
        return true;
    }
    // Another buffer type: read strips of rows in the native type, then convert.
    const size_t rowBytes = static_cast<size_t>(xSize) * nativeSize * bandCount;
    const int stripRows = static_cast<int>(std::max<size_t>(
        1, std::min<size_t>(static_cast<size_t>(ySize), MAX_CONVERSION_BYTES / rowBytes)));
    try {
        std::vector<GByte> strip(rowBytes * static_cast<size_t>(stripRows));
        for (int row = 0; row < ySize; row += stripRows) {
            const int rows = std::min(stripRows, ySize - row);
            const size_t line = static_cast<size_t>(xSize) * nativeSize;
            const size_t band = line * static_cast<size_t>(rows);
            *err = ReadNative(xOff, yOff + row, xSize, rows, strip.data(), bandCount, bandMap,
                              nativeSize, line, band, band * static_cast<size_t>(bandCount));
            if (*err != CE_None)
                return true;
            for (int b = 0; b < bandCount; ++b)
                for (int r = 0; r < rows; ++r)
                    GDALCopyWords64(strip.data() + b * band + static_cast<size_t>(r) * line,
                                    native, static_cast<int>(nativeSize),
                                    static_cast<GByte *>(data) + b * bandSpace +
                                        static_cast<GSpacing>(row + r) * lineSpace,
                                    bufType, static_cast<int>(pixelSpace), xSize);
        }
    } catch (const std::bad_alloc &) {
        CPLError(CE_Failure, CPLE_OutOfMemory, "ChunkRef: out of memory reading a %dx%d window",
                 xSize, ySize);
        *err = CE_Failure;
    }
    return true;
}

/** Serves a nearest-neighbour resampled read that no overview serves (a
 *  zoomed-out view of a level without a fitting overview) with the Rust
 *  sampled reader: the source pixels GDAL's own sampling picks, read a
 *  strip of chunks at a time, no full-resolution block through the block
 *  cache. Returns false, leaving the read to GDAL, for full-resolution
 *  reads, other resamplings, another buffer type, negative spacings, when
 *  an overview serves the request, when the bands asked for leave out one
 *  sharing their chunks (GDAL's block path then decodes each chunk once
 *  for all of them), or when CHUNKREF_WINDOW_READS=NO. */
bool ChunkRefDataset::ReadSampled(int xOff, int yOff, int xSize, int ySize, void *data,
                                  int bufXSize, int bufYSize, GDALDataType bufType,
                                  int bandCount, const int *bandMap, GSpacing pixelSpace,
                                  GSpacing lineSpace, GSpacing bandSpace,
                                  const GDALRasterIOExtraArg *extra, CPLErr *err) {
    if ((bufXSize == xSize && bufYSize == ySize) || bandCount < 1 || bufXSize < 1 ||
        bufYSize < 1 || pixelSpace <= 0 || lineSpace <= 0 || bandSpace < 0 ||
        (extra != nullptr && extra->eResampleAlg != GRIORA_NearestNeighbour) ||
        !CPLTestBool(CPLGetConfigOption(WINDOW_READS_OPTION, "YES")))
        return false;
    GDALRasterBand *first = GetRasterBand(bandMap[0]);
    if (bufType != first->GetRasterDataType())
        return false;
    GDALRasterIOExtraArg args;
    INIT_RASTERIO_EXTRA_ARG(args);
    if (extra != nullptr)
        args = *extra;
    if (first->GetOverviewCount() > 0) {
        int x = xOff, y = yOff, w = xSize, h = ySize;
        GDALRasterIOExtraArg choice = args;
        if (GDALBandGetBestOverviewLevel2(first, x, y, w, h, bufXSize, bufYSize, &choice) >= 0)
            return false;
    }
    if (!CoversSharing(bandMap, bandCount))
        return false;
    std::vector<uint64_t> bands(static_cast<size_t>(bandCount));
    for (int b = 0; b < bandCount; ++b)
        bands[static_cast<size_t>(b)] = static_cast<uint64_t>(bandMap[b] - 1);
    const bool fractional = args.bFloatingPointWindowValidity != 0;
    CrSampledRequest request{};
    request.level = m_level;
    request.x = fractional ? args.dfXOff : xOff;
    request.y = fractional ? args.dfYOff : yOff;
    request.width = fractional ? args.dfXSize : xSize;
    request.height = fractional ? args.dfYSize : ySize;
    request.buf_width = static_cast<uint64_t>(bufXSize);
    request.buf_height = static_cast<uint64_t>(bufYSize);
    request.out = Output(bands, data, static_cast<size_t>(pixelSpace),
                         static_cast<size_t>(lineSpace), static_cast<size_t>(bandSpace),
                         BufferExtent(bandCount, bufXSize, bufYSize, static_cast<size_t>(pixelSpace),
                                      static_cast<size_t>(lineSpace),
                                      static_cast<size_t>(bandSpace),
                                      static_cast<size_t>(GDALGetDataTypeSizeBytes(bufType))));
    CrStatus status{};
    *err = CE_None;
    if (chunkref_read_sampled(m_handle.get(), &request, &status) != 0) {
        RaiseReadStatus(status, std::vector<int>(bandMap, bandMap + bandCount));
        *err = CE_Failure;
    }
    return true;
}

/** Serves a one-band read of a window no larger than a block (within one
 *  block or across up to four) when bands are read one after another at
 *  the same window (gdallocationinfo, a client's loop of
 *  `GetRasterBand(b).ReadRaster` through a time stack): the second band
 *  read there reads that window of the next FIRST_DRILL_BANDS bands too
 *  (or of every band the first read's guess fetched ahead, see
 *  GuessNextBands), through the window reader (every chunk fetched at
 *  once, decoded only down to the window's last row, nothing put in the
 *  block cache), and the reads after it are served from what it read; past
 *  its end, the next drill reads DRILL_GROWTH times as many bands. Returns
 *  false, leaving the read to GDAL's block path, for the first band read at
 *  a window, reads out of sequence, whole blocks or windows larger than a
 *  block, resampled reads, blocks already cached, or when
 *  CHUNKREF_WINDOW_READS=NO. A drill that fails (a damaged chunk of a later
 *  band) is dropped quietly: the band asked for is then read alone, and a
 *  later band's failure is met when it is read. */
bool ChunkRefDataset::ReadDrill(int band, int xOff, int yOff, int xSize, int ySize, void *data,
                                int bufXSize, int bufYSize, GDALDataType bufType,
                                GSpacing pixelSpace, GSpacing lineSpace, CPLErr *err) {
    if (bufXSize != xSize || bufYSize != ySize || xSize < 1 || ySize < 1 || pixelSpace <= 0 ||
        lineSpace <= 0 || nBands < 2 ||
        !CPLTestBool(CPLGetConfigOption(WINDOW_READS_OPTION, "YES")))
        return false;
    const int window[4] = {xOff, yOff, xSize, ySize};
    const bool sequential = std::equal(window, window + 4, m_drillWindow) && band == m_drillNext;
    std::copy(window, window + 4, m_drillWindow);
    // The outstanding guess is right (this read drills the bands it
    // fetches), or wrong: then no more guesses. A guessed drill the client
    // left before its last band was a wrong guess too.
    const int guessed = m_guessedBands;
    m_guessedBands = 0;
    const bool leftEarly = m_drillGuessed && m_drillNext < m_drillFirst + m_drillCount;
    if ((guessed > 0 || leftEarly) && !sequential) {
        chunkref_read_ahead_stop(m_handle.get());
        m_guessing = false;
    }
    if (!sequential)
        m_drillGuessed = false;
    m_drillNext = band + 1;
    GDALRasterBand *target = GetRasterBand(band);
    const GDALDataType native = target->GetRasterDataType();
    const size_t size = static_cast<size_t>(GDALGetDataTypeSizeBytes(native));
    const size_t bandBytes = static_cast<size_t>(xSize) * static_cast<size_t>(ySize) * size;
    const bool held = std::equal(window, window + 4, m_heldWindow) && band >= m_drillFirst &&
                      band < m_drillFirst + m_drillCount;
    if (!held) {
        int blockWidth = 0;
        int blockHeight = 0;
        target->GetBlockSize(&blockWidth, &blockHeight);
        // At most a block's size: within one block, or across up to four.
        const bool small = xSize <= blockWidth && ySize <= blockHeight;
        const bool wholeBlock = xSize == blockWidth && ySize == blockHeight &&
                                xOff % blockWidth == 0 && yOff % blockHeight == 0;
        const bool failedBefore =
            xOff / blockWidth == m_aheadFailedX && yOff / blockHeight == m_aheadFailedY;
        if (!sequential || !small || wholeBlock || failedBefore) {
            m_drillAhead = 0;
            if (!sequential && small && !wholeBlock && !failedBefore)
                GuessNextBands(band, window, bandBytes);
            return false;
        }
        if (WindowCached(target, window))
            return false;
        if (guessed > 0)
            m_drillAhead = guessed - 1;
        else
            // (Bounded by the bands there are: drills held to MAX_DRILL_BYTES
            // by a large window come in many rounds.)
            m_drillAhead = m_drillAhead == 0                   ? FIRST_DRILL_BANDS
                           : m_drillAhead > nBands / DRILL_GROWTH ? nBands
                                                                  : m_drillAhead * DRILL_GROWTH;
        const int most = static_cast<int>(std::max<size_t>(1, MAX_DRILL_BYTES / bandBytes));
        const int count = std::min({m_drillAhead + 1, nBands - band + 1, most});
        m_drillCount = 0;
        try {
            m_drill.resize(bandBytes * static_cast<size_t>(count));
        } catch (const std::exception &) {
            return false;
        }
        std::vector<int> bands(static_cast<size_t>(count));
        for (int i = 0; i < count; ++i)
            bands[static_cast<size_t>(i)] = band + i;
        CPLPushErrorHandler(CPLQuietErrorHandler);
        const CPLErr read = ReadNative(xOff, yOff, xSize, ySize, m_drill.data(), count,
                                       bands.data(), size, static_cast<size_t>(xSize) * size,
                                       bandBytes, m_drill.size());
        CPLPopErrorHandler();
        if (read != CE_None) {
            CPLErrorReset();
            m_drillAhead = 0;
            m_aheadFailedX = xOff / blockWidth;
            m_aheadFailedY = yOff / blockHeight;
            return false;
        }
        std::copy(window, window + 4, m_heldWindow);
        m_drillFirst = band;
        m_drillCount = count;
        m_drillGuessed = guessed > 0;
    }
    const GByte *from = m_drill.data() + static_cast<size_t>(band - m_drillFirst) * bandBytes;
    for (int row = 0; row < ySize; ++row)
        GDALCopyWords64(from + static_cast<size_t>(row) * xSize * size, native,
                        static_cast<int>(size), static_cast<GByte *>(data) + row * lineSpace,
                        bufType, static_cast<int>(pixelSpace), xSize);
    *err = CE_None;
    return true;
}

/** At the first one-band read of a window no larger than a block (see
 *  ReadDrill), guesses that the client goes on band after band at that
 *  window (gdallocationinfo, a loop of `GetRasterBand(b).ReadRaster`
 *  through a time stack) and starts
 *  fetching the window's chunks of the bands after this one (as many as a
 *  drill holds) while this band is read: the drill at the next band then
 *  finds them in or in flight, instead of paying a round of requests per
 *  drill. Only remote chunks are fetched ahead (see chunkref_read_ahead).
 *  The first wrong guess (the next read is not the next band there) is
 *  stopped, and ends guessing for this dataset: a client that reads one
 *  band at many points pays for one guess. */
void ChunkRefDataset::GuessNextBands(int band, const int window[4], size_t bandBytes) {
    if (!m_guessing || band >= nBands)
        return;
    if (WindowCached(GetRasterBand(band + 1), window))
        return;
    const int most = static_cast<int>(std::max<size_t>(1, MAX_DRILL_BYTES / bandBytes));
    const int count = std::min(nBands - band, most);
    const CrReadAhead request{m_level,
                              static_cast<uint64_t>(window[0]),
                              static_cast<uint64_t>(window[1]),
                              static_cast<uint64_t>(window[2]),
                              static_cast<uint64_t>(window[3]),
                              static_cast<uint64_t>(band),
                              static_cast<uint64_t>(count),
                              static_cast<uint64_t>(band - 1)};
    CrStatus status{};
    // A guess that cannot be made is no error: the reads fetch for themselves.
    if (chunkref_read_ahead(m_handle.get(), &request, &status) > 0)
        m_guessedBands = count;
}

/** True if any block of `band` under `window` (x, y, width, height) is in
 *  GDAL's block cache. */
bool ChunkRefDataset::WindowCached(GDALRasterBand *band, const int window[4]) {
    int blockWidth = 0;
    int blockHeight = 0;
    band->GetBlockSize(&blockWidth, &blockHeight);
    for (int y = window[1] / blockHeight; y <= (window[1] + window[3] - 1) / blockHeight; ++y) {
        for (int x = window[0] / blockWidth; x <= (window[0] + window[2] - 1) / blockWidth; ++x) {
            if (GDALRasterBlock *cached = band->TryGetLockedBlockRef(x, y)) {
                cached->DropLock();
                return true;
            }
        }
    }
    return false;
}

/** True if the bands asked for include every band sharing their chunks. */
bool ChunkRefDataset::AnyBlockCached(int blockX, int blockY, const int *bandMap, int bandCount) {
    for (int i = 0; i < bandCount; ++i) {
        if (GDALRasterBlock *cached =
                GetRasterBand(bandMap[i])->TryGetLockedBlockRef(blockX, blockY)) {
            cached->DropLock();
            return true;
        }
    }
    return false;
}

bool ChunkRefDataset::CoversSharing(const int *bandMap, int bandCount) {
    const std::vector<int> sharing = SharingBands(bandMap, bandCount);
    return std::all_of(sharing.begin(), sharing.end(), [&](int b) {
        return std::find(bandMap, bandMap + bandCount, b) != bandMap + bandCount;
    });
}

/** Loads the blocks of a full-resolution window (and of the bands sharing
 *  their chunks) into GDAL's block cache with batched reads, so
 *  block-by-block readers that announce their window pay one round of
 *  requests instead of one per block. Resampled requests, and windows whose
 *  blocks would not fit in the cache, are left alone. */
CPLErr ChunkRefDataset::AdviseRead(int xOff, int yOff, int xSize, int ySize, int bufXSize,
                                   int bufYSize, GDALDataType, int bandCount, int *bandList,
                                   CrOptionList) {
    if (nBands == 0 || bufXSize != xSize || bufYSize != ySize || xSize < 1 || ySize < 1 ||
        xOff < 0 || yOff < 0 || xOff + xSize > nRasterXSize || yOff + ySize > nRasterYSize ||
        !CPLTestBool(CPLGetConfigOption(WINDOW_READS_OPTION, "YES")))
        return CE_None;
    try {
        std::vector<int> bands;
        for (int b = 0; b < (bandList != nullptr ? bandCount : nBands); ++b)
            bands.push_back(bandList != nullptr ? bandList[b] : b + 1);
        bands = SharingBands(bands.data(), static_cast<int>(bands.size()));
        int blockWidth = 0;
        int blockHeight = 0;
        GetRasterBand(1)->GetBlockSize(&blockWidth, &blockHeight);
        const int firstX = xOff / blockWidth;
        const int lastX = (xOff + xSize - 1) / blockWidth;
        const int firstY = yOff / blockHeight;
        const int lastY = (yOff + ySize - 1) / blockHeight;
        const size_t blocks =
            static_cast<size_t>(lastX - firstX + 1) * static_cast<size_t>(lastY - firstY + 1);
        if (!FitsInCache(blocks, bands.size()))
            return CE_None;
        return LoadBlocks(firstX, lastX, firstY, lastY, bands);
    } catch (const std::bad_alloc &) {
        CPLError(CE_Failure, CPLE_OutOfMemory,
                 "ChunkRef: out of memory prefetching a %dx%d window", xSize, ySize);
        return CE_Failure;
    }
}

/** Bytes of one block of this level's bands. */
size_t ChunkRefDataset::BlockBytes() {
    int blockWidth = 0;
    int blockHeight = 0;
    GDALRasterBand *band = GetRasterBand(1);
    band->GetBlockSize(&blockWidth, &blockHeight);
    return static_cast<size_t>(blockWidth) * static_cast<size_t>(blockHeight) *
           static_cast<size_t>(GDALGetDataTypeSizeBytes(band->GetRasterDataType()));
}

/** True if `blocks` blocks of `bands` bands take at most half of GDAL's block cache. */
bool ChunkRefDataset::FitsInCache(size_t blocks, size_t bands) {
    const double bytes = static_cast<double>(blocks) * static_cast<double>(bands) *
                         static_cast<double>(BlockBytes());
    return bytes <= static_cast<double>(GDALGetCacheMax64()) / 2;
}

/** How many bands after `band` to read ahead with its block: none, unless
 *  the bands are being read one after another at the same block (a pixel
 *  drill through a time stack by gdallocationinfo, or a client's loop of
 *  band reads), then 8, four times as many at each next read (365 steps
 *  in 5 rounds of requests), at most MAX_READ_AHEAD_BANDS, the last band
 *  and what fits in half the block cache. */
int ChunkRefDataset::ReadAhead(int blockX, int blockY, int band) {
    const bool sequential = blockX == m_nextBlockX && blockY == m_nextBlockY &&
                            band == m_nextBand &&
                            !(blockX == m_aheadFailedX && blockY == m_aheadFailedY);
    m_readAhead = sequential ? std::min(std::max(8, 4 * m_readAhead), MAX_READ_AHEAD_BANDS) : 0;
    m_readAhead = std::min(m_readAhead, nBands - band);
    while (m_readAhead > 0 && !FitsInCache(1, static_cast<size_t>(m_readAhead) + 1))
        m_readAhead /= 2;
    m_nextBlockX = blockX;
    m_nextBlockY = blockY;
    m_nextBand = band + m_readAhead + 1;
    return m_readAhead;
}

/** The bands (1-based, ascending, no repeats) whose pixels live in the same
 *  chunks as any of `bands`, these included. */
std::vector<int> ChunkRefDataset::SharingBands(const int *bands, int count) {
    std::vector<int> out;
    std::vector<uint64_t> sharing;
    for (int i = 0; i < count; ++i) {
        CrStatus status{};
        sharing.resize(16);
        for (;;) {
            const int64_t n =
                chunkref_chunk_bands(m_handle.get(), m_level, static_cast<uint64_t>(bands[i] - 1),
                                     sharing.data(), sharing.size(), &status);
            if (n < 0) { // cannot happen for a band of this dataset; read it alone
                sharing.assign(1, static_cast<uint64_t>(bands[i] - 1));
                break;
            }
            const bool complete = static_cast<size_t>(n) <= sharing.size();
            sharing.resize(static_cast<size_t>(n));
            if (complete)
                break;
        }
        for (uint64_t b : sharing)
            out.push_back(static_cast<int>(b + 1));
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

/** Fills `planes` with one batched read, then unlocks their cache blocks;
 *  on failure the blocks filled for the cache are discarded again. */
CPLErr ChunkRefDataset::ReadPlanes(std::vector<Plane> &planes, bool window) {
    if (planes.empty())
        return CE_None;
    std::vector<uint64_t> xs;
    std::vector<uint64_t> ys;
    std::vector<uint64_t> bands;
    std::vector<void *> buffers;
    for (const Plane &p : planes) {
        xs.push_back(static_cast<uint64_t>(p.x));
        ys.push_back(static_cast<uint64_t>(p.y));
        bands.push_back(static_cast<uint64_t>(p.band - 1));
        buffers.push_back(p.buffer);
    }
    CrBlocksRequest request{};
    request.level = m_level;
    request.count = planes.size();
    request.block_x = xs.data();
    request.block_y = ys.data();
    request.bands = bands.data();
    request.buffers = buffers.data();
    request.buffer_bytes = BlockBytes();
    CrStatus status{};
    const bool failed = chunkref_read_blocks(m_handle.get(), &request, &status) != 0;
    for (const Plane &p : planes) {
        if (p.block == nullptr)
            continue;
        p.block->DropLock();
        if (failed)
            GetRasterBand(p.band)->FlushBlock(p.x, p.y, FALSE);
    }
    std::vector<int> read;
    for (const Plane &p : planes)
        read.push_back(p.band);
    planes.clear();
    if (failed) {
        // GDAL itself names the dataset and band of a failed IReadBlock.
        if (window)
            RaiseReadStatus(status, read);
        else
            RaiseStatus(status);
        return CE_Failure;
    }
    return CE_None;
}

/** Raises the error of a failed window read the way GDAL words a failed
 *  block read: "<dataset>, band N: " (or "bands 1,2,3") before the message,
 *  so that a read names the index and band whichever path it took. */
void ChunkRefDataset::RaiseReadStatus(const CrStatus &status, std::vector<int> bands) const {
    std::sort(bands.begin(), bands.end());
    bands.erase(std::unique(bands.begin(), bands.end()), bands.end());
    std::string which = bands.size() == 1 ? "band " : "bands ";
    if (bands.size() > 8) {
        which += std::to_string(bands.front()) + " to " + std::to_string(bands.back());
    } else {
        for (size_t i = 0; i < bands.size(); ++i)
            which += (i ? "," : "") + std::to_string(bands[i]);
    }
    CPLError(CE_Failure, status.code != 0 ? status.code : CPLE_AppDefined, "%s, %s: ChunkRef: %s",
             GetDescription(), which.c_str(), status.message);
}

/** Puts blocks [firstX, lastX] x [firstY, lastY] of `bands` (1-based) into
 *  GDAL's block cache: those not there yet are read in batches of at most
 *  MAX_BATCH_BYTES, each batch one chunkref_read_blocks call. */
CPLErr ChunkRefDataset::LoadBlocks(int firstX, int lastX, int firstY, int lastY,
                                   const std::vector<int> &bands) {
    const size_t blockBytes = BlockBytes();
    std::vector<Plane> planes;
    for (int by = firstY; by <= lastY; ++by) {
        for (int bx = firstX; bx <= lastX; ++bx) {
            for (int b : bands) {
                GDALRasterBand *band = GetRasterBand(b);
                if (GDALRasterBlock *cached = band->TryGetLockedBlockRef(bx, by)) {
                    cached->DropLock();
                    continue;
                }
                GDALRasterBlock *block = band->GetLockedBlockRef(bx, by, TRUE);
                if (block == nullptr) {
                    ReadPlanes(planes, true);
                    return CE_Failure;
                }
                planes.push_back({bx, by, b, block->GetDataRef(), block});
                if ((planes.size() + 1) * blockBytes > MAX_BATCH_BYTES &&
                    ReadPlanes(planes, true) != CE_None)
                    return CE_Failure;
            }
        }
    }
    return ReadPlanes(planes, true);
}

/** Reads a window in the native data type into a buffer of `bufferBytes`. */
CPLErr ChunkRefDataset::ReadNative(int xOff, int yOff, int xSize, int ySize, GByte *data,
                                   int bandCount, const int *bandMap, size_t pixelSpace,
                                   size_t lineSpace, size_t bandSpace, size_t bufferBytes) {
    std::vector<uint64_t> bands(static_cast<size_t>(bandCount));
    for (int b = 0; b < bandCount; ++b)
        bands[static_cast<size_t>(b)] = static_cast<uint64_t>(bandMap[b] - 1);
    CrWindowRequest request{};
    request.level = m_level;
    request.x = static_cast<uint64_t>(xOff);
    request.y = static_cast<uint64_t>(yOff);
    request.width = static_cast<uint64_t>(xSize);
    request.height = static_cast<uint64_t>(ySize);
    request.out = Output(bands, data, pixelSpace, lineSpace, bandSpace, bufferBytes);
    CrStatus status{};
    if (chunkref_read_window(m_handle.get(), &request, &status) != 0) {
        RaiseReadStatus(status, std::vector<int>(bandMap, bandMap + bandCount));
        return CE_Failure;
    }
    return CE_None;
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
    driver->SetMetadataItem(GDAL_DCAP_MULTIDIM_RASTER, "YES");
    driver->SetMetadataItem(GDAL_DMD_LONGNAME,
                            "Chunk reference index (Kerchunk JSON or Parquet, reference tables)");
    driver->SetMetadataItem(GDAL_DMD_HELPTOPIC, HELP_TOPIC);
    driver->SetMetadataItem(GDAL_DMD_EXTENSIONS, "json parquet parq fgb");
    driver->SetMetadataItem(GDAL_DMD_CONNECTION_PREFIX, CONNECTION_PREFIX);
    driver->SetMetadataItem(GDAL_DMD_SUBDATASETS, "YES");
    driver->SetMetadataItem(GDAL_DMD_OPENOPTIONLIST, OPEN_OPTIONS);
    driver->pfnIdentify = ChunkRefDataset::Identify;
    driver->pfnOpen = ChunkRefDataset::Open;
    GetGDALDriverManager()->RegisterDriver(driver);
}
