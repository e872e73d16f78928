//! `chunkref index --stac SOURCE --asset NAME[,NAME...] -o OUT`: the items
//! of a STAC source (docs/stac.md) read, their assets' headers read as any
//! collection's sources are, the assets grouped by grid into time stacks
//! and written as one index (several stacks: one group each).

use std::process::ExitCode;

use chunkref::builders::stac::{self, grids, item::Item};
use chunkref::builders::writers::nest::nest;
use chunkref::builders::writers::stacker;

use super::{builder, read_sources, run_job, save_index, source_built, Args, Format, Made};
use super::{on_source_threads, ReadOptions, StackFailure};
use rayon::prelude::*;

/// The options of `--stac`.
pub(crate) const OPTIONS: [&str; 9] = [
    "--stac",
    "--asset",
    "--bbox",
    "--datetime",
    "--collections",
    "--filter",
    "--allow-host",
    "--max-pages",
    "--max-items",
];

/// What `--stac` and its options ask for.
#[derive(Debug, Clone, Default)]
pub(crate) struct StacArgs {
    /// The STAC source.
    pub source: String,
    /// The asset keys (`--asset`).
    pub keys: Vec<String>,
    /// The search (`--bbox`, `--datetime`, `--collections`, `--filter`).
    pub query: stac::Query,
    /// Bounds (`--max-pages`, `--max-items`).
    pub limits: stac::Limits,
    /// Hosts hrefs may point to besides the catalogue's (`--allow-host`).
    pub allowed: Vec<String>,
}

/// Reads the items of `--stac`, makes their assets' hrefs the sources of
/// `args` (each once); the items that could not be taken are recorded
/// (with `--skip-errors`) or fail the run.
pub(crate) fn find_items(args: &mut Args, stac_args: &StacArgs) -> Result<Vec<Item>, String> {
    let hosts = stac::Hosts::new(&stac_args.source, stac_args.allowed.clone())
        .map_err(|e| e.to_string())?;
    let found = stac::read(
        &stac_args.source,
        &stac_args.keys,
        &stac_args.query,
        &stac_args.limits,
        &hosts,
    )
    .map_err(|e| format!("{}: {e}", stac_args.source))?;
    leave_out(args, found.failures)?;
    let mut items = found.items;
    if args.append {
        let known = indexed_items(args)?;
        items.retain(|i| !known.contains(&i.id));
        if items.is_empty() {
            eprintln!("chunkref: no new item for {}", args.output.display());
            return Ok(items);
        }
    }
    if items.is_empty() {
        return Err(format!(
            "{}: no item with the assets {}",
            stac_args.source,
            stac_args.keys.join(", ")
        ));
    }
    let mut hrefs: Vec<String> = items
        .iter()
        .flat_map(|i| i.assets.iter().map(|a| a.href.clone()))
        .collect();
    let mut seen = std::collections::HashSet::new();
    hrefs.retain(|h| seen.insert(h.clone()));
    args.progress = super::Progress::new(hrefs.len());
    args.sources = hrefs;
    Ok(items)
}

/// The ids of the items the collection OUT holds already (its root
/// `source` list); none when it does not exist.
fn indexed_items(args: &Args) -> Result<std::collections::HashSet<String>, String> {
    let Some((_, doc)) = super::read_collection(&args.output)? else {
        return Ok(Default::default());
    };
    let root = doc.metadata.get(".zattrs");
    let ids = root
        .and_then(|r| r.get("source")?.as_array().cloned())
        .unwrap_or_default();
    Ok(ids
        .iter()
        .filter_map(|v| Some(v.as_str()?.to_string()))
        .collect())
}

/// Indexes every asset of `items` (the sources of `args`) and writes the
/// stacks they make to OUT.
pub(crate) fn run(args: &Args, items: Vec<Item>) -> ExitCode {
    if items.is_empty() {
        return ExitCode::SUCCESS;
    }
    run_job(
        "cannot build the STAC collection",
        "chunk references",
        || {
            let (what, refs) = index_items(args, items)?;
            Ok((what, args.output.clone(), refs))
        },
    )
}

/// One asset's index, or why it could not be made (kept: the item is then
/// left out, named).
fn read_asset(
    options: &ReadOptions,
    source: &str,
    format: Format,
) -> Made<Result<chunkref::builders::writers::built::Built, String>> {
    let built = source_built(options, source, format);
    let refs = built
        .as_ref()
        .map_or(0, |b| b.arrays.values().map(Vec::len).sum());
    Ok((built, refs))
}

/// Reads the assets of `items`, groups the items whose assets could be
/// read into stacks and writes them (or appends the one stack) to OUT;
/// returns what was made and its chunk references.
fn index_items(args: &Args, items: Vec<Item>) -> Result<(String, usize), String> {
    let formats: Vec<Result<Format, String>> = on_source_threads(|| {
        args.sources
            .par_iter()
            .map(|s| builder::detect(s).map_err(|e| e.to_string()))
            .collect()
    });
    // A source whose format cannot be told (missing, not a raster) is read
    // as TIFF, which fails as well; the detection's error is the one kept.
    let usable: Vec<Format> = formats
        .iter()
        .map(|f| *f.as_ref().unwrap_or(&Format::Tiff))
        .collect();
    let mut builts: Vec<Option<Result<_, String>>> = vec![None; args.sources.len()];
    read_sources(args, &usable, read_asset, |i, made| {
        let made = match &formats[i] {
            Err(e) => Err(e.clone()),
            Ok(_) => made,
        };
        if made.is_err() {
            args.progress.failed_after_all();
        }
        builts[i] = Some(made);
        Ok(())
    })?;
    let at: std::collections::HashMap<&str, usize> = args
        .sources
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    let mut ready = Vec::with_capacity(items.len());
    let mut left_out = Vec::new();
    for item in items {
        let mut assets = Vec::with_capacity(item.assets.len());
        let mut failed = Vec::new();
        for a in &item.assets {
            match &builts[at[a.href.as_str()]] {
                Some(Ok(b)) => assets.push(b.clone()),
                Some(Err(e)) => failed.push(format!("asset '{}' ({}): {e}", a.key, a.href)),
                None => failed.push(format!("asset '{}' ({}): not read", a.key, a.href)),
            }
        }
        if failed.is_empty() {
            ready.push((item, assets));
        } else {
            let reason = format!("item '{}': {}", item.id, failed.join("; "));
            left_out.push((item.id, reason));
        }
    }
    leave_out(args, left_out)?;
    if ready.is_empty() {
        return Err("no item could be indexed".into());
    }
    let items = ready.len();
    let mut stacks = grids::group(ready)?;
    let out = args.output.to_string_lossy().into_owned();
    if args.append {
        if stacks.len() != 1 {
            return Err(format!(
                "--append grows one time stack; these items make several (assets on \
                 different grids): {}",
                names(stacks.iter().map(|s| &s.name))
            ));
        }
        let steps = stacks.remove(0).steps;
        let (part, refs) = super::append_part(args, |sink| {
            let failed = |e: chunkref::Error| StackFailure::Failed(e.to_string());
            let mut stacker = stacker::Stacker::new(&out, chunkref::index::table::BATCH_ROWS, sink);
            for step in steps {
                stacker
                    .push(step.prepare(&out).map_err(failed)?)
                    .map_err(failed)?;
            }
            stacker.finish().map_err(failed)
        })?;
        return Ok((
            format!("{items} new STAC items as {}", part.display()),
            refs,
        ));
    }
    let mut indexes = Vec::with_capacity(stacks.len());
    for s in stacks {
        let steps = s
            .steps
            .into_iter()
            .map(|step| step.prepare(&out))
            .collect::<chunkref::Result<Vec<_>>>()
            .map_err(|e| e.to_string())?;
        let index = stacker::stack(&out, steps).map_err(|e| e.to_string())?;
        indexes.push((s.name, index));
    }
    let what = format!(
        "{items} STAC items in {} stack(s): {}",
        indexes.len(),
        names(indexes.iter().map(|(n, _)| n))
    );
    let index = match indexes.len() {
        1 => indexes.pop().map(|(_, i)| i).ok_or("no stack")?,
        _ => {
            let parts: Vec<(String, &chunkref::index::Index)> =
                indexes.iter().map(|(n, i)| (n.clone(), i)).collect();
            let mut root = serde_json::Map::new();
            root.insert(
                "source".into(),
                serde_json::json!(args.stac.as_ref().map(|s| &s.source)),
            );
            nest(&out, &parts, root).map_err(|e| e.to_string())?
        }
    };
    Ok((what, save_index(&index, &args.output, &out)?))
}

/// The stacks' names, for messages.
fn names<'a>(stacks: impl Iterator<Item = &'a String>) -> String {
    stacks.map(String::as_str).collect::<Vec<_>>().join(", ")
}

/// Items that cannot be indexed, `(id, reason)`: with `--skip-errors` they
/// are recorded (listed at the end, and in `--failures`), else the run
/// fails naming every one.
fn leave_out(args: &Args, items: Vec<(String, String)>) -> Result<(), String> {
    if !args.skip_errors && !items.is_empty() {
        let reasons: Vec<String> = items.into_iter().map(|(_, r)| r).collect();
        return Err(reasons.join("\n"));
    }
    for (id, reason) in items {
        args.record_failure(&id, reason);
    }
    Ok(())
}
