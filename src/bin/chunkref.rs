//! `chunkref`: the command-line companion of the ChunkRef GDAL driver.
//!
//! ```text
//! chunkref index [--template-base] SOURCE.tif -o OUT.json
//! chunkref index [--template-base] STORE.zarr -o OUT.json|OUT.parquet|OUT.fgb
//! chunkref index [--template-base] A.tif B.tif ... -o OUT_DIR/
//! chunkref index [--template-base] [--bad-checksum-warning] CELL.dt1 ... -o OUT.json
//! chunkref index [--template-base] [--datetime-from-name | --datetime-from-metadata] A.tif B.tif ... -o STACK.parquet|.json
//! chunkref index [--template-base] [--mosaic | --stack] A.tif B.tif ... -o MOSAIC.parquet|.fgb|.json
//! chunkref convert IN.json|IN.parquet OUT.json|OUT.parquet
//! ```
//! Reads only the headers of each source and writes a Kerchunk JSON v1 chunk
//! index, or a Parquet chunk-reference table when OUT ends in `.parquet`
//! (docs/reference-table.md); `convert` turns one index form into another. TIFF / BigTIFF / COG: one index per source (`<name>.tile_index.json`
//! in OUT_DIR when there are several sources). DTED: one cell is one index;
//! several cells are ONE mosaic index. A Zarr v2 / v3 store directory: its
//! metadata documents inline and one reference per chunk file (per inner
//! chunk of a v3 shard), see `chunkref::zarr_store`; one index per store.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

const USAGE: &str = "usage: chunkref index [--template-base] [--bad-checksum-warning] [--stack | --mosaic]\n\
                      [--datetime-from-name | --datetime-from-metadata] SOURCE... -o OUT(.json | .parquet | .fgb | DIR/)\n\
       chunkref convert IN OUT      (IN: Kerchunk JSON, Parquet table, Kerchunk Parquet directory\n\
                                    or Icechunk repository (its main branch);\n\
                                    OUT: .json Kerchunk JSON, .parquet or .fgb reference table)\n\
  SOURCE           TIFF / BigTIFF / COG, JPEG 2000 (.j2k, .jp2) or NITF files\n\
                   (one index each), or DTED cells, or Zarr v2 / v3 store directories\n\
                   (one index each: metadata inline, a reference per chunk file or\n\
                   per inner chunk of a v3 shard; never stacked or mosaicked)\n\
                   several sources with OUT a .json/.parquet/.fgb file (not a directory):\n\
                   one time stack of files on the same grid, in the order given, or\n\
                   a mosaic of scenes on different grids of one CRS and resolution\n\
                   (pixel aligned; later scenes over earlier ones)\n\
                   (.dt0/.dt1/.dt2; several cells make one seamless mosaic index)\n\
  --template-base  write portable {{base}}NAME URLs with \"templates\": {\"base\": \"\"}\n\
                   (the index then sits next to its sources, or is opened with\n\
                   -oo TEMPLATE_base=/where/they/are/)\n\
  --stack, --mosaic\n\
                   several sources: make a time stack (files on one grid) or a mosaic\n\
                   (scenes of one CRS and resolution) whatever their grids\n\
  --datetime-from-name\n\
                   time stack: each step's datetime is the first date (YYYYMMDD or\n\
                   YYYY-MM-DD, optionally with a time) in its file name\n\
  --datetime-from-metadata\n\
                   time stack: each step's datetime is the one its file records:\n\
                   GDAL metadata ACQUISITIONDATETIME, DATETIME or TIFFTAG_DATETIME\n\
                   (TIFF; JPEG 2000 written with -co WRITE_METADATA=YES), else the\n\
                   TIFF DateTime tag; NITF IDATIM of the first image segment\n\
  --bad-checksum-warning\n\
                   DTED: a record with a bad checksum is read with a GDAL warning\n\
                   instead of failing the read (the peer cannot read such indexes)";

/// A source format `chunkref index` reads.
use chunkref::builder::{self, Format};
use chunkref::chunk::Locations;
use chunkref::config::Settings;
use chunkref::index::built::Built;
use chunkref::index::file::{InMemory, IndexFile, LocalFile};
use chunkref::index::stacker::{self, Prepared, Stacker, Step};
use chunkref::index::table::{self, Rows};
use chunkref::index::to_kerchunk::to_kerchunk;
use chunkref::index::{fgb, parquet, Index, LoadOptions};
use chunkref::{mosaic, resolve};

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
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", out.display());
    match Form::of(out) {
        Form::Json => {
            let text = serde_json::to_string(&to_kerchunk(index).map_err(|e| fail(&e))?)
                .map_err(|e| fail(&e))?;
            std::fs::write(out, text).map_err(|e| fail(&e))?;
        }
        Form::Parquet => {
            let file = std::fs::File::create(out).map_err(|e| fail(&e))?;
            parquet::write(index, std::io::BufWriter::new(file)).map_err(|e| fail(&e))?;
        }
        Form::FlatGeobuf => {
            let file = std::fs::File::create(out).map_err(|e| fail(&e))?;
            let settings =
                Settings::from_lookup(|k| std::env::var(k).ok()).map_err(|e| fail(&e))?;
            let base = resolve::index_source(origin).map_err(|e| fail(&e))?.base;
            let locations = Locations::resolve(index, &base, &settings);
            fgb::write(index, Some(&locations), std::io::BufWriter::new(file))
                .map_err(|e| fail(&e))?;
        }
    }
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

struct Args {
    sources: Vec<String>,
    output: PathBuf,
    template_base: bool,
    checksum_warnings: bool,
    datetime: Option<DatetimeFrom>,
    layout: Layout,
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
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" | "--output" => output = Some(args.next().ok_or("-o needs a path")?),
            "--template-base" => template_base = true,
            "--bad-checksum-warning" => checksum_warnings = true,
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
    if sources.is_empty() {
        return Err(format!("no SOURCE given\n{USAGE}"));
    }
    Ok(Args {
        sources,
        output: PathBuf::from(output),
        template_base,
        checksum_warnings,
        datetime,
        layout,
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

/// The absolute path of `source` and the URL its chunks are referenced by.
fn locate(args: &Args, source: &str) -> Result<(String, String), String> {
    let abs = std::fs::canonicalize(source).map_err(|e| format!("{source}: {e}"))?;
    let url = if args.template_base {
        format!(
            "{{{{base}}}}{}",
            abs.file_name().unwrap_or_default().to_string_lossy()
        )
    } else {
        abs.to_string_lossy().into_owned()
    };
    Ok((abs.to_string_lossy().into_owned(), url))
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
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string(&doc).map_err(|e| e.to_string())?;
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(refs)
}

/// The index of one source (templates set with `--template-base`).
fn source_built(args: &Args, source: &str, format: Format) -> Result<Built, String> {
    let (path, url) = locate(args, source)?;
    let options = builder::Options {
        dted_checksum_warnings: args.checksum_warnings,
    };
    let mut built = builder::build_as(format, &path, &url, options).map_err(|e| e.to_string())?;
    if args.template_base {
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
const READ_AHEAD: usize = 64;

/// One time step of the stack: the index of `source` and its datetime,
/// made ready for the stack.
fn read_step(args: &Args, source: &str, format: Format) -> Result<Prepared, String> {
    let fail = |e: String| format!("{source}: {e}");
    let built = source_built(args, source, format).map_err(fail)?;
    let datetime = match args.datetime {
        None => None,
        Some(DatetimeFrom::Name) => {
            Some(chunkref::datetime::datetime_in_name(source).ok_or_else(|| {
                fail(
                    "--datetime-from-name: no date (YYYYMMDD or YYYY-MM-DD) in the file name"
                        .into(),
                )
            })?)
        }
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
    step.prepare(&args.output.to_string_lossy())
        .map_err(|e| e.to_string())
}

/// Indexes every source, several at once (headers read in parallel), and
/// hands the steps to `use_step` in the order given.
fn read_steps(
    args: &Args,
    formats: &[Format],
    mut use_step: impl FnMut(Prepared) -> Result<(), String>,
) -> Result<(), String> {
    let jobs: Vec<(&String, Format)> = args.sources.iter().zip(formats.iter().copied()).collect();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::sync_channel(READ_AHEAD);
        scope.spawn(move || {
            for window in jobs.chunks(READ_AHEAD) {
                let steps: Vec<_> = window
                    .par_iter()
                    .map(|&(source, format)| read_step(args, source, format))
                    .collect();
                for step in steps {
                    if tx.send(step).is_err() {
                        return; // the stack failed
                    }
                }
            }
        });
        rx.into_iter().try_for_each(|step| use_step(step?))
    })
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
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| failed(&e))?;
    }
    let file = std::fs::File::create(out).map_err(|e| failed(&e))?;
    let mut writer =
        parquet::TableWriter::new(&name, std::io::BufWriter::new(file)).map_err(|e| failed(&e))?;
    let mut refs = 0;
    let written = stream_stack(args, formats, |rows: &Rows| {
        refs += rows.part.iter().filter(|&&p| p == 0).count();
        writer.write(rows)
    })
    .and_then(|doc| writer.finish(&doc).map_err(|e| failed(&e)));
    if written.is_err() {
        let _ = std::fs::remove_file(out);
    }
    written.map(|()| refs)
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
    let (mut t, mut off_grid) = (0, None);
    let read = read_steps(args, formats, |step| {
        if let Some(key) = stacker.off_grid(&step) {
            off_grid = Some((t, key));
            return Err("off the grid".into());
        }
        t += 1;
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
    if args.datetime.is_some() {
        return Err(
            "--datetime-from-name and --datetime-from-metadata are for time stacks; \
                    these sources make a mosaic (pass --stack for a time stack of files on \
                    one grid)"
                .into(),
        );
    }
    let mut scenes = Vec::with_capacity(args.sources.len());
    for (source, format) in args.sources.iter().zip(formats) {
        let fail = |e: String| format!("{source}: {e}");
        let doc = source_built(args, source, *format)
            .map_err(fail)?
            .to_kerchunk();
        let text = serde_json::to_vec(&doc).map_err(|e| fail(e.to_string()))?;
        scenes
            .push(Index::from_kerchunk_json(source, &text, &[]).map_err(|e| fail(e.to_string()))?);
    }
    let out = args.output.to_string_lossy();
    let settings = chunkref::config::Settings::from_lookup(|k| std::env::var(k).ok())
        .map_err(|e| e.to_string())?;
    let index = mosaic::build::mosaic(&out, scenes, &settings).map_err(|e| e.to_string())?;
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

/// The Kerchunk document of the Zarr store directory `source` (templates
/// set with `--template-base`); what it left out is printed.
fn store_doc(args: &Args, source: &str) -> Result<serde_json::Value, String> {
    let (path, url) = locate(args, source)?;
    let index = chunkref::zarr_store::index_store(&path, &url).map_err(|e| e.to_string())?;
    for warning in &index.warnings {
        eprintln!("chunkref: warning: {source}: {warning}");
    }
    let mut doc = index.doc;
    if args.template_base {
        doc["templates"] = serde_json::json!({"base": ""});
    }
    Ok(doc)
}

fn index_one(args: &Args, source: &str, format: Format) -> Result<(PathBuf, usize), String> {
    let doc = match format {
        Format::ZarrStore => store_doc(args, source)?,
        _ => source_built(args, source, format)?.to_kerchunk(),
    };
    let out = destination(args, source, args.sources.len() > 1);
    Ok((out.clone(), write(doc, &out)?))
}

fn index_mosaic(args: &Args) -> Result<(PathBuf, usize), String> {
    let mut cells = Vec::new();
    let mut errors = Vec::new();
    for source in &args.sources {
        match locate(args, source).and_then(|(path, url)| {
            chunkref::dted::Cell::read(&path, &url).map_err(|e| e.to_string())
        }) {
            Ok(cell) => cells.push(cell),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n"));
    }
    let mut doc =
        chunkref::dted::index_cells(&cells, args.checksum_warnings).map_err(|e| e.to_string())?;
    if args.template_base {
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
    let total = args.sources.len();
    let formats: Result<Vec<Format>, String> = args
        .sources
        .iter()
        .map(|s| builder::detect(s).map_err(|e| e.to_string()))
        .collect();
    let formats = match formats {
        Ok(f) => f,
        Err(e) => {
            eprintln!("chunkref: {e}");
            return ExitCode::FAILURE;
        }
    };
    if total > 1 && formats.contains(&Format::Dted) {
        if let Some(i) = formats.iter().position(|f| *f != Format::Dted) {
            eprintln!(
                "chunkref: {} is not DTED: several DTED cells make one mosaic index, \
                 so they cannot be listed with other sources; index them separately",
                args.sources[i]
            );
            return ExitCode::FAILURE;
        }
        let start = Instant::now();
        return match index_mosaic(&args) {
            Ok((out, refs)) => {
                eprintln!(
                    "{total} DTED cells -> {} ({refs} keys, {:.1} ms)",
                    out.display(),
                    start.elapsed().as_secs_f64() * 1e3
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("chunkref: cannot build the DTED mosaic: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if stacks(&args) && formats.contains(&Format::ZarrStore) {
        eprintln!(
            "chunkref: a Zarr store is indexed on its own, not stacked or mosaicked with \
             other sources into one index; give one store, or OUT_DIR/ to index each"
        );
        return ExitCode::FAILURE;
    }
    if stacks(&args) {
        let start = Instant::now();
        return match index_stack(&args, &formats) {
            Ok((what, refs)) => {
                eprintln!(
                    "{what} -> {} ({refs} chunk references, {:.1} ms)",
                    args.output.display(),
                    start.elapsed().as_secs_f64() * 1e3
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("chunkref: cannot build the collection: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut failed = 0;
    for (i, (source, format)) in args.sources.iter().zip(&formats).enumerate() {
        let start = Instant::now();
        match index_one(&args, source, *format) {
            Ok((out, refs)) => {
                if total > 1 {
                    eprintln!(
                        "[{}/{total}] {source} -> {} ({refs} keys, {:.1} ms)",
                        i + 1,
                        out.display(),
                        start.elapsed().as_secs_f64() * 1e3
                    );
                }
            }
            Err(e) => {
                failed += 1;
                eprintln!("chunkref: cannot index {source}: {e}");
            }
        }
    }
    if failed > 0 {
        eprintln!("chunkref: {failed} of {total} source(s) could not be indexed");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
