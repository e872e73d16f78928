//! Compiles the C++ shim against the system GDAL (found with gdal-config,
//! else pkg-config) and links libgdal.

use std::process::Command;

fn query(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Compiles src/hdf5/vfd_layout.c against libhdf5's headers (found with
/// pkg-config, else Debian's serial build): its static assertions fail the
/// build when libhdf5's driver structures are not those vfd.rs declares.
fn check_hdf5_layout() {
    println!("cargo:rerun-if-changed=src/hdf5/vfd_layout.c");
    let cflags = query("pkg-config", &["--cflags", "hdf5"])
        .unwrap_or_else(|| "-I/usr/include/hdf5/serial".into());
    let mut build = cc::Build::new();
    build.file("src/hdf5/vfd_layout.c").warnings(true);
    for flag in cflags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-I") {
            build.include(dir);
        }
    }
    build.compile("chunkref_vfd_layout");
}

fn main() {
    println!("cargo:rerun-if-changed=cpp_shim");
    println!("cargo:rerun-if-env-changed=GDAL_CONFIG");
    let gdal_config = std::env::var("GDAL_CONFIG").unwrap_or_else(|_| "gdal-config".into());
    let (cflags, libs) = match (
        query(&gdal_config, &["--cflags"]),
        query(&gdal_config, &["--libs"]),
    ) {
        (Some(c), Some(l)) => (c, l),
        _ => match (
            query("pkg-config", &["--cflags", "gdal"]),
            query("pkg-config", &["--libs", "gdal"]),
        ) {
            (Some(c), Some(l)) => (c, l),
            _ => panic!(
                "GDAL development files not found: install them (Debian: apt-get install libgdal-dev) \
                 or set GDAL_CONFIG to the path of gdal-config"
            ),
        },
    };
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .file("cpp_shim/chunkref_shim.cpp")
        .include("cpp_shim")
        .flag_if_supported("-fvisibility=hidden")
        .warnings(true);
    for flag in cflags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-I") {
            build.include(dir);
        }
    }
    build.compile("chunkref_shim");
    check_hdf5_layout();
    for flag in libs.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={dir}");
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib=dylib={lib}");
        }
    }
}
