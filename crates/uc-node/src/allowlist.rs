//! Which images run as real processes, and what runs for them. An image not on the allowlist never
//! executes anything: its pods are simulated.
//!
//! Two kinds of entries:
//! - a **program** image (etcd, ZooKeeper, uc's test server) is one program: whatever command the
//!   container names, the entry's program runs (with the command's arguments), or one of the image's
//!   other programs (`tools`, e.g. `etcdctl` in an etcd image) when the command names it;
//! - a **runtime** image (`python:3*`, `node:*`, `busybox`) is a set of commands: the container's
//!   command must name one of its tools (`python`, `pip`, `sh`, ...), mapped to the machine's own; a
//!   multi-call image (busybox) runs any command as an applet of its program.

use crate::invalid::Invalid;
use std::path::{Path, PathBuf};
use uc_api::image::{normalize, repository};

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Container;
use serde::Deserialize;

/// One allowlisted image.
#[derive(Clone, Debug, Default)]
pub struct AllowEntry {
    /// Image patterns: a repository (any tag), `repo:tag`, or `repo:prefix*`.
    pub images: Vec<String>,
    /// The program that runs (a runtime image's default command).
    pub program: PathBuf,
    /// Arguments that always follow the program (they are part of what the image is).
    pub prefix_args: Vec<String>,
    /// Arguments put before the container's own when it names no command (the image's CMD).
    pub default_args: Vec<String>,
    /// The image's other programs by command name (basename), e.g. `etcdctl` in an etcd image.
    pub tools: Vec<(String, PathBuf)>,
    /// A runtime image: a command must name one of its tools (or, multi-call, an applet).
    pub runtime: bool,
    /// A multi-call binary (busybox): any command name runs as `program <name> args...`.
    pub multi_call: bool,
    /// The image's working directory (its `WORKDIR`), for a container that names none.
    pub working_dir: Option<String>,
    /// The image's environment (its `ENV`): over the node's, under the container's own.
    pub env: Vec<(String, String)>,
    /// The image's user (its `USER`, numeric `uid[:gid]`), for a container whose pod and security
    /// context name none.
    pub user: Option<(i64, Option<i64>)>,
    /// Files the image carries, by the path the container sees (absolute) → the machine's file that
    /// plays it, shown read-only (its `COPY server.js /node/`). A volume mounted at the same path
    /// covers it, as it would cover the image's file.
    pub files: Vec<(String, PathBuf)>,
}

/// An image's `USER` as `uid` or `uid:gid` (numbers: a name would need the image's /etc/passwd).
pub fn parse_user(text: &str) -> Result<(i64, Option<i64>), NotAUser> {
    let number = |s: &str| s.parse::<i64>().ok().filter(|n| (0..=i64::from(u32::MAX)).contains(n));
    match text.split_once(':') {
        None => number(text).map(|u| (u, None)),
        Some((u, g)) => number(u).zip(number(g)).map(|(u, g)| (u, Some(g))),
    }
    .ok_or_else(|| NotAUser(text.to_string()))
}

/// A `USER` that is not numeric `uid[:gid]`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0:?} is not uid or uid:gid (numbers)")]
pub struct NotAUser(pub String);

/// The images whose pods run as real processes.
#[derive(Clone, Debug, Default)]
pub struct Allowlist {
    /// Entries.
    pub entries: Vec<AllowEntry>,
}

/// How well a pattern matches an image: 3 for its exact tag, 2 for a tag prefix (`3*`), 1 for the
/// whole repository, None for no match.
fn match_rank(pattern: &str, image: &str) -> Option<u8> {
    let (repo, tag) = normalize(image);
    let has_tag = repository(pattern).len() < pattern.len();
    let (prepo, ptag) = normalize(pattern);
    if prepo != repo {
        return None;
    }
    if !has_tag {
        return Some(1);
    }
    match ptag.strip_suffix('*') {
        Some(prefix) => tag.starts_with(prefix).then_some(2),
        None => (ptag == tag).then_some(3),
    }
}

/// The first program of `names` found on the machine's PATH.
fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    names.iter().find_map(|n| std::env::split_paths(&path).map(|d| d.join(n)).find(|p| p.is_file()))
}

/// The interpreter a `python3` on the `PATH` runs (a version manager's shim, such as pyenv's, is a
/// script that finds it at each start, which a container's sandbox cannot do): what
/// `sys.executable` says, else the program itself.
fn real_python(found: &Path) -> PathBuf {
    std::process::Command::new(found)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.is_absolute() && p.is_file())
        .unwrap_or_else(|| found.to_path_buf())
}

impl Allowlist {
    /// The shipped allowlist: uc's own test HTTP server, etcd and ZooKeeper from the system packages,
    /// and, where the machine has them, Python 3, Node.js and busybox for `python:3*`, `node:*` and
    /// `busybox` images.
    pub fn shipped(uc_exe: PathBuf) -> Self {
        let mut entries = vec![
            AllowEntry {
                images: vec!["uc/http-server".into()],
                program: uc_exe,
                prefix_args: vec!["http-server".into()],
                ..Default::default()
            },
            AllowEntry {
                images: vec!["etcd".into(), "quay.io/coreos/etcd".into(), "gcr.io/etcd-development/etcd".into()],
                program: PathBuf::from("/usr/bin/etcd"),
                tools: vec![
                    ("etcdctl".into(), PathBuf::from("/usr/bin/etcdctl")),
                    ("etcdutl".into(), PathBuf::from("/usr/bin/etcdutl")),
                ],
                ..Default::default()
            },
            AllowEntry {
                images: vec!["zookeeper".into(), "pravega/zookeeper".into()],
                program: PathBuf::from("/usr/share/zookeeper/bin/zkServer.sh"),
                default_args: vec!["start-foreground".into()],
                tools: ["zkServer.sh", "zkCli.sh", "zkCleanup.sh"]
                    .iter()
                    .map(|t| (t.to_string(), PathBuf::from("/usr/share/zookeeper/bin").join(t)))
                    .collect(),
                ..Default::default()
            },
        ];
        let shells = || -> Vec<(String, PathBuf)> {
            [("sh", "/bin/sh"), ("bash", "/bin/bash")]
                .iter()
                .filter(|(_, p)| Path::new(p).exists())
                .map(|(n, p)| (n.to_string(), PathBuf::from(p)))
                .collect()
        };
        if let Some(python) = on_path(&["python3"]).map(|p| real_python(&p)) {
            let mut tools = vec![("python".into(), python.clone()), ("python3".into(), python.clone())];
            let beside = |n: &str| python.parent().map(|d| d.join(n)).filter(|p| p.is_file());
            if let Some(pip) = beside("pip3").or_else(|| beside("pip")).or_else(|| on_path(&["pip3", "pip"])) {
                tools.extend([("pip".into(), pip.clone()), ("pip3".into(), pip)]);
            }
            tools.extend(shells());
            entries.push(AllowEntry {
                images: vec!["python:3*".into(), "python:latest".into()],
                program: python,
                tools,
                runtime: true,
                ..Default::default()
            });
        }
        if let Some(node) = on_path(&["node", "nodejs"]) {
            let mut tools = vec![("node".into(), node.clone()), ("nodejs".into(), node.clone())];
            for t in ["npm", "npx"] {
                if let Some(p) = on_path(&[t]) {
                    tools.push((t.into(), p));
                }
            }
            tools.extend(shells());
            entries.push(AllowEntry {
                images: vec!["node".into()],
                program: node,
                tools,
                runtime: true,
                ..Default::default()
            });
        }
        if let Some(busybox) =
            on_path(&["busybox"]).or_else(|| Some(PathBuf::from("/bin/busybox")).filter(|p| p.exists()))
        {
            entries.push(AllowEntry {
                images: vec!["busybox".into()],
                program: busybox,
                default_args: vec!["sh".into()],
                runtime: true,
                multi_call: true,
                ..Default::default()
            });
        }
        Self { entries }
    }

    /// Adds the entries of a node config file (JSON):
    /// `{"allowlist": [{"images": ["repo", "repo:tag", "repo:3*"], "program": "/path", "prefixArgs": [],
    /// "defaultArgs": [], "tools": {"name": "/path"}, "runtime": false, "multiCall": false,
    /// "workingDir": "/dir", "env": {"NAME": "value"}, "user": "1000:1000"}]}` — the last three what an
    /// image's config (WORKDIR, ENV, USER) would give. Entries from the file come first, so they may also
    /// replace a shipped image's program.
    pub fn extend_from_file(&mut self, path: &Path) -> Result<(), Invalid> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| Invalid::new(&file, e.to_string()))?;
        let config: NodeConfig = serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(&text))
            .map_err(|e| Invalid::new(format!("{file}: {}", e.path()), e.inner().to_string()))?;
        let mut added = Vec::new();
        for (i, e) in config.allowlist.into_iter().enumerate() {
            added.push(e.entry(&|k: &str| format!("{file}: allowlist[{i}].{k}"))?);
        }
        added.append(&mut self.entries);
        self.entries = added;
        Ok(())
    }

    /// The entry of an image, if allowlisted: the best match (an exact tag, then a tag prefix, then
    /// the repository), the earliest entry among equals.
    pub fn find(&self, image: &str) -> Option<&AllowEntry> {
        let mut best: Option<(u8, &AllowEntry)> = None;
        for e in &self.entries {
            let rank = e.images.iter().filter_map(|p| match_rank(p, image)).max();
            if let Some(r) = rank
                && best.is_none_or(|(b, _)| r > b)
            {
                best = Some((r, e));
            }
        }
        best.map(|(_, e)| e)
    }
}

/// A node config file: its allowlist (see [`Allowlist::extend_from_file`]).
#[derive(Default, Deserialize)]
#[serde(default)]
struct NodeConfig {
    allowlist: Vec<FileEntry>,
}

/// An allowlist entry as the file writes it.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct FileEntry {
    images: Vec<String>,
    program: Option<String>,
    prefix_args: Vec<String>,
    default_args: Vec<String>,
    tools: BTreeMap<String, PathBuf>,
    runtime: bool,
    multi_call: bool,
    working_dir: Option<String>,
    env: BTreeMap<String, String>,
    user: Option<String>,
    files: BTreeMap<String, String>,
}

impl FileEntry {
    /// The entry, checked; `field` names a key's path.
    fn entry(self, field: &dyn Fn(&str) -> String) -> Result<AllowEntry, Invalid> {
        let program = self.program.ok_or_else(|| Invalid::new(field("program"), "is required"))?;
        if self.images.is_empty() {
            return Err(Invalid::new(field("images"), "is required"));
        }
        for (at, machine) in &self.files {
            let why = match (at.starts_with('/'), machine.starts_with('/')) {
                (false, _) => "the path in the image must be absolute",
                (true, false) => "must be the machine's file (an absolute path)",
                (true, true) => continue,
            };
            return Err(Invalid::new(field(&format!("files.{at}")), why));
        }
        let user = match self.user {
            Some(u) => Some(parse_user(&u).map_err(|why| Invalid::new(field("user"), why.to_string()))?),
            None => None,
        };
        Ok(AllowEntry {
            images: self.images,
            program: PathBuf::from(program),
            prefix_args: self.prefix_args,
            default_args: self.default_args,
            tools: self.tools.into_iter().collect(),
            runtime: self.runtime,
            multi_call: self.multi_call,
            working_dir: self.working_dir.filter(|d| !d.is_empty()),
            env: self.env.into_iter().collect(),
            user,
            files: self.files.into_iter().map(|(at, m)| (at, PathBuf::from(m))).collect(),
        })
    }
}

fn basename(c: &str) -> &str {
    c.rsplit('/').next().unwrap_or(c)
}

impl AllowEntry {
    /// The machine's program for a command name of this image (`etcdctl`, `python`, a busybox applet),
    /// as an argv prefix.
    pub fn tool(&self, command: &str) -> Option<Vec<String>> {
        let name = basename(command);
        if let Some((_, p)) = self.tools.iter().find(|(n, _)| n == name) {
            return Some(vec![p.display().to_string()]);
        }
        if self.multi_call && !name.is_empty() {
            return Some(vec![self.program.display().to_string(), name.to_string()]);
        }
        None
    }

    /// What the image has to run, for error messages.
    pub fn commands(&self) -> String {
        let mut names: Vec<&str> = self.tools.iter().map(|(n, _)| n.as_str()).collect();
        names.sort();
        names.join(", ")
    }
}

/// The argv a container runs: a program of its allowlist entry, never anything else. Fails for a
/// runtime image whose command names none of its tools.
pub fn argv(entry: &AllowEntry, container: &Container) -> Result<Vec<String>, Invalid> {
    let command = container.command.clone().unwrap_or_default();
    let args = container.args.clone().unwrap_or_default();
    if let Some(first) = command.first()
        && let Some(mut out) = entry.tool(first)
    {
        out.extend(command[1..].iter().cloned());
        out.extend(args);
        return Ok(out);
    }
    if entry.runtime {
        // No command: the image's default program with its default args, which `args` replace (a
        // runtime image's CMD, like `python3`, takes args as its own).
        if let Some(first) = command.first() {
            return Err(Invalid::new(
                "command",
                format!("{first:?} is not in the image (the node maps these of its commands: {})", entry.commands()),
            ));
        }
        let mut out = vec![entry.program.display().to_string()];
        if args.is_empty() {
            out.extend(entry.default_args.iter().cloned());
        } else if entry.multi_call
            && let Some(t) = entry.tool(&args[0])
        {
            // busybox with args: the first names the applet.
            return Ok(t.into_iter().chain(args[1..].iter().cloned()).collect());
        }
        out.extend(args);
        return Ok(out);
    }
    let mut out = vec![entry.program.display().to_string()];
    out.extend(entry.prefix_args.iter().cloned());
    match command.split_first() {
        // The command names the program (any path): keep its arguments.
        Some((_, rest)) => out.extend(rest.iter().cloned()),
        // Like an image's CMD, the default arguments give way to the container's args.
        None if args.is_empty() => out.extend(entry.default_args.iter().cloned()),
        None => {}
    }
    out.extend(args);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn container(mut c: Value) -> Container {
        c["name"] = json!("c");
        serde_json::from_value(c).unwrap()
    }

    #[test]
    fn allowlist_matches_repositories_not_lookalikes() {
        let a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        assert!(a.find("quay.io/coreos/etcd:v3.4.23").is_some());
        assert!(a.find("etcd").is_some());
        assert!(a.find("uc/http-server:1").is_some());
        assert!(a.find("nginx:1.25").is_none());
        assert!(a.find("evil/etcd").is_none());
    }

    #[test]
    fn tag_patterns_rank_above_repositories() {
        let entry = |image: &str, program: &str| AllowEntry {
            images: vec![image.into()],
            program: PathBuf::from(program),
            ..Default::default()
        };
        let a = Allowlist {
            entries: vec![entry("python", "/any"), entry("python:3*", "/three"), entry("python:3.11", "/exact")],
        };
        assert_eq!(a.find("python:3.11").unwrap().program, PathBuf::from("/exact"));
        assert_eq!(a.find("docker.io/library/python:3.12-slim").unwrap().program, PathBuf::from("/three"));
        assert_eq!(a.find("python:2.7").unwrap().program, PathBuf::from("/any"));
        let only3 = Allowlist { entries: vec![entry("python:3*", "/three")] };
        assert!(only3.find("python:2.7").is_none());
        assert!(only3.find("python").is_none(), "no tag is latest, which is not 3*");
    }

    #[test]
    fn argv_always_runs_the_allowlisted_program() {
        let a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        let etcd = a.find("etcd").unwrap();
        let c = json!({"command": ["/usr/local/bin/etcd", "--name", "$(POD_NAME)"], "args": ["--x"]});
        assert_eq!(argv(etcd, &container(c)).unwrap(), vec!["/usr/bin/etcd", "--name", "$(POD_NAME)", "--x"]);
        let sneaky = json!({"command": ["/bin/sh", "-c", "rm -rf /"]});
        assert_eq!(argv(etcd, &container(sneaky)).unwrap()[0], "/usr/bin/etcd", "a command never replaces the program");
        let zk = a.find("zookeeper:3.8").unwrap();
        assert_eq!(argv(zk, &container(json!({}))).unwrap()[1..], ["start-foreground"]);
        assert_eq!(
            argv(zk, &container(json!({"args": ["start-foreground", "/cfg"]}))).unwrap()[1..],
            ["start-foreground", "/cfg"],
            "args replace the defaults"
        );
        let http = a.find("uc/http-server").unwrap();
        assert_eq!(
            argv(http, &container(json!({"args": ["--port", "8080"]}))).unwrap(),
            vec!["/bin/uc", "http-server", "--port", "8080"]
        );
        assert_eq!(
            argv(http, &container(json!({"command": ["serve", "--text", "x"]}))).unwrap(),
            vec!["/bin/uc", "http-server", "--text", "x"]
        );
    }

    #[test]
    fn runtime_images_run_their_tools_only() {
        let python = AllowEntry {
            images: vec!["python:3*".into()],
            program: PathBuf::from("/usr/bin/python3"),
            tools: vec![("python".into(), PathBuf::from("/usr/bin/python3")), ("sh".into(), PathBuf::from("/bin/sh"))],
            runtime: true,
            ..Default::default()
        };
        let run = |c: Value| argv(&python, &container(c));
        assert_eq!(
            run(json!({"command": ["python", "/app/server.py"]})).unwrap(),
            vec!["/usr/bin/python3", "/app/server.py"]
        );
        assert_eq!(run(json!({"command": ["/bin/sh", "-c", "echo"]})).unwrap(), vec!["/bin/sh", "-c", "echo"]);
        assert_eq!(run(json!({"args": ["-m", "http.server"]})).unwrap(), vec!["/usr/bin/python3", "-m", "http.server"]);
        let err = run(json!({"command": ["gunicorn", "app"]})).unwrap_err().to_string();
        assert!(err.contains("\"gunicorn\" is not in the image") && err.contains("python, sh"), "{err}");
        let busybox = AllowEntry {
            images: vec!["busybox".into()],
            program: PathBuf::from("/bin/busybox"),
            default_args: vec!["sh".into()],
            runtime: true,
            multi_call: true,
            ..Default::default()
        };
        let run = |c: Value| argv(&busybox, &container(c)).unwrap();
        assert_eq!(run(json!({"command": ["sleep", "5"]})), vec!["/bin/busybox", "sleep", "5"]);
        assert_eq!(run(json!({})), vec!["/bin/busybox", "sh"]);
        assert_eq!(run(json!({"args": ["echo", "hi"]})), vec!["/bin/busybox", "echo", "hi"]);
    }

    /// A node.json with `text` in a directory of its own (removed by the test).
    fn node_config(name: &str, text: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("uc-node-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("node.json");
        std::fs::write(&file, text).unwrap();
        (dir, file)
    }

    #[test]
    fn tagged_entries_and_tools() {
        let (dir, file) = node_config(
            "tools",
            r#"{"allowlist": [{"images": ["quay.io/coreos/etcd:v3.5.1"], "program": "/opt/etcd35/etcd",
                "tools": {"etcdctl": "/opt/etcd35/etcdctl"}}]}"#,
        );
        let mut a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        a.extend_from_file(&file).unwrap();
        let v35 = a.find("quay.io/coreos/etcd:v3.5.1").unwrap();
        let v34 = a.find("quay.io/coreos/etcd:v3.4.23").unwrap();
        assert_eq!(v35.program, PathBuf::from("/opt/etcd35/etcd"), "the tag's own program");
        assert_eq!(v34.program, PathBuf::from("/usr/bin/etcd"), "other tags: the repository's");
        let restore = json!({"command": ["/usr/local/bin/etcdctl", "snapshot", "restore"], "args": ["/b/s.db"]});
        assert_eq!(
            argv(v35, &container(restore.clone())).unwrap(),
            vec!["/opt/etcd35/etcdctl", "snapshot", "restore", "/b/s.db"]
        );
        assert_eq!(argv(v34, &container(restore.clone())).unwrap()[0], "/usr/bin/etcdctl");
        assert_eq!(argv(v34, &container(json!({"command": ["etcd", "--x"]}))).unwrap(), vec!["/usr/bin/etcd", "--x"]);
        std::fs::write(&file, r#"{"allowlist": [{"images": ["x"], "program": "/p", "tools": {"t": 1}}]}"#).unwrap();
        assert!(a.extend_from_file(&file).unwrap_err().to_string().contains("allowlist[0].tools.t: invalid type"));
        std::fs::write(&file, r#"{"allowlist": [{"images": ["x"], "program": "/p", "runtime": "yes"}]}"#).unwrap();
        assert!(
            a.extend_from_file(&file)
                .unwrap_err()
                .to_string()
                .contains("allowlist[0].runtime: invalid type: string \"yes\", expected a boolean")
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn node_config_adds_entries() {
        let (dir, file) = node_config(
            "config",
            r#"{"allowlist": [{"images": ["my/server"], "program": "/opt/server", "defaultArgs": ["--serve"]},
                {"images": ["ruby:3*"], "program": "/usr/bin/ruby", "runtime": true, "tools": {"ruby": "/usr/bin/ruby"}}]}"#,
        );
        let mut a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        a.extend_from_file(&file).unwrap();
        assert_eq!(
            argv(a.find("my/server:2").unwrap(), &container(json!({}))).unwrap(),
            vec!["/opt/server", "--serve"]
        );
        assert!(a.find("ruby:3.3").unwrap().runtime);
        assert!(a.find("etcd").is_some(), "shipped entries stay");
        std::fs::write(&file, r#"{"allowlist": [{"images": ["x"]}]}"#).unwrap();
        assert!(a.extend_from_file(&file).unwrap_err().to_string().contains("program: is required"));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn an_images_config_its_workdir_environment_and_user() {
        // Metacontroller's hook image: `WORKDIR /node`, `CMD node /node/server.js`.
        let (dir, file) = node_config(
            "image-config",
            r#"{"allowlist": [{"images": ["metacontroller/nodejs-server"], "program": "/usr/bin/node",
                "defaultArgs": ["/srv/nodejs-server/server.js"], "workingDir": "/node",
                "env": {"NODE_ENV": "production"}, "user": "1000:2000",
                "files": {"/node/server.js": "/srv/metacontroller/server.js"}}]}"#,
        );
        let mut a = Allowlist::shipped(PathBuf::from("/bin/uc"));
        a.extend_from_file(&file).unwrap();
        let e = a.find("metacontroller/nodejs-server:0.1").unwrap();
        assert_eq!(e.working_dir.as_deref(), Some("/node"));
        assert_eq!(e.env, [("NODE_ENV".to_string(), "production".to_string())]);
        assert_eq!(e.user, Some((1000, Some(2000))));
        assert_eq!(e.files, [("/node/server.js".to_string(), PathBuf::from("/srv/metacontroller/server.js"))]);
        assert_eq!(parse_user("0"), Ok((0, None)));
        assert!(parse_user("node").unwrap_err().to_string().contains("uid or uid:gid"));
        std::fs::write(&file, r#"{"allowlist": [{"images": ["x"], "program": "/p", "user": "www"}]}"#).unwrap();
        assert!(a.extend_from_file(&file).unwrap_err().to_string().contains("allowlist[0].user"));
        std::fs::write(&file, r#"{"allowlist": [{"images": ["x"], "program": "/p", "env": {"A": 1}}]}"#).unwrap();
        assert!(
            a.extend_from_file(&file)
                .unwrap_err()
                .to_string()
                .contains("allowlist[0].env.A: invalid type: integer `1`, expected a string")
        );
        let files = |f: &str| format!(r#"{{"allowlist": [{{"images": ["x"], "program": "/p", "files": {f}}}]}}"#);
        std::fs::write(&file, files(r#"{"server.js": "/srv/server.js"}"#)).unwrap();
        let why = a.extend_from_file(&file).unwrap_err().to_string();
        assert!(why.contains("allowlist[0].files.server.js: the path in the image must be absolute"), "{why}");
        std::fs::write(&file, files(r#"{"/node/server.js": "server.js"}"#)).unwrap();
        let why = a.extend_from_file(&file).unwrap_err().to_string();
        assert!(why.contains("files./node/server.js: must be the machine's file"), "{why}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
