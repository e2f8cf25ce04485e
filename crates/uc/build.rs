//! Records the commit uc is built from (`uc version`): $UC_GIT_COMMIT if set (a build without the
//! repository, such as the Dockerfile's), else `git rev-parse`, else "unknown".

fn main() {
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
