//! NITF 2.0 / 2.1 and NSIF 1.0 headers: the file header's segment table and
//! the image subheader fields an index needs (MIL-STD-2500C).

use crate::base::error::Result;
use crate::io::source::Source;

/// Offset of HL (header length) in the file header, for 2.0, 2.1 and NSIF
/// when no downgrade event field is present.
const HL_AT: usize = 354;
/// The 2.0 security downgrade value that adds a 40-byte event field.
const DOWNGRADE_EVENT: &str = "999998";
/// Most image segments followed.
const MAX_IMAGES: usize = 999;

/// Where an image segment is.
#[derive(Debug, Clone, Copy)]
pub struct Segment {
    /// Offset of the image subheader.
    pub subheader: u64,
    /// Length of the image subheader.
    pub subheader_len: u64,
    /// Length of the image data that follows it.
    pub data_len: u64,
}

/// The image subheader fields the index needs.
#[derive(Debug, Clone)]
pub struct Image {
    /// Rows and columns.
    pub rows: u64,
    /// See `rows`.
    pub cols: u64,
    /// INT, SI, R, C or B.
    pub pvtype: String,
    /// IREP (MONO, RGB, MULTI, ...).
    pub irep: String,
    /// Compression: NC, NM, C3, M3, C8, M8, ...
    pub ic: String,
    /// COMRAT: the compression rate code (blank for NC / NM).
    pub comrat: String,
    /// IREPBANDn of each band.
    pub band_reps: Vec<String>,
    /// The look-up tables (LUTDnm) of each band, each NELUTn bytes.
    pub luts: Vec<Vec<Vec<u8>>>,
    /// B, P, R or S.
    pub imode: char,
    /// Blocks per row and per column.
    pub blocks_across: u64,
    /// See `blocks_across`.
    pub blocks_down: u64,
    /// Pixels per block horizontally and vertically.
    pub block_width: u64,
    /// See `block_width`.
    pub block_height: u64,
    /// Bits per pixel per band.
    pub nbpp: u64,
    /// Actual bits per pixel per band.
    pub abpp: u64,
    /// IID1 (IID in NITF 2.0), trailing blanks removed: `CADRG`, `CIB`, ...
    pub iid1: String,
    /// ITITLE of a NITF 2.0 subheader, trailing blanks removed (empty in
    /// 2.1 / NSIF, where the field is IID2): an RPF frame's file name.
    pub ititle: String,
    /// IDATIM, the image's date and time as written (see
    /// [`crate::base::datetime::nitf_idatim`]).
    pub idatim: String,
    /// ICORDS (empty when the image has no corner coordinates).
    pub icords: String,
    /// IGEOLO: the four corners (see [`super::igeolo`]).
    pub igeolo: String,
    /// The tagged record extensions of the subheader (UDID then IXSHD
    /// bytes: 6-character tag, 5-digit length, data, ...).
    pub tres: Vec<u8>,
    /// Offset of the image data in the file.
    pub data_offset: u64,
    /// Length of the image data.
    pub data_len: u64,
}

/// Reads fixed-width fields from a header.
struct Fields<'a> {
    src: &'a Source,
    bytes: Vec<u8>,
    at: usize,
    what: String,
}

impl Fields<'_> {
    fn text(&mut self, len: usize, name: &str) -> Result<String> {
        let end = self.at + len;
        let b = self.bytes.get(self.at..end).ok_or_else(|| {
            self.src.malformed(format!(
                "{} ends before field {name} (byte {})",
                self.what, self.at
            ))
        })?;
        self.at = end;
        Ok(String::from_utf8_lossy(b).trim().to_string())
    }

    fn num(&mut self, len: usize, name: &str) -> Result<u64> {
        let at = self.at;
        let text = self.text(len, name)?;
        text.parse().map_err(|_| {
            self.src.malformed(format!(
                "{} field {name} at byte {at} is '{text}', not a number",
                self.what
            ))
        })
    }

    fn skip(&mut self, len: usize) {
        self.at += len;
    }

    fn raw(&mut self, len: usize, name: &str) -> Result<Vec<u8>> {
        let b = self.bytes.get(self.at..self.at + len).ok_or_else(|| {
            self.src
                .malformed(format!("{} ends inside field {name}", self.what))
        })?;
        self.at += len;
        Ok(b.to_vec())
    }

    /// UDID and IXSHD (after NBPP): the subheader's extensions.
    fn extensions(&mut self) -> Result<Vec<u8>> {
        self.skip(3 + 3 + 10 + 4); // IDLVL, IALVL, ILOC, IMAG
        let mut tres = Vec::new();
        for (length, data) in [("UDIDL", "UDID"), ("IXSHDL", "IXSHD")] {
            let len = self.num(5, length)? as usize;
            if len > 3 {
                self.skip(3); // UDOFL / IXSOFL
                tres.extend(self.raw(len - 3, data)?);
            }
        }
        Ok(tres)
    }
}

/// `field` as text without its trailing blanks (as GDAL keeps a field's
/// value in its metadata).
fn trim_end(field: &[u8]) -> String {
    String::from_utf8_lossy(field).trim_end().to_string()
}

/// The image segments of the NITF file in `src`, and whether it is NITF 2.0.
pub fn segments(src: &Source) -> Result<(Vec<Segment>, bool)> {
    let head = src.read(0, src.len().min(1024))?;
    let version = String::from_utf8_lossy(&head[..9.min(head.len())]).to_string();
    if !matches!(version.as_str(), "NITF02.10" | "NSIF01.00" | "NITF02.00") {
        return Err(src.malformed(format!("file header version '{version}'")));
    }
    let mut f = Fields {
        src,
        bytes: head,
        at: HL_AT,
        what: "file header".into(),
    };
    if version == "NITF02.00" && f.bytes.get(280..286) == Some(DOWNGRADE_EVENT.as_bytes()) {
        f.skip(40);
    }
    let hl = f.num(6, "HL")?;
    let numi = f.num(3, "NUMI")? as usize;
    if numi > MAX_IMAGES {
        return Err(src.malformed(format!("NUMI {numi}")));
    }
    let mut segments = Vec::with_capacity(numi);
    let mut at = hl;
    for n in 0..numi {
        let subheader_len = f.num(6, "LISHn")?;
        let mut data_len = f.num(10, "LIn")?;
        let data_at = at.saturating_add(subheader_len);
        if data_at > src.len() {
            return Err(src.malformed(format!(
                "image subheader {n} ends at byte {data_at}, past the end of the file ({} bytes)",
                src.len()
            )));
        }
        // GDAL reads a segment that runs past the end of the file as far
        // as it goes.
        if data_len > src.len() - data_at {
            eprintln!(
                "chunkref: {}: image segment {n}: LI {data_len} runs past the end of the file; \
                 its data is read to the end ({} bytes)",
                src.path(),
                src.len() - data_at
            );
            data_len = src.len() - data_at;
        }
        segments.push(Segment {
            subheader: at,
            subheader_len,
            data_len,
        });
        at = data_at + data_len;
    }
    Ok((segments, version == "NITF02.00"))
}

/// Parses the image subheader of `seg` (`n` names it in errors) of a NITF
/// 2.0 file when `version_20`, else 2.1 / NSIF 1.0.
pub fn image(src: &Source, seg: &Segment, n: usize, version_20: bool) -> Result<Image> {
    let mut f = Fields {
        src,
        bytes: src.read(seg.subheader, seg.subheader_len)?,
        at: 0,
        what: format!("image subheader {n}"),
    };
    if f.text(2, "IM")? != "IM" {
        return Err(src.malformed(format!("image subheader {n} does not start with IM")));
    }
    // IID1/IID, IDATIM, TGTID, IID2/ITITLE, ISCLAS and the security fields
    // have the same total width in 2.0 and 2.1, bar the 2.0 downgrade event.
    let iid1 = f.raw(10, "IID1")?;
    let idatim = f.text(14, "IDATIM")?;
    f.skip(17); // TGTID
    let ititle = f.raw(80, "ITITLE / IID2")?;
    f.skip(282 - 24 - 17 - 80);
    if f.text(6, "ISDWNG / ISCTLN")? == DOWNGRADE_EVENT && version_20 {
        f.skip(40); // ISDEVT
    }
    f.skip(1 + 42); // ENCRYP, ISORCE
    let rows = f.num(8, "NROWS")?;
    let cols = f.num(8, "NCOLS")?;
    let pvtype = f.text(3, "PVTYPE")?;
    let irep = f.text(8, "IREP")?;
    f.skip(8); // ICAT
    let abpp = f.num(2, "ABPP")?;
    f.skip(1); // PJUST
    let mut icords = f.text(1, "ICORDS")?;
    if version_20 && icords == "N" {
        icords.clear(); // "none" in 2.0; UTM north in 2.1
    }
    let igeolo = if icords.is_empty() {
        String::new()
    } else {
        f.text(60, "IGEOLO")?
    };
    let nicom = f.num(1, "NICOM")? as usize;
    f.skip(80 * nicom);
    let ic = f.text(2, "IC")?;
    let comrat = if ic != "NC" && ic != "NM" {
        f.text(4, "COMRAT")?
    } else {
        String::new()
    };
    let mut nbands = f.num(1, "NBANDS")?;
    if nbands == 0 {
        nbands = f.num(5, "XBANDS")?;
    }
    let mut band_reps = Vec::new();
    let mut luts = Vec::new();
    for _ in 0..nbands {
        band_reps.push(f.text(2, "IREPBANDn")?);
        f.skip(6 + 1 + 3); // ISUBCAT, IFC, IMFLT
        let nluts = f.num(1, "NLUTSn")? as usize;
        let mut tables = Vec::with_capacity(nluts);
        if nluts > 0 {
            let nelut = f.num(5, "NELUTn")? as usize;
            for _ in 0..nluts {
                tables.push(f.raw(nelut, "LUTDnm")?);
            }
        }
        luts.push(tables);
    }
    f.skip(1); // ISYNC
    let imode = f.text(1, "IMODE")?.chars().next().unwrap_or(' ');
    let blocks_across = f.num(4, "NBPR")?;
    let blocks_down = f.num(4, "NBPC")?;
    let mut block_width = f.num(4, "NPPBH")?;
    let mut block_height = f.num(4, "NPPBV")?;
    let nbpp = f.num(2, "NBPP")?;
    // Extensions are optional to the index: a subheader cut short there
    // still indexes.
    let tres = f.extensions().unwrap_or_default();
    // NPPBH/NPPBV 0 means one block as wide/high as the image (> 8192).
    if block_width == 0 {
        block_width = cols;
    }
    if block_height == 0 {
        block_height = rows;
    }
    let image = Image {
        rows,
        cols,
        pvtype,
        irep,
        ic,
        comrat,
        band_reps,
        luts,
        imode,
        blocks_across,
        blocks_down,
        block_width,
        block_height,
        nbpp,
        abpp,
        iid1: trim_end(&iid1),
        ititle: if version_20 {
            trim_end(&ititle)
        } else {
            String::new()
        },
        idatim,
        icords,
        igeolo,
        tres,
        data_offset: seg.subheader + seg.subheader_len,
        data_len: seg.data_len,
    };
    let covers = |blocks: u64, size: u64, total: u64| {
        blocks.checked_mul(size).is_some_and(|t| t >= total) && blocks > 0 && size > 0
    };
    if !covers(blocks_across, block_width, cols) || !covers(blocks_down, block_height, rows) {
        return Err(src.malformed(format!(
            "image subheader {n}: {blocks_across} x {blocks_down} blocks of {block_width} x \
             {block_height} do not cover {cols} x {rows} pixels"
        )));
    }
    Ok(image)
}
