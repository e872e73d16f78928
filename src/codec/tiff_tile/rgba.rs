//! The RGBA view GDAL's GTiff driver gives 8-bit CMYK and CIELab images:
//! libtiff's RGBA interface (`TIFFReadRGBATile`/`TIFFReadRGBAStrip`)
//! turns each pixel into red, green, blue and an opaque alpha, and GDAL
//! serves those four bands. The arithmetic below is libtiff 4.5's, step for
//! step (integer CMYK, single-precision CIELab through XYZ and a gamma
//! table), so that the bytes are GDAL's.
//!
//! Configured by the `tiff-tile` field `color_to_rgba` (`"cmyk"` or
//! `"cielab"`; CIELab also reads `white_point`, the TIFF WhitePoint tag's
//! two chromaticities, D50 when absent as in libtiff).

use crate::base::error::{Error, Result};
use crate::codec::config::{config_str, Config};

use super::URI;

/// Samples of a converted pixel: red, green, blue, alpha.
pub(super) const RGBA: usize = 4;

/// A conversion of stored colour components to RGBA.
#[derive(Debug, Clone)]
pub(super) enum ToRgba {
    /// Cyan, magenta, yellow, black (InkSet CMYK) to RGB.
    Cmyk,
    /// CIE L*a*b* (L unsigned, a* and b* signed bytes) to sRGB.
    CieLab(Box<CieLab>),
}

impl ToRgba {
    /// The conversion the configuration asks for, if any.
    pub(super) fn from_config(config: &Config) -> Result<Option<ToRgba>> {
        match config_str(URI, config, "color_to_rgba")? {
            None => Ok(None),
            Some("cmyk") => Ok(Some(ToRgba::Cmyk)),
            Some("cielab") => Ok(Some(ToRgba::CieLab(Box::new(CieLab::new(white_point(
                config,
            )?))))),
            Some(other) => Err(Error::codec_config(
                URI,
                format!("'color_to_rgba' should be \"cmyk\" or \"cielab\", found \"{other}\""),
            )),
        }
    }

    /// The number of stored samples a pixel has.
    pub(super) fn stored_samples(&self) -> usize {
        match self {
            ToRgba::Cmyk => 4,
            ToRgba::CieLab(_) => 3,
        }
    }

    /// Converts a band-major tile of `stored_samples()` byte planes into
    /// four byte planes (red, green, blue, alpha 255).
    pub(super) fn convert(&self, stored: &[u8]) -> Vec<u8> {
        let n = stored.len() / self.stored_samples();
        let mut out = vec![255u8; n * RGBA];
        let (rgb, _alpha) = out.split_at_mut(3 * n);
        let (r, gb) = rgb.split_at_mut(n);
        let (g, b) = gb.split_at_mut(n);
        let plane = |k: usize| &stored[k * n..(k + 1) * n];
        match self {
            ToRgba::Cmyk => {
                let (c, m, y, k) = (plane(0), plane(1), plane(2), plane(3));
                for i in 0..n {
                    let [pr, pg, pb] = cmyk_to_rgb(c[i], m[i], y[i], k[i]);
                    (r[i], g[i], b[i]) = (pr, pg, pb);
                }
            }
            ToRgba::CieLab(lab) => {
                let (l, a, bb) = (plane(0), plane(1), plane(2));
                for i in 0..n {
                    let [pr, pg, pb] = lab.to_rgb(l[i], a[i] as i8, bb[i] as i8);
                    (r[i], g[i], b[i]) = (pr, pg, pb);
                }
            }
        }
        out
    }
}

/// libtiff's 8-bit CMYK to RGB: each of C, M, Y scaled by the ink left
/// after black, `(255 - k) (255 - c) / 255`, truncated.
fn cmyk_to_rgb(c: u8, m: u8, y: u8, k: u8) -> [u8; 3] {
    let white = 255 - u32::from(k);
    let part = |ink: u8| (white * (255 - u32::from(ink)) / 255) as u8;
    [part(c), part(m), part(y)]
}

/// The `white_point` chromaticities `[x, y]` configured, if any.
fn white_point(config: &Config) -> Result<Option<[f32; 2]>> {
    let Some(value) = config.get("white_point").filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let pair = value
        .as_array()
        .filter(|a| a.len() == 2)
        .and_then(|a| Some([a[0].as_f64()? as f32, a[1].as_f64()? as f32]))
        .filter(|[_, y]| *y != 0.0);
    pair.map(Some).ok_or_else(|| {
        Error::codec_config(
            URI,
            format!("'white_point' should be two numbers, the second not 0, found {value}"),
        )
    })
}

/// Entries of libtiff's luminance-to-value tables, less one.
const TABLE_RANGE: usize = 1500;

/// The sRGB display of libtiff's RGBA interface: XYZ to RGB matrix,
/// luminance of black and of white, and gamma.
const XYZ_TO_RGB: [[f32; 3]; 3] = [
    [3.2410, -1.5374, -0.4986],
    [-0.9692, 1.8760, 0.0416],
    [0.0556, -0.2040, 1.0570],
];
const BLACK_LUMINANCE: f32 = 1.0;
const WHITE_LUMINANCE: f32 = 100.0;
const GAMMA: f32 = 2.4;

/// libtiff's CIELab to RGB state: the reference white and the table from
/// luminance to an 8-bit value (the same for the three guns of sRGB).
#[derive(Debug, Clone)]
pub(super) struct CieLab {
    white: [f32; 3],
    step: f32,
    table: Vec<f32>,
}

impl CieLab {
    /// The conversion under white point `chromaticity` (D50 when `None`).
    fn new(chromaticity: Option<[f32; 2]>) -> CieLab {
        let [x, y] = chromaticity.unwrap_or_else(|| {
            let (x0, y0, z0) = (96.4250f32, 100.0f32, 82.4680f32);
            [x0 / (x0 + y0 + z0), y0 / (x0 + y0 + z0)]
        });
        let y_white = 100.0f32;
        let white = [x / y * y_white, y_white, (1.0 - x - y) / y * y_white];
        let gamma = 1.0 / f64::from(GAMMA);
        let table = (0..=TABLE_RANGE)
            .map(|i| 255.0f32 * ((i as f64 / TABLE_RANGE as f64).powf(gamma) as f32))
            .collect();
        CieLab {
            white,
            step: (WHITE_LUMINANCE - BLACK_LUMINANCE) / TABLE_RANGE as f32,
            table,
        }
    }

    /// One pixel: L* (0..=255 for 0..=100), a*, b* to 8-bit RGB.
    fn to_rgb(&self, l: u8, a: i8, b: i8) -> [u8; 3] {
        let [x, y, z] = self.to_xyz(l, a, b);
        XYZ_TO_RGB.map(|row| {
            let lum =
                (row[0] * x + row[1] * y + row[2] * z).clamp(BLACK_LUMINANCE, WHITE_LUMINANCE);
            let i = (((lum - BLACK_LUMINANCE) / self.step) as usize).min(TABLE_RANGE);
            // Rounded half away from zero in double precision, as libtiff's RINT.
            let value = (f64::from(self.table[i]) + 0.5) as u32;
            value.min(255) as u8
        })
    }

    /// libtiff's L*a*b* to XYZ (through its 16-bit form: L scaled by 257,
    /// a* and b* by 256).
    fn to_xyz(&self, l: u8, a: i8, b: i8) -> [f32; 3] {
        let [x0, y0, z0] = self.white;
        let l = (u32::from(l) * 257) as f32 * 100.0 / 65535.0;
        let (y, cby) = if l < 8.856 {
            let y = l * y0 / 903.292;
            (y, 7.787 * (y / y0) + 16.0 / 116.0)
        } else {
            let cby = (l + 16.0) / 116.0;
            (y0 * cby * cby * cby, cby)
        };
        let axis = |t: f32, w: f32| {
            if t < 0.2069 {
                w * (t - 0.13793) / 7.787
            } else {
                w * t * t * t
            }
        };
        let a = (i32::from(a) * 256) as f32 / 256.0 / 500.0 + cby;
        let b = cby - (i32::from(b) * 256) as f32 / 256.0 / 200.0;
        [axis(a, x0), y, axis(b, z0)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmyk_is_scaled_by_the_ink_left_after_black() {
        assert_eq!(cmyk_to_rgb(0, 0, 0, 0), [255, 255, 255]);
        assert_eq!(cmyk_to_rgb(255, 255, 255, 0), [0, 0, 0]);
        assert_eq!(cmyk_to_rgb(0, 0, 0, 255), [0, 0, 0]);
        // (255 - 100) (255 - 10) / 255 = 148.9 -> 148; 155 * 55 / 255 = 33.4.
        assert_eq!(cmyk_to_rgb(10, 200, 255, 100), [148, 33, 0]);
        let planes = [10u8, 0, 200, 0, 255, 0, 100, 255];
        let out = ToRgba::Cmyk.convert(&planes);
        assert_eq!(out, [148, 0, 33, 0, 0, 0, 255, 255]);
    }

    #[test]
    fn cielab_follows_libtiff() {
        let lab = CieLab::new(None);
        // Values GDAL 3.6 (libtiff 4.5) reads from 8-bit CIELab pixels.
        assert_eq!(lab.to_rgb(0, 0, 0), [0, 0, 0]);
        assert_eq!(lab.to_rgb(255, 0, 0), [255, 252, 222]);
        assert_eq!(lab.to_rgb(128, 0, 0), [133, 123, 107]);
        assert_eq!(lab.to_rgb(128, 100, -100), [211, 0, 255]);
        assert_eq!(lab.to_rgb(20, -128, 127), [0, 56, 0]);
        let out = ToRgba::CieLab(Box::new(lab)).convert(&[128, 0, 0]);
        assert_eq!(out, [133, 123, 107, 255]);
    }

    #[test]
    fn bad_configurations_are_refused() {
        let config = |json: &str| crate::codec::testing::config(json);
        assert!(ToRgba::from_config(&config(r#"{"color_to_rgba": "hsv"}"#)).is_err());
        let bad = r#"{"color_to_rgba": "cielab", "white_point": [0.3, 0]}"#;
        assert!(ToRgba::from_config(&config(bad)).is_err());
        let good = r#"{"color_to_rgba": "cielab", "white_point": [0.3457, 0.3585]}"#;
        assert!(ToRgba::from_config(&config(good)).unwrap().is_some());
        assert!(ToRgba::from_config(&config("{}")).unwrap().is_none());
    }
}
