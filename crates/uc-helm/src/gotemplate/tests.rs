//! Templates executed end to end, against what Go's `text/template` prints for them.

use std::rc::Rc;

use super::*;

fn data() -> Value {
    Value::from_json(
        &serde_json::json!({
            "Values": {"name": "web", "replicas": 3, "big": 1000000, "empty": "", "list": ["a", "b"],
                       "map": {"z": 1, "a": 2}, "null": null, "nested": {"x": {"y": "deep"}}},
            "Release": {"Name": "r1"}
        }),
        false,
    )
}

fn render(src: &str) -> Result<String, Error> {
    let mut t = Templates::new(Funcs::new(), MissingKey::Zero);
    t.parse("t", src)?;
    t.execute("t", &data())
}

fn ok(src: &str) -> String {
    render(src).unwrap_or_else(|e| panic!("{src}: {e}"))
}

fn exec_err(src: &str) -> String {
    match render(src) {
        Err(Error::Exec(e)) => e.to_string(),
        other => panic!("{src}: {other:?}"),
    }
}

#[test]
fn fields_variables_and_printing() {
    assert_eq!(ok("{{ .Values.name }}-{{ .Release.Name }}"), "web-r1");
    assert_eq!(ok("{{ .Values.replicas }} {{ .Values.big }}"), "3 1e+06");
    assert_eq!(ok("{{ .Values.missing }}"), "<no value>");
    assert_eq!(ok("{{ .Values.list }} {{ .Values.map }}"), "[a b] map[a:2 z:1]");
    assert_eq!(ok("{{ $x := .Values.name }}{{ $x }}{{ $x = \"b\" }}{{ $x }}"), "webb");
    assert_eq!(ok("{{ $.Values.nested.x.y }}"), "deep");
    assert_eq!(ok("{{ (.Values.nested).x.y }}"), "deep");
}

#[test]
fn control_structures() {
    assert_eq!(ok("{{ if .Values.empty }}y{{ else if .Values.name }}n{{ else }}z{{ end }}"), "n");
    assert_eq!(ok("{{ range $i, $v := .Values.list }}{{ $i }}={{ $v }};{{ end }}"), "0=a;1=b;");
    assert_eq!(ok("{{ range $k, $v := .Values.map }}{{ $k }}{{ $v }}{{ end }}"), "a2z1");
    assert_eq!(ok("{{ range .Values.missing }}x{{ else }}none{{ end }}"), "none");
    assert_eq!(ok("{{ range 3 }}{{ . }}{{ end }}"), "012");
    assert_eq!(ok("{{ range .Values.list }}{{ if eq . \"b\" }}{{ break }}{{ end }}{{ . }}{{ end }}"), "a");
    assert_eq!(
        ok("{{ with .Values.nested.x }}{{ .y }}{{ end }}{{ with .Values.empty }}no{{ else }}e{{ end }}"),
        "deepe"
    );
    assert_eq!(ok("a\n  {{- \" b \" -}}  \nc"), "a b c");
}

#[test]
fn templates_and_blocks() {
    let mut t = Templates::new(Funcs::new(), MissingKey::Zero);
    t.parse("_helpers.tpl", r#"{{ define "name" }}{{ .Values.name }}-x{{ end }}"#).unwrap();
    t.parse("main", r#"{{ template "name" . }}|{{ block "b" . }}default{{ end }}"#).unwrap();
    assert_eq!(t.execute("main", &data()).unwrap(), "web-x|default");
    assert!(t.has("name") && t.has("b"));
}

#[test]
fn functions_and_pipelines() {
    assert_eq!(ok(r#"{{ printf "%s:%d" .Values.name 8 }}"#), "web:8");
    assert_eq!(ok(r#"{{ .Values.name | printf "<%s>" }}"#), "<web>");
    assert_eq!(ok(r#"{{ and 1 0 2 }} {{ or 0 "" "x" }} {{ not .Values.empty }}"#), "0 x true");
    assert_eq!(ok(r#"{{ len .Values.list }} {{ index .Values.map "z" }}"#), "2 1");
    assert_eq!(ok(r#"{{ eq .Values.missing "a" }}"#), "false");
}

#[test]
fn errors_in_gos_words() {
    assert_eq!(
        exec_err("line1\n{{ .Values.missing.deeper }}"),
        r#"template: t:2:10: executing "t" at <.Values.missing.deeper>: nil pointer evaluating interface {}.deeper"#
    );
    assert!(exec_err("{{ .Values.null.x }}").ends_with("nil pointer evaluating interface {}.x"));
    assert!(
        exec_err(r#"{{ eq .Values.replicas 3 }}"#).ends_with("error calling eq: incompatible types for comparison")
    );
    assert!(exec_err(r#"{{ .Values.name.x }}"#).ends_with("can't evaluate field x in type string"));
    assert!(exec_err(r#"{{ printf }}"#).ends_with("wrong number of args for printf: want at least 1 got 0"));
    assert!(exec_err(r#"{{ .Values.missing | printf }}"#).ends_with("invalid value; expected string"));
    assert!(exec_err(r#"{{ .Values.name 1 }}"#).ends_with("name is not a method but has arguments"));
    assert!(exec_err(r#"{{ template "nope" }}"#).ends_with(r#"template "nope" not defined"#));
    match render("{{ if }}") {
        Err(Error::Parse(e)) => assert_eq!(e.to_string(), "template: t:1: missing value for if"),
        other => panic!("{other:?}"),
    }
}

/// An object with a method and a field, like Helm's `.Capabilities.APIVersions`.
struct Versions;

impl Object for Versions {
    fn type_name(&self) -> &str {
        "chartutil.VersionSet"
    }
    fn member(&self, name: &str) -> Option<Member> {
        match name {
            "Has" => Some(Member::Method(Rc::new(|a: &[Value]| {
                Ok(Value::Bool(a.first().and_then(Value::as_str) == Some("apps/v1")))
            }))),
            "Count" => Some(Member::Field(Value::Int(1))),
            _ => None,
        }
    }
    fn print(&self) -> String {
        "[apps/v1]".into()
    }
}

#[test]
fn methods_are_called_with_their_arguments() {
    let mut t = Templates::new(Funcs::new(), MissingKey::Zero);
    t.parse(
        "t",
        r#"{{ .V.Has "apps/v1" }} {{ .V.Has "x" }} {{ .V.Count }} {{ .V }} {{ if .V.Has "apps/v1" }}y{{ end }}"#,
    )
    .unwrap();
    let dot = Value::map([("V", Value::Object(Rc::new(Versions)))]);
    assert_eq!(t.execute("t", &dot).unwrap(), "true false 1 [apps/v1] y");
}
