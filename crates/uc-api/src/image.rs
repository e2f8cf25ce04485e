//! Container image references as a kubelet compares them: Docker Hub's implicit registry and
//! `library/` namespace, and `latest` for a reference without a tag.

/// The repository part of an image reference (no tag, no digest).
pub fn repository(image: &str) -> &str {
    let no_digest = image.split('@').next().unwrap_or(image);
    match no_digest.rfind(':') {
        Some(i) if !no_digest[i..].contains('/') => &no_digest[..i],
        _ => no_digest,
    }
}

/// An image reference as `(repository, tag)`, with Docker Hub's implicit parts removed
/// (`docker.io/library/python:3.11` is `python:3.11`) and `latest` for no tag.
pub fn normalize(image: &str) -> (String, String) {
    let no_digest = image.split('@').next().unwrap_or(image);
    let repo = repository(no_digest);
    let tag = no_digest.get(repo.len() + 1..).filter(|t| !t.is_empty()).unwrap_or("latest");
    let mut repo = repo;
    for prefix in ["docker.io/", "index.docker.io/", "registry-1.docker.io/"] {
        repo = repo.strip_prefix(prefix).unwrap_or(repo);
    }
    let repo = repo.strip_prefix("library/").unwrap_or(repo);
    (repo.to_string(), tag.to_string())
}

/// Whether two references name the same image, one perhaps as a kubelet reports what a container
/// runs (`docker.io/library/busybox:1` for `busybox:1`).
pub fn same(a: &str, b: &str) -> bool {
    normalize(a) == normalize(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_lose_docker_hubs_implicit_parts() {
        assert_eq!(repository("localhost:5000/etcd:3"), "localhost:5000/etcd");
        assert_eq!(repository("etcd@sha256:abc"), "etcd");
        assert_eq!(normalize("docker.io/library/python:3.11-slim"), ("python".into(), "3.11-slim".into()));
        assert_eq!(normalize("python"), ("python".into(), "latest".into()));
    }

    #[test]
    fn an_image_is_the_same_as_a_kubelet_reports_it() {
        assert!(same("busybox:1", "docker.io/library/busybox:1"));
        assert!(same("pravega/zookeeper:0.2.16", "docker.io/pravega/zookeeper:0.2.16"));
        assert!(same("quay.io/coreos/etcd:v3.5.9", "quay.io/coreos/etcd:v3.5.9"));
        assert!(!same("pravega/zookeeper:0.2.15", "pravega/zookeeper:0.2.16"));
        assert!(!same("quay.io/coreos/etcd:v3.5.9", "docker.io/coreos/etcd:v3.5.9"), "another registry");
    }
}
