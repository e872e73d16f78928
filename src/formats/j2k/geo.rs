//! Georeferencing of JP2 files, found the way GDAL's JPEG 2000 drivers
//! find it by default (`GDAL_GEOREF_SOURCES` INTERNAL = GeoJP2, then
//! GMLJP2): the GeoJP2 `uuid` box holds a degenerate GeoTIFF, read with the
//! TIFF builder's GeoKey parsing; the GMLJP2 coverage description is the
//! `xml ` box labelled `gml.root-instance` inside the `asoc` box labelled
//! `gml.data`.

use crate::base::error::Result;
use crate::conventions::geozarr::{Georef, Registration};
use crate::formats::tiff::ifd;
use crate::io::source::Source;

use super::jp2::{self, JBox};

/// UUID of the GeoJP2 box (the "MSI" GeoTIFF box).
const GEOJP2_UUID: [u8; 16] = [
    0xb1, 0x4b, 0xf8, 0xbd, 0x08, 0x3d, 0x4b, 0x43, 0xa5, 0xae, 0x8c, 0xd7, 0xd5, 0xa6, 0xce, 0x03,
];
/// Largest GeoJP2 or GML box read.
const MAX_BOX_BYTES: u64 = 16 << 20;

/// The georeferencing of the JP2 file `src` (None for a raw codestream or
/// a JP2 file without GeoJP2 or usable GMLJP2 boxes). Boxes that cannot be
/// read are reported on stderr and passed over, as GDAL passes over them.
pub(crate) fn georef(src: &Source) -> Result<Option<Georef>> {
    if !jp2::is_jp2(src)? {
        return Ok(None);
    }
    let top = jp2::boxes(src, 0, src.len())?;
    for b in top.iter().filter(|b| &b.kind == b"uuid" && b.len > 16) {
        if src.read(b.start, 16)? != GEOJP2_UUID {
            continue;
        }
        match geojp2(src, b) {
            Ok(g) if g.is_some() => return Ok(Some(g)),
            Ok(_) => {}
            Err(e) => eprintln!("chunkref: {}: GeoJP2 box left out: {e}", src.path()),
        }
    }
    let boxes = gml_boxes(src, &top)?;
    for (_, xml) in boxes.iter().filter(|(l, _)| l == "gml.root-instance") {
        match coverage_georef(xml, &boxes) {
            Some(g) => return Ok(Some(g)),
            None => eprintln!(
                "chunkref: {}: the GMLJP2 coverage has no RectifiedGrid with an origin \
                 and two offset vectors; left out",
                src.path()
            ),
        }
    }
    Ok(None)
}

/// The georeferencing of the degenerate GeoTIFF in GeoJP2 box `b`.
fn geojp2(src: &Source, b: &JBox) -> Result<Georef> {
    let len = (b.len - 16).min(MAX_BOX_BYTES);
    let name = format!("{} (GeoJP2 box at byte {})", src.path(), b.start);
    let bytes = src.read(b.start + 16, len)?;
    let tiff = ifd::read(&Source::from_bytes(&name, bytes, "GeoTIFF"))?;
    let mut georef = Georef::from_ifd_with(
        &tiff.ifds[0],
        &name,
        crate::base::gdal::geo::geotiff_bytes_crs_wkt2,
    );
    // GDAL's JPEG 2000 drivers state only PixelIsPoint.
    if georef.registration == Registration::Area {
        georef.registration = Registration::Unstated;
    }
    Ok(georef)
}

/// (label, text) of every labelled `xml ` box in top-level `asoc` boxes
/// labelled `gml.data` (`gml.root-instance`, `CRSDictionary.gml`, ...).
fn gml_boxes(src: &Source, top: &[JBox]) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for data in top.iter().filter(|b| &b.kind == b"asoc") {
        let children = jp2::boxes(src, data.start, data.start + data.len)?;
        if label(src, &children)?.as_deref() != Some("gml.data") {
            continue;
        }
        for inner in children.iter().filter(|b| &b.kind == b"asoc") {
            let parts = jp2::boxes(src, inner.start, inner.start + inner.len)?;
            let Some(name) = label(src, &parts)? else {
                continue;
            };
            if let Some(xml) = parts.iter().find(|b| &b.kind == b"xml ") {
                let bytes = src.read(xml.start, xml.len.min(MAX_BOX_BYTES))?;
                out.push((name, String::from_utf8_lossy(&bytes).replace('\0', "\n")));
            }
        }
    }
    Ok(out)
}

/// The text of the `lbl ` box that opens an `asoc` box's `children`.
fn label(src: &Source, children: &[JBox]) -> Result<Option<String>> {
    match children.first() {
        Some(b) if &b.kind == b"lbl " && b.len <= 1024 => {
            let text = src.read(b.start, b.len)?;
            Ok(Some(
                String::from_utf8_lossy(&text)
                    .trim_end_matches('\0')
                    .to_string(),
            ))
        }
        _ => Ok(None),
    }
}

/// Geotransform and CRS of a GML coverage description, as GDAL reads it:
/// the `RectifiedGrid` origin (a pixel centre) and offset vectors, the
/// `srsName` of the origin point (else of the root envelope, else of the
/// grid): an EPSG code, axes swapped for CRSs EPSG orders latitude or
/// northing first unless the grid's axis names say easting/longitude
/// first; or `gmljp2://xml/<box>#<id>`, the entry `id` of the GML
/// dictionary in labelled box `<box>` of `boxes`, read by GDAL's OSR; the
/// geotransform alone when there is no srsName or GDAL cannot resolve it.
fn coverage_georef(xml: &str, boxes: &[(String, String)]) -> Option<Georef> {
    let grid = element(xml, "RectifiedGrid")?;
    let point = element(element(grid.body, "origin")?.body, "Point")?;
    let origin = element(point.body, "pos")
        .or_else(|| element(point.body, "coordinates"))
        .map(|e| numbers(e.body))?;
    let offsets = elements(grid.body, "offsetVector");
    let (v1, v2) = match offsets.as_slice() {
        [a, b, ..] => (numbers(a.body), numbers(b.body)),
        _ => return None,
    };
    if origin.len() < 2 || v1.len() < 2 || v2.len() < 2 {
        return None;
    }
    let srs_name = attribute(point.head, "srsName")
        .or_else(|| {
            element(xml, "boundedBy")
                .and_then(|b| element(b.body, "Envelope"))
                .and_then(|e| attribute(e.head, "srsName"))
        })
        .or_else(|| attribute(grid.head, "srsName"));
    // An srsName GDAL cannot resolve leaves the grid without a CRS, as
    // GDAL reads it (GDAL 3.10 and 3.13 write dictionary entries their
    // srsName may not name: docs/gdal-versions.md).
    let (code, crs_wkt2) = match srs_name.map(|name| (name, epsg_code(name))) {
        Some((_, Some(code))) => (Some(code), None),
        Some((name, None)) => (None, dictionary_crs(name, boxes)),
        None => (None, None),
    };
    // GDAL geotransform order until the end.
    let mut t = [origin[0], v1[0], v2[0], origin[1], v1[1], v2[1]];
    // The origin is the centre of the first pixel.
    t[0] -= 0.5 * (t[1] + t[2]);
    t[3] -= 0.5 * (t[4] + t[5]);
    let axes: Vec<String> = elements(grid.body, "axisName")
        .iter()
        .map(|a| a.body.trim().to_ascii_uppercase())
        .collect();
    let declared_east_north = axes.len() >= 2
        && (axes[0].starts_with("EAST") || axes[0].starts_with("LONG"))
        && (axes[1].starts_with("NORTH") || axes[1].starts_with("LAT"));
    if code.is_some_and(crate::base::gdal::geo::epsg_axes_swapped) && !declared_east_north {
        t.swap(0, 3);
        if xml.contains("GDAL_JP2K_ALT_OFFSETVECTOR_ORDER=TRUE") {
            t.swap(1, 5);
            t.swap(2, 4);
        } else {
            t.swap(1, 4);
            t.swap(2, 5);
        }
    }
    Some(Georef {
        transform: Some([t[1], t[2], t[0], t[4], t[5], t[3]]),
        crs_code: code.map(|c| format!("EPSG:{c}")),
        crs_wkt2,
        registration: Registration::Unstated,
    })
}

/// The WKT2 of the GML dictionary entry `srs_name` names
/// (`gmljp2://xml/<box>#<id>`), as GDAL's OSR reads its GML.
fn dictionary_crs(srs_name: &str, boxes: &[(String, String)]) -> Option<String> {
    let (name, id) = srs_name.strip_prefix("gmljp2://xml/")?.split_once('#')?;
    let (_, dictionary) = boxes.iter().find(|(l, _)| l == name)?;
    let at = dictionary.find(&format!("gml:id=\"{id}\""))?;
    let start = dictionary[..at].rfind('<')?;
    let tag = dictionary[start + 1..]
        .split([' ', '\t', '\n', '\r', '>'])
        .next()?;
    let close = format!("</{tag}>");
    let end = dictionary[at..].find(&close)? + at + close.len();
    crate::base::gdal::geo::gml_crs_wkt2(&dictionary[start..end])
}

/// The EPSG code of a GML `srsName`: `EPSG:n`, `urn:ogc:def:crs:EPSG:[v]:n`
/// or `http://www.opengis.net/def/crs/EPSG/0/n`.
fn epsg_code(name: &str) -> Option<u32> {
    let lower = name.trim().to_ascii_lowercase();
    let digits = if let Some(rest) = lower.strip_prefix("epsg:") {
        rest
    } else if lower.starts_with("urn:") && lower.contains(":def:crs:epsg:") {
        lower.rsplit(':').next()?
    } else if let Some(rest) = lower.strip_prefix("http://www.opengis.net/def/crs/epsg/") {
        rest.rsplit('/').next()?
    } else {
        return None;
    };
    digits.parse().ok().filter(|&c| c != 0)
}

/// Numbers separated by spaces or commas.
fn numbers(text: &str) -> Vec<f64> {
    text.split([' ', ',', '\t', '\n', '\r'])
        .filter(|s| !s.is_empty())
        .map_while(|s| s.parse().ok())
        .collect()
}

/// An XML element: its start tag's attributes and its contents.
#[derive(Debug, Clone, Copy)]
struct Element<'a> {
    head: &'a str,
    body: &'a str,
}

/// Every element of local name `local` (any namespace prefix) in `xml`,
/// outermost first; elements of that name are not expected to nest.
fn elements<'a>(xml: &'a str, local: &str) -> Vec<Element<'a>> {
    let mut out = Vec::new();
    let mut rest = xml;
    while let Some((e, after)) = next_element(rest, local) {
        out.push(e);
        rest = after;
    }
    out
}

/// The first element of local name `local` in `xml`.
fn element<'a>(xml: &'a str, local: &str) -> Option<Element<'a>> {
    next_element(xml, local).map(|(e, _)| e)
}

/// The first element named `local` in `xml` and the text after it.
fn next_element<'a>(xml: &'a str, local: &str) -> Option<(Element<'a>, &'a str)> {
    let mut at = 0;
    while let Some(lt) = xml[at..].find('<').map(|i| at + i) {
        let tag_end = xml[lt..].find('>').map(|i| lt + i)?;
        let tag = &xml[lt + 1..tag_end];
        at = tag_end + 1;
        let name = tag.split([' ', '\t', '\n', '\r', '/']).next().unwrap_or("");
        if name.rsplit(':').next() != Some(local) || tag.starts_with(['/', '?', '!']) {
            continue;
        }
        let head = &tag[name.len()..];
        if head.ends_with('/') {
            return Some((Element { head, body: "" }, &xml[at..]));
        }
        let close = format!("</{name}>");
        let end = xml[at..].find(&close).map(|i| at + i)?;
        let body = &xml[at..end];
        return Some((Element { head, body }, &xml[end + close.len()..]));
    }
    None
}

/// The value of attribute `name` (without prefix) in a start tag's text.
fn attribute<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    let pat = format!("{name}=\"");
    let mut at = 0;
    while let Some(i) = head[at..].find(&pat).map(|i| at + i) {
        at = i + pat.len();
        let boundary = head[..i].ends_with([' ', '\t', '\n', '\r', ':']);
        if boundary {
            let len = head[at..].find('"')?;
            return Some(&head[at..at + len]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The coverage GDAL 3.6 writes for a 301x203 EPSG:4326 image at
    /// (10, 46) with 0.01 degree pixels (latitude first).
    const GDAL_4326: &str = r#"<gml:FeatureCollection xmlns:gml="http://www.opengis.net/gml">
  <gml:boundedBy><gml:Envelope srsName="urn:ogc:def:crs:EPSG::4326">
      <gml:lowerCorner>43.97 10</gml:lowerCorner><gml:upperCorner>46 13.01</gml:upperCorner>
  </gml:Envelope></gml:boundedBy>
  <gml:featureMember><gml:FeatureCollection><gml:featureMember>
    <gml:RectifiedGridCoverage dimension="2" gml:id="RGC0001"><gml:rectifiedGridDomain>
      <gml:RectifiedGrid dimension="2">
        <gml:limits><gml:GridEnvelope><gml:low>0 0</gml:low><gml:high>300 202</gml:high></gml:GridEnvelope></gml:limits>
        <gml:axisName>x</gml:axisName><gml:axisName>y</gml:axisName>
        <gml:origin><gml:Point gml:id="P0001" srsName="urn:ogc:def:crs:EPSG::4326">
            <gml:pos>45.995 10.005</gml:pos></gml:Point></gml:origin>
        <gml:offsetVector srsName="urn:ogc:def:crs:EPSG::4326">0 0.01</gml:offsetVector>
        <gml:offsetVector srsName="urn:ogc:def:crs:EPSG::4326">-0.01 0</gml:offsetVector>
      </gml:RectifiedGrid></gml:rectifiedGridDomain>
    </gml:RectifiedGridCoverage></gml:featureMember></gml:FeatureCollection></gml:featureMember>
</gml:FeatureCollection>"#;

    /// `affine` (Affine order) is GDAL geotransform `gt`.
    fn close(affine: [f64; 6], gt: [f64; 6]) -> bool {
        let a = [
            affine[2], affine[0], affine[1], affine[5], affine[3], affine[4],
        ];
        a.iter().zip(gt).all(|(x, y)| (x - y).abs() < 1e-9)
    }

    #[test]
    #[cfg_attr(not(feature = "gdal"), ignore = "needs GDAL\'s OSR")]
    fn latitude_first_coverage_is_swapped_back() {
        let g = coverage_georef(GDAL_4326, &[]).unwrap();
        assert_eq!(g.crs_code.as_deref(), Some("EPSG:4326"));
        assert!(close(
            g.transform.unwrap(),
            [10.0, 0.01, 0.0, 46.0, 0.0, -0.01]
        ));
    }

    #[test]
    fn projected_coverage_keeps_its_order() {
        let xml = GDAL_4326
            .replace("EPSG::4326", "EPSG::32633")
            .replace("45.995 10.005", "500005 4999995")
            .replace(">0 0.01<", ">10 0<")
            .replace(">-0.01 0<", ">0 -10<");
        let g = coverage_georef(&xml, &[]).unwrap();
        assert_eq!(g.crs_code.as_deref(), Some("EPSG:32633"));
        assert!(close(
            g.transform.unwrap(),
            [500000.0, 10.0, 0.0, 5000000.0, 0.0, -10.0]
        ));
    }

    #[test]
    fn declared_easting_northing_axes_are_not_swapped() {
        let xml = GDAL_4326
            .replace(">x<", ">Long<")
            .replace(">y<", ">Lat<")
            .replace("45.995 10.005", "10.005 45.995")
            .replace(">0 0.01<", ">0.01 0<")
            .replace(">-0.01 0<", ">0 -0.01<");
        let g = coverage_georef(&xml, &[]).unwrap();
        assert!(close(
            g.transform.unwrap(),
            [10.0, 0.01, 0.0, 46.0, 0.0, -0.01]
        ));
    }

    #[test]
    fn srs_names() {
        assert_eq!(epsg_code("EPSG:32633"), Some(32633));
        assert_eq!(epsg_code("urn:ogc:def:crs:EPSG:6.6:4326"), Some(4326));
        assert_eq!(
            epsg_code("http://www.opengis.net/def/crs/EPSG/0/3857"),
            Some(3857)
        );
        assert_eq!(epsg_code("gmljp2://xml/CRSDictionary.gml#ogrcrs1"), None);
    }

    #[test]
    fn incomplete_coverages_give_nothing() {
        assert!(coverage_georef("<a/>", &[]).is_none());
        assert!(coverage_georef(&GDAL_4326.replace("offsetVector", "other"), &[]).is_none());
        assert!(coverage_georef(&GDAL_4326[..400], &[]).is_none());
    }

    #[test]
    fn unresolved_srs_names_keep_the_grid_without_a_crs() {
        let dictionary = "gmljp2://xml/CRSDictionary.gml#ogrcrs1";
        let boxes = [(
            "CRSDictionary.gml".to_string(),
            r#"<gml:Dictionary><gml:dictionaryEntry><gml:ProjectedCRS gml:id="ogrcrs13"/>
            </gml:dictionaryEntry></gml:Dictionary>"#
                .to_string(),
        )];
        for name in ["local", dictionary] {
            let g = coverage_georef(
                &GDAL_4326.replace("urn:ogc:def:crs:EPSG::4326", name),
                &boxes,
            )
            .unwrap();
            assert_eq!((g.crs_code, g.crs_wkt2), (None, None), "{name}");
            // No CRS, so no axis swap: the stored order.
            assert!(close(
                g.transform.unwrap(),
                [46.0, 0.0, -0.01, 10.0, 0.01, 0.0]
            ));
        }
    }
}
