//! Records the commit uc is built from (`uc version`): $UC_GIT_COMMIT if set (a build without the
//! repository, such as the Dockerfile's), else `git rev-parse`, else "unknown". In the `dist` profile,
//! links the binary in the order of deploy/dist.order (see `dist_order`).

fn main() {
    dist_order();
    println!("cargo:rerun-if-env-changed=UC_GIT_COMMIT");
    // deploy/build-controller.sh links in this order; cargo does not look into a linker argument's file.
    println!("cargo:rerun-if-changed=../../deploy/controller.order");
    for f in ["../../.git/HEAD", "../../.git/refs/heads", "../../.git/packed-refs"] {
        if std::path::Path::new(f).exists() {
            println!("cargo:rerun-if-changed={f}");
        }
    }
    let commit = std::env::var("UC_GIT_COMMIT").ok().filter(|c| !c.is_empty()).or_else(|| {
        let out = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    println!("cargo:rustc-env=UC_GIT_COMMIT={}", commit.unwrap_or_else(|| "unknown".into()));
    println!("cargo:rustc-env=UC_TARGET={}", std::env::var("TARGET").unwrap_or_default());
}

/// A `dist` build's uc links the functions `uc up` runs together, in the order of deploy/dist.order (made by
/// bench/dist-order.sh): the kernel maps a binary in 64 KB blocks around each page touched, and an idle
/// `uc up` touching code all over its 40 MB had 37 MB of it resident (docs/benchmarks.md). Cargo tells a
/// build script its profile only as "release" or "debug", so the `dist` profile is known by its output
/// directory (`<target>/dist/build/uc-<hash>/out`). An order made with another rustc or before changes names symbols
/// that are not there: the linker places those anywhere, and says nothing (`--no-warn-symbol-ordering`).
fn dist_order() {
    let order = std::path::Path::new("../../deploy/dist.order");
    println!("cargo:rerun-if-changed={}", order.display());
    let out_dir = std::env::var("OUT_DIR").unwrap_or_default();
    let in_dist = std::path::Path::new(&out_dir).components().rev().nth(3).is_some_and(|c| c.as_os_str() == "dist");
    if in_dist && order.exists() {
        let path = std::fs::canonicalize(order).expect("deploy/dist.order exists");
        println!("cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}", path.display());
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
