//! `chunkref`: the command-line companion of the ChunkRef GDAL driver.
//!
//! ```text
//! chunkref index [--template-base] SOURCE.tif -o OUT.json
//! chunkref index [--template-base] A.tif B.tif ... -o OUT_DIR/
//! chunkref index [--template-base] [--bad-checksum-warning] CELL.dt1 ... -o OUT.json
//! ```
//! Reads only the headers of each source and writes a Kerchunk JSON v1 chunk
//! index. TIFF / BigTIFF / COG: one index per source (`<name>.tile_index.json`
//! in OUT_DIR when there are several sources). DTED: one cell is one index;
//! several cells are ONE mosaic index.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: chunkref index [--template-base] [--bad-checksum-warning] SOURCE... -o OUT(.json | DIR/)\n\
  SOURCE           TIFF / BigTIFF / COG, JPEG 2000 (.j2k, .jp2) or NITF files\n\
                   (one index each), or DTED cells\n\
                   (.dt0/.dt1/.dt2; several cells make one seamless mosaic index)\n\
  --template-base  write portable {{base}}NAME URLs with \"templates\": {\"base\": \"\"}\n\
                   (the index then sits next to its sources, or is opened with\n\
                   -oo TEMPLATE_base=/where/they/are/)\n\
  --bad-checksum-warning\n\
                   DTED: a record with a bad checksum is read with a GDAL warning\n\
                   instead of failing the read (the peer cannot read such indexes)";

/// A source format `chunkref index` reads.
use chunkref::builder::{self, Format};

struct Args {
    sources: Vec<String>,
    output: PathBuf,
    template_base: bool,
    checksum_warnings: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    match args.next().as_deref() {
        Some("index") => {}
        Some("-h" | "--help") | None => return Err(USAGE.into()),
        Some(other) => return Err(format!("unknown command '{other}'\n{USAGE}")),
    }
    let (mut sources, mut output, mut template_base) = (Vec::new(), None, false);
    let mut checksum_warnings = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" | "--output" => output = Some(args.next().ok_or("-o needs a path")?),
            "--template-base" => template_base = true,
            "--bad-checksum-warning" => checksum_warnings = true,
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

/// Writes `doc` to `out`; returns the number of keys.
fn write(args: &Args, mut doc: serde_json::Value, out: &Path) -> Result<usize, String> {
    if args.template_base {
        doc["templates"] = serde_json::json!({"base": ""});
    }
    let refs = doc["refs"].as_object().map_or(0, |r| r.len());
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string(&doc).map_err(|e| e.to_string())?;
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok(refs)
}

fn index_one(args: &Args, source: &str, format: Format) -> Result<(PathBuf, usize), String> {
    let (path, url) = locate(args, source)?;
    let options = builder::Options {
        dted_checksum_warnings: args.checksum_warnings,
    };
    let doc = builder::index_as(format, &path, &url, options).map_err(|e| e.to_string())?;
    let out = destination(args, source, args.sources.len() > 1);
    Ok((out.clone(), write(args, doc, &out)?))
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
    let doc =
        chunkref::dted::index_cells(&cells, args.checksum_warnings).map_err(|e| e.to_string())?;
    let out = destination(args, "dted_mosaic", false);
    Ok((out.clone(), write(args, doc, &out)?))
}

fn main() -> ExitCode {
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
