//! Numbers as C's `printf("%.<precision>g")` writes them, for metadata
//! GDAL's drivers format that way (netCDF coordinate values, NITF RPCs).

/// `v` as C's `%.<precision>g` writes it (`precision` >= 1): the shortest
/// of fixed and exponent notation for `precision` significant digits,
/// trailing zeros dropped, exponents of at least two digits (`1e+20`).
pub fn g(v: f64, precision: usize) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let p = precision.max(1);
    let sci = format!("{v:.*e}", p - 1);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if exp < -4 || exp >= p as i32 {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        trim(&format!("{v:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_printf() {
        assert_eq!(g(0.009, 16), "0.008999999999999999");
        assert_eq!(g(0.07, 16), "0.07000000000000001");
        assert_eq!(g(1e-7, 16), "1e-07");
        assert_eq!(g(7.5e-5, 16), "7.499999999999999e-05");
        assert_eq!(g(6e-5, 16), "6e-05");
        assert_eq!(g(250.0, 16), "250");
        assert_eq!(g(-0.002, 16), "-0.002");
        assert_eq!(g(0.0, 16), "0");
        assert_eq!(g(1.5e20, 16), "1.5e+20");
        assert_eq!(g(45.123, 16), "45.123");
        assert_eq!(g(0.1 + 0.2, 16), "0.3");
        assert_eq!(g(1e16, 16), "1e+16");
        assert_eq!(g(123456789012.5, 16), "123456789012.5");
        // f32 values as GDAL's netCDF driver prints them (%.8g).
        assert_eq!(g(f64::from(1.0f32 / 3.0), 8), "0.33333334");
        assert_eq!(g(f64::from(1e-5f32), 8), "9.9999997e-06");
        assert_eq!(g(f64::from(16777217f32), 8), "16777216");
        assert_eq!(g(f64::from(0.1f32), 8), "0.1");
        assert_eq!(g(1e20, 8), "1e+20");
    }
}
