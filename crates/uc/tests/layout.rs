//! The shape of the source tree, as the contributor guide asks for it: no file under `crates/*/src`
//! over 800 lines, and no import circle between the files (modules) of one crate — a module that uses
//! another must not be used by it, directly or through others.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const MAX_LINES: usize = 800;

type Module = Vec<String>;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable source directory").flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file is: `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`, `lib.rs`/`main.rs` the root.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).expect("under src").with_extension("");
    let mut parts: Module = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code of a file without comments and without its tests (which may use anything).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    text.lines().map(|l| l.split("//").next().unwrap_or_default()).collect::<Vec<_>>().join("\n")
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    Colons,
    Open,
    Close,
    Comma,
    Other,
}

fn tokens(code: &str) -> Vec<Token> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Ident(chars[start..i].iter().collect()));
            continue;
        }
        match c {
            ':' if chars.get(i + 1) == Some(&':') => {
                out.push(Token::Colons);
                i += 1;
            }
            '{' => out.push(Token::Open),
            '}' => out.push(Token::Close),
            ',' => out.push(Token::Comma),
            c if c.is_whitespace() => {}
            _ => out.push(Token::Other),
        }
        i += 1;
    }
    out
}

/// Every path written in the code (`a::b::c`, with `use a::{b, c::d}` groups expanded).
fn paths(tokens: &[Token]) -> Vec<Module> {
    fn path_at(t: &[Token], mut i: usize, prefix: Module, out: &mut Vec<Module>) -> usize {
        let mut path = prefix;
        loop {
            match t.get(i) {
                Some(Token::Ident(id)) => {
                    path.push(id.clone());
                    i += 1;
                }
                Some(Token::Open) => {
                    i += 1;
                    loop {
                        match t.get(i) {
                            Some(Token::Close) | None => return i + 1,
                            Some(Token::Comma) => i += 1,
                            Some(Token::Ident(_)) => i = path_at(t, i, path.clone(), out),
                            _ => i += 1,
                        }
                    }
                }
                _ => {
                    out.push(path);
                    return i;
                }
            }
            if t.get(i) == Some(&Token::Colons) {
                i += 1;
            } else {
                out.push(path);
                return i;
            }
        }
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts_path = matches!(tokens.get(i), Some(Token::Ident(_)))
            && tokens.get(i + 1) == Some(&Token::Colons)
            && (i == 0 || tokens[i - 1] != Token::Colons);
        i = if starts_path { path_at(tokens, i, Vec::new(), &mut out) } else { i + 1 };
    }
    out
}

/// The child modules a file declares (`mod x;`).
fn children(tokens: &[Token]) -> BTreeSet<String> {
    tokens
        .windows(3)
        .filter_map(|w| match w {
            [Token::Ident(m), Token::Ident(name), Token::Other] if m == "mod" => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// The module a path in `module` refers to (the longest module prefix), if it is one of this crate's.
fn resolve(module: &Module, path: &Module, kids: &BTreeSet<String>, modules: &BTreeSet<Module>) -> Option<Module> {
    let mut full: Module = match path.first().map(String::as_str) {
        Some("crate") => path[1..].to_vec(),
        Some("super" | "self") => {
            let mut base = module.clone();
            let mut rest = path.as_slice();
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop();
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
            base.extend(rest.iter().cloned());
            base
        }
        Some(first) if kids.contains(first) => module.iter().chain(path).cloned().collect(),
        _ => return None,
    };
    while !full.is_empty() {
        if modules.contains(&full) {
            return Some(full);
        }
        full.pop();
    }
    Some(full)
}

/// Module graph of one crate: which modules each one uses.
fn graph(src: &Path) -> BTreeMap<Module, BTreeSet<Module>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let texts: BTreeMap<Module, String> = files
        .iter()
        .map(|f| (module_of(src, f), code(&std::fs::read_to_string(f).expect("readable source"))))
        .collect();
    let modules: BTreeSet<Module> = texts.keys().cloned().collect();
    texts
        .iter()
        .map(|(m, text)| {
            let t = tokens(text);
            let kids = children(&t);
            let uses =
                paths(&t).iter().filter_map(|p| resolve(m, p, &kids, &modules)).filter(|target| target != m).collect();
            (m.clone(), uses)
        })
        .collect()
}

/// The cycles of a graph: its strongly connected components of more than one module.
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<BTreeSet<Module>> {
    let reaches = |from: &Module| -> BTreeSet<Module> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(m) = todo.pop() {
            for next in graph.get(&m).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    todo.push(next.clone());
                }
            }
        }
        seen
    };
    let reach: BTreeMap<&Module, BTreeSet<Module>> = graph.keys().map(|m| (m, reaches(m))).collect();
    let mut out: Vec<BTreeSet<Module>> = Vec::new();
    for (m, r) in &reach {
        let component: BTreeSet<Module> =
            r.iter().filter(|o| reach.get(o).is_some_and(|back| back.contains(*m))).cloned().collect();
        if component.len() > 1 && !out.contains(&component) {
            out.push(component);
        }
    }
    out
}

fn crates() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .expect("crates/")
        .flatten()
        .map(|e| e.path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 6, "found the crates: {dirs:?}");
    dirs
}

#[test]
fn no_source_file_is_over_800_lines() {
    let mut long = Vec::new();
    for src in crates() {
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for f in files {
            let lines = std::fs::read_to_string(&f).expect("readable").lines().count();
            if lines > MAX_LINES {
                long.push(format!("{} ({lines} lines)", f.display()));
            }
        }
    }
    assert!(long.is_empty(), "split these files by concern: {long:#?}");
}

#[test]
fn no_import_circle_between_the_files_of_a_crate() {
    let mut found = Vec::new();
    for src in crates() {
        for c in cycles(&graph(&src)) {
            let names: Vec<String> = c.iter().map(|m| if m.is_empty() { "lib".into() } else { m.join("::") }).collect();
            found.push(format!("{}: {}", src.display(), names.join(" <-> ")));
        }
    }
    assert!(found.is_empty(), "import circles: {found:#?}");
}

#[test]
fn the_circle_check_sees_circles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path();
    std::fs::create_dir(src.join("hooks")).expect("mkdir");
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\nmod hooks;\nmod c;\n").expect("write");
    std::fs::write(src.join("a.rs"), "use crate::{b::{self, Thing}, c};\n// use crate::hooks::x;\n").expect("write");
    std::fs::write(src.join("b.rs"), "fn f() { crate::a::g(); }\n#[cfg(test)]\nmod tests { use crate::c::x; }\n")
        .expect("write");
    std::fs::write(src.join("c.rs"), "#[cfg(test)]\nmod tests { use crate::a::*; }\n").expect("write");
    std::fs::write(src.join("hooks/mod.rs"), "mod js;\npub use js::Js;\n").expect("write");
    std::fs::write(src.join("hooks/js.rs"), "use super::Kind;\n").expect("write");
    let found: Vec<Vec<String>> =
        cycles(&graph(src)).iter().map(|c| c.iter().map(|m| m.join("::")).collect()).collect();
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found.contains(&vec!["a".to_string(), "b".to_string()]), "{found:?}");
    assert!(found.contains(&vec!["hooks".to_string(), "hooks::js".to_string()]), "{found:?}");
}
