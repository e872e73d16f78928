/*
 * ChunkRef GDAL driver: the multidimensional view (GDAL_OF_MULTIDIM_RASTER).
 *
 * GDAL's group, dimension, array and attribute classes over the cube the
 * Rust core describes (chunkref_cube_describe) and reads
 * (chunkref_cube_read). Which arrays, dimensions, indexing variables and
 * attributes there are is decided in Rust (src/read/cube.rs).
 */

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cpl_error.h"
#include "cpl_json.h"
#include "gdal_priv.h"
#include "ogr_spatialref.h"

#include "chunkref.h"
#include "gdal_compat.h"
#include "shim_common.h"

namespace {

using chunkref_shim::MAX_CONVERSION_BYTES;
using chunkref_shim::RaiseStatus;


/** GDAL's full name of a group path ("" is the root, "/"). */
std::string GroupFullName(const std::string &path) { return "/" + path; }

/** The opened cube and its description, shared by every object of the view. */
class Cube final : public std::enable_shared_from_this<Cube> {
  public:
    Cube(CrCube *handle, std::string filename)
        : m_handle(handle, chunkref_cube_close), m_filename(std::move(filename)) {}

    /** Parses the description and makes the dimensions; false on failure. */
    bool Load();
    /** Array `i` of the description (made once while anything holds it). */
    std::shared_ptr<GDALMDArray> Array(int i);
    /** The group at `path`. */
    std::shared_ptr<GDALGroup> Group(const std::string &path);

    const CrCube *Handle() const { return m_handle.get(); }
    const std::string &Filename() const { return m_filename; }
    const CPLJSONArray &Groups() const { return m_groups; }
    const CPLJSONArray &Arrays() const { return m_arrays; }
    const std::vector<std::shared_ptr<GDALDimension>> &Dims() const { return m_dims; }
    const CPLJSONArray &DimsJson() const { return m_dimsJson; }

  private:
    std::unique_ptr<CrCube, void (*)(CrCube *)> m_handle;
    std::string m_filename;
    CPLJSONDocument m_doc;
    CPLJSONArray m_groups, m_dimsJson, m_arrays;
    std::vector<std::shared_ptr<GDALDimension>> m_dims;
    std::vector<std::weak_ptr<GDALMDArray>> m_made;
};

/** A dimension whose indexing variable the cube makes on demand. */
class ChunkRefDimension final : public GDALDimension {
  public:
    ChunkRefDimension(const std::weak_ptr<Cube> &cube, const std::string &parent,
                      const std::string &name, const std::string &type,
                      const std::string &direction, GUInt64 size, int indexing)
        : GDALDimension(parent, name, type, direction, size), m_cube(cube), m_indexing(indexing) {}

    std::shared_ptr<GDALMDArray> GetIndexingVariable() const override {
        auto cube = m_cube.lock();
        return cube && m_indexing >= 0 ? cube->Array(m_indexing) : nullptr;
    }

  private:
    std::weak_ptr<Cube> m_cube;
    int m_indexing;
};

/** An attribute from a JSON value: text, a number, or a list of numbers or
 *  texts (1-D); anything else as its JSON text. */
class ChunkRefAttribute final : public GDALAttribute {
  public:
    ChunkRefAttribute(const std::string &parent, const std::string &name,
                      const CPLJSONObject &value);

    const std::vector<std::shared_ptr<GDALDimension>> &GetDimensions() const override {
        return m_dims;
    }
    const GDALExtendedDataType &GetDataType() const override { return m_dt; }

  protected:
    bool IRead(const GUInt64 *start, const size_t *count, const GInt64 *step,
               const GPtrDiff_t *stride, const GDALExtendedDataType &bufferType,
               void *buffer) const override;

  private:
    std::vector<std::shared_ptr<GDALDimension>> m_dims;
    GDALExtendedDataType m_dt = GDALExtendedDataType::CreateString();
    std::vector<double> m_numbers;
    std::vector<std::string> m_texts;
};

ChunkRefAttribute::ChunkRefAttribute(const std::string &parent, const std::string &name,
                                     const CPLJSONObject &value)
    : GDALAbstractMDArray(parent, name), GDALAttribute(parent, name) {
    const auto type = value.GetType();
    auto isNumber = [](CPLJSONObject::Type t) {
        return t == CPLJSONObject::Type::Integer || t == CPLJSONObject::Type::Long ||
               t == CPLJSONObject::Type::Double;
    };
    if (type == CPLJSONObject::Type::String) {
        m_texts.push_back(value.ToString());
    } else if (isNumber(type)) {
        m_numbers.push_back(value.ToDouble());
    } else if (type == CPLJSONObject::Type::Array) {
        const CPLJSONArray list = value.ToArray();
        bool numbers = list.Size() > 0, texts = list.Size() > 0;
        for (int i = 0; i < list.Size(); ++i) {
            numbers = numbers && isNumber(list[i].GetType());
            texts = texts && list[i].GetType() == CPLJSONObject::Type::String;
        }
        for (int i = 0; i < list.Size(); ++i) {
            if (numbers)
                m_numbers.push_back(list[i].ToDouble());
            else if (texts)
                m_texts.push_back(list[i].ToString());
        }
        if (numbers || texts)
            m_dims.push_back(std::make_shared<GDALDimension>(std::string(), "dim0", std::string(),
                                                             std::string(), list.Size()));
    }
    if (m_numbers.empty() && m_texts.empty() && m_dims.empty()) {
        // Objects, booleans, nulls and mixed lists: their JSON text, as
        // GDAL's Zarr driver shows them.
        m_texts.push_back(value.Format(CPLJSONObject::PrettyFormat::Plain));
        m_dt = GDALExtendedDataType::CreateString(0, GEDTST_JSON);
    }
    if (!m_numbers.empty() || (m_texts.empty() && !m_dims.empty()))
        m_dt = GDALExtendedDataType::Create(GDT_Float64);
}

bool ChunkRefAttribute::IRead(const GUInt64 *start, const size_t *count, const GInt64 *step,
                              const GPtrDiff_t *stride, const GDALExtendedDataType &bufferType,
                              void *buffer) const {
    const size_t n = m_dims.empty() ? 1 : count[0];
    auto *out = static_cast<GByte *>(buffer);
    for (size_t k = 0; k < n; ++k) {
        const size_t i = m_dims.empty() ? 0 : static_cast<size_t>(start[0] + k * step[0]);
        GByte *dst = out + (m_dims.empty() ? 0 : k * stride[0] * bufferType.GetSize());
        if (m_dt.GetClass() == GEDTC_STRING) {
            const char *text = m_texts[i].c_str();
            GDALExtendedDataType::CopyValue(&text, m_dt, dst, bufferType);
        } else {
            GDALExtendedDataType::CopyValue(&m_numbers[i], m_dt, dst, bufferType);
        }
    }
    return true;
}

/** The attributes of a JSON object, for the object named `fullName`. */
std::vector<std::shared_ptr<GDALAttribute>> Attributes(const std::string &fullName,
                                                       const CPLJSONObject &attributes) {
    std::vector<std::shared_ptr<GDALAttribute>> out;
    for (const auto &child : attributes.GetChildren())
        out.push_back(std::make_shared<ChunkRefAttribute>(fullName, child.GetName(), child));
    return out;
}

/** One array of the cube. */
class ChunkRefArray final : public GDALMDArray {
  public:
    ChunkRefArray(std::shared_ptr<Cube> cube, int id, const std::string &parent,
                  const CPLJSONObject &json);
    /** A new array that knows its own shared pointer (as GDAL's views need). */
    static std::shared_ptr<ChunkRefArray> Create(std::shared_ptr<Cube> cube, int id,
                                                 const std::string &parent,
                                                 const CPLJSONObject &json) {
        auto array = std::make_shared<ChunkRefArray>(std::move(cube), id, parent, json);
        array->SetSelf(array);
        return array;
    }

    bool IsWritable() const override { return false; }
    const std::string &GetFilename() const override { return m_cube->Filename(); }
    const std::vector<std::shared_ptr<GDALDimension>> &GetDimensions() const override {
        return m_dims;
    }
    const GDALExtendedDataType &GetDataType() const override { return m_dt; }
    std::vector<GUInt64> GetBlockSize() const override { return m_block; }
    const std::string &GetUnit() const override { return m_unit; }
    std::shared_ptr<OGRSpatialReference> GetSpatialRef() const override { return m_srs; }
    const void *GetRawNoDataValue() const override {
        return m_nodata.empty() ? nullptr : m_nodata.data();
    }
    double GetOffset(bool *has, GDALDataType *storage) const override {
        return Number("offset", has, storage);
    }
    double GetScale(bool *has, GDALDataType *storage) const override {
        return Number("scale", has, storage);
    }
    std::vector<std::shared_ptr<GDALAttribute>> GetAttributes(CSLConstList) const override {
        return Attributes(GetFullName(), m_json.GetObj("attributes"));
    }
#if CR_HAS_RAW_BLOCK_INFO
    bool GetRawBlockInfo(const uint64_t *block, GDALMDArrayRawBlockInfo &info) const override;
#endif

  protected:
    bool IRead(const GUInt64 *start, const size_t *count, const GInt64 *step,
               const GPtrDiff_t *stride, const GDALExtendedDataType &bufferType,
               void *buffer) const override;

  private:
    /** A number of the description ("scale", "offset"), null meaning none. */
    double Number(const char *key, bool *has, GDALDataType *storage) const;
    /** Reads in the native type with strides in bytes. */
    bool ReadNative(const GUInt64 *start, const size_t *count, const GInt64 *step,
                    const std::vector<ptrdiff_t> &strides, void *buffer) const;

    std::shared_ptr<Cube> m_cube;
    int m_id;
    CPLJSONObject m_json;
    std::vector<std::shared_ptr<GDALDimension>> m_dims;
    GDALExtendedDataType m_dt = GDALExtendedDataType::Create(GDT_Unknown);
    std::vector<GUInt64> m_block;
    std::string m_unit;
    std::vector<GByte> m_nodata;
    std::shared_ptr<OGRSpatialReference> m_srs;
};

ChunkRefArray::ChunkRefArray(std::shared_ptr<Cube> cube, int id, const std::string &parent,
                             const CPLJSONObject &json)
    : GDALAbstractMDArray(parent, json.GetString("name")),
      GDALMDArray(parent, json.GetString("name")), m_cube(std::move(cube)), m_id(id),
      m_json(json) {
    const CPLJSONArray dims = json.GetArray("dims");
    for (int i = 0; i < dims.Size(); ++i)
        m_dims.push_back(m_cube->Dims()[static_cast<size_t>(dims[i].ToInteger())]);
    const CPLJSONArray block = json.GetArray("block");
    for (int i = 0; i < block.Size(); ++i)
        m_block.push_back(static_cast<GUInt64>(block[i].ToLong()));
    m_dt = GDALExtendedDataType::Create(chunkref_shim::ToGDALType(
        static_cast<uint32_t>(json.GetInteger("kind")), static_cast<uint32_t>(json.GetInteger("size"))));
    m_unit = json.GetString("unit");
    const CPLJSONObject nodata = json.GetObj("nodata");
    if (nodata.IsValid() && nodata.GetType() != CPLJSONObject::Type::Null &&
        m_dt.GetNumericDataType() != GDT_Unknown) {
        const double value = nodata.ToDouble();
        m_nodata.resize(m_dt.GetSize());
        GDALCopyWords64(&value, GDT_Float64, 0, m_nodata.data(), m_dt.GetNumericDataType(), 0, 1);
    }
    const std::string crs = json.GetString("crs");
    const CPLJSONArray xy = json.GetArray("xy");
    if (!crs.empty() && xy.Size() == 2) {
        auto srs = std::make_shared<OGRSpatialReference>();
        if (srs->SetFromUserInput(crs.c_str()) == OGRERR_NONE) {
            // GDAL's drivers map the CRS's axes to the array's dimensions
            // (1-based): easting/longitude to x, northing/latitude to y.
            const int x = xy[0].ToInteger() + 1, y = xy[1].ToInteger() + 1;
            const bool yFirst = srs->EPSGTreatsAsLatLong() || srs->EPSGTreatsAsNorthingEasting();
            srs->SetDataAxisToSRSAxisMapping(yFirst ? std::vector<int>{y, x} : std::vector<int>{x, y});
            m_srs = std::move(srs);
        } else {
            CPLError(CE_Warning, CPLE_AppDefined, "ChunkRef: array %s: CRS '%s' not understood",
                     GetFullName().c_str(), crs.c_str());
        }
    }
}

double ChunkRefArray::Number(const char *key, bool *has, GDALDataType *storage) const {
    const CPLJSONObject value = m_json.GetObj(key);
    const bool present = value.IsValid() && value.GetType() != CPLJSONObject::Type::Null;
    if (has != nullptr)
        *has = present;
    if (storage != nullptr)
        *storage = GDT_Unknown;
    return present ? value.ToDouble() : (std::strcmp(key, "scale") == 0 ? 1.0 : 0.0);
}

bool ChunkRefArray::ReadNative(const GUInt64 *start, const size_t *count, const GInt64 *step,
                               const std::vector<ptrdiff_t> &strides, void *buffer) const {
    const size_t rank = m_dims.size();
    std::vector<uint64_t> starts(start, start + rank), counts(count, count + rank);
    std::vector<int64_t> steps(step, step + rank);
    CrHyperslab request{};
    request.array = static_cast<uint32_t>(m_id);
    request.rank = rank;
    request.start = starts.data();
    request.count = counts.data();
    request.step = steps.data();
    request.stride = strides.data();
    request.buffer = buffer;
    CrStatus status{};
    if (chunkref_cube_read(m_cube->Handle(), &request, &status) != 0) {
        RaiseStatus(status);
        return false;
    }
    return true;
}

bool ChunkRefArray::IRead(const GUInt64 *start, const size_t *count, const GInt64 *step,
                          const GPtrDiff_t *stride, const GDALExtendedDataType &bufferType,
                          void *buffer) const {
    const size_t rank = m_dims.size();
    const size_t size = m_dt.GetSize();
    if (bufferType == m_dt) {
        std::vector<ptrdiff_t> strides(rank);
        for (size_t d = 0; d < rank; ++d)
            strides[d] = static_cast<ptrdiff_t>(stride[d] * static_cast<GPtrDiff_t>(size));
        return ReadNative(start, count, step, strides, buffer);
    }
    // Another type: read packed in the native type, then convert.
    size_t elements = 1;
    for (size_t d = 0; d < rank; ++d)
        elements *= count[d];
    if (elements > MAX_CONVERSION_BYTES / size) {
        CPLError(CE_Failure, CPLE_OutOfMemory,
                 "ChunkRef: array %s: a read in another data type is limited to %zu bytes at "
                 "once; read in the array's own type or in smaller pieces",
                 GetFullName().c_str(), MAX_CONVERSION_BYTES);
        return false;
    }
    std::vector<GByte> native(elements * size);
    std::vector<ptrdiff_t> packed(rank);
    for (size_t d = rank; d-- > 0;)
        packed[d] = d + 1 == rank ? static_cast<ptrdiff_t>(size)
                                  : packed[d + 1] * static_cast<ptrdiff_t>(count[d + 1]);
    if (!ReadNative(start, count, step, packed, native.data()))
        return false;
    std::vector<size_t> idx(rank, 0);
    const size_t outSize = bufferType.GetSize();
    for (size_t e = 0; e < elements; ++e) {
        GPtrDiff_t at = 0;
        for (size_t d = 0; d < rank; ++d)
            at += static_cast<GPtrDiff_t>(idx[d]) * stride[d];
        GDALExtendedDataType::CopyValue(native.data() + e * size, m_dt,
                                        static_cast<GByte *>(buffer) + at * static_cast<GPtrDiff_t>(outSize),
                                        bufferType);
        for (size_t d = rank; d-- > 0;) {
            if (++idx[d] < count[d])
                break;
            idx[d] = 0;
        }
    }
    return true;
}

#if CR_HAS_RAW_BLOCK_INFO
/** Callback of chunkref_cube_block_info: fills a GDALMDArrayRawBlockInfo. */
void SetRawBlockInfo(void *ctx, const CrBlockInfo *block) {
    auto &out = *static_cast<GDALMDArrayRawBlockInfo *>(ctx);
    CPLStringList extra;
    if (block->codecs != nullptr && *block->codecs != '\0')
        extra.SetNameValue("CODECS", block->codecs);
    if (block->kind == 1 || block->kind == 3) {
        out.pszFilename = CPLStrdup(block->file);
        out.nOffset = block->offset;
        out.nSize = block->size;
        if (block->kind == 1 && block->size == 0)
            extra.SetNameValue("WHOLE_FILE", "YES");
        std::string ranges;
        for (size_t i = 0; block->kind == 3 && i < block->range_count; ++i)
            ranges += (i == 0 ? "" : ",") + std::to_string(block->ranges[2 * i]) + ":" +
                      std::to_string(block->ranges[2 * i + 1]);
        if (!ranges.empty())
            extra.SetNameValue("RANGES", ranges.c_str());
    } else if (block->kind == 2) {
        out.nSize = block->size;
        out.pabyInlineData = static_cast<GByte *>(VSI_MALLOC_VERBOSE(block->size + 1));
        if (out.pabyInlineData != nullptr && block->size > 0)
            std::memcpy(out.pabyInlineData, block->data, block->size);
    }
    out.papszInfo = extra.StealList();
}

bool ChunkRefArray::GetRawBlockInfo(const uint64_t *block, GDALMDArrayRawBlockInfo &info) const {
    info.clear();
    CrStatus status{};
    if (chunkref_cube_block_info(m_cube->Handle(), static_cast<uint32_t>(m_id), block,
                                 m_dims.size(), SetRawBlockInfo, &info, &status) != 0) {
        RaiseStatus(status);
        return false;
    }
    return true;
}
#endif

/** One group of the cube. */
class ChunkRefGroup final : public GDALGroup {
  public:
    ChunkRefGroup(std::shared_ptr<Cube> cube, const std::string &path)
        : GDALGroup(path.empty() ? std::string() : GroupFullName(Parent(path)),
                    path.empty() ? "/" : Leaf(path)),
          m_cube(std::move(cube)), m_path(path) {}

    std::vector<std::string> GetMDArrayNames(CSLConstList) const override;
    std::shared_ptr<GDALMDArray> OpenMDArray(const std::string &name,
                                             CSLConstList) const override;
    std::vector<std::string> GetGroupNames(CSLConstList) const override;
    std::shared_ptr<GDALGroup> OpenGroup(const std::string &name, CSLConstList) const override;
    std::vector<std::shared_ptr<GDALDimension>> GetDimensions(CSLConstList) const override;
    std::vector<std::shared_ptr<GDALAttribute>> GetAttributes(CSLConstList) const override;

  private:
    static std::string Parent(const std::string &path) {
        const auto slash = path.rfind('/');
        return slash == std::string::npos ? std::string() : path.substr(0, slash);
    }
    static std::string Leaf(const std::string &path) {
        const auto slash = path.rfind('/');
        return slash == std::string::npos ? path : path.substr(slash + 1);
    }
    /** The path of child `name`. */
    std::string Child(const std::string &name) const {
        return m_path.empty() ? name : m_path + "/" + name;
    }
    /** The number of the listed array `name` of this group, or -1. */
    int ArrayNumber(const std::string &name) const;

    std::shared_ptr<Cube> m_cube;
    std::string m_path;
};

int ChunkRefGroup::ArrayNumber(const std::string &name) const {
    const CPLJSONArray &arrays = m_cube->Arrays();
    for (int i = 0; i < arrays.Size(); ++i)
        if (arrays[i].GetBool("listed") && arrays[i].GetString("scope") == m_path &&
            arrays[i].GetString("name") == name)
            return i;
    return -1;
}

std::vector<std::string> ChunkRefGroup::GetMDArrayNames(CSLConstList) const {
    std::vector<std::string> names;
    const CPLJSONArray &arrays = m_cube->Arrays();
    for (int i = 0; i < arrays.Size(); ++i)
        if (arrays[i].GetBool("listed") && arrays[i].GetString("scope") == m_path)
            names.push_back(arrays[i].GetString("name"));
    return names;
}

std::shared_ptr<GDALMDArray> ChunkRefGroup::OpenMDArray(const std::string &name,
                                                        CSLConstList) const {
    const int i = ArrayNumber(name);
    return i < 0 ? nullptr : m_cube->Array(i);
}

std::vector<std::string> ChunkRefGroup::GetGroupNames(CSLConstList) const {
    std::vector<std::string> names;
    const CPLJSONArray &groups = m_cube->Groups();
    for (int i = 0; i < groups.Size(); ++i) {
        const std::string path = groups[i].GetString("path");
        if (!path.empty() && Parent(path) == m_path)
            names.push_back(Leaf(path));
    }
    return names;
}

std::shared_ptr<GDALGroup> ChunkRefGroup::OpenGroup(const std::string &name,
                                                    CSLConstList) const {
    const std::string path = Child(name);
    const CPLJSONArray &groups = m_cube->Groups();
    for (int i = 0; i < groups.Size(); ++i)
        if (groups[i].GetString("path") == path)
            return m_cube->Group(path);
    return nullptr;
}

std::vector<std::shared_ptr<GDALDimension>> ChunkRefGroup::GetDimensions(CSLConstList) const {
    std::vector<std::shared_ptr<GDALDimension>> dims;
    const CPLJSONArray &json = m_cube->DimsJson();
    for (int i = 0; i < json.Size(); ++i)
        if (json[i].GetBool("listed") && json[i].GetString("scope") == m_path)
            dims.push_back(m_cube->Dims()[static_cast<size_t>(i)]);
    return dims;
}

std::vector<std::shared_ptr<GDALAttribute>> ChunkRefGroup::GetAttributes(CSLConstList) const {
    const CPLJSONArray &groups = m_cube->Groups();
    for (int i = 0; i < groups.Size(); ++i)
        if (groups[i].GetString("path") == m_path)
            return Attributes(GetFullName(), groups[i].GetObj("attributes"));
    return {};
}

bool Cube::Load() {
    if (!m_doc.LoadMemory(chunkref_cube_describe(m_handle.get())))
        return false;
    const CPLJSONObject root = m_doc.GetRoot();
    m_groups = root.GetArray("groups");
    m_dimsJson = root.GetArray("dims");
    m_arrays = root.GetArray("arrays");
    const CPLJSONArray warnings = root.GetArray("warnings");
    for (int i = 0; i < warnings.Size(); ++i)
        CPLError(CE_Warning, CPLE_AppDefined, "ChunkRef: %s", warnings[i].ToString().c_str());
    for (int i = 0; i < m_dimsJson.Size(); ++i) {
        const CPLJSONObject d = m_dimsJson[i];
        const CPLJSONObject indexing = d.GetObj("indexing");
        const int var = indexing.GetType() == CPLJSONObject::Type::Integer ? indexing.ToInteger() : -1;
        // A dimension of one array and no group (scope "", not listed) has
        // no parent, as GDAL's Zarr driver names such dimensions.
        const std::string scope = d.GetString("scope");
        const bool orphan = scope.empty() && !d.GetBool("listed");
        m_dims.push_back(std::make_shared<ChunkRefDimension>(
            weak_from_this(), orphan ? std::string() : GroupFullName(scope), d.GetString("name"),
            d.GetString("type"), d.GetString("direction"),
            static_cast<GUInt64>(d.GetLong("size")), var));
    }
    m_made.resize(static_cast<size_t>(m_arrays.Size()));
    return true;
}

std::shared_ptr<GDALMDArray> Cube::Array(int i) {
    if (i < 0 || i >= m_arrays.Size())
        return nullptr;
    if (auto made = m_made[static_cast<size_t>(i)].lock())
        return made;
    const CPLJSONObject json = m_arrays[i];
    auto array =
        ChunkRefArray::Create(shared_from_this(), i, GroupFullName(json.GetString("scope")), json);
    m_made[static_cast<size_t>(i)] = array;
    return array;
}

std::shared_ptr<GDALGroup> Cube::Group(const std::string &path) {
    return std::make_shared<ChunkRefGroup>(shared_from_this(), path);
}

/** The dataset GDAL's multidimensional API opens: its root group. */
class ChunkRefCubeDataset final : public GDALDataset {
  public:
    explicit ChunkRefCubeDataset(std::shared_ptr<GDALGroup> root) : m_root(std::move(root)) {}
    std::shared_ptr<GDALGroup> GetRootGroup() const override { return m_root; }

  private:
    std::shared_ptr<GDALGroup> m_root;
};

} // namespace

namespace chunkref_shim {

GDALDataset *OpenCube(GDALOpenInfo *info) {
    CrStatus status{};
    CrCube *handle = chunkref_cube_open(info->pszFilename, info->papszOpenOptions, &status);
    if (handle == nullptr) {
        RaiseStatus(status);
        return nullptr;
    }
    auto cube = std::make_shared<Cube>(handle, info->pszFilename);
    if (!cube->Load()) {
        CPLError(CE_Failure, CPLE_AppDefined, "ChunkRef: %s: the cube's description does not parse",
                 info->pszFilename);
        return nullptr;
    }
    auto ds = std::make_unique<ChunkRefCubeDataset>(cube->Group(std::string()));
    ds->SetDescription(info->pszFilename);
    return ds.release();
}

} // namespace chunkref_shim
