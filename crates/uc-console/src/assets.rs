//! The page application's files, built into uc (no network needed, nothing fetched from a CDN), and the
//! login page.

/// The style sheet (served to anyone: the login page uses it).
pub const STYLE: &str = include_str!("../assets/style.css");

/// The console's icon (served to anyone, as the browser's tab icon and `/favicon.ico`).
pub const ICON: &str = include_str!("../assets/icon.svg");

const FILES: &[(&str, &str, &str)] = &[
    ("/", "text/html; charset=utf-8", include_str!("../assets/index.html")),
    ("/static/app.js", "text/javascript", include_str!("../assets/app.js")),
    ("/static/k8s.js", "text/javascript", include_str!("../assets/k8s.js")),
    ("/static/hub.js", "text/javascript", include_str!("../assets/hub.js")),
    ("/static/installed.js", "text/javascript", include_str!("../assets/installed.js")),
    ("/static/instance.js", "text/javascript", include_str!("../assets/instance.js")),
    ("/static/controllers.js", "text/javascript", include_str!("../assets/controllers.js")),
    ("/static/cluster.js", "text/javascript", include_str!("../assets/cluster.js")),
    ("/static/schema-form.js", "text/javascript", include_str!("../assets/schema-form.js")),
    ("/static/pod.js", "text/javascript", include_str!("../assets/pod.js")),
    ("/static/schema-check.js", "text/javascript", include_str!("../assets/schema-check.js")),
    // Third-party components, bundled by `web/build.sh` (CodeMirror 6 with the yaml parser; dagre).
    ("/static/vendor/editor.js", "text/javascript", include_str!("../assets/vendor/editor.js")),
    ("/static/vendor/graph.js", "text/javascript", include_str!("../assets/vendor/graph.js")),
    ("/static/vendor/LICENSES.txt", "text/plain; charset=utf-8", include_str!("../assets/vendor/LICENSES.txt")),
];

/// The page's one inline script, its loader (index.html: the modules loaded again when loading them
/// failed), which the content security policy allows by its digest.
pub fn loader_script() -> &'static str {
    const OPEN: &str = "<script type=\"module\">";
    let page = FILES[0].2;
    let start = page.find(OPEN).map(|i| i + OPEN.len()).unwrap_or(page.len());
    let end = page[start..].find("</script>").map(|i| start + i).unwrap_or(page.len());
    &page[start..end]
}

/// A file of the application: its content type and content.
pub fn get(path: &str) -> Option<(&'static str, &'static str)> {
    let path = if path == "/index.html" { "/" } else { path };
    FILES.iter().find(|(p, _, _)| *p == path).map(|(_, t, body)| (*t, *body))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The login page, with an error when a token was refused.
pub fn login_page(error: Option<&str>) -> String {
    let error = error.map(|e| format!(r#"<p class="error" id="login-error">{}</p>"#, escape(e))).unwrap_or_default();
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>uc console — log in</title>
<link rel="stylesheet" href="/static/style.css"><link rel="icon" href="/static/icon.svg" type="image/svg+xml"></head>
<body class="login"><main class="login-box">
<h1>uc console</h1>
<p>Log in with a bearer token the cluster accepts: the kubeconfig's (<code>kubectl config view --raw -o jsonpath='{{.users[0].user.token}}'</code>) or a service account's (<code>kubectl create token NAME</code>).</p>
{error}
<form method="post" action="/login"><label for="token">Token</label> <input type="password" name="token" id="token" autocomplete="off" autofocus>
<button type="submit" id="login">Log in</button></form>
</main></body></html>"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_module_is_served_and_the_login_page_escapes() {
        assert!(get("/").is_some_and(|(t, b)| t.starts_with("text/html") && b.contains("/static/app.js")));
        // One inline script, the loader, which imports the application.
        assert_eq!(get("/").unwrap().1.matches("<script").count(), 1);
        assert!(loader_script().contains(r#"import("/static/app.js")"#), "{}", loader_script());
        assert_eq!(get("/index.html"), get("/"));
        let app = get("/static/app.js").unwrap().1;
        for (path, _, _) in FILES.iter().filter(|(p, _, _)| p.ends_with(".js") && *p != "/static/app.js") {
            let module = path.trim_start_matches("/static/");
            assert!(
                app.contains(module) || FILES.iter().any(|(_, _, b)| b.contains(&format!("./{module}"))),
                "{module} is imported somewhere"
            );
        }
        assert!(get("/static/nope.js").is_none());
        assert!(ICON.starts_with("<svg") && login_page(None).contains(r#"href="/static/icon.svg""#));
        assert!(get("/").unwrap().1.contains(r#"href="/static/icon.svg""#), "the pages name their icon");
        let licences = get("/static/vendor/LICENSES.txt").unwrap().1;
        assert!(
            ["== codemirror ", "== yaml ", "== @dagrejs/dagre "].iter().all(|p| licences.contains(p)),
            "served with the bundles"
        );
        let page = login_page(Some("<bad>"));
        assert!(page.contains("&lt;bad&gt;") && !page.contains("<bad>"));
    }
}
