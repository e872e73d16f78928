//! The unit conversions GDAL's GRIB driver applies to values
//! (`GRIB_NORMALIZE_UNITS`), named as the `grib2` codec's configuration
//! names them.

/// The offset from Kelvin to Celsius, as degrib adds it.
const KELVIN_TO_CELSIUS: f64 = -273.15;

/// A unit conversion of the values: GDAL's `GRIB_NORMALIZE_UNITS`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Conversion {
    /// The values as stored.
    #[default]
    None,
    /// Kelvin to Celsius: value - 273.15.
    KelvinToCelsius,
    /// A logarithm to its value: 10^value.
    Exp10,
}

impl Conversion {
    /// The conversion's name in the codec configuration (`None`: no key).
    pub(crate) fn name(self) -> Option<&'static str> {
        match self {
            Conversion::None => None,
            Conversion::KelvinToCelsius => Some("kelvin_to_celsius"),
            Conversion::Exp10 => Some("exp10"),
        }
    }

    /// `v` converted, in double precision as degrib computes it.
    pub(crate) fn apply(self, v: f64) -> f64 {
        match self {
            Conversion::None => v,
            Conversion::KelvinToCelsius => v + KELVIN_TO_CELSIUS,
            Conversion::Exp10 => 10f64.powf(v),
        }
    }
}
