//! Names of probability forecasts (product definition templates 4.5 and
//! 4.9) as degrib, the library GDAL's GRIB driver is built on, gives
//! them: `Prob` before the parameter's short name (`ProbTMP`, `ProbAPCP06`
//! over a 6-hour interval), the comment naming the limits in the
//! parameter's unit (`Prob of Temperature > 273 K`), the unit `[%]`, the
//! values never converted; NDFD's and MOS's own names for precipitation,
//! temperature above or below normal, storm surge and wind speed.

use super::naming::{Context, Parameter};
use super::tables::Tables;
use crate::base::printf::g;

/// The limits of a probability forecast (section 4, octets 37-47).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Limits {
    /// Probability type (code table 4.9): 0 below the lower limit, 1 above
    /// the upper, 2 between them, 3 above the lower, 4 below the upper.
    kind: u8,
    lower: f64,
    upper: f64,
}

impl Limits {
    /// Reads the limits from section 4 (their layout is the same in
    /// templates 4.5 and 4.9); `None` when the section is too short.
    pub(crate) fn read(s4: &[u8]) -> Option<Limits> {
        let b = s4.get(36..47)?;
        let limit = |at: usize| {
            let factor = scale_factor(b[at]);
            let value = sign_magnitude(
                u32::from_be_bytes([b[at + 1], b[at + 2], b[at + 3], b[at + 4]]),
                32,
            );
            value as f64 * 10f64.powi(-(factor as i32))
        };
        let upper = limit(6);
        // degrib takes an upper limit it cannot scale to inches for 0.
        let inches = upper * 25.4;
        let upper = if upper > inches || !inches.is_finite() || inches.abs() > f64::from(i32::MAX) {
            0.0
        } else {
            upper
        };
        Some(Limits {
            kind: b[0],
            lower: limit(1),
            upper,
        })
    }
}

/// A limit's scale factor as GDAL 3.6.2 reads it: sign and magnitude,
/// except that it reads -1 (0x81) as -127 and -127 (0xff) as -1 (seen
/// with gdalinfo: a lower limit 5 scaled by -1 is shown as `5e+127`).
fn scale_factor(byte: u8) -> i64 {
    match byte {
        0x81 => -127,
        0xff => -1,
        other => sign_magnitude(u32::from(other), 8),
    }
}

/// A GRIB sign-and-magnitude integer of `bits` bits.
fn sign_magnitude(raw: u32, bits: u32) -> i64 {
    let sign = 1u32 << (bits - 1);
    let magnitude = i64::from(raw & (sign - 1));
    if raw & sign != 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// The parameter of a probability forecast with `limits`.
pub(crate) fn named(ctx: &Context<'_>, limits: Limits, tables: &Tables) -> Parameter {
    let (d, cat, sub) = (ctx.discipline, ctx.byte(9), ctx.byte(10));
    let parameter = |element: String, comment: String| Parameter {
        element,
        comment,
        unit: "[%]".into(),
        conversion: String::new(),
    };
    let special = ctx.ndfd() || ctx.mos();
    if special && (d, cat, sub) == (0, 1, 8) {
        let (element, comment) = precipitation(ctx, limits);
        return parameter(element, comment);
    }
    if special && (d, cat, sub) == (10, 3, 192) {
        let incremental = if ctx.time_increment() == 2 { 'i' } else { 'c' };
        let feet = (limits.upper / 0.3048 + 0.5) as i32;
        return parameter(
            format!("ProbSurge{feet:02}{incremental}"),
            ctx.length_text(&format!(
                "Prob of Hurricane Storm Surge > {} m",
                g(limits.upper, 6)
            )),
        );
    }
    if ctx.ndfd() && (d, cat, sub) == (0, 2, 1) {
        let incremental = if ctx.time_increment() == 2 { 'i' } else { 'c' };
        let knots = (limits.upper * 3600.0 / 1852.0 + 0.5) as i32;
        return parameter(
            format!("ProbWindSpd{knots:02}{incremental}"),
            ctx.length_text(&format!("Prob of Wind speed > {} m/s", g(limits.upper, 6))),
        );
    }
    let (short, name, unit, generic) = match ctx.wmo_row(tables) {
        Some(row) => (row.short().to_string(), row.name, row.unit, true),
        None => match ctx.local_row(tables) {
            Some(row) => (row.short_name, row.name, row.unit, false),
            None => {
                return parameter(
                    "ProbUnknown".into(),
                    format!("Prob of (prodType {d}, cat {cat}, subcat {sub})"),
                )
            }
        },
    };
    let base = format!("Prob{short}");
    let mut element = if ctx.length > 0 {
        ctx.with_length(&base)
    } else {
        base.clone()
    };
    let prefix = if ctx.length > 0 {
        ctx.length_text(&format!("Prob of {name} "))
    } else {
        format!("Prob of {name} ")
    };
    let (lower, upper) = (g(limits.lower, 6), g(limits.upper, 6));
    // NDFD and MOS name temperatures above or below normal so.
    let normal = generic && special && short == "TMP";
    let relative = |side: &str| {
        if ctx.length > 0 {
            ctx.with_length(&format!("{base}{side}"))
        } else {
            format!("{base}{side}")
        }
    };
    let limit = match limits.kind {
        0 | 4 if normal => {
            element = relative("Blw");
            "below average".to_string()
        }
        1 | 3 if normal => {
            element = relative("Abv");
            "above average".to_string()
        }
        0 => format!("< {lower} {unit}"),
        1 => format!("> {upper} {unit}"),
        2 => format!(">= {lower}, < {upper} {unit}"),
        3 => format!("> {lower} {unit}"),
        4 => format!("< {upper} {unit}"),
        _ => unit,
    };
    parameter(element, format!("{prefix}{limit}"))
}

/// NDFD's and MOS's names of precipitation probabilities (`PoP12`,
/// `ProbPrcpAbv06`).
fn precipitation(ctx: &Context<'_>, limits: Limits) -> (String, String) {
    let timed = |name: &str| {
        if ctx.length > 0 {
            ctx.with_length(name)
        } else {
            name.to_string()
        }
    };
    let text = |timed_text: &str, plain: &str| {
        if ctx.length > 0 {
            ctx.length_text(timed_text)
        } else {
            plain.to_string()
        }
    };
    match limits.kind {
        0 => (
            timed("ProbPrcpBlw"),
            text(
                "Prob of Precip below average",
                "Prob of precip below average",
            ),
        ),
        3 => (
            timed("ProbPrcpAbv"),
            text(
                "Prob of Precip above average",
                "Prob of precip above average",
            ),
        ),
        _ => {
            let upper = limits.upper;
            let hundredths = (upper / 0.254 + 0.5) as i32;
            let inches = g(upper / 25.4, 6);
            if ctx.length <= 0 {
                let element = if upper != 0.254 {
                    format!("PoP-p{hundredths:03}")
                } else {
                    "PoP".into()
                };
                return (element, format!("Prob of Precip > {inches} In."));
            }
            // degrib reads 300 as 0.01 inch (an old NDFD encoding), in hours only.
            let hours = !matches!(ctx.range_unit, 3 | 4);
            let plain = upper == 0.254 || (hours && upper == 300.0);
            let element = if plain {
                timed("PoP")
            } else {
                format!("{}-{hundredths:03}", timed("PoP"))
            };
            let inches = if hours && upper == 300.0 {
                "0.01".to_string()
            } else {
                inches
            };
            (
                element,
                ctx.length_text(&format!("Prob of Precip > {inches} In.")),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_sign_and_magnitude() {
        let mut s4 = vec![0u8; 47];
        s4[36] = 2;
        s4[37] = 0x82; // lower: scale -2, value 3 -> 300
        s4[41] = 3;
        s4[42] = 2; // upper: scale 2, value -250 -> -2.5, taken for 0
        s4[43..47].copy_from_slice(&(0x8000_0000u32 | 250).to_be_bytes());
        let limits = Limits::read(&s4).unwrap();
        assert_eq!((limits.kind, limits.lower, limits.upper), (2, 300.0, 0.0));
        assert_eq!((scale_factor(0x81), scale_factor(0xff)), (-127, -1));
        s4[43] = 0;
        assert_eq!(Limits::read(&s4).unwrap().upper, 2.5);
        assert!(Limits::read(&s4[..46]).is_none());
    }
}
