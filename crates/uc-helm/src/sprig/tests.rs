//! Sprig's functions through templates, against what Helm prints for them.

use crate::gotemplate::{MissingKey, Templates, Value};

fn render(src: &str) -> String {
    let mut t = Templates::new(super::funcs(), MissingKey::Zero);
    t.parse("t", src).unwrap_or_else(|e| panic!("{src}: {e}"));
    let data = Value::from_json(
        &serde_json::json!({"name": "web", "port": 80, "list": ["b", "a", "b"], "d": {"x": 1}}),
        false,
    );
    t.execute("t", &data).unwrap_or_else(|e| panic!("{src}: {e}"))
}

#[test]
fn strings() {
    assert_eq!(render(r#"{{ "my-release-name-that-is-long" | trunc 10 | trimSuffix "-" }}"#), "my-release");
    assert_eq!(render(r#"{{ "a\nb" | nindent 2 }}|{{ "x" | indent 3 }}"#), "\n  a\n  b|   x");
    assert_eq!(
        render(r#"{{ quote .name .port }} {{ squote "x" }} {{ cat "a" 1 nil "b" }}"#),
        r#""web" "80" 'x' a 1 b"#
    );
    assert_eq!(
        render(r#"{{ contains "eb" .name }} {{ hasPrefix "w" .name }} {{ upper .name | title }}"#),
        "true true WEB"
    );
    assert_eq!(
        render(r#"{{ replace "+" "_" "1.0+build" }} {{ b64enc "abc" }} {{ "YWJj" | b64dec }}"#),
        "1.0_build YWJj abc"
    );
    assert_eq!(
        render(r#"{{ join "," .list }} {{ splitList "," "a,b" }} {{ .list | sortAlpha }}"#),
        "b,a,b [a b] [a b b]"
    );
    assert_eq!(
        render(r#"{{ regexReplaceAll "a(x*)b" "-ab-axxb-" "${1}W" }} {{ regexMatch "^w" .name }}"#),
        "-W-xxW- true"
    );
    assert_eq!(
        render(r#"{{ snakecase "FirstName" }} {{ kebabcase "firstName" }} {{ camelcase "http_server" }}"#),
        "first_name first-name HttpServer"
    );
    assert_eq!(render(r#"{{ sha256sum "hi" | trunc 8 }}"#), "8f434346");
}

#[test]
fn defaults_math_and_types() {
    assert_eq!(
        render(r#"{{ default "x" .missing }} {{ default "x" "" }} {{ .missing | default 3 }} {{ default "x" .name }}"#),
        "x x 3 web"
    );
    assert_eq!(render(r#"{{ empty .missing }} {{ coalesce 0 "" "z" }} {{ ternary "y" "n" true }}"#), "true z y");
    assert_eq!(
        render(r#"{{ add 1 2 .port }} {{ sub 5 2 }} {{ div 7 2 }} {{ mul 2 3 4 }} {{ max 1 9 3 }} {{ add1 .port }}"#),
        "83 3 3 24 9 81"
    );
    assert_eq!(
        render(r#"{{ typeOf .port }} {{ typeOf 1 }} {{ kindOf .list }} {{ kindIs "map" .d }} {{ int "42" }}"#),
        "float64 int slice true 42"
    );
    assert_eq!(render(r#"{{ until 3 }} {{ seq 3 }} {{ toString 1.5 }}"#), "[0 1 2] 1 2 3 1.5");
}

#[test]
fn lists_and_dicts() {
    assert_eq!(
        render(r#"{{ first .list }} {{ last .list }} {{ rest .list }} {{ uniq .list }} {{ has "a" .list }}"#),
        "b b [a b] [b a] true"
    );
    assert_eq!(
        render(
            r#"{{ $d := dict "a" 1 "b" "two" }}{{ $_ := set $d "c" 3 }}{{ $d }} {{ hasKey $d "c" }} {{ get $d "zz" | quote }}"#
        ),
        r#"map[a:1 b:two c:3] true """#
    );
    assert_eq!(
        render(r#"{{ $d := dict "a" (dict "x" 1) }}{{ $_ := merge $d (dict "a" (dict "y" 2) "b" 3) }}{{ $d }}"#),
        "map[a:map[x:1 y:2] b:3]"
    );
    assert_eq!(
        render(
            r#"{{ $d := dict "a" 1 }}{{ $_ := mergeOverwrite $d (dict "a" 2) }}{{ $d.a }} {{ keys .d }} {{ pick .d "x" }} {{ omit .d "x" }}"#
        ),
        "2 [x] map[x:1] map[]"
    );
    assert_eq!(
        render(r#"{{ list 1 "a" | append (list) | len }} {{ dig "d" "x" "none" . }} {{ dig "d" "q" "none" . }}"#),
        "1 1 none"
    );
    assert_eq!(
        render(r#"{{ $_ := set .d "added" true }}{{ .d.added }}"#),
        "true",
        "set changes the map seen everywhere"
    );
}

#[test]
fn semver() {
    assert_eq!(
        render(
            r#"{{ semverCompare ">=1.19-0" "v1.32.0" }} {{ semverCompare "^2" "1.9" }} {{ (semver "1.2.3-rc.1").Minor }} {{ semver "v1.2" }}"#
        ),
        "true false 2 1.2.0"
    );
}

#[test]
fn paths_aliases_and_extras() {
    assert_eq!(
        render(
            r#"{{ base "/a/b.txt" }} {{ dir "/a/b.txt" }} {{ ext "x.tar.gz" }} {{ clean "a/../b/./c/" }} {{ isAbs "/x" }}"#
        ),
        "b.txt /a .gz b/c true"
    );
    assert_eq!(
        render(r#"{{ mustFirst .list }} {{ tuple 1 2 }} {{ maxf 1 2.5 }} {{ uuidv4 | len }}"#),
        "b [1 2] 2.5 36"
    );
}

#[test]
fn abbrevboth_and_dates_as_helm_prints_them() {
    assert_eq!(
        render(
            r#"{{ abbrevboth 5 10 "1234 5678 9123" }}|{{ abbrevboth 0 10 "1234 5678 9123" }}|{{ abbrevboth 5 20 "1234 5678 9123" }}|{{ abbrevboth 3 8 "abcdefghijklmno" }}"#
        ),
        "...5678...|1234 56...|1234 5678 9123|abcde..."
    );
    assert_eq!(
        render(
            r#"{{ date "2006-01-02" 0 }} {{ duration "3725" }} {{ toDate "2006-01-02" "2024-05-06" | unixEpoch }} {{ dateInZone "2006-01-02 15:04 MST" 0 "UTC" }}"#
        ),
        "1970-01-01 1h2m5s 1714953600 1970-01-01 00:00 UTC"
    );
}
