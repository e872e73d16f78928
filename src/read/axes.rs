//! Read-time axis remaps of a level: the rows served in reverse stored
//! order (a grid stored south-up served north-up, as GDAL's netCDF driver
//! serves it) and the columns rolled (a 0..360 degree grid served from
//! -180 degrees, as GDAL's GRIB driver serves it). A served window maps to
//! at most two stored rectangles, each pasted where it lands in the
//! caller's window (rows bottom-up when reversed); every read path (window,
//! block, resampled, mask) goes through [`AxisMap::parts`].

use crate::read::window::Window;

/// How the served (y, x) plane of a level maps to the stored one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AxisMap {
    /// Served row `r` is stored row `height - 1 - r`.
    pub rows_reversed: bool,
    /// Served column `c` is stored column `(c + columns_rolled) % width`.
    pub columns_rolled: u64,
}

/// A stored rectangle of a served window and where it lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Part {
    /// The stored rectangle.
    pub stored: Window,
    /// Row and column of the served window its first stored row and column
    /// land at (its last stored row, when rows are reversed).
    pub at: (u64, u64),
}

impl AxisMap {
    /// True when served and stored planes are the same.
    pub fn is_identity(&self) -> bool {
        !self.rows_reversed && self.columns_rolled == 0
    }

    /// The stored rectangles of the served `window` of a `width` x `height`
    /// plane (the window is inside it), in served column order.
    pub fn parts(&self, window: Window, width: u64, height: u64) -> Vec<Part> {
        let y = match self.rows_reversed {
            true => height - window.y - window.height,
            false => window.y,
        };
        let first = (window.x + self.columns_rolled % width.max(1)) % width.max(1);
        let before_edge = (width - first).min(window.width);
        let mut parts = vec![Part {
            stored: Window {
                x: first,
                y,
                width: before_edge,
                height: window.height,
            },
            at: (0, 0),
        }];
        if before_edge < window.width {
            parts.push(Part {
                stored: Window {
                    x: 0,
                    y,
                    width: window.width - before_edge,
                    height: window.height,
                },
                at: (0, before_edge),
            });
        }
        parts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn win(x: u64, y: u64, width: u64, height: u64) -> Window {
        Window {
            x,
            y,
            width,
            height,
        }
    }

    #[test]
    fn reversed_rows_map_to_the_mirrored_stored_rows() {
        let map = AxisMap {
            rows_reversed: true,
            columns_rolled: 0,
        };
        let parts = map.parts(win(2, 1, 3, 4), 10, 8);
        assert_eq!(
            parts,
            vec![Part {
                stored: win(2, 3, 3, 4),
                at: (0, 0)
            }]
        );
    }

    #[test]
    fn rolled_columns_split_at_the_stored_edge() {
        let map = AxisMap {
            rows_reversed: false,
            columns_rolled: 6,
        };
        // Served columns 2..7 are stored 8, 9, then 0, 1, 2.
        assert_eq!(
            map.parts(win(2, 0, 5, 1), 10, 1),
            vec![
                Part {
                    stored: win(8, 0, 2, 1),
                    at: (0, 0)
                },
                Part {
                    stored: win(0, 0, 3, 1),
                    at: (0, 2)
                }
            ]
        );
        // Served columns 5..7 are stored 1..3: one part.
        assert_eq!(map.parts(win(5, 0, 2, 1), 10, 1)[0].stored, win(1, 0, 2, 1));
        assert!(AxisMap::default().is_identity() && !map.is_identity());
    }
}
