//! GDAL's GRIB1 tables: the parameter table degrib chooses for a message
//! (by centre, sub-centre, table version and process: degrib1.cpp,
//! `Choose_ParmTable`), a parameter's name, unit and comment and the unit
//! conversion GDAL applies by default, and the names of level types. The
//! data are GDAL 3.6's, recorded by `scripts/grib1_tables.py` in
//! [`super::gdal_tables`]; names are carried for the WMO table, NCEP's
//! operational and reanalysis tables and ECMWF's tables 128 and 228, the
//! conversions for every table.

pub use super::gdal_tables::Table;
use super::gdal_tables::{CONVERSIONS, PARAMETERS, SURFACES};
use super::product::Product;
use crate::formats::grib2::units::Conversion;

/// The tables whose names [`super::gdal_tables::PARAMETERS`] carries.
const NAMED: &[Table] = &[
    Table::Undefined,
    Table::NcepOpn,
    Table::NcepReanal,
    Table::Ecmwf128,
    Table::Ecmwf228,
];

/// Centres degrib knows tables of.
const NCEP: u8 = 7;
const US_OTHER: u8 = 9;
const CPTEC: u8 = 46;
const CMC: u8 = 54;
const AFWA: u8 = 57;
const DWD: u8 = 78;
const NORWAY: u8 = 88;
const ATHENS: u8 = 96;
const ECMWF: u8 = 98;

/// The table degrib chooses for `p`.
pub fn choose(p: &Product) -> Table {
    use Table::*;
    let (version, sub) = (p.table_version, p.subcentre);
    let chosen = match p.centre {
        NCEP => {
            let by_subcentre = match (version <= 3, sub) {
                (true, 1) => Some(NcepReanal),
                (true, 11) => Some(NcepTdl),
                (true, 14) => Some(NcepMdl),
                _ => None,
            };
            by_subcentre.or(match version {
                0 | 3 => Some(NcepOpn),
                1 | 2 if sub != 0 || !matches!(p.process, 80 | 180) => Some(NcepOpn),
                1 | 2 => Some(NcepReanal),
                128 => Some(Omb),
                129 => Some(Ncep129),
                130 => Some(Ncep130),
                131 => Some(Ncep131),
                133 => Some(Ncep133),
                140 => Some(Ncep140),
                141 => Some(Ncep141),
                _ => None,
            })
        }
        AFWA => match sub {
            0 => Some(Afwa000),
            1 | 4 => Some(Afwa001),
            2 => Some(Afwa002),
            3 => Some(Afwa003),
            10 => Some(Afwa010),
            11 => Some(Afwa011),
            _ => None,
        },
        ECMWF => match version {
            128 => Some(Ecmwf128),
            129 => Some(Ecmwf129),
            130 => Some(Ecmwf130),
            131 => Some(Ecmwf131),
            140 => Some(Ecmwf140),
            150 => Some(Ecmwf150),
            160 => Some(Ecmwf160),
            170 => Some(Ecmwf170),
            180 => Some(Ecmwf180),
            228 => Some(Ecmwf228),
            _ => None,
        },
        DWD => match version {
            2 => Some(Dwd002),
            201 => Some(Dwd201),
            202 => Some(Dwd202),
            203 => Some(Dwd203),
            _ => None,
        },
        CPTEC if version == 254 => Some(Cptec254),
        US_OTHER => match sub {
            163 => Some(Nohrsc),
            161 => Some(NcepOpn),
            _ => None,
        },
        ATHENS => Some(Athens),
        NORWAY if version == 128 => Some(Norway128),
        CMC => Some(Cmc),
        _ => None,
    };
    chosen.unwrap_or(Undefined)
}

/// A parameter's names as GDAL shows them: `GRIB_ELEMENT`, and the unit
/// and comment without brackets (GDAL shows `[unit]` and `comment [unit]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    /// The element name.
    pub element: String,
    /// The unit.
    pub unit: String,
    /// The comment (the parameter's long name).
    pub comment: String,
}

/// A parameter as GDAL's GRIB driver reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parameter {
    /// Its names (`None` when the names of its table are not carried).
    pub names: Option<Names>,
    /// The conversion GDAL applies by default.
    pub(crate) conversion: Conversion,
}

/// The parameter of `p` as GDAL's GRIB driver reads it.
pub fn parameter(p: &Product) -> Parameter {
    let table = choose(p);
    let n = p.parameter;
    let conversion = CONVERSIONS
        .iter()
        .find(|(t, number, _)| *t == table && *number == n)
        .map_or(Conversion::None, |&(_, _, c)| c);
    let names = |element: &str, unit: &str, comment: &str| Names {
        element: element.into(),
        unit: unit.into(),
        comment: comment.into(),
    };
    // NCEP's table 129 names one parameter by its time range.
    if (p.centre, p.table_version, n, p.time_range) == (NCEP, 129, 180, 3) {
        return Parameter {
            names: Some(names("AVGOZCON", "PPB", "Average Ozone Concentration")),
            conversion: Conversion::None,
        };
    }
    let entry = PARAMETERS
        .iter()
        .find(|(t, number, ..)| *t == table && *number == n)
        .map(|&(_, _, element, unit, comment)| names(element, unit, comment))
        .or_else(|| {
            NAMED
                .contains(&table)
                .then(|| names(&format!("var{n}"), "-", "undefined"))
        });
    Parameter {
        names: entry.map(|mut names| {
            // degrib names a parameter its table leaves undefined after
            // the table and centre.
            if names.element == format!("var{n}") {
                names.element = match p.centre {
                    ECMWF => format!("var{n} of table {} of center ECMWF", p.table_version),
                    centre => format!("var{n} of table {} of center {centre}", p.table_version),
                };
            }
            names
        }),
        conversion,
    }
}

/// The level of `p` as GDAL shows it: the short name (`GRIB_SHORT_NAME`,
/// e.g. `500-ISBL`) and the long one (the band description, e.g.
/// `500[hPa] ISBL (Isobaric surface)`).
pub fn level_names(p: &Product) -> (String, String) {
    let (name, unit, comment, two_part) = SURFACES[usize::from(p.level_type)];
    let value = if two_part {
        format!("{}-{}", p.level >> 8, p.level & 0xff)
    } else {
        p.level.to_string()
    };
    (
        format!("{value}-{name}"),
        format!("{value}[{unit}] {name} ({comment})"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::grib1::product::tests::pds;

    fn product(centre: u8, version: u8, parameter: u8) -> Product {
        let mut s = pds(parameter, 0, 0, 0, 0, 0x80);
        (s[3], s[4]) = (version, centre);
        Product::parse(&s).unwrap()
    }

    #[test]
    fn names_parameters_as_gdal() {
        let t = parameter(&product(ECMWF, 128, 130));
        let names = t.names.unwrap();
        assert_eq!((names.element.as_str(), names.unit.as_str()), ("T", "K"));
        assert_eq!(names.comment, "Temperature");
        assert_eq!(t.conversion, Conversion::KelvinToCelsius);
        // ECMWF's 2 metre temperature is not converted by GDAL.
        assert_eq!(
            parameter(&product(ECMWF, 128, 167)).conversion,
            Conversion::None
        );
        let unknown = parameter(&product(ECMWF, 1, 250)).names.unwrap();
        assert_eq!(unknown.element, "var250 of table 1 of center ECMWF");
        assert_eq!(
            (unknown.unit.as_str(), unknown.comment.as_str()),
            ("-", "undefined")
        );
        assert_eq!(parameter(&product(80, 2, 11)).names.unwrap().element, "TMP");
        // A table whose names are not carried: no names, its conversion.
        let dwd = parameter(&product(DWD, 2, 11));
        assert_eq!(dwd.names, None);
        assert_eq!(choose(&product(NCEP, 2, 11)), Table::NcepOpn);
    }

    #[test]
    fn names_levels_as_gdal() {
        let p = product(ECMWF, 128, 130);
        assert_eq!(
            level_names(&p),
            ("500-ISBL".into(), "500[hPa] ISBL (Isobaric surface)".into())
        );
    }
}
