//! `chunkref`: the command-line companion of the ChunkRef GDAL driver.
//!
//! ```text
//! chunkref index [--template-base] SOURCE.tif -o OUT.json
//! chunkref index [--template-base] STORE.zarr -o OUT.json|OUT.parquet|OUT.fgb
//! chunkref index [--template-base] A.tif B.tif ... -o OUT_DIR/
//! chunkref index [--template-base] [--bad-checksum-warning] CELL.dt1 ... -o OUT.json
//! chunkref index [--template-base] FILE.nc|FILE.h5 -o OUT.json|OUT.parquet
//! chunkref index [--template-base] [--datetime-from-name | --datetime-from-metadata] A.tif B.tif ... -o STACK.parquet|.json
//! chunkref index [--template-base] [--mosaic | --stack] A.tif B.tif ... -o MOSAIC.parquet|.fgb|.json
//! chunkref index --stac SOURCE --asset NAME[,NAME...] [--append] -o STACK.parquet|.json|.fgb
//! chunkref convert IN.json|IN.parquet OUT.json|OUT.parquet
//! ```
//! Reads only the headers of each source and writes a Kerchunk JSON v1 chunk
//! index, or a Parquet chunk-reference table when OUT ends in `.parquet`
//! (docs/reference-table.md); `convert` turns one index form into another. TIFF / BigTIFF / COG: one index per source (`<name>.tile_index.json`
//! in OUT_DIR when there are several sources). DTED: one cell is one index;
//! several cells are ONE mosaic index. NetCDF (3 and 4) / HDF5: one index per file,
//! the store kerchunk's SingleHdf5ToZarr writes (every group and numeric
//! dataset, chunk offsets from libhdf5's chunk index); several such files
//! go to OUT_DIR/, never into one stack.
//! A Zarr v2 / v3 store directory: its metadata documents inline and one
//! reference per chunk file (per inner chunk of a v3 shard), see
//! `chunkref::builders::zarr_store`; one index per store.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

const USAGE: &str = r#"usage: chunkref index [--template-base] [--bad-checksum-warning] [--grib-units U]
                      [--stack | --mosaic]
                      [--datetime-from-name | --datetime-from-metadata] [--from-list FILE]
                      [--concurrency N] [--skip-errors] [--failures FILE]
                      [--append | --shard I/N] SOURCE... -o OUT(.json | .parquet | .fgb | DIR/)
       chunkref index --stac SOURCE --asset NAME[,NAME...] [--bbox B] [--datetime D]
                      [--collections C] [--filter CQL2] [--allow-host HOST[,HOST...]]
                      [--max-pages N] [--max-items N] [--skip-errors] [--failures FILE]
                      [--append] -o OUT(.json | .parquet | .fgb)
       chunkref index --merge-shards -o OUT
       chunkref convert IN OUT      (IN: Kerchunk JSON, Parquet table, Kerchunk Parquet directory
                                    or Icechunk repository (its main branch);
                                    OUT: .json Kerchunk JSON, .parquet or .fgb reference table)
  SOURCE           TIFF / BigTIFF / COG, JPEG 2000 (.j2k, .jp2), NITF or GRIB files
                   (one index each; GRIB: one band per field), or DTED cells
                   (.dt0/.dt1/.dt2; several cells make one seamless mosaic index),
                   or Zarr v2 / v3 stores (one index each: metadata inline, a
                   reference per chunk file or per inner chunk of a v3 shard),
                   or NetCDF-3 / NetCDF4 / HDF5 files (.nc, .h5: one index each, every group
                   and numeric dataset; several with OUT a file are joined along
                   --concat-dim NAME, by default the first dimension);
                   local paths or URLs (s3://, gs://, az://, https://, /vsis3/,
                   /vsigs/, /vsiaz/, /vsicurl/), read by range with the AWS_* /
                   GOOGLE_* / AZURE_* / GDAL_HTTP_* settings of the environment;
                   a URL whose key holds * ? [ ] lists the bucket
                   ('s3://bucket/sst/2021/*.tif'; ** crosses directories)
                   several sources with OUT a .json/.parquet/.fgb file (not a directory):
                   one time stack of files on the same grid, in the order given, or
                   a mosaic of scenes on different grids of one CRS and resolution
                   (pixel aligned; later scenes over earlier ones)
  --template-base  write portable {{base}}NAME URLs with "templates": {"base": ""}
                   (the index then sits next to its sources, or is opened with
                   -oo TEMPLATE_base=/where/they/are/)
  --stack, --mosaic
                   several sources: make a time stack (files on one grid) or a mosaic
                   (scenes of one CRS and resolution) whatever their grids
  --datetime-from-name
                   time stack: each step's datetime is the first date (YYYYMMDD or
                   YYYY-MM-DD, optionally with a time) in its file name
  --datetime-from-metadata
                   time stack: each step's datetime is the one its file records:
                   GDAL metadata ACQUISITIONDATETIME, DATETIME or TIFFTAG_DATETIME
                   (TIFF; JPEG 2000 written with -co WRITE_METADATA=YES), else the
                   TIFF DateTime tag; NITF IDATIM of the first image segment
  --from-list FILE sources listed in FILE, one per line (- reads standard input)
  --concurrency N  sources read at once (default: the cores; 128 when some are remote)
  --skip-errors    index what can be indexed; the sources that fail are left out and
                   listed (by default any failure fails the run, naming every source)
  --failures FILE  write the sources that failed to FILE, one SOURCE<TAB>REASON line each
  --append         add the sources as new time steps of the collection OUT.parquet
                   (a directory of Parquet parts; a one-file table becomes its first part)
  --shard I/N      index the I-th of N contiguous blocks of the sources (0 <= I < N) as
                   OUT/shard-I-of-N.parquet, steps numbered in the whole list; run every
                   shard (anywhere), then --merge-shards -o OUT joins them without a rewrite
  --stac SOURCE    index the assets --asset names of the items of a STAC source
                   (docs/stac.md): a STAC API search (its landing page or /search; --bbox
                   minx,miny,maxx,maxy, --datetime, --collections, --filter passed to
                   it, its next pages followed, at most --max-pages, default 1000), an
                   item or ItemCollection JSON file, a static catalogue or collection
                   (child and item links walked), or a STAC-GeoParquet file; local, HTTP(S)
                   or object storage. Each item is a time step (its datetime, else
                   start_datetime); an item's assets on one grid are the bands of one
                   array, assets or items on other grids separate arrays (groups named
                   by their asset keys); items missing an asset or failing to read fail
                   the run (--skip-errors: left out and listed); --append adds the items
                   not in OUT yet (by id). Links and hrefs to hosts other than the
                   catalogue's are refused unless --allow-host names them (* any)
  --bad-checksum-warning
                   DTED: a record with a bad checksum is read with a GDAL warning
                   instead of failing the read (the peer cannot read such indexes)
  --grib-units normalized|raw
                   GRIB: values and units as GDAL's GRIB driver shows them by default
                   (normalized: Kelvin as Celsius, GDAL's GRIB_NORMALIZE_UNITS=YES; the
                   default) or as the file stores them (raw: GRIB_NORMALIZE_UNITS=NO)"#;

#[cfg(lazy_gdal)]
#[path = "chunkref/lazy_gdal.rs"]
mod lazy_gdal;
#[path = "chunkref/progress.rs"]
mod progress;
#[path = "chunkref/stac.rs"]
mod stac;

use chunkref::builders::builder::{self, Format};
use chunkref::builders::collection;
use chunkref::builders::mosaic as build_mosaic;
use chunkref::builders::writers::built::Built;
use chunkref::builders::writers::fgb;
use chunkref::builders::writers::stacker::{self, Prepared, Stacker, Step};
use chunkref::builders::writers::to_kerchunk::to_kerchunk;
use chunkref::builders::writers::{concat, parquet};
use chunkref::index::readers::parquet_read;
use chunkref::index::table::{self, Rows};
use chunkref::index::{parts, Index, LoadOptions};
use chunkref::io::config::Settings;
use chunkref::io::index_file::{InMemory, IndexFile, LocalFile};
use chunkref::io::resolve;
use chunkref::io::resolve::Location;
use chunkref::io::source::inputs;
use chunkref::read::chunk::Locations;
use chunkref::read::mosaic;
use progress::Progress;

/// How several sources written to one index combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// A time stack when all are on one grid, else a mosaic.
    Auto,
    /// A time stack (`--stack`).
    Stack,
    /// A mosaic (`--mosaic`).
    Mosaic,
}

/// The index forms `chunkref` writes, chosen by the output's extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// Kerchunk JSON v1.
    Json,
    /// Parquet chunk-reference table.
    Parquet,
    /// FlatGeobuf chunk-reference table (footprints, R-tree).
    FlatGeobuf,
}

impl Form {
    fn of(path: &Path) -> Form {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("parquet") => Form::Parquet,
            Some(e) if e.eq_ignore_ascii_case("fgb") => Form::FlatGeobuf,
            _ => Form::Json,
        }
    }
}

/// Writes `index` to `out` in the form its extension names; returns the
/// number of chunk references. Relative file names in `index` are relative
/// to `origin`'s directory (the index it was read from, or `out`): a
/// FlatGeobuf table reads coordinate arrays through them for footprints.
fn save_index(index: &Index, out: &Path, origin: &str) -> Result<usize, String> {
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", out.display());
    atomically(out, |partial| match Form::of(out) {
        Form::Json => {
            let text = serde_json::to_string(&to_kerchunk(index).map_err(|e| fail(&e))?)
                .map_err(|e| fail(&e))?;
            std::fs::write(partial, text).map_err(|e| fail(&e))
        }
        Form::Parquet => {
            let file = std::fs::File::create(partial).map_err(|e| fail(&e))?;
            parquet::write(index, std::io::BufWriter::new(file)).map_err(|e| fail(&e))
        }
        Form::FlatGeobuf => {
            let file = std::fs::File::create(partial).map_err(|e| fail(&e))?;
            let settings =
                Settings::from_lookup(|k| std::env::var(k).ok()).map_err(|e| fail(&e))?;
            let base = resolve::index_source(origin).map_err(|e| fail(&e))?.base;
            let locations = Locations::resolve(index, &base, &settings);
            fgb::write(index, Some(&locations), std::io::BufWriter::new(file)).map_err(|e| fail(&e))
        }
    })?;
    index.arrays.iter().try_fold(0, |n, a| {
        Ok(n + a.refs.table().map_err(|e| fail(&e))?.len())
    })
}

/// `chunkref convert IN OUT`: the index kept as it is (templates, `gen`
/// entries), with a warning naming each part OUT's form cannot hold.
fn convert(mut args: impl Iterator<Item = String>) -> Result<(), String> {
    let (Some(input), Some(output), None) = (args.next(), args.next(), args.next()) else {
        return Err(format!("convert takes IN and OUT\n{USAGE}"));
    };
    let open = |path: &str| -> chunkref::Result<Arc<dyn IndexFile>> {
        Ok(Arc::new(LocalFile::open(path)?))
    };
    let index = Index::load(&input, &input, &keep_as_is(), &open).map_err(|e| e.to_string())?;
    for warning in losses(&index, Form::of(Path::new(&output))) {
        eprintln!("chunkref convert: warning: {warning}");
    }
    let start = Instant::now();
    let refs = save_index(&index, Path::new(&output), &input)?;
    eprintln!(
        "{input} -> {output} ({refs} chunk references, {:.1} ms)",
        start.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// How `convert` (and an index written in another form) loads an index:
/// every reference in memory, templates and `gen` entries kept.
fn keep_as_is() -> LoadOptions {
    LoadOptions {
        keep_templates: true,
        ..LoadOptions::default()
    }
}

/// What of `index` is not written to an index of form `to`.
fn losses(index: &Index, to: Form) -> Vec<String> {
    let mut lost: Vec<String> = index
        .skipped
        .iter()
        .map(|(path, reason)| {
            format!(
                "array '{path}' is left out ({reason}): its metadata documents are written, \
                 its chunk references are not"
            )
        })
        .collect();
    let attributes = index
        .file_attributes
        .iter()
        .filter(|a| !a.is_empty())
        .count();
    if to == Form::Json && attributes > 0 {
        lost.push(format!(
            "the attributes of {attributes} file(s) (such as 'datetime') have no place in \
             Kerchunk JSON and are dropped (a time stack's steps keep theirs in the arrays' \
             chunkref:datetime attribute)"
        ));
    }
    if to != Form::Json && !index.gen.is_empty() {
        lost.push(format!(
            "the {} 'gen' entries are written as the references they generate (a table has \
             one row per reference)",
            index.gen.len()
        ));
    }
    lost
}

/// Where the steps of a time stack take their datetimes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DatetimeFrom {
    /// The first date in the file name.
    Name,
    /// The datetime the file's metadata records.
    Metadata,
}

/// What indexing one source takes of the arguments (owned: sources are
/// read on the I/O runtime's tasks).
#[derive(Debug, Clone)]
struct ReadOptions {
    template_base: bool,
    checksum_warnings: bool,
    /// GRIB2 values and units (`--grib-units`).
    grib_units: chunkref::formats::grib2::describe::Units,
    datetime: Option<DatetimeFrom>,
    /// OUT, as the stack's steps name it.
    output: String,
}

struct Args {
    sources: Vec<String>,
    output: PathBuf,
    read: ReadOptions,
    layout: Layout,
    /// Sources read at once (`--concurrency`).
    concurrency: Option<usize>,
    /// Index what can be indexed, listing the rest (`--skip-errors`).
    skip_errors: bool,
    /// Add the sources as new time steps of the collection OUT (`--append`).
    append: bool,
    /// `--shard I/N`: this run's shard, and the place of its first source
    /// in the whole list.
    shard: Option<Shard>,
    /// Join the shards written into OUT into one collection (`--merge-shards`).
    merge_shards: bool,
    /// The dimension several NetCDF / HDF5 files are joined along.
    concat_dim: Option<String>,
    /// Where the failed sources are listed (`--failures`).
    failures: Option<PathBuf>,
    /// Sources that failed and were left out, with the reason.
    failed: std::sync::Mutex<Vec<(String, String)>>,
    /// Sources done so far.
    progress: Progress,
    /// `--stac`: the STAC source whose items' assets are the sources.
    stac: Option<stac::StacArgs>,
}

impl Args {
    /// A source that failed with `error`: with `--skip-errors` it is
    /// recorded and left out, else the run fails with `error`.
    fn skip(&self, source: &str, error: String) -> Result<(), String> {
        if !self.skip_errors {
            return Err(error);
        }
        self.progress.source_done(None);
        self.record_failure(source, error);
        Ok(())
    }

    /// Records that `source` could not be indexed.
    fn record_failure(&self, source: &str, error: String) {
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        failed.push((source.to_string(), error));
    }
}

/// One shard of a sharded indexing run (`--shard I/N`).
#[derive(Debug, Clone, Copy)]
struct Shard {
    /// I, from 0.
    index: usize,
    /// N.
    count: usize,
    /// Place of the shard's first source in the whole list.
    first: usize,
}

impl Shard {
    /// The sources `lo..hi` of `total` this shard indexes: contiguous
    /// blocks, in order, as even as can be.
    fn block(&self, total: usize) -> (usize, usize) {
        (
            self.index * total / self.count,
            (self.index + 1) * total / self.count,
        )
    }
}

fn parse_shard(spec: &str) -> Result<Shard, String> {
    let bad = || format!("--shard {spec}: expected I/N with 0 <= I < N");
    let (i, n) = spec.split_once('/').ok_or_else(bad)?;
    let (index, count) = (
        i.parse::<usize>().map_err(|_| bad())?,
        n.parse::<usize>().map_err(|_| bad())?,
    );
    if index >= count {
        return Err(bad());
    }
    Ok(Shard {
        index,
        count,
        first: 0,
    })
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    match args.next().as_deref() {
        Some("index") => {}
        Some("-h" | "--help") | None => return Err(USAGE.into()),
        Some(other) => return Err(format!("unknown command '{other}'\n{USAGE}")),
    }
    let (mut sources, mut output, mut template_base) = (Vec::new(), None, false);
    let (mut checksum_warnings, mut datetime) = (false, None);
    let mut layout = Layout::Auto;
    let (mut concurrency, mut skip_errors, mut failures) = (None, false, None);
    let (mut append, mut shard, mut merge_shards) = (false, None, false);
    let mut concat_dim = None;
    let mut grib_units = chunkref::formats::grib2::describe::Units::default();
    let (mut stac_args, mut stac_used) = (None::<stac::StacArgs>, false);
    let list = |v: String| -> Vec<String> {
        v.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    while let Some(a) = args.next() {
        stac_used |= stac::OPTIONS.contains(&a.as_str());
        let st = stac_args.get_or_insert_with(Default::default);
        match a.as_str() {
            "--stac" => st.source = args.next().ok_or("--stac needs a STAC source")?,
            "--asset" => st
                .keys
                .extend(list(args.next().ok_or("--asset needs NAME[,NAME...]")?)),
            "--bbox" => {
                st.query.bbox = Some(args.next().ok_or("--bbox needs minx,miny,maxx,maxy")?)
            }
            "--datetime" => {
                st.query.datetime = Some(
                    args.next()
                        .ok_or("--datetime needs a datetime or interval")?,
                )
            }
            "--collections" => {
                st.query.collections = Some(args.next().ok_or("--collections needs ids")?)
            }
            "--filter" => {
                st.query.filter = Some(args.next().ok_or("--filter needs a CQL2 filter")?)
            }
            "--allow-host" => st.allowed.extend(list(
                args.next().ok_or("--allow-host needs HOST[,HOST...]")?,
            )),
            "--max-pages" | "--max-items" => {
                let n = args.next().ok_or(format!("{a} needs a number"))?;
                let n = n
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or(format!("{a}: '{n}' is not a positive number"))?;
                match a.as_str() {
                    "--max-pages" => st.limits.pages = n,
                    _ => st.limits.items = n,
                }
            }
            "-o" | "--output" => output = Some(args.next().ok_or("-o needs a path")?),
            "--from-list" => {
                let list = args.next().ok_or("--from-list needs a file (or -)")?;
                sources.extend(inputs::read_list(&list).map_err(|e| e.to_string())?);
            }
            "--concurrency" => {
                let n = args.next().ok_or("--concurrency needs a number")?;
                concurrency = Some(
                    n.parse::<usize>()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or(format!("--concurrency: '{n}' is not a positive number"))?,
                );
            }
            "--skip-errors" => skip_errors = true,
            "--append" => append = true,
            "--merge-shards" => merge_shards = true,
            "--concat-dim" => concat_dim = Some(args.next().ok_or("--concat-dim needs a name")?),
            "--shard" => {
                let spec = args.next().ok_or("--shard needs I/N")?;
                shard = Some(parse_shard(&spec)?);
            }
            "--failures" => {
                failures = Some(PathBuf::from(args.next().ok_or("--failures needs a path")?))
            }
            "--template-base" => template_base = true,
            "--bad-checksum-warning" => checksum_warnings = true,
            "--grib-units" => {
                let units = args.next().ok_or("--grib-units needs normalized or raw")?;
                grib_units = chunkref::formats::grib2::describe::Units::parse(&units).ok_or(
                    format!("--grib-units: '{units}' is neither normalized nor raw"),
                )?;
            }
            "--datetime-from-name" | "--datetime-from-metadata" => {
                let from = match a.as_str() {
                    "--datetime-from-name" => DatetimeFrom::Name,
                    _ => DatetimeFrom::Metadata,
                };
                if datetime.is_some_and(|d| d != from) {
                    return Err(format!(
                        "--datetime-from-name and --datetime-from-metadata exclude each other\n{USAGE}"
                    ));
                }
                datetime = Some(from);
            }
            "--stack" if layout != Layout::Mosaic => layout = Layout::Stack,
            "--mosaic" if layout != Layout::Stack => layout = Layout::Mosaic,
            "--stack" | "--mosaic" => return Err("--stack and --mosaic exclude each other".into()),
            "-h" | "--help" => return Err(USAGE.into()),
            s if s.starts_with('-') => return Err(format!("unknown option '{s}'\n{USAGE}")),
            s => sources.push(s.to_string()),
        }
    }
    let output = output.ok_or(format!("missing -o OUT\n{USAGE}"))?;
    let mut expanded = Vec::with_capacity(sources.len());
    for s in &sources {
        expanded.extend(inputs::expand(s).map_err(|e| e.to_string())?);
    }
    let stac_args = stac_args.filter(|_| stac_used);
    if let Some(st) = &stac_args {
        if st.source.is_empty() || st.keys.is_empty() || !expanded.is_empty() {
            return Err(format!(
                "--stac SOURCE --asset NAME[,NAME...] takes no other SOURCE, and the STAC options \
                 (--asset, --bbox, --datetime, --collections, --filter, --allow-host, \
                 --max-pages, --max-items) need --stac\n{USAGE}"
            ));
        }
        if shard.is_some() || merge_shards || concat_dim.is_some() || layout != Layout::Auto {
            return Err(
                "--stac makes its own stacks: it takes no --shard, --merge-shards, \
                        --concat-dim, --stack or --mosaic"
                    .into(),
            );
        }
    } else if expanded.is_empty() && !merge_shards {
        return Err(format!("no SOURCE given\n{USAGE}"));
    }
    if let Some(s) = &mut shard {
        if skip_errors || append {
            return Err(
                "--shard takes neither --skip-errors nor --append: a shard's steps are \
                        numbered by their place in the whole list"
                    .into(),
            );
        }
        let (lo, hi) = s.block(expanded.len());
        s.first = lo;
        expanded = expanded[lo..hi].to_vec();
        if expanded.is_empty() {
            return Err(format!(
                "shard {}/{} of {} sources is empty",
                s.index, s.count, hi
            ));
        }
    }
    Ok(Args {
        read: ReadOptions {
            template_base,
            checksum_warnings,
            grib_units,
            datetime,
            output: output.clone(),
        },
        output: PathBuf::from(output),
        layout,
        concurrency,
        skip_errors,
        append,
        shard,
        merge_shards,
        concat_dim,
        failures,
        failed: Default::default(),
        progress: Progress::new(expanded.len()),
        sources: expanded,
        stac: stac_args,
    })
}

/// Where the index of `source` goes; `several` says OUT is a directory of
/// indexes.
fn destination(args: &Args, source: &str, several: bool) -> PathBuf {
    let is_dir = several || args.output.is_dir() || args.output.to_string_lossy().ends_with('/');
    if !is_dir {
        return args.output.clone();
    }
    let name = Path::new(source)
        .file_name()
        .map_or_else(|| "index".into(), |n| n.to_string_lossy().into_owned());
    args.output.join(format!("{name}.tile_index.json"))
}

/// The absolute path of `source` (a remote source: its URL as given) and
/// the URL its chunks are referenced by (a remote source's in
/// `scheme://bucket/key` form).
fn locate(options: &ReadOptions, source: &str) -> Result<(String, String), String> {
    let (abs, canonical) = match chunkref::io::source::locate(source).map_err(|e| e.to_string())? {
        Location::Object(url) => (source.to_string(), url.to_string()),
        Location::Local(_) => {
            let abs = std::fs::canonicalize(source).map_err(|e| format!("{source}: {e}"))?;
            let abs = abs.to_string_lossy().into_owned();
            (abs.clone(), abs)
        }
    };
    let url = if options.template_base {
        let name = canonical.rsplit('/').next().unwrap_or_default();
        format!("{{{{base}}}}{name}")
    } else {
        canonical
    };
    Ok((abs, url))
}

/// Writes the file `out` through `write`, which is handed a temporary name
/// next to it: `out` appears, renamed, only once it is complete, so an
/// interrupted or failed run never leaves a half-written index.
fn atomically<T, E: From<String>>(
    out: &Path,
    write: impl FnOnce(&Path) -> Result<T, E>,
) -> Result<T, E> {
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| E::from(format!("{}: {e}", dir.display())))?;
    }
    let name = out.file_name().unwrap_or_default().to_string_lossy();
    let partial = out.with_file_name(format!(".{name}.partial-{}", std::process::id()));
    let written = write(&partial).and_then(|done| {
        std::fs::rename(&partial, out)
            .map(|()| done)
            .map_err(|e| E::from(format!("{}: {e}", out.display())))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

/// Writes `doc` to `out` (Kerchunk JSON as it is, or converted to the form
/// `out` names); returns the number of keys (JSON) or chunk references.
fn write(doc: serde_json::Value, out: &Path) -> Result<usize, String> {
    if Form::of(out) != Form::Json {
        let name = out.to_string_lossy();
        let text = serde_json::to_vec(&doc).map_err(|e| e.to_string())?;
        let index = Index::read(&name, Arc::new(InMemory::new(&name, text)), &keep_as_is())
            .map_err(|e| e.to_string())?;
        return save_index(&index, out, &out.to_string_lossy());
    }
    let refs = doc["refs"].as_object().map_or(0, |r| r.len());
    let text = serde_json::to_string(&doc).map_err(|e| e.to_string())?;
    atomically(out, |partial| {
        std::fs::write(partial, text).map_err(|e| format!("{}: {e}", out.display()))
    })?;
    Ok(refs)
}

/// The message of `e`, met indexing the file at `path`, for a line that
/// names the source already: without the error's own "cannot index PATH: ".
fn reason(e: chunkref::Error, path: &str) -> String {
    match e {
        chunkref::Error::MalformedSource { path: p, reason } if p == path => reason,
        e => e.to_string(),
    }
}

/// The index of one source (templates set with `--template-base`).
fn source_built(options: &ReadOptions, source: &str, format: Format) -> Result<Built, String> {
    let (path, url) = locate(options, source)?;
    let build = builder::Options {
        dted_checksum_warnings: options.checksum_warnings,
        grib_units: options.grib_units,
    };
    let mut built = builder::build_as(format, &path, &url, build).map_err(|e| reason(e, &path))?;
    if options.template_base {
        built.templates.insert("base".into(), String::new());
    }
    Ok(built)
}

/// True when several sources make one time stack: OUT names an index
/// file, not a directory.
fn stacks(args: &Args) -> bool {
    let out = args.output.to_string_lossy();
    args.sources.len() > 1
        && !args.output.is_dir()
        && !out.ends_with('/')
        && (out.ends_with(".json") || Form::of(&args.output) != Form::Json)
}

/// How many sources are indexed at once, ahead of the stack being written.
/// (At least; four per source read at once, so a slow source holds few
/// back.)
const READ_AHEAD: usize = 64;

/// One time step of the stack: the index of `source` and its datetime,
/// made ready for the stack, and its chunk references.
fn read_step(
    options: &ReadOptions,
    source: &str,
    format: Format,
) -> Result<(Prepared, usize), String> {
    let fail = |e: String| format!("{source}: {e}");
    let built = source_built(options, source, format).map_err(fail)?;
    let datetime = match options.datetime {
        None => None,
        Some(DatetimeFrom::Name) => Some(
            chunkref::base::datetime::datetime_in_name(source).ok_or_else(|| {
                fail(
                    "--datetime-from-name: no date (YYYYMMDD or YYYY-MM-DD) in the file name"
                        .into(),
                )
            })?,
        ),
        Some(DatetimeFrom::Metadata) => Some(built.datetime.clone().ok_or_else(|| {
            fail(
                "--datetime-from-metadata: its metadata records no datetime (looked for GDAL \
                 metadata items ACQUISITIONDATETIME, DATETIME, TIFFTAG_DATETIME, the TIFF \
                 DateTime tag, NITF IDATIM)"
                    .into(),
            )
        })?),
    };
    let step = Step {
        name: source.to_string(),
        built,
        datetime,
    };
    let step = step.prepare(&options.output).map_err(|e| e.to_string())?;
    let refs = step.references();
    Ok((step, refs))
}

/// What one source is made into for a collection, and its chunk
/// references (an error names the source).
type Made<T> = Result<(T, usize), String>;

/// How one source is read for a collection: [`read_step`], [`read_scene`].
type ReadSource<T> = fn(&ReadOptions, &str, Format) -> Made<T>;

/// The sources of one collection and how each is read, shared by the
/// tasks reading them.
struct Job<T> {
    options: ReadOptions,
    sources: Vec<String>,
    formats: Vec<Format>,
    read: ReadSource<T>,
}

/// Reads every source with `read`, several at once, and hands what each
/// made to `use_made(i, made)` (`i`: the source's place in the arguments)
/// in the order given; with `--skip-errors` a source that fails is
/// recorded and left out.
///
/// The sources are read by `--concurrency` tasks on the I/O runtime, each
/// taking the next source as soon as it is done with one (no waiting for a
/// batch's slowest), at most [`Turns::ahead`] past the first not used yet
/// ([`read_in_turn`]): a remote
/// source's head is a future, and its builder runs on the task when the
/// head holds all it reads (as a COG's does), else on a thread where it
/// may block; local sources are read on such threads. What they made is
/// used on this thread, in order.
fn read_sources<T: Send + 'static>(
    args: &Args,
    formats: &[Format],
    read: ReadSource<T>,
    mut use_made: impl FnMut(usize, T) -> Result<(), String>,
) -> Result<(), String> {
    let at_once = at_once();
    let turns = Arc::new(Turns::new(
        args.sources.len(),
        at_once.saturating_mul(4).max(READ_AHEAD),
    ));
    let job = Arc::new(Job {
        options: args.read.clone(),
        sources: args.sources.clone(),
        formats: formats.to_vec(),
        read,
    });
    let (tx, rx) = std::sync::mpsc::channel();
    let runtime = chunkref::io::fetch::runtime();
    let readers: Vec<_> = (0..at_once.min(args.sources.len()))
        .map(|_| {
            runtime.spawn(read_in_turn(
                Arc::clone(&job),
                Arc::clone(&turns),
                tx.clone(),
            ))
        })
        .collect();
    drop(tx);
    let used = {
        let _stop = StopTurns {
            turns: &turns,
            only_on_panic: false,
        };
        let mut waiting = std::collections::BTreeMap::new();
        let mut next = 0;
        rx.iter().try_for_each(|(i, made): (usize, Made<T>)| {
            waiting.insert(i, made);
            while let Some(made) = waiting.remove(&next) {
                match made {
                    Ok((made, refs)) => {
                        args.progress.source_done(Some(refs));
                        use_made(next, made)?;
                    }
                    Err(e) => args.skip(&args.sources[next], e)?,
                }
                next += 1;
                turns.used(next);
            }
            Ok(())
        })
    };
    // The tasks still reading finish (their sources are not used).
    for reader in readers {
        if let Err(e) = runtime.block_on(reader) {
            if let Ok(panic) = e.try_into_panic() {
                std::panic::resume_unwind(panic);
            }
        }
    }
    used
}

/// Reads sources of `job` as their turns come, one after another (each of
/// the `--concurrency` tasks running this takes the next source as soon as
/// it is done with one), until none is left or the reading stopped; sends
/// what each made, with its place, to `made`.
async fn read_in_turn<T: Send + 'static>(
    job: Arc<Job<T>>,
    turns: Arc<Turns>,
    made: std::sync::mpsc::Sender<(usize, Made<T>)>,
) {
    let _stop = StopTurns {
        turns: &turns,
        only_on_panic: true,
    };
    while let Some(i) = turns.take().await {
        let read = read_one(&job, i).await;
        // The user is gone only when it stopped (a failure).
        if made.send((i, read)).is_err() {
            return;
        }
    }
}

/// Reads source `i` of `job` (see [`read_sources`]).
async fn read_one<T: Send + 'static>(job: &Arc<Job<T>>, i: usize) -> Made<T> {
    let (source, format) = (&job.sources[i], job.formats[i]);
    let remote = matches!(
        chunkref::io::source::locate(source),
        Ok(Location::Object(_))
    );
    let head = if remote {
        let head = chunkref::io::source::Head::read(source).await;
        let read = || (job.read)(&job.options, source, format);
        if let Some(made) = chunkref::io::source::with_head_only(head.clone(), read) {
            return made;
        }
        Some(head)
    } else {
        None
    };
    // More than a head to read: on a thread that may block.
    let job = Arc::clone(job);
    let blocking = tokio::task::spawn_blocking(move || {
        let (source, format) = (&job.sources[i], job.formats[i]);
        let read = || (job.read)(&job.options, source, format);
        match head {
            Some(head) => chunkref::io::source::with_head(head, read),
            None => read(),
        }
    });
    blocking
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Stops the turns when dropped: when the user of what the sources made
/// is done (the last used, a failure, a panic) and when a task reading a
/// source panics, so that no source waits for a turn that will not come.
struct StopTurns<'a> {
    turns: &'a Turns,
    only_on_panic: bool,
}

impl Drop for StopTurns<'_> {
    fn drop(&mut self) {
        if !self.only_on_panic || std::thread::panicking() {
            self.turns.stop();
        }
    }
}

/// The sources' turns: taken in order, at most `ahead` past the first
/// not used yet.
struct Turns {
    state: tokio::sync::watch::Sender<TurnState>,
    /// The next source to read.
    next: std::sync::atomic::AtomicUsize,
    /// Number of sources.
    jobs: usize,
    /// Most sources read ahead of the first not used yet.
    ahead: usize,
}

#[derive(Debug, Clone, Copy, Default)]
struct TurnState {
    /// Sources used so far.
    used: usize,
    /// The collection failed: no more sources are read.
    stopped: bool,
}

impl Turns {
    fn new(jobs: usize, ahead: usize) -> Turns {
        Turns {
            state: tokio::sync::watch::Sender::new(TurnState::default()),
            next: std::sync::atomic::AtomicUsize::new(0),
            jobs,
            ahead: ahead.max(1),
        }
    }

    /// The next source to read, once it is no more than `ahead` past the
    /// first not used; `None` when every source is taken or the reading
    /// stopped.
    async fn take(&self) -> Option<usize> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if i >= self.jobs {
            return None;
        }
        let mut state = self.state.subscribe();
        let state = state
            .wait_for(|s| s.stopped || i < s.used + self.ahead)
            .await
            .ok()?;
        (!state.stopped).then_some(i)
    }

    /// The first `used` sources have been used.
    fn used(&self, used: usize) {
        self.state.send_modify(|s| s.used = used);
    }

    /// No more sources are to be read.
    fn stop(&self) {
        self.state.send_modify(|s| s.stopped = true);
    }
}

/// Why a time stack was not made.
enum StackFailure {
    /// Source `i` is not on the grid of the first: this metadata differs.
    OffGrid(usize, String),
    /// Anything else, as a message.
    Failed(String),
}

/// Indexes every source and stacks them along time into OUT, or makes
/// them a mosaic (`--mosaic`, or files on different grids); returns what
/// was made and the number of chunk references.
fn index_stack(args: &Args, formats: &[Format]) -> Result<(String, usize), String> {
    if args.layout == Layout::Mosaic {
        return index_scenes(args, formats, None);
    }
    match write_stack(args, formats) {
        Ok(refs) => Ok((format!("{} time steps", args.sources.len()), refs)),
        Err(StackFailure::OffGrid(i, key)) if args.layout == Layout::Auto => {
            index_scenes(args, formats, Some((i, key)))
        }
        Err(StackFailure::OffGrid(i, key)) => Err(off_grid_message(args, i, &key, "")),
        Err(StackFailure::Failed(e)) => Err(e),
    }
}

fn off_grid_message(args: &Args, i: usize, key: &str, hint: &str) -> String {
    format!(
        "{} is not on the grid of {}: metadata '{key}' differs (a time stack needs files \
         with the same size, tiling, data type, compression and georeferencing{hint})",
        args.sources[i], args.sources[0]
    )
}

/// Stacks the sources along time into OUT. A Parquet table is written as
/// the steps arrive, its rows never all in memory; a failed stack leaves no
/// file behind.
fn write_stack(args: &Args, formats: &[Format]) -> Result<usize, StackFailure> {
    let out = &args.output;
    let name = out.to_string_lossy();
    let failed =
        |e: &dyn std::fmt::Display| StackFailure::Failed(format!("{}: {e}", out.display()));
    if Form::of(out) != Form::Parquet {
        let mut rows = Rows::default();
        let doc = stream_stack(args, formats, |batch: &Rows| {
            rows.extend(batch);
            Ok(())
        })?;
        let index = stacker::index_of(&name, &doc, &rows).map_err(|e| failed(&e))?;
        return save_index(&index, out, &name).map_err(StackFailure::Failed);
    }
    let mut refs = 0;
    atomically(out, |partial| {
        let file = std::fs::File::create(partial).map_err(|e| failed(&e))?;
        let mut writer = parquet::TableWriter::new(&name, std::io::BufWriter::new(file))
            .map_err(|e| failed(&e))?;
        let doc = stream_stack(args, formats, |rows: &Rows| {
            refs += rows.part.iter().filter(|&&p| p == 0).count();
            writer.write(rows)
        })?;
        writer.finish(&doc).map_err(|e| failed(&e))
    })?;
    Ok(refs)
}

impl From<String> for StackFailure {
    fn from(message: String) -> StackFailure {
        StackFailure::Failed(message)
    }
}

/// Streams the stack of the sources through a [`Stacker`] into `sink`;
/// returns the table's document.
fn stream_stack(
    args: &Args,
    formats: &[Format],
    sink: impl FnMut(&Rows) -> chunkref::Result<()>,
) -> Result<table::TableDoc, StackFailure> {
    let name = args.output.to_string_lossy();
    let mut stacker = Stacker::new(&name, table::BATCH_ROWS, sink);
    let mut off_grid = None;
    let read = read_sources(args, formats, read_step, |i, step| {
        if let Some(key) = stacker.off_grid(&step) {
            off_grid = Some((i, key));
            return Err("off the grid".into());
        }
        stacker.push(step).map_err(|e| e.to_string())
    });
    if let Some((i, key)) = off_grid {
        return Err(StackFailure::OffGrid(i, key));
    }
    read.map_err(StackFailure::Failed)?;
    stacker
        .finish()
        .map_err(|e| StackFailure::Failed(e.to_string()))
}

/// Makes the sources a mosaic of scenes into OUT. `off_grid` is the first
/// source off the first one's grid when the mosaic was chosen because of it.
fn index_scenes(
    args: &Args,
    formats: &[Format],
    off_grid: Option<(usize, String)>,
) -> Result<(String, usize), String> {
    if args.read.datetime.is_some() {
        return Err(
            "--datetime-from-name and --datetime-from-metadata are for time stacks; \
                    these sources make a mosaic (pass --stack for a time stack of files on \
                    one grid)"
                .into(),
        );
    }
    args.progress.restart();
    let mut scenes = Vec::with_capacity(args.sources.len());
    read_sources(args, formats, read_scene, |_, scene| {
        scenes.push(scene);
        Ok(())
    })?;
    let out = args.output.to_string_lossy();
    let settings = chunkref::io::config::Settings::from_lookup(|k| std::env::var(k).ok())
        .map_err(|e| e.to_string())?;
    let index = build_mosaic::mosaic(&out, scenes, &settings).map_err(|e| e.to_string())?;
    let d = mosaic::description(&index)
        .map_err(|e| e.to_string())?
        .ok_or("the mosaic lost its description")?;
    // Files on one grid that differ in another way (compression, nodata,
    // ...) were more likely meant as a time stack.
    let one_place = d
        .scenes
        .iter()
        .all(|s| (s.offset, s.shape) == (d.scenes[0].offset, d.scenes[0].shape));
    if let (true, Some((i, key))) = (one_place, off_grid) {
        return Err(off_grid_message(
            args,
            i,
            &key,
            "; pass --mosaic to lay them over each other",
        ));
    }
    let what = format!(
        "{} scenes (a {} x {} mosaic)",
        d.scenes.len(),
        d.shape[1],
        d.shape[0]
    );
    Ok((what, save_index(&index, &args.output, &out)?))
}

/// One scene of a mosaic: the index of `source`, and its chunk references.
fn read_scene(options: &ReadOptions, source: &str, format: Format) -> Made<Index> {
    let fail = |e: String| format!("{source}: {e}");
    let built = source_built(options, source, format).map_err(fail)?;
    let text = serde_json::to_vec(&built.to_kerchunk()).map_err(|e| fail(e.to_string()))?;
    let refs = built.arrays.values().map(Vec::len).sum();
    let scene = Index::from_kerchunk_json(source, &text, &[]).map_err(|e| fail(e.to_string()))?;
    Ok((scene, refs))
}

/// The Kerchunk document of NetCDF / HDF5 file `source`, a local file or a
/// remote object (templates set with `--template-base`).
fn hdf5_doc(args: &Args, source: &str) -> Result<serde_json::Value, String> {
    let (path, url) = locate(&args.read, source)?;
    let mut doc =
        chunkref::builders::builder::netcdf_document(&path, &url).map_err(|e| reason(e, &path))?;
    if args.read.template_base {
        doc["templates"] = serde_json::json!({"base": ""});
    }
    Ok(doc)
}

/// The Kerchunk document of the Zarr store directory `source` (templates
/// set with `--template-base`); what it left out is printed.
fn store_doc(args: &Args, source: &str) -> Result<serde_json::Value, String> {
    let (path, url) = locate(&args.read, source)?;
    let index =
        chunkref::builders::zarr_store::index_store(&path, &url).map_err(|e| reason(e, &path))?;
    for warning in &index.warnings {
        eprintln!("chunkref: warning: {source}: {warning}");
    }
    let mut doc = index.doc;
    if args.read.template_base {
        doc["templates"] = serde_json::json!({"base": ""});
    }
    Ok(doc)
}

/// `--append`: the sources become new time steps of the collection OUT, a
/// directory of Parquet parts (docs/reference-table.md, "Growing
/// collections"), made when OUT does not exist; a one-file table OUT
/// becomes the collection's first part. Writes one new part and the parts
/// list; returns the part and its chunk references.
fn append_steps(args: &Args, formats: &[Format]) -> Result<(PathBuf, usize), String> {
    if formats.contains(&Format::Dted) {
        return Err("DTED cells make mosaics, which do not grow by time steps".into());
    }
    append_part(args, |sink| stream_stack(args, formats, sink))
}

/// The stream of a stack's rows into a sink, returning the stack's
/// document: the sources' ([`stream_stack`]) or STAC items'.
type Sink<'a> = &'a mut dyn FnMut(&Rows) -> chunkref::Result<()>;

/// The collection OUT as it is: its parts list (none for a one-file table)
/// and its document (its last part's); `None` when OUT does not exist.
fn read_collection(
    dir: &Path,
) -> Result<Option<(Option<parts::PartsList>, table::TableDoc)>, String> {
    let read_doc = |path: &Path| -> Result<table::TableDoc, String> {
        let name = path.to_string_lossy();
        let file = LocalFile::open(&name).map_err(|e| e.to_string())?;
        parquet_read::read_doc(&name, Arc::new(file)).map_err(|e| e.to_string())
    };
    if dir.is_file() {
        return Ok(Some((None, read_doc(dir)?)));
    }
    if !dir.is_dir() {
        return Ok(None);
    }
    let list_path = dir.join(parts::PARTS_FILE);
    let text = std::fs::read(&list_path).map_err(|e| format!("{}: {e}", list_path.display()))?;
    let list =
        parts::PartsList::parse(&list_path.to_string_lossy(), &text).map_err(|e| e.to_string())?;
    let doc = read_doc(&dir.join(list.parts.last().map_or("", String::as_str)))?;
    Ok(Some((Some(list), doc)))
}

/// Appends the stack `stream` makes to the collection OUT as its next
/// part (see [`append_steps`]).
fn append_part(
    args: &Args,
    stream: impl FnOnce(Sink<'_>) -> Result<table::TableDoc, StackFailure>,
) -> Result<(PathBuf, usize), String> {
    let dir = &args.output;
    let name = dir.to_string_lossy().into_owned();
    if Form::of(dir) != Form::Parquet {
        return Err("a growing collection is a Parquet table: OUT must end in .parquet".into());
    }
    if dir.is_file() {
        make_first_part(dir)?;
    }
    let existing = read_collection(dir)?.and_then(|(list, doc)| Some((list?, doc)));
    let (first_step, first_file) = match &existing {
        Some((_, doc)) => collection::next_numbers(&name, doc).map_err(|e| e.to_string())?,
        None => (0, 0),
    };
    let part = existing
        .as_ref()
        .map_or_else(|| parts::part_name(0), |(list, _)| list.next_name());
    let part_path = dir.join(&part);
    let refs = write_part(
        args,
        stream,
        &part_path,
        (first_step, first_file),
        |new| match &existing {
            Some((_, old)) => collection::append(&name, old, &new).map(|a| a.doc),
            None => Ok(new),
        },
    )?;
    let mut list = existing.map_or(
        parts::PartsList {
            chunkref_parts: 1,
            parts: Vec::new(),
        },
        |(list, _)| list,
    );
    list.parts.push(part);
    save_parts_list(dir, &list)?;
    Ok((part_path, refs))
}

/// Writes the stack of the sources as the Parquet part `part_path`, its
/// rows' steps and files numbered from `first` (step, file), its document
/// what `doc_of` makes of the stack's own; returns its chunk references.
fn write_part(
    args: &Args,
    stream: impl FnOnce(Sink<'_>) -> Result<table::TableDoc, StackFailure>,
    part_path: &Path,
    (first_step, first_file): (u32, u32),
    doc_of: impl FnOnce(table::TableDoc) -> chunkref::Result<table::TableDoc>,
) -> Result<usize, String> {
    let part_name = part_path.to_string_lossy().into_owned();
    let mut refs = 0;
    atomically(part_path, |partial| -> Result<(), StackFailure> {
        let failed = |e: &dyn std::fmt::Display| StackFailure::Failed(e.to_string());
        let file = std::fs::File::create(partial).map_err(|e| failed(&e))?;
        let mut writer = parquet::TableWriter::new(&part_name, std::io::BufWriter::new(file))
            .map_err(|e| failed(&e))?;
        let new = stream(&mut |rows: &Rows| {
            refs += rows.part.iter().filter(|&&p| p == 0).count();
            let mut rows = rows.clone();
            rows.time.iter_mut().for_each(|t| *t += first_step);
            rows.file.iter_mut().for_each(|f| *f += first_file);
            writer.write(&rows)
        })?;
        let doc = doc_of(new).map_err(|e| failed(&e))?;
        writer.finish(&doc).map_err(|e| failed(&e))
    })
    .map_err(|e| match e {
        StackFailure::OffGrid(i, key) => off_grid_message(args, i, &key, ""),
        StackFailure::Failed(e) => e,
    })?;
    Ok(refs)
}

/// `--shard I/N`: the shard's block of the sources as the part
/// `shard-I-of-N.parquet` of the collection directory OUT, steps and files
/// numbered by their place in the whole list (each source one step of one
/// file), for `--merge-shards` to join.
fn index_shard(args: &Args, formats: &[Format], shard: Shard) -> Result<(PathBuf, usize), String> {
    std::fs::create_dir_all(&args.output).map_err(|e| format!("{}: {e}", args.output.display()))?;
    let part = args
        .output
        .join(parts::shard_name(shard.index, shard.count));
    let first = u32::try_from(shard.first).map_err(|_| "more than 2^32 sources".to_string())?;
    let steps = args.sources.len();
    let stream = |sink: Sink<'_>| stream_stack(args, formats, sink);
    let refs = write_part(args, stream, &part, (first, first), |doc| {
        if doc.files.len() != steps {
            return Err(chunkref::Error::unsupported(format!(
                "sharded indexing of sources of several files each ({} files for {steps} \
                 sources)",
                doc.files.len()
            )));
        }
        Ok(doc)
    })?;
    Ok((part, refs))
}

/// `--merge-shards`: joins the shards in OUT into one collection.
fn merge_shards(args: &Args) -> Result<(PathBuf, usize), String> {
    let dir = &args.output;
    let list = collection::merge_shards(
        &dir.to_string_lossy(),
        &|name| {
            let path = dir.join(name);
            let path = path.to_string_lossy();
            let file = LocalFile::open(&path)?;
            parquet_read::read_footer(&path, Arc::new(file))
        },
        &|| {
            let names = std::fs::read_dir(dir)
                .map_err(|e| chunkref::Error::Io {
                    url: dir.to_string_lossy().into_owned(),
                    range: String::new(),
                    reason: e.to_string(),
                })?
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect();
            Ok(names)
        },
    )
    .map_err(|e| e.to_string())?;
    let (doc_part, doc) = list.document;
    let path = dir.join(&doc_part);
    let name = path.to_string_lossy().into_owned();
    atomically(&path, |partial| {
        let file = std::fs::File::create(partial).map_err(|e| format!("{name}: {e}"))?;
        let writer = parquet::TableWriter::new(&name, std::io::BufWriter::new(file))
            .map_err(|e| e.to_string())?;
        writer.finish(&doc).map_err(|e| e.to_string())
    })?;
    save_parts_list(dir, &list.parts)?;
    Ok((dir.clone(), list.parts.parts.len()))
}

/// Writes the parts list of the collection `dir` (under a temporary name,
/// then renamed).
fn save_parts_list(dir: &Path, list: &parts::PartsList) -> Result<(), String> {
    let path = dir.join(parts::PARTS_FILE);
    let text = serde_json::to_string_pretty(list).map_err(|e| e.to_string())?;
    atomically(&path, |partial| {
        std::fs::write(partial, text).map_err(|e| format!("{}: {e}", path.display()))
    })
}

/// Makes the one-file table `path` the first part of a collection
/// directory of the same name (renames only).
fn make_first_part(path: &Path) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("{}: {e}", path.display());
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let aside = path.with_file_name(format!(".{name}.first-part"));
    std::fs::rename(path, &aside).map_err(fail)?;
    std::fs::create_dir(path).map_err(fail)?;
    std::fs::rename(&aside, path.join(parts::part_name(0))).map_err(fail)?;
    let list = parts::PartsList {
        chunkref_parts: 1,
        parts: vec![parts::part_name(0)],
    };
    let text = serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?;
    std::fs::write(path.join(parts::PARTS_FILE), text).map_err(fail)
}

/// Why the sources cannot be indexed as asked when one is NetCDF / HDF5
/// and they would make a collection (a stack, mosaic, appended part or
/// shard): such files are indexed one per index.
fn hdf5_in_collection(args: &Args, formats: &[Format]) -> Option<String> {
    let i = formats.iter().position(|f| *f == Format::Hdf5)?;
    let joined = stacks(args) && args.layout != Layout::Mosaic && all_hdf5(formats);
    (args.append || args.shard.is_some() || (stacks(args) && !joined)).then(|| {
        format!(
            "{} is NetCDF / HDF5: such files are indexed one per index, not stacked, \
             mosaicked, appended or sharded; give OUT as a directory (OUT_DIR/) to index \
             each source on its own",
            args.sources[i]
        )
    })
}

/// Whether every source is NetCDF / HDF5.
fn all_hdf5(formats: &[Format]) -> bool {
    formats.iter().all(|f| *f == Format::Hdf5)
}

/// Several NetCDF / HDF5 files into one index, their stores concatenated
/// along `--concat-dim` (default: the first dimension of the first array
/// of two or more), as kerchunk's MultiZarrToZarr does.
fn index_concatenated(args: &Args) -> Result<(PathBuf, usize), String> {
    let stores: Vec<concat::Store> = on_source_threads(|| {
        args.sources
            .par_iter()
            .map(|s| {
                let doc = hdf5_doc(args, s).map_err(|e| format!("{s}: {e}"));
                let refs = doc
                    .as_ref()
                    .ok()
                    .map(|d| d["refs"].as_object().map_or(0, |r| r.len()));
                args.progress.source_done(refs);
                doc.map(|doc| (s.clone(), doc))
            })
            .collect::<Result<_, String>>()
    })?;
    let read = |i: usize, path: &str| read_array(&stores[i], path);
    let doc =
        concat::concat(&stores, args.concat_dim.as_deref(), &read).map_err(|e| e.to_string())?;
    Ok((args.output.clone(), write(doc, &args.output)?))
}

/// The decoded bytes of array `path` of a file's store (every chunk read,
/// in order: a 1-D array).
fn read_array(store: &concat::Store, path: &str) -> chunkref::Result<Vec<u8>> {
    let (name, doc) = store;
    let text = serde_json::to_vec(doc).map_err(|e| chunkref::Error::Usage {
        what: e.to_string(),
    })?;
    let index = Index::from_kerchunk_json(name, &text, &[])?;
    let a = index
        .array_index(path)
        .ok_or_else(|| chunkref::Error::Usage {
            what: format!("no array '{path}' in the index of {name}"),
        })?;
    let settings = Settings::from_lookup(|k| std::env::var(k).ok())?;
    let base = resolve::index_source(name)?.base;
    let locations = Locations::resolve(&index, &base, &settings);
    let array = &index.arrays[a];
    let meta = &array.meta;
    let idxs: Vec<Vec<u64>> = (0..meta.grid_shape().iter().product::<u64>())
        .map(|i| vec![i])
        .collect();
    let fill = meta
        .fill
        .clone()
        .unwrap_or_else(|| vec![0; meta.dtype.size]);
    let mut bytes = Vec::new();
    for chunk in chunkref::read::chunk::read_chunks(&index, &locations, array, &idxs) {
        match chunk? {
            Some(c) => bytes.extend_from_slice(&c),
            None => (0..meta.chunks[0]).for_each(|_| bytes.extend_from_slice(&fill)),
        }
    }
    Ok(bytes)
}

fn index_one(args: &Args, source: &str, format: Format) -> Result<(PathBuf, usize), String> {
    let doc = match format {
        Format::Hdf5 => hdf5_doc(args, source)?,
        Format::ZarrStore => store_doc(args, source)?,
        _ => source_built(&args.read, source, format)?.to_kerchunk(),
    };
    let out = destination(args, source, args.sources.len() > 1);
    Ok((out.clone(), write(doc, &out)?))
}

/// Several DTED cells as one mosaic index; each cell read counts as a
/// source indexed with the mosaic's references into it.
fn index_mosaic(args: &Args) -> Result<(PathBuf, usize), String> {
    let mut cells = Vec::new();
    let mut errors = Vec::new();
    for source in &args.sources {
        match locate(&args.read, source).and_then(|(path, url)| {
            chunkref::builders::dted::Cell::read(&path, &url).map_err(|e| e.to_string())
        }) {
            Ok(cell) => cells.push(cell),
            Err(e) => {
                if let Err(e) = args.skip(source, e) {
                    errors.push(e);
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    let built = chunkref::builders::dted::build_cells(&cells, args.read.checksum_warnings)
        .map_err(|e| e.to_string())?;
    let mut refs = std::collections::HashMap::<&str, usize>::new();
    for r in built.arrays.values().flatten() {
        *refs.entry(&r.url).or_default() += 1;
    }
    for cell in &cells {
        let into_cell = refs.get(cell.url.as_str()).copied().unwrap_or(0);
        args.progress.source_done(Some(into_cell));
    }
    let mut doc = built.to_kerchunk();
    if args.read.template_base {
        doc["templates"] = serde_json::json!({"base": ""});
    }
    let out = destination(args, "dted_mosaic", false);
    Ok((out.clone(), write(doc, &out)?))
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("convert") {
        return match convert(std::env::args().skip(2)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("chunkref: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("{msg}");
            return ExitCode::from(2);
        }
    };
    let mut args = args;
    let items = match args.stac.clone() {
        Some(st) => match stac::find_items(&mut args, &st) {
            Ok(items) => Some(items),
            Err(e) => {
                eprintln!("chunkref: {e}");
                return report_failures(&args, ExitCode::FAILURE);
            }
        },
        None => None,
    };
    let remote = args
        .sources
        .iter()
        .any(|s| matches!(chunkref::io::source::locate(s), Ok(Location::Object(_))));
    let threads = args.concurrency.unwrap_or(if remote {
        REMOTE_CONCURRENCY
    } else {
        rayon::current_num_threads()
    });
    AT_ONCE.get_or_init(|| threads);
    if args.merge_shards {
        return match merge_shards(&args) {
            Ok((dir, n)) => {
                eprintln!("{} parts -> {}", n, dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!(
                    "chunkref: cannot merge the shards of {}: {e}",
                    args.output.display()
                );
                ExitCode::FAILURE
            }
        };
    }
    let code = match items {
        Some(items) => stac::run(&args, items),
        None => run(&mut args),
    };
    report_failures(&args, code)
}

/// Sources read at once when some are remote (each is a few round trips
/// of waiting, not work): 365 COG headers at 20 ms a request took 0.30 s
/// at 32, 0.19 s at 64, 0.14 s at 128 and no less at 192-512
/// (docs/performance.md, "Indexing from a STAC search"); bounded, as each
/// is a connection and a task.
const REMOTE_CONCURRENCY: usize = 128;

/// Sources read at once (`--concurrency`), set at start.
static AT_ONCE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Sources read at once: [`AT_ONCE`], else one per core.
fn at_once() -> usize {
    AT_ONCE
        .get()
        .copied()
        .unwrap_or_else(rayon::current_num_threads)
}

/// The threads parallel iterators over the sources run on ([`at_once`] of
/// them), started on first use: the collections' sources are read on the
/// I/O runtime instead ([`read_sources`]), and need none.
static SOURCE_THREADS: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();

/// Runs `work` on the source threads (on the global pool when they cannot
/// be started).
fn on_source_threads<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    let pool = SOURCE_THREADS.get_or_init(|| {
        let threads = at_once();
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| {
                eprintln!(
                    "chunkref: warning: cannot start {threads} threads ({e}): reading on fewer"
                );
            })
            .ok()
    });
    match pool {
        Some(pool) => pool.install(work),
        None => work(),
    }
}

/// Lists the sources left out (stderr, and `--failures` when given: one
/// `SOURCE<TAB>REASON` line each, an empty file when none); `code` is the
/// run's outcome, a failure when nothing could be indexed.
fn report_failures(args: &Args, code: ExitCode) -> ExitCode {
    args.progress.clear();
    if args.sources.len() > 1 {
        eprintln!("chunkref: {}", args.progress.summary());
    }
    let failed = args.failed.lock().unwrap_or_else(|p| p.into_inner());
    if args.skip_errors {
        for (source, reason) in failed.iter() {
            eprintln!("chunkref: left out {source}: {reason}");
        }
    }
    if let Some(path) = &args.failures {
        let text: String = failed
            .iter()
            .map(|(s, r)| format!("{s}\t{}\n", r.replace(['\n', '\t'], " ")))
            .collect();
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("chunkref: {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    code
}

/// Runs a job that makes one output of all the sources (a collection, a
/// mosaic, a joined store): on success says what went where (`what -> OUT
/// (N unit, ms)`), else `chunkref: failure: error`.
fn run_job(
    failure: &str,
    unit: &str,
    job: impl FnOnce() -> Result<(String, PathBuf, usize), String>,
) -> ExitCode {
    let start = Instant::now();
    match job() {
        Ok((what, out, refs)) => {
            eprintln!(
                "{what} -> {} ({refs} {unit}, {:.1} ms)",
                out.display(),
                start.elapsed().as_secs_f64() * 1e3
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chunkref: {failure}: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `chunkref index` with its sources expanded.
fn run(args: &mut Args) -> ExitCode {
    let detect = |s: &String| builder::detect(s).map_err(|e| e.to_string());
    // Remote names with known extensions are no I/O to detect.
    let detected: Vec<Result<Format, String>> = if args
        .sources
        .iter()
        .all(|s| builder::remote_format_by_name(s).is_some())
    {
        args.sources.iter().map(detect).collect()
    } else {
        on_source_threads(|| args.sources.par_iter().map(detect).collect())
    };
    let (mut kept, mut formats, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for (source, format) in args.sources.iter().zip(detected) {
        match format {
            Ok(f) => {
                kept.push(source.clone());
                formats.push(f);
            }
            Err(e) => {
                if let Err(e) = args.skip(source, e) {
                    errors.push(e);
                }
            }
        }
    }
    if !errors.is_empty() {
        for e in errors {
            eprintln!("chunkref: {e}");
        }
        return ExitCode::FAILURE;
    }
    if kept.is_empty() {
        eprintln!("chunkref: none of the sources could be indexed");
        return ExitCode::FAILURE;
    }
    args.sources = kept;
    let args = &*args;
    let total = args.sources.len();
    if let Some(refused) = hdf5_in_collection(args, &formats) {
        eprintln!("chunkref: {refused}");
        return ExitCode::FAILURE;
    }
    if args.append || args.shard.is_some() {
        let failure = format!("cannot append to {}", args.output.display());
        return run_job(&failure, "chunk references", || {
            let (part, refs) = match args.shard {
                Some(shard) => index_shard(args, &formats, shard)?,
                None => append_steps(args, &formats)?,
            };
            Ok((format!("{total} time step(s)"), part, refs))
        });
    }
    if total > 1 && formats.contains(&Format::Dted) {
        if let Some(i) = formats.iter().position(|f| *f != Format::Dted) {
            eprintln!(
                "chunkref: {} is not DTED: several DTED cells make one mosaic index, \
                 so they cannot be listed with other sources; index them separately",
                args.sources[i]
            );
            return ExitCode::FAILURE;
        }
        return run_job("cannot build the DTED mosaic", "keys", || {
            let (out, refs) = index_mosaic(args)?;
            Ok((format!("{total} DTED cells"), out, refs))
        });
    }
    if stacks(args) && all_hdf5(&formats) {
        return run_job("cannot join the files", "keys", || {
            let (out, refs) = index_concatenated(args)?;
            Ok((format!("{total} NetCDF / HDF5 files"), out, refs))
        });
    }
    if stacks(args) && formats.contains(&Format::ZarrStore) {
        eprintln!(
            "chunkref: a Zarr store is indexed on its own, not stacked or mosaicked with \
             other sources into one index; give one store, or OUT_DIR/ to index each"
        );
        return ExitCode::FAILURE;
    }
    if stacks(args) {
        return run_job("cannot build the collection", "chunk references", || {
            let (what, refs) = index_stack(args, &formats)?;
            Ok((what, args.output.clone(), refs))
        });
    }
    let failed: usize = on_source_threads(|| {
        args.sources
            .par_iter()
            .zip(&formats)
            .map(|(source, format)| {
                let indexed = index_one(args, source, *format);
                match indexed {
                    Ok((_, refs)) => {
                        args.progress.source_done(Some(refs));
                        0
                    }
                    Err(e) => {
                        args.progress.clear();
                        eprintln!("chunkref: cannot index {source}: {e}");
                        args.progress.source_done(None);
                        args.record_failure(source, e);
                        1
                    }
                }
            })
            .sum::<usize>()
    });
    if failed == total || (failed > 0 && !args.skip_errors) {
        eprintln!("chunkref: {failed} of {total} source(s) could not be indexed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
