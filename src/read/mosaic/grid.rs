//! Mosaic geometry, pure: the union of pixel-aligned scenes on one grid,
//! each scene's place in it, and the part of a window a scene covers.

use crate::read::window::Window;

/// How far (in pixels) a scene's origin may lie from a whole pixel of the
/// union and still be taken as aligned.
pub const ALIGN_TOLERANCE: f64 = 1e-3;

/// How much (relative) two scenes' pixel sizes may differ and still be the
/// same resolution.
pub const RESOLUTION_TOLERANCE: f64 = 1e-9;

/// A scene on the ground: its GDAL geotransform and size in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// GDAL geotransform `[x0, dx, rx, y0, ry, dy]` of pixel corners.
    pub transform: [f64; 6],
    /// Columns.
    pub width: u64,
    /// Rows.
    pub height: u64,
}

/// Where a scene lies in the union, in union pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// First row.
    pub row: u64,
    /// First column.
    pub col: u64,
    /// Rows.
    pub height: u64,
    /// Columns.
    pub width: u64,
}

/// The union of several scenes.
#[derive(Debug, Clone, PartialEq)]
pub struct Union {
    /// GDAL geotransform of the union.
    pub transform: [f64; 6],
    /// Columns.
    pub width: u64,
    /// Rows.
    pub height: u64,
    /// Each scene's place, in the order given.
    pub scenes: Vec<Placement>,
}

/// Why scenes do not make a mosaic: the scene (position in the list) and
/// what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Misfit {
    /// Position of the offending scene.
    pub scene: usize,
    /// What is wrong, in words.
    pub reason: String,
}

/// The union of `scenes`: the first scene's pixel size, the smallest box
/// of whole pixels holding every scene; each scene's origin must lie a
/// whole number of pixels from the first's (within [`ALIGN_TOLERANCE`]),
/// with the same pixel size and no rotation.
pub fn union(scenes: &[Footprint]) -> Result<Union, Misfit> {
    let misfit = |scene: usize, reason: String| Misfit { scene, reason };
    let first = scenes
        .first()
        .ok_or_else(|| misfit(0, "no scene to mosaic".into()))?;
    let [x0, dx, _, y0, _, dy] = first.transform;
    let mut offsets = Vec::with_capacity(scenes.len());
    for (i, s) in scenes.iter().enumerate() {
        let t = s.transform;
        if t[2] != 0.0 || t[4] != 0.0 {
            return Err(misfit(
                i,
                format!("its geotransform {t:?} is rotated (a mosaic needs north-up scenes)"),
            ));
        }
        if s.width == 0 || s.height == 0 || dx == 0.0 || dy == 0.0 {
            return Err(misfit(
                i,
                format!(
                    "it is empty ({} x {} pixels of {} x {})",
                    s.width, s.height, t[1], t[5]
                ),
            ));
        }
        let same = |a: f64, b: f64| (a - b).abs() <= RESOLUTION_TOLERANCE * b.abs();
        if !same(t[1], dx) || !same(t[5], dy) {
            return Err(misfit(
                i,
                format!(
                    "its pixel size {} x {} differs from the first scene's {dx} x {dy} \
                     (a mosaic needs one resolution)",
                    t[1], t[5]
                ),
            ));
        }
        // (Adding 0 turns a -0 into 0 for messages.)
        let col = (t[0] - x0) / dx + 0.0;
        let row = (t[3] - y0) / dy + 0.0;
        let off = |v: f64| (v - v.round()).abs() > ALIGN_TOLERANCE;
        if off(col) || off(row) {
            return Err(misfit(
                i,
                format!(
                    "its origin ({}, {}) lies {col:.4} columns and {row:.4} rows from the first \
                     scene's: not a whole number of pixels (a mosaic needs pixel-aligned scenes)",
                    t[0], t[3]
                ),
            ));
        }
        offsets.push((row.round() as i64, col.round() as i64));
    }
    // The union's origin is the origin of the scene furthest up (left), as
    // the scenes give it.
    let top = (0..scenes.len()).min_by_key(|&i| offsets[i].0).unwrap_or(0);
    let left = (0..scenes.len()).min_by_key(|&i| offsets[i].1).unwrap_or(0);
    let (row0, col0) = (offsets[top].0, offsets[left].1);
    let placements: Vec<Placement> = scenes
        .iter()
        .zip(&offsets)
        .map(|(s, &(r, c))| Placement {
            row: (r - row0) as u64,
            col: (c - col0) as u64,
            height: s.height,
            width: s.width,
        })
        .collect();
    let width = placements
        .iter()
        .map(|p| p.col + p.width)
        .max()
        .unwrap_or(0);
    let height = placements
        .iter()
        .map(|p| p.row + p.height)
        .max()
        .unwrap_or(0);
    Ok(Union {
        transform: [
            scenes[left].transform[0],
            dx,
            0.0,
            scenes[top].transform[3],
            0.0,
            dy,
        ],
        width,
        height,
        scenes: placements,
    })
}

/// The part of `window` (union pixels) that scene `scene` covers: that
/// window in the scene's own pixels, and where it starts in `window`
/// (row, column). `None` when they do not meet.
pub fn overlap(window: Window, scene: Placement) -> Option<(Window, (u64, u64))> {
    let x0 = window.x.max(scene.col);
    let y0 = window.y.max(scene.row);
    let x1 = (window.x + window.width).min(scene.col + scene.width);
    let y1 = (window.y + window.height).min(scene.row + scene.height);
    (x0 < x1 && y0 < y1).then(|| {
        let inner = Window {
            x: x0 - scene.col,
            y: y0 - scene.row,
            width: x1 - x0,
            height: y1 - y0,
        };
        (inner, (y0 - window.y, x0 - window.x))
    })
}

/// The parts of a `width` x `height` window that none of `covers`
/// (rectangles in the window's own pixels) covers, as rectangles: bands of
/// rows between the covers' top and bottom edges, and in each band the
/// column spans no cover crossing the whole band holds.
pub fn uncovered(width: u64, height: u64, covers: &[Window]) -> Vec<Window> {
    let mut edges: Vec<u64> = covers
        .iter()
        .flat_map(|c| [c.y, c.y + c.height])
        .chain([0, height])
        .filter(|&y| y <= height)
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let mut gaps = Vec::new();
    for band in edges.windows(2) {
        let (y0, y1) = (band[0], band[1]);
        let mut spans: Vec<(u64, u64)> = covers
            .iter()
            .filter(|c| c.y <= y0 && c.y + c.height >= y1)
            .map(|c| (c.x, c.x + c.width))
            .collect();
        spans.sort_unstable();
        let mut x = 0;
        for (start, end) in spans.into_iter().chain([(width, width)]) {
            if start > x {
                gaps.push(Window {
                    x,
                    y: y0,
                    width: start.min(width) - x,
                    height: y1 - y0,
                });
            }
            x = x.max(end);
            if x >= width {
                break;
            }
        }
    }
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scene(x0: f64, y0: f64, width: u64, height: u64) -> Footprint {
        Footprint {
            transform: [x0, 10.0, 0.0, y0, 0.0, -10.0],
            width,
            height,
        }
    }

    #[test]
    fn union_holds_every_scene_at_its_pixel_offset() {
        // b lies right of and below a, c above and left of both, with a gap.
        let u = union(&[
            scene(1000.0, 5000.0, 30, 20),
            scene(1200.0, 4900.0, 40, 25),
            scene(700.0, 5100.0, 5, 5),
        ])
        .unwrap();
        assert_eq!(u.transform, [700.0, 10.0, 0.0, 5100.0, 0.0, -10.0]);
        assert_eq!((u.width, u.height), (90, 45));
        let at: Vec<(u64, u64)> = u.scenes.iter().map(|p| (p.row, p.col)).collect();
        assert_eq!(at, vec![(10, 30), (20, 50), (0, 0)]);
        assert_eq!((u.scenes[1].height, u.scenes[1].width), (25, 40));
    }

    #[test]
    fn south_up_scenes_grow_downwards() {
        let s = |y0: f64| Footprint {
            transform: [0.0, 1.0, 0.0, y0, 0.0, 1.0],
            width: 4,
            height: 4,
        };
        let u = union(&[s(10.0), s(2.0)]).unwrap();
        assert_eq!(u.transform[3], 2.0);
        assert_eq!((u.scenes[0].row, u.scenes[1].row, u.height), (8, 0, 12));
    }

    #[test]
    fn tolerates_rounding_but_not_misalignment() {
        let u = union(&[scene(0.0, 0.0, 2, 2), scene(20.000_001, -10.0, 2, 2)]).unwrap();
        assert_eq!((u.scenes[1].row, u.scenes[1].col), (1, 2));
        let e = union(&[
            scene(0.0, 0.0, 2, 2),
            scene(0.0, 0.0, 2, 2),
            scene(25.0, 0.0, 2, 2),
        ])
        .unwrap_err();
        assert_eq!(e.scene, 2);
        assert!(e.reason.contains("2.5000 columns"), "{}", e.reason);
    }

    #[test]
    fn refuses_other_resolutions_and_rotations() {
        let mut fine = scene(0.0, 0.0, 2, 2);
        fine.transform[1] = 5.0;
        let e = union(&[scene(0.0, 0.0, 2, 2), fine]).unwrap_err();
        assert!(
            e.scene == 1 && e.reason.contains("pixel size 5 x -10"),
            "{e:?}"
        );
        let mut rotated = scene(0.0, 0.0, 2, 2);
        rotated.transform[2] = 0.5;
        assert!(union(&[rotated]).unwrap_err().reason.contains("rotated"));
        assert!(union(&[]).is_err());
    }

    #[test]
    fn overlaps_clip_to_the_scene() {
        let p = Placement {
            row: 10,
            col: 20,
            height: 5,
            width: 8,
        };
        let w = |x, y, width, height| Window {
            x,
            y,
            width,
            height,
        };
        assert_eq!(
            overlap(w(0, 0, 100, 100), p),
            Some((w(0, 0, 8, 5), (10, 20)))
        );
        assert_eq!(overlap(w(25, 12, 10, 1), p), Some((w(5, 2, 3, 1), (0, 0))));
        assert_eq!(overlap(w(22, 3, 2, 8), p), Some((w(2, 0, 2, 1), (7, 0))));
        assert_eq!(overlap(w(28, 10, 5, 5), p), None);
        assert_eq!(overlap(w(0, 0, 20, 100), p), None);
    }

    #[test]
    fn uncovered_parts_are_what_no_cover_holds() {
        let w = |x, y, width, height| Window {
            x,
            y,
            width,
            height,
        };
        assert_eq!(uncovered(10, 8, &[w(0, 0, 10, 8)]), vec![]);
        assert_eq!(uncovered(10, 8, &[]), vec![w(0, 0, 10, 8)]);
        // Two overlapping covers leaving a right margin and a bottom band.
        let gaps = uncovered(10, 8, &[w(0, 0, 6, 5), w(4, 2, 4, 3)]);
        assert_eq!(
            gaps,
            vec![w(6, 0, 4, 2), w(8, 2, 2, 3), w(0, 5, 10, 3)],
            "{gaps:?}"
        );
        let covered: u64 = 6 * 5 + 2 * 3;
        let open: u64 = gaps.iter().map(|g| g.width * g.height).sum();
        assert_eq!(covered + open, 80);
    }
}
