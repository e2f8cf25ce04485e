//! deploy/ and the Dockerfile, checked without a container runtime: generated files current, the
//! image built the way this repository builds the binary, the Deployment's flags ones `uc run` takes.

use std::process::Command;

fn repo_file(path: &str) -> String {
    let p = format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn uc(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_uc")).args(args).output().expect("uc runs");
    assert!(out.status.success(), "uc {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn deploy_rbac_is_what_uc_rbac_prints() {
    let committed = repo_file("deploy/rbac.yaml");
    let generated = uc(&["rbac", "--service-account", "uc-system/uc"]);
    assert!(committed.ends_with(&generated), "deploy/rbac.yaml is stale: regenerate it with `bash deploy/generate.sh`");
    assert!(committed.contains("kind: ServiceAccount\nmetadata:\n  name: uc\n  namespace: uc-system"));
}

/// The Dockerfile's instructions: (INSTRUCTION, arguments), continuation lines joined, comments dropped.
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || (line.is_empty() && current.is_empty()) {
            continue;
        }
        current.push_str(line.trim_end_matches('\\'));
        current.push(' ');
        if !line.ends_with('\\') {
            let (op, rest) = current.trim().split_once(' ').unwrap_or((current.trim(), ""));
            out.push((op.to_ascii_uppercase(), rest.trim().to_string()));
            current.clear();
        }
    }
    out
}

#[test]
fn the_dockerfile_builds_the_binary_cargo_builds_and_runs_it_as_non_root_on_distroless() {
    let ins = instructions(&repo_file("Dockerfile"));
    let froms: Vec<&String> = ins.iter().filter(|(op, _)| op == "FROM").map(|(_, a)| a).collect();
    assert_eq!(froms.len(), 2, "multi-stage: a build stage and a runtime stage");
    let (builder, stage) = froms[0].split_once(" AS ").expect("the build stage is named");
    let rust = builder.rsplit(':').next().and_then(|t| t.split('-').next()).expect("a rust:<version> image");
    // The builder's Rust is exactly the one the link order was made with (symbol names change with the
    // rustc version, patch releases included), and no older than the workspace's rust-version.
    let order = repo_file("deploy/controller.order");
    let made_with = order.lines().next().and_then(|l| l.strip_prefix("# rustc ")).expect("the order names its rustc");
    assert_eq!(made_with.split(' ').next(), Some(rust), "deploy/controller.order was made with rustc {made_with}");
    let version = |v: &str| v.split('.').map(|n| n.parse::<u32>().unwrap_or(0)).collect::<Vec<_>>();
    let msrv = repo_file("Cargo.toml")
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"').to_string())
        .expect("a rust-version");
    assert!(version(rust) >= version(&msrv), "the builder's Rust {rust} is older than rust-version {msrv}");
    assert!(order.lines().skip(1).count() > 1000, "deploy/controller.order lists the functions a controller runs");
    assert!(froms[1].starts_with("gcr.io/distroless/") && froms[1].ends_with(":nonroot"), "{}", froms[1]);
    // Every instruction is one this linter knows (what hadolint would parse), in a sane order.
    for (op, _) in &ins {
        assert!(
            ["FROM", "WORKDIR", "COPY", "ARG", "ENV", "RUN", "USER", "EXPOSE", "ENTRYPOINT", "CMD"]
                .contains(&op.as_str()),
            "unexpected instruction {op}"
        );
    }
    let run = ins.iter().find(|(op, _)| op == "RUN").map(|(_, a)| a.as_str()).expect("a RUN");
    assert_eq!(run, "bash deploy/build-controller.sh", "the build is this repository's");
    let build = repo_file("deploy/build-controller.sh");
    let cargo = build.lines().find(|l| l.starts_with("cargo ")).expect("the script's cargo command");
    assert!(
        cargo.starts_with(
            "cargo rustc --profile controller --locked -p uc --bin uc --no-default-features --features jemalloc"
        ),
        "{cargo}"
    );
    assert!(
        repo_file("bench/all.sh").lines().any(|l| l == "bash deploy/build-controller.sh"),
        "the benchmarks build it so"
    );
    // The profile is the workspace's: chosen for a controller's memory (docs/benchmarks.md, Table 5-2).
    let workspace = repo_file("Cargo.toml");
    let profile: Vec<&str> =
        workspace.lines().skip_while(|l| *l != "[profile.controller]").take_while(|l| !l.is_empty()).collect();
    assert!(profile.contains(&"lto = \"fat\"") && profile.contains(&"codegen-units = 1"), "{profile:?}");
    // Without the default `cluster` feature (the image runs `uc run`, never `uc up`), with the allocator.
    let manifest = repo_file("crates/uc/Cargo.toml");
    let default = manifest.lines().find(|l| l.starts_with("default = ")).expect("default features");
    assert!(default.contains("\"cluster\"") && default.contains("\"jemalloc\""), "{default}");
    assert!(manifest.lines().any(|l| l.starts_with("cluster = [")), "a `cluster` feature");
    // The binary copied is the one that build makes: target/controller/<the uc binary's name>.
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_uc")).file_name().unwrap().to_str().unwrap();
    let copy = ins
        .iter()
        .find(|(op, a)| op == "COPY" && a.starts_with("--from="))
        .map(|(_, a)| a.as_str())
        .expect("COPY --from");
    let workdir = ins.iter().find(|(op, _)| op == "WORKDIR").map(|(_, a)| a.as_str()).expect("WORKDIR");
    let parts: Vec<&str> = copy.split_whitespace().collect();
    assert_eq!(parts[0], format!("--from={stage}"));
    assert_eq!(parts[1], format!("{workdir}/target/controller/{binary}"));
    let user = ins.iter().rev().find(|(op, _)| op == "USER").map(|(_, a)| a.as_str()).expect("USER");
    assert!(!user.starts_with('0') && !user.starts_with("root"), "runs as non-root: {user}");
    let entry = ins.iter().find(|(op, _)| op == "ENTRYPOINT").map(|(_, a)| a.as_str()).expect("ENTRYPOINT");
    assert_eq!(entry, format!("[\"{}\"]", parts[2]), "the entrypoint is the copied binary (exec form)");
    assert!(repo_file(".dockerignore").lines().any(|l| l.trim() == "target/"), "the build context leaves target/ out");
}

#[test]
fn the_deployment_passes_only_flags_uc_run_takes() {
    let deployment = repo_file("deploy/uc.yaml");
    let args_line = deployment.lines().find(|l| l.trim_start().starts_with("args:")).expect("args");
    let args: Vec<String> =
        serde_json::from_str(args_line.trim_start().trim_start_matches("args:").trim()).expect("args as a flow list");
    assert_eq!(args[0], "run");
    let help = uc(&["run", "--help"]);
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        assert!(help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")), "uc run has no {flag}");
    }
    assert!(args.iter().any(|a| a == "--leader-elect"), "replicas elect a leader");
    let image = deployment.lines().find_map(|l| l.trim().strip_prefix("image: ")).expect("image");
    assert!(repo_file("Dockerfile").contains(&format!("docker build -t {image} .")), "the Dockerfile builds {image}");
}

#[test]
fn the_helm_charts_engine_rules_are_what_uc_rbac_prints() {
    for (file, extra) in
        [("engine-rules.yaml", None), ("engine-rules-no-metacontroller.yaml", Some("--no-metacontroller"))]
    {
        let mut args = vec!["rbac", "--rules-only"];
        args.extend(extra);
        assert_eq!(
            repo_file(&format!("deploy/helm/uc/files/{file}")),
            uc(&args),
            "deploy/helm/uc/files/{file} is stale: regenerate it with `bash deploy/generate.sh`"
        );
    }
}
