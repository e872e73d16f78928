//! With the `gdal` feature (the default), compiles the C++ shim against the
//! system GDAL (found with gdal-config, else pkg-config) and links libgdal;
//! always checks libhdf5's driver layout; and tells the Rust code which GDAL
//! and libhdf5 it is built against:
//! - `cfg(gdal_int8)` on GDAL >= 3.7, `cfg(gdal_rpc_full_scale)` on
//!   GDAL >= 3.7.2, `cfg(gdal_grib_derived_parameter_units)` on GDAL >= 3.13
//!   (the one place Rust reads them is src/base/gdal/compat.rs;
//!   the shim's is cpp_shim/gdal_compat.h, chosen by `GDAL_VERSION_NUM`
//!   from the same headers);
//! - `cfg(hdf5_1_14)` when libhdf5 is 1.14 or 2.x rather than 1.10: its
//!   file driver structures (src/builders/hdf5/vfd.rs, checked by vfd_layout.c) and
//!   the API names 1.12 changed (src/builders/hdf5/compat.rs);
//! - `cfg(hdf5_2)` as well when libhdf5 is 2.x: the calls 2.0 changed
//!   (src/builders/hdf5/compat.rs);
//! - `cfg(lazy_gdal)` on Linux when libgdal's file name gives its soname
//!   (`CHUNKREF_GDAL_SONAME`): the `chunkref` command then loads libgdal
//!   when it first calls GDAL, not at start (src/bin/chunkref/lazy_gdal.rs,
//!   its GDAL functions hidden by lazy_gdal.map).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The newest GDAL major.minor gdal-sys 0.12 ships prebuilt bindings for;
/// a newer GDAL needs the `bindgen` feature (bindings made from its headers).
const NEWEST_PREBUILT_BINDINGS: (u32, u32) = (3, 12);

fn query(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `major.minor.patch` of a version string such as `3.10.3` or `3.13.0dev`.
fn parse_version(text: &str) -> Option<(u32, u32, u32)> {
    let mut parts = text.trim().split('.').map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u32>().ok()
    });
    let major = parts.next()??;
    let minor = parts.next()??;
    Some((major, minor, parts.next().flatten().unwrap_or(0)))
}

/// The installed GDAL: compiler flags, linker flags and version.
struct Gdal {
    cflags: String,
    libs: String,
    version: (u32, u32, u32),
}

impl Gdal {
    fn find() -> Gdal {
        println!("cargo:rerun-if-env-changed=GDAL_CONFIG");
        let gdal_config = std::env::var("GDAL_CONFIG").unwrap_or_else(|_| "gdal-config".into());
        let found = match (
            query(&gdal_config, &["--cflags"]),
            query(&gdal_config, &["--libs"]),
            query(&gdal_config, &["--version"]),
        ) {
            (Some(c), Some(l), Some(v)) => Some((c, l, v)),
            _ => match (
                query("pkg-config", &["--cflags", "gdal"]),
                query("pkg-config", &["--libs", "gdal"]),
                query("pkg-config", &["--modversion", "gdal"]),
            ) {
                (Some(c), Some(l), Some(v)) => Some((c, l, v)),
                _ => None,
            },
        };
        let Some((cflags, libs, version)) = found else {
            panic!(
                "GDAL development files not found: install them (Debian: apt-get install libgdal-dev) \
                 or set GDAL_CONFIG to the path of gdal-config"
            );
        };
        let version = parse_version(&version)
            .unwrap_or_else(|| panic!("GDAL reports version '{version}', not major.minor.patch"));
        Gdal {
            cflags,
            libs,
            version,
        }
    }

    fn include_dirs(&self) -> impl Iterator<Item = &str> {
        self.cflags
            .split_whitespace()
            .filter_map(|f| f.strip_prefix("-I"))
    }

    /// `GDAL_VERSION_NUM` of these headers (`GDAL_COMPUTE_VERSION`).
    fn version_num(&self) -> u32 {
        let (major, minor, patch) = self.version;
        major * 1_000_000 + minor * 10_000 + patch * 100
    }

    /// The cfgs src/base/gdal/compat.rs and src/bin/chunkref/lazy_gdal.rs read
    /// (declared by [`declare_cfgs`]).
    fn emit_cfgs(&self) {
        let (major, minor, _) = self.version;
        if (major, minor) >= (3, 7) {
            println!("cargo::rustc-cfg=gdal_int8");
        }
        if (major, minor) >= (3, 7) {
            println!("cargo::rustc-cfg=gdal_close_error");
        }
        if (major, minor) >= (3, 11) {
            println!("cargo::rustc-cfg=gdal_float16");
        }
        if (major, minor) >= (3, 13) {
            println!("cargo::rustc-cfg=gdal_grib_derived_parameter_units");
        }
        if self.version >= (3, 7, 2) {
            println!("cargo::rustc-cfg=gdal_rpc_full_scale");
        }
        let (newest_major, newest_minor) = NEWEST_PREBUILT_BINDINGS;
        if (major, minor) > NEWEST_PREBUILT_BINDINGS
            && std::env::var_os("CARGO_FEATURE_BINDGEN").is_none()
        {
            panic!(
                "GDAL {major}.{minor} is newer than the GDAL bindings gdal-sys ships \
                 (3.4 to {newest_major}.{newest_minor}): build with `--features bindgen`, \
                 which makes them from GDAL's headers (needs libclang: apt-get install libclang-dev)"
            );
        }
    }

    /// Compiles the C++ shim.
    fn compile_shim(&self) {
        println!("cargo:rerun-if-changed=cpp_shim");
        let mut build = cc::Build::new();
        build
            .cpp(true)
            .std("c++17")
            .file("cpp_shim/chunkref_shim.cpp")
            .file("cpp_shim/chunkref_mdim.cpp")
            .file("cpp_shim/shim_common.cpp")
            .include("cpp_shim")
            // gdal_compat.h checks the headers found are those of this version.
            .define(
                "CHUNKREF_GDAL_VERSION_NUM",
                self.version_num().to_string().as_str(),
            )
            .flag_if_supported("-fvisibility=hidden")
            .warnings(true);
        for dir in self.include_dirs() {
            build.include(dir);
        }
        build.compile("chunkref_shim");
    }

    fn link(&self) {
        for flag in self.libs.split_whitespace() {
            if let Some(dir) = flag.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            } else if let Some(lib) = flag.strip_prefix("-l") {
                println!("cargo:rustc-link-lib=dylib={lib}");
            }
        }
    }

    /// The soname of the libgdal linked (`libgdal.so.32`), from the file
    /// `libgdal.so` names in the library directories (`libgdal.so.32.3.6.2`).
    fn soname(&self) -> Option<String> {
        let dirs = self
            .libs
            .split_whitespace()
            .filter_map(|f| f.strip_prefix("-L"));
        let file = dirs
            .chain([
                "/usr/lib/x86_64-linux-gnu",
                "/usr/lib/aarch64-linux-gnu",
                "/usr/lib",
            ])
            .find_map(|dir| std::fs::canonicalize(Path::new(dir).join("libgdal.so")).ok())?;
        let name = file.file_name()?.to_str()?;
        let major = name.strip_prefix("libgdal.so.")?.split('.').next()?;
        major
            .bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| format!("libgdal.so.{major}"))
    }

    /// `cfg(lazy_gdal)`: the `chunkref` command defines the GDAL functions
    /// the library calls, each loading libgdal (by its soname) on first use,
    /// and hides them from its dynamic symbols (so libgdal's own calls stay
    /// its own); libgdal is then not loaded at start.
    fn emit_lazy_gdal(&self) {
        let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
        let Some(soname) = self.soname().filter(|_| linux) else {
            return;
        };
        let map = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bin/chunkref/lazy_gdal.map");
        println!("cargo:rerun-if-changed={}", map.display());
        println!("cargo::rustc-cfg=lazy_gdal");
        println!("cargo:rustc-env=CHUNKREF_GDAL_SONAME={soname}");
        println!(
            "cargo:rustc-link-arg-bin=chunkref=-Wl,--version-script={}",
            map.display()
        );
    }
}

/// libhdf5's include directories: those hdf5-metno-sys built against
/// (`DEP_HDF5_INCLUDE`), else pkg-config's, else Debian's serial build.
fn hdf5_include_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("DEP_HDF5_INCLUDE") {
        return vec![PathBuf::from(dir)];
    }
    let cflags = query("pkg-config", &["--cflags", "hdf5"])
        .unwrap_or_else(|| "-I/usr/include/hdf5/serial".into());
    cflags
        .split_whitespace()
        .filter_map(|f| f.strip_prefix("-I"))
        .map(PathBuf::from)
        .collect()
}

/// `H5_VERS_MAJOR.H5_VERS_MINOR` of the H5public.h in `dirs`.
fn hdf5_version(dirs: &[PathBuf]) -> (u32, u32) {
    let header = dirs
        .iter()
        .map(|d| d.join("H5public.h"))
        .find(|p| p.exists())
        .unwrap_or_else(|| {
            panic!("libhdf5's H5public.h not found in {dirs:?}: install libhdf5-dev")
        });
    let text = std::fs::read_to_string(&header)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", header.display()));
    let define = |name: &str| {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("#define"))
            .filter_map(|l| l.trim().strip_prefix(name))
            .find_map(|v| v.split_whitespace().next()?.parse::<u32>().ok())
            .unwrap_or_else(|| panic!("{} defines no {name}", header.display()))
    };
    (define("H5_VERS_MAJOR"), define("H5_VERS_MINOR"))
}

/// Picks the layout of libhdf5's file driver structures src/builders/hdf5/vfd.rs
/// declares, and compiles src/builders/hdf5/vfd_layout.c against libhdf5's headers:
/// its static assertions fail the build when those structures are not the
/// ones vfd.rs declares.
fn check_hdf5_layout() {
    println!("cargo:rerun-if-changed=src/builders/hdf5/vfd_layout.c");
    println!("cargo::rustc-check-cfg=cfg(hdf5_1_14)");
    println!("cargo::rustc-check-cfg=cfg(hdf5_2)");
    let dirs = hdf5_include_dirs();
    let layout = match hdf5_version(&dirs) {
        (1, 10) => 110,
        (1, 14) => {
            println!("cargo::rustc-cfg=hdf5_1_14");
            114
        }
        (2, _) => {
            println!("cargo::rustc-cfg=hdf5_1_14");
            println!("cargo::rustc-cfg=hdf5_2");
            114
        }
        (major, minor) => panic!(
            "libhdf5 {major}.{minor}: the chunkref HDF5 file driver (src/builders/hdf5/vfd.rs) declares \
             the driver structures of libhdf5 1.10, 1.14 and 2.x only"
        ),
    };
    let mut build = cc::Build::new();
    build
        .file("src/builders/hdf5/vfd_layout.c")
        .define("CHUNKREF_VFD_LAYOUT", layout.to_string().as_str())
        .warnings(true);
    for dir in &dirs {
        build.include(Path::new(dir));
    }
    build.compile("chunkref_vfd_layout");
}

/// Declares every cfg this script may set, with or without GDAL.
fn declare_cfgs() {
    for cfg in [
        "gdal_int8",
        "gdal_close_error",
        "gdal_float16",
        "gdal_grib_derived_parameter_units",
        "gdal_rpc_full_scale",
        "lazy_gdal",
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
}

fn main() {
    declare_cfgs();
    check_hdf5_layout();
    // Without the `gdal` feature nothing of GDAL is compiled or linked: no
    // shim, no libgdal, and the GDAL version cfgs unset (the engine follows
    // GDAL 3.6's rules where GDAL versions differ).
    if std::env::var_os("CARGO_FEATURE_GDAL").is_none() {
        return;
    }
    let gdal = Gdal::find();
    gdal.emit_cfgs();
    gdal.compile_shim();
    gdal.link();
    gdal.emit_lazy_gdal();
}
