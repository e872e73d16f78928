//! [`super::cpl`] for a build without GDAL (no `gdal` feature): options
//! from the environment, data files from `GDAL_DATA`, warnings on standard
//! error, the block cache size GDAL would pick.

use std::cell::RefCell;
use std::path::PathBuf;

/// Where GDAL installs its data files when `GDAL_DATA` is not set.
const DATA_DIRS: [&str; 2] = ["/usr/share/gdal", "/usr/local/share/gdal"];

thread_local! {
    /// Options set for this thread by [`with_config_options`], innermost last.
    static THREAD_OPTIONS: RefCell<Vec<(String, String)>> = const { RefCell::new(Vec::new()) };
}

/// The value of option `key`: set for this thread by
/// [`with_config_options`], else in the environment (where GDAL would also
/// look). Empty values count as unset.
pub fn config_option(key: &str) -> Option<String> {
    let set = THREAD_OPTIONS.with_borrow(|options| {
        options
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    });
    set.or_else(|| std::env::var(key).ok())
        .filter(|v| !v.is_empty())
}

/// Runs `f` with `options` (name, value) set for this thread, over the
/// environment, as GDAL's thread-local configuration options are set: how
/// the Python face hands a dataset's settings to the opening of its index.
pub fn with_config_options<T>(options: &[(String, String)], f: impl FnOnce() -> T) -> T {
    struct Restore(usize);
    impl Drop for Restore {
        fn drop(&mut self) {
            THREAD_OPTIONS.with_borrow_mut(|o| o.truncate(self.0));
        }
    }
    let _restore = Restore(THREAD_OPTIONS.with_borrow_mut(|o| {
        let before = o.len();
        o.extend(options.iter().cloned());
        before
    }));
    f()
}

/// The block cache size GDAL would use (`GDAL_CACHEMAX`: megabytes below
/// 100000, else bytes, or a percentage of memory; by default 5 % of
/// memory).
pub fn cache_max() -> usize {
    let memory = physical_memory();
    let percent = |p: f64| (memory as f64 * p / 100.0) as usize;
    match config_option("GDAL_CACHEMAX") {
        Some(v) if v.ends_with('%') => v[..v.len() - 1]
            .trim()
            .parse()
            .map_or(percent(5.0), percent),
        Some(v) => match v.trim().parse::<usize>() {
            Ok(n) if n < 100_000 => n << 20,
            Ok(n) => n,
            Err(_) => percent(5.0),
        },
        None => percent(5.0),
    }
}

/// Bytes of fetched chunks kept for a second read nearby when
/// `CHUNKREF_FETCH_CACHE` is not set: 8 MiB. Without GDAL there is no
/// block cache beside it, and a Python process (one dask worker of many)
/// should not hold a share of the machine's memory it did not ask for.
/// 8 MiB keeps the tiles under a strip read a band at a time (forty
/// tiles of 200 KB: the next strip of rows decodes them again without a
/// request); the pixel drill of a year of daily tiles (73 MB fetched)
/// keeps only its last tiles, and a client that reads many points of the
/// same tiles asks for more.
pub fn fetch_cache_default() -> usize {
    8 << 20
}

/// Physical memory in bytes (`/proc/meminfo`), 1 GiB where unknown.
fn physical_memory() -> usize {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib << 10)
        })
        .unwrap_or(1 << 30)
}

/// Data file `name` in `GDAL_DATA`, else where GDAL installs its data.
pub fn find_data_file(name: &str) -> Option<PathBuf> {
    config_option("GDAL_DATA")
        .into_iter()
        .map(PathBuf::from)
        .chain(DATA_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Writes `message` to standard error as a warning (there is no GDAL error
/// handler to raise it through).
pub fn raise_warning(message: &str) {
    eprintln!("Warning: {message}");
}

/// Sets (or with `None` clears) option `key`, for tests.
#[cfg(test)]
pub fn set_config_option(key: &str, value: Option<&str>) {
    match value {
        Some(v) => std::env::set_var(key, v),
        None => std::env::remove_var(key),
    }
}
