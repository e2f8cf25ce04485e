//! A chart as Helm's loader reads a chart directory: `Chart.yaml`, `values.yaml`, `templates/`, the
//! subcharts under `charts/`, and every other file (for `.Files`, `crds/` among them).

use std::path::Path;

use crate::error::HelmError;
use serde_json::Value as Json;

/// A file of a chart, by its path inside the chart (`templates/deployment.yaml`).
#[derive(Clone, Debug, PartialEq)]
pub struct File {
    pub name: String,
    pub data: Vec<u8>,
}

/// A loaded chart.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    /// `Chart.yaml`, as JSON.
    pub metadata: Json,
    /// `values.yaml`, as JSON (an empty object when there is none).
    pub values: Json,
    pub templates: Vec<File>,
    /// Every other file but `Chart.yaml`, `values.yaml` and the subcharts'.
    pub files: Vec<File>,
    /// `values.schema.json`, when the chart has one.
    pub schema: Option<crate::schema::Schema>,
    pub dependencies: Vec<Chart>,
}

/// Why a chart cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ChartError {
    #[error("reading {path}: {source}")]
    Read { path: String, source: std::io::Error },
    /// In Helm's words (`validation: …`, `Chart.yaml file is missing`, `error unpacking subchart …`).
    #[error("{message}")]
    Invalid { path: String, message: String },
}

impl Chart {
    /// Helm's `ValidateAgainstSchema`: the failures of `values` against the chart's schema and of each
    /// subchart's part against its own, listed under the chart's name; `None` when there are none.
    pub fn values_failures(&self, values: &Json) -> Option<String> {
        let mut out = String::new();
        let errors = self.schema.as_ref().map(|s| crate::schema::failures(s, values)).unwrap_or_default();
        if !errors.is_empty() {
            out.push_str(&format!("{}:\n", self.name()));
            for e in errors {
                out.push_str(&format!("- {e}\n"));
            }
        }
        for sub in &self.dependencies {
            let sub_values = values.get(sub.name()).cloned().unwrap_or(Json::Object(Default::default()));
            if let Some(e) = sub.values_failures(&sub_values) {
                out.push_str(&e);
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The chart's name (`Chart.yaml`'s `name`).
    pub fn name(&self) -> &str {
        self.metadata.get("name").and_then(Json::as_str).unwrap_or("")
    }

    /// Whether it is a library chart (only its `_` templates are used).
    pub fn is_library(&self) -> bool {
        self.metadata.get("type").and_then(Json::as_str) == Some("library")
    }

    /// The CRDs of `crds/`, in file order.
    pub fn crds(&self) -> impl Iterator<Item = &File> {
        self.files.iter().filter(|f| f.name.starts_with("crds/"))
    }

    /// Loads the chart in `dir`.
    pub fn load_dir(dir: &Path) -> Result<Chart, ChartError> {
        Chart::from_files(&dir.display().to_string(), dir_files(dir)?)
    }

    /// The chart in `dir` packaged as `helm package` does: a gzipped tar of one directory named after the
    /// chart, the files `.helmignore` keeps.
    pub fn package_dir(dir: &Path) -> Result<Vec<u8>, ChartError> {
        let files = dir_files(dir)?;
        let name = Chart::from_files(&dir.display().to_string(), files.clone())?.name().to_string();
        let write = |e: std::io::Error| ChartError::Read { path: dir.display().to_string(), source: e };
        let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default()));
        for f in &files {
            let mut header = tar::Header::new_gnu();
            header.set_size(f.data.len() as u64);
            header.set_mode(0o644);
            header.set_cksum();
            tar.append_data(&mut header, format!("{name}/{}", f.name), f.data.as_slice()).map_err(write)?;
        }
        tar.into_inner().and_then(|gz| gz.finish()).map_err(write)
    }

    /// A packaged chart (`.tgz`: a gzipped tar of one directory named after the chart).
    pub fn from_archive(origin: &str, data: &[u8]) -> Result<Chart, ChartError> {
        Chart::from_files(origin, archive_files(origin, data)?)
    }

    /// A chart from its files (paths relative to the chart's directory, `/`-separated).
    pub fn from_files(origin: &str, files: Vec<File>) -> Result<Chart, ChartError> {
        let invalid = |message: String| ChartError::Invalid { path: origin.to_string(), message };
        let mut chart = Chart { values: Json::Object(Default::default()), ..Default::default() };
        let mut subcharts: Vec<(String, Vec<File>)> = Vec::new();
        let mut has_chart_yaml = false;
        let mut requirements = None;
        for f in files {
            if let Some(rest) = f.name.strip_prefix("charts/") {
                let Some((sub, inner)) = rest.split_once('/') else {
                    if rest.ends_with(".tgz") {
                        subcharts.push((rest.to_string(), vec![f]));
                    }
                    continue;
                };
                let inner = File { name: inner.to_string(), data: f.data };
                match subcharts.iter_mut().find(|(n, _)| n == sub) {
                    Some((_, fs)) => fs.push(inner),
                    None => subcharts.push((sub.to_string(), vec![inner])),
                }
                continue;
            }
            match f.name.as_str() {
                "Chart.yaml" => {
                    has_chart_yaml = true;
                    chart.metadata = yaml_doc(&f.data).map_err(|e| invalid(format!("cannot load Chart.yaml: {e}")))?;
                }
                "values.yaml" => {
                    let v = yaml_doc(&f.data).map_err(|e| invalid(format!("cannot load values.yaml: {e}")))?;
                    chart.values = if v.is_null() { Json::Object(Default::default()) } else { v };
                }
                "values.schema.json" => {
                    let schema = serde_json::from_slice(&f.data)
                        .map_err(|e| invalid(format!("cannot load values.schema.json: {e}")))?;
                    chart.schema = Some(schema);
                }
                // A v1 chart's dependencies (Helm reads them into the metadata, as a v2 chart lists them).
                "requirements.yaml" => {
                    let r = yaml_doc(&f.data).map_err(|e| invalid(format!("cannot load requirements.yaml: {e}")))?;
                    requirements = r.get("dependencies").cloned();
                    chart.files.push(f);
                }
                name if name.starts_with("templates/") => chart.templates.push(f),
                _ => chart.files.push(f),
            }
        }
        if let (Some(deps), Json::Object(m)) = (requirements, &mut chart.metadata)
            && m.get("apiVersion").and_then(Json::as_str) == Some("v1")
        {
            m.insert("dependencies".into(), deps);
        }
        if !has_chart_yaml {
            return Err(invalid("Chart.yaml file is missing".into()));
        }
        if chart.name().is_empty() {
            return Err(invalid("validation: chart.metadata.name is required".into()));
        }
        if let Some(t) = chart.metadata.get("type").and_then(Json::as_str)
            && !matches!(t, "application" | "library" | "")
        {
            return Err(invalid("validation: chart.metadata.type must be application or library".into()));
        }
        for (sub, files) in subcharts {
            let at = format!("{origin}/charts/{sub}");
            let loaded = if sub.ends_with(".tgz") && files.len() == 1 && files[0].name.ends_with(".tgz") {
                Chart::from_archive(&at, &files[0].data)
            } else {
                Chart::from_files(&at, files)
            };
            let loaded =
                loaded.map_err(|e| invalid(format!("error unpacking subchart {sub} in {}: {e}", chart.name())))?;
            chart.dependencies.push(loaded);
        }
        Ok(chart)
    }
}

/// The files of a packaged chart (`.tgz`), paths relative to its one directory, sorted.
pub fn archive_files(origin: &str, data: &[u8]) -> Result<Vec<File>, ChartError> {
    use std::io::Read as _;
    let read = |e: std::io::Error| ChartError::Read { path: origin.to_string(), source: e };
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(data));
    let mut files = Vec::new();
    for entry in archive.entries().map_err(read)? {
        let mut entry = entry.map_err(read)?;
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let path = entry.path().map_err(read)?.to_string_lossy().replace('\\', "/");
        let name = path.split_once('/').map(|(_, r)| r.to_string()).unwrap_or(path);
        let mut data = Vec::new();
        entry.read_to_end(&mut data).map_err(read)?;
        files.push(File { name, data });
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// A YAML document as JSON (numbers as written: integers stay integers here; templates see floats);
/// an error in sigs.k8s.io/yaml's words.
pub fn yaml_doc(data: &[u8]) -> Result<Json, HelmError> {
    let text = String::from_utf8_lossy(data);
    if text.trim().is_empty() {
        return Ok(Json::Null);
    }
    serde_yaml_ng::from_str::<Json>(&text)
        .map_err(|e| HelmError::from(format!("error converting YAML to JSON: {}", go_yaml_error(&e.to_string()))))
}

/// A libyaml error as go-yaml v2 words it: `yaml: line N: problem`, the line the scanner stopped at, or
/// for the parser's errors (a structure that does not hold) the line before.
pub fn go_yaml_error(message: &str) -> String {
    let Some((problem, rest)) = message.split_once(" at line ") else { return format!("yaml: {message}") };
    let line: usize = rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let parser_error = problem.starts_with("did not find expected");
    let line = if parser_error { line.saturating_sub(1) } else { line };
    format!("yaml: line {line}: {problem}")
}

/// A chart directory's files, as Helm's loader reads them (`.helmignore` applied), sorted.
fn dir_files(dir: &Path) -> Result<Vec<File>, ChartError> {
    let ignore_file = dir.join(".helmignore");
    let text = std::fs::read_to_string(&ignore_file).unwrap_or_default();
    let rules = crate::ignore::Rules::parse(&text)
        .map_err(|e| ChartError::Invalid { path: ignore_file.display().to_string(), message: e.0 })?;
    let mut all = Vec::new();
    walk(dir, dir, &rules, &mut all)?;
    all.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(all)
}

/// The files under `dir` that `.helmignore`'s rules keep (an ignored directory's contents all go).
fn walk(root: &Path, dir: &Path, rules: &crate::ignore::Rules, out: &mut Vec<File>) -> Result<(), ChartError> {
    let read = |p: &Path, e: std::io::Error| ChartError::Read { path: p.display().to_string(), source: e };
    for entry in std::fs::read_dir(dir).map_err(|e| read(dir, e))? {
        let entry = entry.map_err(|e| read(dir, e))?;
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap_or(&path);
        let name = rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/");
        let is_dir = path.is_dir();
        if rules.ignores(&name, is_dir) {
            continue;
        }
        if is_dir {
            walk(root, &path, rules, out)?;
        } else {
            let data = std::fs::read(&path).map_err(|e| read(&path, e))?;
            out.push(File { name, data });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, data: &str) -> File {
        File { name: name.into(), data: data.as_bytes().to_vec() }
    }

    #[test]
    fn files_are_sorted_into_the_charts_parts() {
        let chart = Chart::from_files(
            "c",
            vec![
                file("Chart.yaml", "apiVersion: v2\nname: c\nversion: 0.1.0\n"),
                file("values.yaml", "a: 1\n"),
                file("templates/x.yaml", "x"),
                file("crds/crd.yaml", "kind: CustomResourceDefinition"),
                file("README.md", "hi"),
                file("charts/sub/Chart.yaml", "name: sub\nversion: 1.0.0\n"),
                file("charts/sub/templates/y.yaml", "y"),
            ],
        )
        .unwrap();
        assert_eq!(chart.name(), "c");
        assert_eq!(chart.values, serde_json::json!({"a": 1}));
        assert_eq!(chart.templates.len(), 1);
        assert_eq!(chart.crds().count(), 1);
        assert_eq!(chart.files.len(), 2);
        assert_eq!(chart.dependencies[0].name(), "sub");
        assert_eq!(chart.dependencies[0].templates[0].name, "templates/y.yaml");
    }

    #[test]
    fn a_packaged_chart_reads_back_as_its_directory() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/helm-create/nginx");
        let tgz = Chart::package_dir(&dir).unwrap();
        let (a, b) = (Chart::load_dir(&dir).unwrap(), Chart::from_archive("nginx.tgz", &tgz).unwrap());
        assert_eq!((a.templates, a.files, a.values, a.metadata), (b.templates, b.files, b.values, b.metadata));
        assert!(archive_files("x", &tgz).unwrap().iter().all(|f| !f.name.starts_with("nginx/")), "one directory");
    }

    #[test]
    fn a_chart_without_its_metadata_is_refused() {
        let e = Chart::from_files("c", vec![file("values.yaml", "")]).unwrap_err();
        assert!(e.to_string().contains("Chart.yaml file is missing"), "{e}");
        let e = Chart::from_files("c", vec![file("Chart.yaml", "name: c\ntype: bad\n")]).unwrap_err();
        assert!(e.to_string().contains("chart.metadata.type must be application or library"), "{e}");
    }
}
