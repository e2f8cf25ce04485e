//! A chart from a Helm repository, as `operator-sdk create api --helm-chart REPO/NAME` (a repository
//! `helm repo add` configured) or `--helm-chart NAME --helm-chart-repo URL` fetches it: the repository's
//! `index.yaml`, the chart's entry at the version asked for (or the newest release), its archive.

use std::path::PathBuf;
use std::time::Duration;

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use serde::Deserialize;

/// Helm's repositories file, as far as uc reads it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Repositories {
    repositories: Vec<Repository>,
}

/// A configured repository.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Repository {
    name: String,
    url: String,
}

/// A repository's `index.yaml`: each chart's versions.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Index {
    pub entries: BTreeMap<String, Vec<ChartVersion>>,
}

/// One version of a chart and where its archive is.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct ChartVersion {
    pub version: String,
    pub urls: Vec<String>,
}

/// Helm's repositories file: `$HELM_REPOSITORY_CONFIG`, else `$XDG_CONFIG_HOME/helm/repositories.yaml`,
/// else `~/.config/helm/repositories.yaml`.
fn repositories_file() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("HELM_REPOSITORY_CONFIG") {
        return Some(PathBuf::from(p));
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("helm/repositories.yaml"))
}

/// The URL of a configured repository.
fn repository_url(name: &str) -> anyhow::Result<String> {
    let file = repositories_file().context("no Helm repositories file (HOME unset)")?;
    let text = std::fs::read_to_string(&file)
        .with_context(|| format!("repository {name:?}: reading {} (add it with `helm repo add`)", file.display()))?;
    let config: Repositories = serde_yaml_ng::from_str(&text).with_context(|| format!("{}", file.display()))?;
    config
        .repositories
        .into_iter()
        .find(|r| r.name == name)
        .map(|r| r.url)
        .with_context(|| format!("no repository named {name:?} in {}", file.display()))
}

/// The archive URL of `chart` at `version` (the newest without a pre-release when none is asked for)
/// in a repository index; relative URLs are resolved against the repository.
pub fn archive_url(index: &Index, repo: &str, chart: &str, version: Option<&str>) -> anyhow::Result<String> {
    let entries = index.entries.get(chart).with_context(|| format!("chart {chart:?} not found in {repo}"))?;
    let parsed = |e: &ChartVersion| uc_helm::sprig::semver::parse(&e.version).ok();
    let entry = match version {
        Some(v) => entries.iter().find(|e| e.version == v || e.version == format!("v{v}")),
        None => entries
            .iter()
            .filter(|e| parsed(e).is_some_and(|p| p.pre.is_empty()))
            .max_by(|a, b| uc_helm::sprig::semver::compare(&parsed(a).expect("parsed"), &parsed(b).expect("parsed"))),
    }
    .with_context(|| format!("chart {chart:?} {} not found in {repo}", version.unwrap_or("(a release)")))?;
    let url = entry.urls.first().with_context(|| format!("chart {chart:?}: its entry has no URL"))?;
    Ok(if url.contains("://") { url.to_string() } else { format!("{}/{url}", repo.trim_end_matches('/')) })
}

async fn get(url: &str) -> anyhow::Result<Vec<u8>> {
    let resolver = uc_engine::names::Resolver::system();
    let body = uc_engine::hooks::webhook::fetch(url, resolver, None, Duration::from_secs(60))
        .await
        .map_err(|e| anyhow::anyhow!("fetching {url}: {e}"))?;
    Ok(body.to_vec())
}

/// The archive of `spec` (`REPO/NAME`, or `NAME` with `repo_url`) at `version`.
pub async fn fetch(spec: &str, repo_url: Option<&str>, version: Option<&str>) -> anyhow::Result<Vec<u8>> {
    let (repo, chart) = match (repo_url, spec.split_once('/')) {
        (Some(url), _) => (url.to_string(), spec.to_string()),
        (None, Some((repo, chart))) => (repository_url(repo)?, chart.to_string()),
        (None, None) => {
            bail!("--helm-chart {spec:?}: not a directory, an archive or REPO/NAME (or give --helm-chart-repo)")
        }
    };
    let text = get(&format!("{}/index.yaml", repo.trim_end_matches('/'))).await?;
    let index: Index = serde_yaml_ng::from_slice(&text).with_context(|| format!("{repo}/index.yaml"))?;
    get(&archive_url(&index, &repo, &chart, version)?).await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_version_asked_for_or_the_newest_release() {
        let index: Index = serde_json::from_value(json!({"entries": {"web": [
            {"version": "1.2.0", "urls": ["web-1.2.0.tgz"]},
            {"version": "1.10.0", "urls": ["https://cdn.example/web-1.10.0.tgz"]},
            {"version": "2.0.0-rc.1", "urls": ["web-2.0.0-rc.1.tgz"]}]}}))
        .unwrap();
        let repo = "http://127.0.0.1:9/charts/";
        assert_eq!(archive_url(&index, repo, "web", None).unwrap(), "https://cdn.example/web-1.10.0.tgz");
        assert_eq!(archive_url(&index, repo, "web", Some("1.2.0")).unwrap(), "http://127.0.0.1:9/charts/web-1.2.0.tgz");
        assert!(archive_url(&index, repo, "web", Some("3.0.0")).unwrap_err().to_string().contains("not found"));
        assert!(archive_url(&index, repo, "db", None).unwrap_err().to_string().contains("chart \"db\" not found"));
    }
}
