//! GRIB edition 1 (WMO FM 92 GRIB, edition 1): where a message's sections
//! lie, its product definition (times, parameter, level), its grid
//! definition, GDAL's parameter and level tables, as GDAL 3.6's GRIB
//! driver (degrib) reads them.
//!
//! Offsets below are 0-based within a section (the WMO manual's octet
//! numbers minus one).

#[rustfmt::skip]
mod gdal_tables;
pub mod grid;
pub mod product;
pub mod sections;
pub mod tables;

/// Why a GRIB1 message is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A structure GRIB1 allows that is not read (complex packing,
    /// spherical harmonics, a predefined grid, ...).
    Unsupported(String),
    /// Bytes that do not make a message (lengths past the end, ...).
    Malformed(String),
}

impl Refusal {
    /// The refusal's description.
    pub fn text(&self) -> &str {
        match self {
            Refusal::Unsupported(text) | Refusal::Malformed(text) => text,
        }
    }
}

/// Shorthand for a malformed-message refusal.
fn malformed<T>(text: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::Malformed(text.into()))
}

/// Shorthand for an unsupported-structure refusal.
fn unsupported<T>(text: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal::Unsupported(text.into()))
}
