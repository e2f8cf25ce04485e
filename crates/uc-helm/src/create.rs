//! `helm create NAME`: the chart Helm 3.17.3 makes (its output for `nginx`, kept in
//! `testdata/helm-create/nginx` and rendered against `helm template` by the tests) with the chart's name
//! where `helm create` puts it — the chart's `name`, the values file's title and the names of its
//! templates (`"<name>.fullname"`). The Operator SDK's `create api --plugins helm` starts from it.

const FILES: [(&str, &str); 10] = [
    (".helmignore", include_str!("../testdata/helm-create/nginx/.helmignore")),
    ("Chart.yaml", include_str!("../testdata/helm-create/nginx/Chart.yaml")),
    ("values.yaml", include_str!("../testdata/helm-create/nginx/values.yaml")),
    ("templates/NOTES.txt", include_str!("../testdata/helm-create/nginx/templates/NOTES.txt")),
    ("templates/_helpers.tpl", include_str!("../testdata/helm-create/nginx/templates/_helpers.tpl")),
    ("templates/deployment.yaml", include_str!("../testdata/helm-create/nginx/templates/deployment.yaml")),
    ("templates/hpa.yaml", include_str!("../testdata/helm-create/nginx/templates/hpa.yaml")),
    ("templates/ingress.yaml", include_str!("../testdata/helm-create/nginx/templates/ingress.yaml")),
    ("templates/service.yaml", include_str!("../testdata/helm-create/nginx/templates/service.yaml")),
    ("templates/serviceaccount.yaml", include_str!("../testdata/helm-create/nginx/templates/serviceaccount.yaml")),
];

const TEST_CONNECTION: (&str, &str) = (
    "templates/tests/test-connection.yaml",
    include_str!("../testdata/helm-create/nginx/templates/tests/test-connection.yaml"),
);

/// The chart's files (path in the chart, content).
pub fn files(name: &str) -> Vec<(String, String)> {
    FILES
        .iter()
        .chain(std::iter::once(&TEST_CONNECTION))
        .map(|(path, text)| {
            let text = text
                .replace("\"nginx.", &format!("\"{name}."))
                .replace("\nname: nginx\n", &format!("\nname: {name}\n"))
                .replace("# Default values for nginx.", &format!("# Default values for {name}."));
            (path.to_string(), text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_helm_create_makes() {
        let files = files("web-app");
        let get = |p: &str| files.iter().find(|(q, _)| q == p).map(|(_, t)| t.as_str()).unwrap();
        assert!(get("Chart.yaml").contains("\nname: web-app\n"));
        assert!(get("values.yaml").starts_with("# Default values for web-app.\n"));
        assert!(get("values.yaml").contains("  repository: nginx\n"), "the image stays nginx");
        assert!(get("templates/deployment.yaml").contains("include \"web-app.fullname\""));
        assert!(!files.iter().any(|(_, t)| t.contains("\"nginx.")));
        let dir = tempdir_with(&files);
        let chart = crate::Chart::load_dir(&dir).unwrap();
        assert_eq!(chart.metadata["name"], "web-app");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempdir_with(files: &[(String, String)]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("uc-helm-create-{}", std::process::id()));
        for (p, t) in files {
            let path = dir.join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, t).unwrap();
        }
        dir
    }
}
