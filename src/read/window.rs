//! Batched window reads: every chunk a window of several bands needs is
//! fetched in one coalesced batch, decoded in parallel and copied straight
//! into the caller's buffer at its pixel, line and band spacing.
//!
//! Memory stays bounded: a window needing more decoded bytes than
//! [`BATCH_BYTES`] is read in several batches of whole chunk rows.

use crate::read::assemble::{self, Nodata, Rect};
use std::ops::Range;
use std::sync::Mutex;

use crate::base::buffers::recycle_bytes;
use crate::base::error::{Error, Result};
use crate::index::{Array, Index};
use crate::read::chunk::{read_chunks, read_chunks_each, FirstFailure, Locations};

/// Most decoded chunk bytes held at once by one window read (256 MiB).
pub const BATCH_BYTES: usize = 256 << 20;

/// Most layers whose chunks one batch fetches at once (a thread each).
pub const LAYER_THREADS: usize = 16;

/// A rectangle of pixels of a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// First column.
    pub x: u64,
    /// First row.
    pub y: u64,
    /// Columns.
    pub width: u64,
    /// Rows.
    pub height: u64,
}

/// Where the caller wants each element: band `b`, row `r`, column `c` of
/// the window goes to byte `b * band + r * line + c * pixel` of the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spacing {
    /// Bytes from one pixel to the next in a row.
    pub pixel: usize,
    /// Bytes from one row to the next.
    pub line: usize,
    /// Bytes from one band to the next.
    pub band: usize,
}

impl Spacing {
    /// Band-sequential, packed spacing for `width` columns and `height`
    /// rows of `size`-byte elements.
    pub fn packed(size: usize, width: usize, height: usize) -> Spacing {
        Spacing {
            pixel: size,
            line: size * width,
            band: size * width * height,
        }
    }
}

/// One array's share of a window read: `window` of `array` (bands
/// `bands`, one list of leading-axis indices per request slot) lands at row
/// `at.0`, column `at.1` of the caller's window, its rows in stored order or
/// reversed (`rows_reversed`: its last row lands at row `at.0`). Elements
/// equal to `nodata` are left out, so what an earlier layer put there shows
/// through.
#[derive(Debug, Clone, Copy)]
pub struct Layer<'a> {
    /// The array read.
    pub array: &'a Array,
    /// The rectangle of the array read.
    pub window: Window,
    /// Leading-axis indices of each band of the request, in request order.
    pub bands: &'a [Vec<u64>],
    /// Row and column of the caller's window the rectangle starts at.
    pub at: (u64, u64),
    /// Elements not pasted, if any.
    pub nodata: Option<&'a Nodata>,
    /// Whether the rectangle's rows land bottom-up.
    pub rows_reversed: bool,
}

/// The part of one chunk a window needs, and the bands taking it.
struct Piece {
    /// The layer the chunk belongs to.
    layer: usize,
    /// Chunk grid index (leading axes, then y and x).
    chunk: Vec<u64>,
    /// The rectangle, in chunk and window coordinates.
    rect: Rect,
    /// Row of the window the rectangle's first row lands at (its last row,
    /// for a layer whose rows are reversed), and its column.
    at: (usize, usize),
    /// The bands of the request taking part of the chunk.
    bands: Vec<BandPart>,
}

/// A band's slot in the request and its leading-axis offsets inside a chunk.
type BandPart = (usize, Vec<u64>);

/// Reads `window` of the bands whose leading-axis indices are `bands`
/// (one list per band, in request order) from `array` into `out`, holding
/// at most about `batch_bytes` of decoded chunks at once (at least one row
/// of chunks).
#[allow(clippy::too_many_arguments)]
pub fn read(
    index: &Index,
    locations: &Locations,
    array: &Array,
    window: Window,
    bands: &[Vec<u64>],
    out: &mut [u8],
    spacing: Spacing,
    batch_bytes: usize,
) -> Result<()> {
    let meta = &array.meta;
    let n = meta.shape.len();
    let (height, width) = (meta.shape[n - 2], meta.shape[n - 1]);
    check_window(window, width, height, &meta.path)?;
    check_buffer(window, bands.len(), meta.dtype.size, spacing, out.len())?;
    let layer = Layer {
        array,
        window,
        bands,
        at: (0, 0),
        nodata: None,
        rows_reversed: false,
    };
    read_layers(index, locations, &[layer], out, spacing, batch_bytes)
}

/// Fails unless `window` is a non-empty rectangle inside a `width` x
/// `height` raster named `what`.
pub fn check_window(window: Window, width: u64, height: u64, what: &str) -> Result<()> {
    let inside = window.width > 0
        && window.height > 0
        && window
            .x
            .checked_add(window.width)
            .is_some_and(|e| e <= width)
        && window
            .y
            .checked_add(window.height)
            .is_some_and(|e| e <= height);
    if inside {
        return Ok(());
    }
    Err(Error::Usage {
        what: format!(
            "window {}x{}+{}+{} is outside the {width}x{height} array '{what}'",
            window.width, window.height, window.x, window.y
        ),
    })
}

/// Reads `layers` into `out` (already checked to hold the caller's window
/// at `spacing`), pasting them in order, later layers over earlier ones.
/// The chunks of all layers are fetched and decoded together, in batches
/// of about `batch_bytes` of decoded chunks (at least one row of chunks).
pub fn read_layers(
    index: &Index,
    locations: &Locations,
    layers: &[Layer<'_>],
    out: &mut [u8],
    spacing: Spacing,
    batch_bytes: usize,
) -> Result<()> {
    let mut batch: Vec<Piece> = Vec::new();
    let mut batched = 0usize;
    for (k, layer) in layers.iter().enumerate() {
        let meta = &layer.array.meta;
        let n = meta.shape.len();
        let window = layer.window;
        // Bands sharing chunks form one group: each chunk is read once for all.
        let mut groups: Vec<(Vec<u64>, Vec<BandPart>)> = Vec::new();
        for (slot, lead) in layer.bands.iter().enumerate() {
            let chunk_lead: Vec<u64> = lead.iter().zip(&meta.chunks).map(|(i, c)| i / c).collect();
            let within: Vec<u64> = lead.iter().zip(&meta.chunks).map(|(i, c)| i % c).collect();
            match groups.iter_mut().find(|(g, _)| *g == chunk_lead) {
                Some((_, members)) => members.push((slot, within)),
                None => groups.push((chunk_lead, vec![(slot, within)])),
            }
        }
        let (ch, cw) = (meta.chunks[n - 2], meta.chunks[n - 1]);
        let chunk_rows = window.y / ch..=(window.y + window.height - 1) / ch;
        let chunk_cols = window.x / cw..=(window.x + window.width - 1) / cw;
        for cy in chunk_rows {
            let y0 = (cy * ch).max(window.y);
            let y1 = ((cy + 1) * ch).min(window.y + window.height);
            for cx in chunk_cols.clone() {
                let x0 = (cx * cw).max(window.x);
                let x1 = ((cx + 1) * cw).min(window.x + window.width);
                for (lead, members) in &groups {
                    let mut chunk = lead.clone();
                    chunk.extend([cy, cx]);
                    batch.push(Piece {
                        layer: k,
                        chunk,
                        rect: Rect {
                            row: (y0 - cy * ch) as usize,
                            col: (x0 - cx * cw) as usize,
                            rows: (y1 - y0) as usize,
                            cols: (x1 - x0) as usize,
                        },
                        at: (
                            match layer.rows_reversed {
                                false => y0 - window.y + layer.at.0,
                                true => window.y + window.height - 1 - y0 + layer.at.0,
                            } as usize,
                            (x0 - window.x + layer.at.1) as usize,
                        ),
                        bands: members.clone(),
                    });
                    batched = batched.saturating_add(meta.chunk_bytes());
                }
            }
            if batched >= batch_bytes {
                read_batch(index, locations, layers, &batch, out, spacing)?;
                batch.clear();
                batched = 0;
            }
        }
    }
    read_batch(index, locations, layers, &batch, out, spacing)
}

/// Fetches and decodes the chunks of `pieces` together, then copies them
/// (or the fill value, for chunks without reference) into `out`, layer
/// after layer so later layers land over earlier ones. When every file is
/// local (or there is one layer), each layer's chunks are copied as soon as
/// they are decoded and dropped, on the decoding threads, so a batch's
/// decoded chunks are never all held at once. Remote layers are fetched
/// together (each on its own thread), then copied in order.
fn read_batch(
    index: &Index,
    locations: &Locations,
    layers: &[Layer<'_>],
    pieces: &[Piece],
    out: &mut [u8],
    spacing: Spacing,
) -> Result<()> {
    if pieces.is_empty() {
        return Ok(());
    }
    let of_layer = |k: usize| -> Vec<&Piece> { pieces.iter().filter(|p| p.layer == k).collect() };
    if layers.len() == 1 || locations.all_local() {
        for (k, layer) in layers.iter().enumerate() {
            stream_layer(index, locations, layer, &of_layer(k), out, spacing)?;
        }
        return Ok(());
    }
    let wanted: Vec<Vec<Vec<u64>>> = (0..layers.len())
        .map(|k| of_layer(k).into_iter().map(|p| p.chunk.clone()).collect())
        .collect();
    let read = |k: usize| read_chunks(index, locations, layers[k].array, &wanted[k]).into_iter();
    let busy: Vec<usize> = (0..layers.len())
        .filter(|&k| !wanted[k].is_empty())
        .collect();
    let mut chunks: Vec<_> = (0..layers.len()).map(|_| Vec::new().into_iter()).collect();
    if let [k] = busy[..] {
        chunks[k] = read(k);
    }
    for some in busy.chunks(LAYER_THREADS).filter(|some| some.len() > 1) {
        std::thread::scope(|scope| {
            let running: Vec<_> = some
                .iter()
                .map(|&k| (k, scope.spawn(move || read(k))))
                .collect();
            for (k, handle) in running {
                chunks[k] = handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            }
        });
    }
    for piece in pieces {
        let chunk = chunks[piece.layer]
            .next()
            .unwrap_or_else(|| Err(Error::unsupported("a chunk that was never read")))?;
        paste(&layers[piece.layer], piece, chunk.as_deref(), out, spacing);
    }
    Ok(())
}

/// Reads the chunks of `pieces`, all of `layer`, copying each into `out`
/// as soon as it is decoded (on the decoding thread) and recycling its
/// buffer.
fn stream_layer(
    index: &Index,
    locations: &Locations,
    layer: &Layer<'_>,
    pieces: &[&Piece],
    out: &mut [u8],
    spacing: Spacing,
) -> Result<()> {
    if pieces.is_empty() {
        return Ok(());
    }
    let wanted: Vec<Vec<u64>> = pieces.iter().map(|p| p.chunk.clone()).collect();
    // Where a piece ends above its chunk's last row, codecs that can stop
    // after the rows it takes do; where it starts below the first, the
    // steps that work row by row start at its first row (unless decoded chunks are kept for the
    // reads after this one: those need them whole).
    let needed: Vec<Range<usize>> = pieces
        .iter()
        .map(|p| {
            let spans = p
                .bands
                .iter()
                .map(|(_, within)| assemble::rect_span(&layer.array.meta, within, p.rect));
            spans
                .reduce(|a, b| a.start.min(b.start)..a.end.max(b.end))
                .unwrap_or(0..0)
        })
        .collect();
    let out = Mutex::new(out);
    let failed = FirstFailure::default();
    read_chunks_each(
        index,
        locations,
        layer.array,
        &wanted,
        (!locations.keeps_decoded()).then_some(&needed[..]),
        &|k, chunk| match chunk {
            Ok(chunk) => {
                let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
                paste(layer, pieces[k], chunk.as_deref(), &mut out, spacing);
                drop(out);
                if let Some(chunk) = chunk {
                    recycle_bytes(chunk);
                }
            }
            Err(e) => failed.record(k, e),
        },
    );
    failed.into_result()
}

/// Copies `piece` of a decoded chunk of `layer` (or its fill value, for a
/// chunk without reference) to `out` at `spacing`.
fn paste(layer: &Layer<'_>, piece: &Piece, chunk: Option<&[u8]>, out: &mut [u8], spacing: Spacing) {
    let meta = &layer.array.meta;
    let fill = meta
        .fill
        .clone()
        .unwrap_or_else(|| vec![0; meta.dtype.size]);
    for (slot, within) in &piece.bands {
        let start = slot * spacing.band + piece.at.0 * spacing.line + piece.at.1 * spacing.pixel;
        let line = spacing.line as isize;
        let target = assemble::Target {
            start,
            line: if layer.rows_reversed { -line } else { line },
            pixel: spacing.pixel,
        };
        match (chunk, layer.nodata) {
            (Some(c), None) => assemble::copy_rect(meta, c, within, piece.rect, out, target),
            (Some(c), Some(nodata)) => {
                assemble::copy_rect_except(meta, c, within, piece.rect, out, target, nodata)
            }
            (None, Some(nodata)) if nodata.matches(&fill) => {}
            (None, _) => assemble::fill_rect(&fill, piece.rect, out, target),
        }
    }
}

/// Checks that every element of the window lands inside a buffer of `len`
/// bytes and that pixels are at least one element apart.
pub fn check_buffer(
    window: Window,
    bands: usize,
    size: usize,
    spacing: Spacing,
    len: usize,
) -> Result<()> {
    let last = |count: u64, step: usize| (count as usize).saturating_sub(1).checked_mul(step);
    let end = last(bands as u64, spacing.band)
        .zip(last(window.height, spacing.line))
        .zip(last(window.width, spacing.pixel))
        .and_then(|((b, l), p)| b.checked_add(l)?.checked_add(p)?.checked_add(size));
    if spacing.pixel < size || end.is_none_or(|e| e > len) {
        return Err(Error::Usage {
            what: format!(
                "a buffer of {len} bytes with spacing {spacing:?} cannot hold a {}x{} window \
                 of {bands} bands of {size}-byte elements",
                window.width, window.height
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::config::Settings;
    use crate::io::resolve::Base;

    /// A 2 x 5 x 7 big-endian u16 array in 1 x 2 x 3 chunks; element
    /// (b, y, x) is 100 * b + 10 * y + x, stored raw in one file, except
    /// chunk (1, 1, 1), which has no reference (fill 9).
    fn fixture(dir: &std::path::Path) -> (Index, Locations) {
        let (bands, height, width, ch, cw) = (2u64, 5u64, 7u64, 2u64, 3u64);
        let mut file = Vec::new();
        let mut refs = serde_json::Map::new();
        refs.insert(
            "a/.zarray".into(),
            serde_json::json!({"shape": [bands, height, width], "chunks": [1, ch, cw],
                "dtype": ">u2", "fill_value": 9, "compressor": null, "filters": null,
                "order": "C", "zarr_format": 2})
            .to_string()
            .into(),
        );
        for b in 0..bands {
            for cy in 0..height.div_ceil(ch) {
                for cx in 0..width.div_ceil(cw) {
                    if (b, cy, cx) == (1, 1, 1) {
                        continue;
                    }
                    let offset = file.len();
                    for y in cy * ch..(cy + 1) * ch {
                        for x in cx * cw..(cx + 1) * cw {
                            let v = (100 * b + 10 * y + x) as u16;
                            file.extend_from_slice(&v.to_be_bytes());
                        }
                    }
                    refs.insert(
                        format!("a/{b}.{cy}.{cx}"),
                        serde_json::json!(["data.bin", offset, file.len() - offset]),
                    );
                }
            }
        }
        std::fs::write(dir.join("data.bin"), &file).unwrap();
        let doc = serde_json::json!({"version": 1, "refs": refs}).to_string();
        let index = Index::from_kerchunk_json("t.json", doc.as_bytes(), &[]).unwrap();
        let settings = Settings::from_lookup(|_| None).unwrap();
        let locations = Locations::resolve(&index, &Base::Dir(dir.to_path_buf()), &settings);
        (index, locations)
    }

    fn expected(b: u64, y: u64, x: u64) -> u16 {
        if b == 1 && (2..4).contains(&y) && (3..6).contains(&x) {
            9
        } else {
            (100 * b + 10 * y + x) as u16
        }
    }

    #[test]
    fn windows_land_at_any_spacing_in_bounded_batches() {
        let dir = std::env::temp_dir().join(format!("chunkref-window-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (index, locations) = fixture(&dir);
        let array = &index.arrays[0];
        let bands = [vec![1], vec![0], vec![1]];
        for window in [
            Window {
                x: 0,
                y: 0,
                width: 7,
                height: 5,
            },
            Window {
                x: 2,
                y: 1,
                width: 4,
                height: 3,
            },
            Window {
                x: 6,
                y: 4,
                width: 1,
                height: 1,
            },
        ] {
            let (w, h) = (window.width as usize, window.height as usize);
            // Pixel-interleaved, with a spare byte pair after each pixel.
            let spacing = Spacing {
                pixel: 8,
                line: 8 * w,
                band: 2,
            };
            for batch_bytes in [1, BATCH_BYTES] {
                let mut out = vec![0u8; 8 * w * h];
                read(
                    &index,
                    &locations,
                    array,
                    window,
                    &bands,
                    &mut out,
                    spacing,
                    batch_bytes,
                )
                .unwrap();
                for (slot, b) in [1u64, 0, 1].into_iter().enumerate() {
                    for r in 0..h {
                        for c in 0..w {
                            let at = slot * 2 + r * spacing.line + c * 8;
                            let got = u16::from_ne_bytes([out[at], out[at + 1]]);
                            let want = expected(b, window.y + r as u64, window.x + c as u64);
                            assert_eq!(got, want, "{window:?} band {b} ({r}, {c})");
                        }
                    }
                }
                assert!(out.chunks_exact(8).all(|px| px[6..] == [0, 0]));
            }
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn layers_paste_in_order_leaving_nodata_out() {
        let dir = std::env::temp_dir().join(format!("chunkref-layers-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (index, locations) = fixture(&dir);
        let array = &index.arrays[0];
        // A 6 x 4 window: band 1's 3 x 2 block from (2, 1) at (0, 0) (its
        // chunk (1, 1) has no reference: fill 9), then band 0's 4 x 4 block
        // from (1, 1) at column 2, its 11 (y 1, x 1) nodata: band 1's 114
        // shows through.
        let (under, over) = ([vec![1]], [vec![0]]);
        let nodata = Nodata::new(11u16.to_ne_bytes().to_vec(), false);
        let layers = [
            Layer {
                array,
                window: Window {
                    x: 2,
                    y: 1,
                    width: 3,
                    height: 2,
                },
                bands: &under,
                at: (0, 0),
                nodata: None,
                rows_reversed: false,
            },
            Layer {
                array,
                window: Window {
                    x: 1,
                    y: 1,
                    width: 4,
                    height: 4,
                },
                bands: &over,
                at: (0, 2),
                nodata: Some(&nodata),
                rows_reversed: false,
            },
        ];
        let (w, h) = (6usize, 4usize);
        for batch_bytes in [1, BATCH_BYTES] {
            let mut out = vec![0u8; 2 * w * h];
            let spacing = Spacing::packed(2, w, h);
            read_layers(&index, &locations, &layers, &mut out, spacing, batch_bytes).unwrap();
            let got: Vec<u16> = out
                .chunks_exact(2)
                .map(|e| u16::from_ne_bytes([e[0], e[1]]))
                .collect();
            let want: Vec<u16> = (0..h as u64)
                .flat_map(|r| (0..w as u64).map(move |c| (r, c)))
                .map(|(r, c)| match (r, c) {
                    (r, c) if c >= 2 && (r, c) != (0, 2) => expected(0, 1 + r, c - 1),
                    (r, c) if r < 2 && c < 3 => expected(1, 1 + r, 2 + c),
                    _ => 0,
                })
                .collect();
            assert_eq!(got, want, "batch {batch_bytes}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn refuses_windows_and_buffers_that_do_not_fit() {
        let dir = std::env::temp_dir().join(format!("chunkref-window-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (index, locations) = fixture(&dir);
        let array = &index.arrays[0];
        let packed = Spacing::packed(2, 7, 5);
        let mut out = vec![0u8; 2 * 7 * 5];
        let outside = Window {
            x: 1,
            y: 0,
            width: 7,
            height: 5,
        };
        let e = read(
            &index,
            &locations,
            array,
            outside,
            &[vec![0]],
            &mut out,
            packed,
            BATCH_BYTES,
        )
        .unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
        let whole = Window {
            x: 0,
            y: 0,
            width: 7,
            height: 5,
        };
        let e = read(
            &index,
            &locations,
            array,
            whole,
            &[vec![0], vec![1]],
            &mut out,
            packed,
            1,
        )
        .unwrap_err();
        assert!(e.to_string().contains("cannot hold"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
