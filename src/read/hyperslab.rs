//! Hyperslab reads of the multidimensional view: any start, count and step
//! along each axis of a stored array, into a buffer at any element strides,
//! through the raster view's batched window reads (every chunk fetched
//! together and decoded in parallel, only the chunks needed).

use crate::base::error::{Error, Result};
use crate::read::raster::Dataset;
use crate::read::window::{Spacing, Window};

/// Most bytes of the covering window a strided read goes through at once.
const MAX_COVER_BYTES: usize = 256 * 1024 * 1024;

/// What a read asks for: along axis `d`, the `count[d]` elements at
/// `start[d] + i * step[d]` (a step may be negative or 0).
#[derive(Debug, Clone, Copy)]
pub struct Slab<'a> {
    /// First index along each axis.
    pub start: &'a [u64],
    /// Elements along each axis.
    pub count: &'a [u64],
    /// Index step along each axis.
    pub step: &'a [i64],
}

/// Where a read goes: element `(i_0, .., i_n)` of the slab to byte
/// `origin + sum(i_d * strides[d])` of `out`.
#[derive(Debug)]
pub struct Target<'a> {
    /// The buffer, covering every element written.
    pub out: &'a mut [u8],
    /// Byte of `out` element `(0, .., 0)` goes to.
    pub origin: usize,
    /// Bytes from one element to the next along each axis.
    pub strides: &'a [isize],
}

impl Slab<'_> {
    /// The index of element `i` along axis `d` (of a checked slab).
    fn index(&self, d: usize, i: u64) -> u64 {
        (self.start[d] as i64 + i as i64 * self.step[d]) as u64
    }

    /// Checks the slab against `shape` (of array `what`): one start, count
    /// and step per axis, every index inside.
    pub fn check(&self, shape: &[u64], what: &str) -> Result<()> {
        let n = shape.len();
        if self.start.len() != n || self.count.len() != n || self.step.len() != n {
            return Err(Error::Usage {
                what: format!("a read of array '{what}' needs {n} start, count and step values"),
            });
        }
        for (d, &size) in shape.iter().enumerate() {
            let (start, count, step) = (self.start[d], self.count[d], self.step[d]);
            let last = i128::from(start) + i128::from(count.saturating_sub(1)) * i128::from(step);
            if count == 0 || start >= size || last < 0 || last >= i128::from(size) {
                return Err(Error::Usage {
                    what: format!(
                        "read of array '{what}' outside its extent: along dimension {d} \
                         (size {size}), {count} elements from {start} by steps of {step}"
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Calls `f(index)` for every index of a slab of `count` elements per
/// axis, in C order.
fn each_index(count: &[u64], mut f: impl FnMut(&[u64]) -> Result<()>) -> Result<()> {
    if count.contains(&0) {
        return Ok(());
    }
    let mut idx = vec![0u64; count.len()];
    loop {
        f(&idx)?;
        let Some(d) = (0..count.len()).rev().find(|&d| idx[d] + 1 < count[d]) else {
            return Ok(());
        };
        idx[d] += 1;
        idx[d + 1..].fill(0);
    }
}

/// Byte `base + sum(idx_d * strides_d)`, refused when before the buffer.
fn offset(base: isize, idx: &[u64], strides: &[isize]) -> Result<usize> {
    let at = idx
        .iter()
        .zip(strides)
        .fold(base, |acc, (&i, &s)| acc + i as isize * s);
    usize::try_from(at).map_err(|_| Error::Usage {
        what: "a read's buffer strides point before its buffer".into(),
    })
}

impl Target<'_> {
    /// Writes `bytes` at byte `offset` of `out`.
    fn put(&mut self, offset: usize, bytes: &[u8]) -> Result<()> {
        self.out
            .get_mut(offset..offset + bytes.len())
            .ok_or_else(|| Error::Usage {
                what: "a read's buffer is smaller than its strides need".into(),
            })?
            .copy_from_slice(bytes);
        Ok(())
    }
}

/// Reads `slab` of array `array` of `ds` (as stored; its axes as the store
/// declares them, 0-D and 1-D arrays reshaped to rows by
/// [`Dataset::open_store`]) into `target`, as native-order elements.
pub fn read(ds: &Dataset, array: usize, slab: &Slab<'_>, target: &mut Target<'_>) -> Result<()> {
    read_capped(ds, array, slab, target, MAX_COVER_BYTES)
}

/// [`read`], the windows of strided reads at most `cap` bytes at once.
fn read_capped(
    ds: &Dataset,
    array: usize,
    slab: &Slab<'_>,
    target: &mut Target<'_>,
    cap: usize,
) -> Result<()> {
    let meta = &ds.index.arrays[array].meta;
    let declared = &meta.shape[meta.added_axes..];
    slab.check(declared, &meta.path)?;
    if target.strides.len() != declared.len() {
        return Err(Error::Usage {
            what: format!(
                "a read of array '{}' needs one stride per dimension",
                meta.path
            ),
        });
    }
    // The axes reshape_to_row put in front: one element each.
    let added = meta.added_axes;
    let start: Vec<u64> = [vec![0; added], slab.start.to_vec()].concat();
    let count: Vec<u64> = [vec![1; added], slab.count.to_vec()].concat();
    let step: Vec<i64> = [vec![1; added], slab.step.to_vec()].concat();
    let strides: Vec<isize> = [vec![0; added], target.strides.to_vec()].concat();
    let full = Slab {
        start: &start,
        count: &count,
        step: &step,
    };
    let mut target = Target {
        out: &mut *target.out,
        origin: target.origin,
        strides: &strides,
    };
    let n = start.len();
    let size = meta.dtype.size;
    // The leading-axis indices of each band, in C order, and where each goes.
    let lead = n - 2;
    let mut bands: Vec<Vec<u64>> = Vec::new();
    let mut offsets: Vec<isize> = Vec::new();
    each_index(&count[..lead], |idx| {
        bands.push((0..lead).map(|d| full.index(d, idx[d])).collect());
        offsets.push(
            idx.iter()
                .zip(&strides)
                .map(|(&i, &s)| i as isize * s)
                .sum(),
        );
        Ok(())
    })?;
    let (sy, sx) = (strides[n - 2], strides[n - 1]);
    let band_step = match offsets[..] {
        [_] => Some(0),
        [a, b, ..] if b > a && offsets.windows(2).all(|w| w[1] - w[0] == b - a) => Some(b - a),
        _ => None,
    };
    let direct = step[n - 2] == 1 && step[n - 1] == 1 && sy > 0 && sx > 0;
    if let (true, Some(band)) = (direct, band_step) {
        let window = Window {
            x: start[n - 1],
            y: start[n - 2],
            width: count[n - 1],
            height: count[n - 2],
        };
        let spacing = Spacing {
            pixel: sx as usize,
            line: sy as usize,
            band: band as usize,
        };
        // (The first band goes to the first element: offsets[0] is 0.)
        let out = target.out.get_mut(target.origin..).unwrap_or_default();
        return ds.read_stored(array, window, &bands, out, spacing);
    }
    // Otherwise the windows covering the rows and columns asked for are
    // read (the rows in groups whose covering strip fits in `cap`, as many
    // bands at a time as fit) and the elements
    // picked from them.
    let rows: Vec<u64> = (0..count[n - 2]).map(|i| full.index(n - 2, i)).collect();
    let last_col = full.index(n - 1, count[n - 1] - 1);
    let (x0, x1) = (start[n - 1].min(last_col), start[n - 1].max(last_col));
    let row_bytes = (x1 - x0 + 1) as usize * size;
    let mut first = 0;
    while first < rows.len() {
        // The output rows first..end and the stored rows y0..=y1 they cover.
        let (mut end, mut y0, mut y1) = (first + 1, rows[first], rows[first]);
        while let Some(&r) = rows.get(end) {
            let (lo, hi) = (y0.min(r), y1.max(r));
            if (hi - lo + 1) as usize * row_bytes > cap {
                break;
            }
            (y0, y1, end) = (lo, hi, end + 1);
        }
        let window = Window {
            x: x0,
            y: y0,
            width: x1 - x0 + 1,
            height: y1 - y0 + 1,
        };
        let plane = window.height as usize * row_bytes;
        let per_batch = (cap / plane.max(1)).max(1);
        let spacing = Spacing::packed(size, window.width as usize, window.height as usize);
        let mut cover: Vec<u8> = Vec::new();
        for (b0, batch) in bands
            .chunks(per_batch)
            .enumerate()
            .map(|(i, c)| (i * per_batch, c))
        {
            cover.resize(plane * batch.len(), 0);
            ds.read_stored(array, window, batch, &mut cover, spacing)?;
            for (k, &band_offset) in offsets[b0..b0 + batch.len()].iter().enumerate() {
                let base = target.origin as isize + band_offset;
                each_index(&[(end - first) as u64, count[n - 1]], |ij| {
                    let i = first + ij[0] as usize;
                    let row = (rows[i] - y0) as usize;
                    let col = (full.index(n - 1, ij[1]) - x0) as usize;
                    let from = k * plane + row * row_bytes + col * size;
                    let to = offset(base, &[i as u64, ij[1]], &strides[n - 2..])?;
                    target.put(to, &cover[from..from + size])
                })?;
            }
        }
        first = end;
    }
    Ok(())
}

/// Reads `slab` of a 1-D array of computed `values` (served as native
/// float64) into `target`.
pub fn read_values(
    values: &[f64],
    what: &str,
    slab: &Slab<'_>,
    target: &mut Target<'_>,
) -> Result<()> {
    slab.check(&[values.len() as u64], what)?;
    let (origin, strides) = (target.origin as isize, target.strides);
    each_index(slab.count, |idx| {
        let at = offset(origin, idx, strides)?;
        let v = values[slab.index(0, idx[0]) as usize];
        target.put(at, &v.to_ne_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slabs_outside_the_extent_name_the_array() {
        let slab = |start, count, step| (vec![start], vec![count], vec![step]);
        let inside = [slab(0, 5, 1), slab(4, 5, -1), slab(1, 2, 3), slab(2, 7, 0)];
        for (start, count, step) in &inside {
            let s = Slab { start, count, step };
            assert!(s.check(&[5], "a").is_ok(), "{s:?}");
        }
        let outside = [slab(0, 6, 1), slab(3, 5, -1), slab(5, 1, 1), slab(0, 0, 1)];
        for (start, count, step) in &outside {
            let s = Slab { start, count, step };
            let e = s.check(&[5], "grid/temp").unwrap_err().to_string();
            assert!(e.contains("'grid/temp'"), "{e}");
        }
    }

    #[test]
    fn computed_values_follow_steps_and_strides() {
        let values = [10.0, 11.0, 12.0, 13.0];
        let mut out = [0u8; 32];
        let (start, count, step) = ([3], [2], [-2]);
        let slab = Slab {
            start: &start,
            count: &count,
            step: &step,
        };
        // Written backwards: the second element before the first.
        let mut target = Target {
            out: &mut out,
            origin: 16,
            strides: &[-16],
        };
        read_values(&values, "x", &slab, &mut target).unwrap();
        assert_eq!(f64::from_ne_bytes(out[16..24].try_into().unwrap()), 13.0);
        assert_eq!(f64::from_ne_bytes(out[0..8].try_into().unwrap()), 11.0);
    }

    /// A (3, 5, 6) `u1` array in (1, 2, 4) chunks held in the index, each
    /// element `t * 30 + y * 6 + x`.
    fn cube() -> Dataset {
        use base64::Engine;
        use std::sync::Arc;
        let zarray = serde_json::json!({
            "shape": [3, 5, 6], "chunks": [1, 2, 4], "dtype": "|u1", "fill_value": 0,
            "compressor": null, "filters": null, "order": "C", "zarr_format": 2,
        });
        let mut refs = serde_json::Map::new();
        refs.insert(".zarray".into(), zarray.to_string().into());
        for (t, cy, cx) in
            (0..3).flat_map(|t| (0..3).flat_map(move |cy| (0..2).map(move |cx| (t, cy, cx))))
        {
            let mut bytes = Vec::new();
            for y in cy * 2..cy * 2 + 2 {
                for x in cx * 4..cx * 4 + 4 {
                    bytes.push(if y < 5 && x < 6 {
                        (t * 30 + y * 6 + x) as u8
                    } else {
                        0
                    });
                }
            }
            let text = base64::engine::general_purpose::STANDARD.encode(&bytes);
            refs.insert(format!("{t}.{cy}.{cx}"), format!("base64:{text}").into());
        }
        let doc = serde_json::json!({"version": 1, "refs": refs}).to_string();
        let index = crate::index::Index::from_kerchunk_json("t.json", doc.as_bytes(), &[]).unwrap();
        let settings = crate::io::config::Settings::from_lookup(|_| None).unwrap();
        let base = crate::io::resolve::Base::Dir("/d".into());
        let order = crate::read::georef::orientation::YOrder::Stored;
        Dataset::from_index(Arc::new(index), &base, &settings, None, order).unwrap()
    }

    #[test]
    fn slabs_read_the_elements_their_steps_pick_at_any_strides() {
        let ds = cube();
        let cases: [([u64; 3], [u64; 3], [i64; 3]); 4] = [
            ([0, 1, 1], [3, 2, 3], [1, 1, 1]),
            ([2, 4, 5], [3, 3, 3], [-1, -2, -2]),
            ([1, 0, 0], [2, 5, 2], [1, 1, 5]),
            ([0, 3, 2], [1, 1, 4], [1, 0, 1]),
        ];
        for (start, count, step) in cases {
            let want: Vec<u8> = (0..count[0])
                .flat_map(|i| {
                    (0..count[1]).flat_map(move |j| (0..count[2]).map(move |k| (i, j, k)))
                })
                .map(|(i, j, k)| {
                    let at = |d: usize, n: u64| (start[d] as i64 + n as i64 * step[d]) as u64;
                    (at(0, i) * 30 + at(1, j) * 6 + at(2, k)) as u8
                })
                .collect();
            let slab = Slab {
                start: &start,
                count: &count,
                step: &step,
            };
            let n = want.len();
            let packed = [(count[1] * count[2]) as isize, count[2] as isize, 1];
            // Packed, written backwards, and one row of the cover at a time.
            for (strides, origin, cap) in [
                (packed, 0, MAX_COVER_BYTES),
                (packed.map(|s| -s), n - 1, MAX_COVER_BYTES),
                (packed, 0, 6),
            ] {
                let mut out = vec![0u8; n];
                let mut target = Target {
                    out: &mut out,
                    origin,
                    strides: &strides,
                };
                read_capped(&ds, 0, &slab, &mut target, cap).unwrap();
                if origin > 0 {
                    out.reverse();
                }
                assert_eq!(out, want, "{start:?} {count:?} {step:?} {strides:?} {cap}");
            }
        }
    }
}
