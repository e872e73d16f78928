//! `chunkref`: the command-line companion of the ChunkRef GDAL driver.
//!
//! ```text
//! chunkref index [--template-base] SOURCE.tif -o OUT.json
//! chunkref index [--template-base] A.tif B.tif ... -o OUT_DIR/
//! ```
//! Reads only the headers of each TIFF / BigTIFF / COG or JPEG 2000 (.j2k,
//! .jp2) file and writes a Kerchunk
//! JSON v1 chunk index (one per source; `<name>.tile_index.json` in OUT_DIR
//! when there are several sources).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

const USAGE: &str = "usage: chunkref index [--template-base] SOURCE... -o OUT(.json | DIR/)\n\
  --template-base  write portable {{base}}NAME URLs with \"templates\": {\"base\": \"\"}\n\
                   (the index then sits next to its sources, or is opened with\n\
                   -oo TEMPLATE_base=/where/they/are/)";

struct Args {
    sources: Vec<String>,
    output: PathBuf,
    template_base: bool,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    match args.next().as_deref() {
        Some("index") => {}
        Some("-h" | "--help") | None => return Err(USAGE.into()),
        Some(other) => return Err(format!("unknown command '{other}'\n{USAGE}")),
    }
    let (mut sources, mut output, mut template_base) = (Vec::new(), None, false);
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" | "--output" => output = Some(args.next().ok_or("-o needs a path")?),
            "--template-base" => template_base = true,
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
    })
}

/// Where the index of `source` goes.
fn destination(args: &Args, source: &str) -> PathBuf {
    let is_dir = args.sources.len() > 1
        || args.output.is_dir()
        || args.output.to_string_lossy().ends_with('/');
    if !is_dir {
        return args.output.clone();
    }
    let name = Path::new(source)
        .file_name()
        .map_or_else(|| "index".into(), |n| n.to_string_lossy().into_owned());
    args.output.join(format!("{name}.tile_index.json"))
}

fn index_one(args: &Args, source: &str) -> Result<(PathBuf, usize), String> {
    let abs = std::fs::canonicalize(source).map_err(|e| format!("{source}: {e}"))?;
    let url = if args.template_base {
        format!(
            "{{{{base}}}}{}",
            abs.file_name().unwrap_or_default().to_string_lossy()
        )
    } else {
        abs.to_string_lossy().into_owned()
    };
    let mut doc =
        chunkref::builder::index_file(&abs.to_string_lossy(), &url).map_err(|e| e.to_string())?;
    if args.template_base {
        doc["templates"] = serde_json::json!({"base": ""});
    }
    let refs = doc["refs"].as_object().map_or(0, |r| r.len());
    let out = destination(args, source);
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string(&doc).map_err(|e| e.to_string())?;
    std::fs::write(&out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    Ok((out, refs))
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
    let mut failed = 0;
    for (i, source) in args.sources.iter().enumerate() {
        let start = Instant::now();
        match index_one(&args, source) {
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
