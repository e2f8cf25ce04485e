//! Charts rendered end to end, against what Helm 3.17.3 prints for them (`testdata/`, made by
//! `helm create` and `helm template` of that version; see testdata/README.md).

use std::path::Path;

use super::*;
use crate::chart::File;

fn testdata(p: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata").join(p)
}

fn options(release: &str) -> Options {
    Options { release: Release { name: release.into(), ..Release::default() }, ..Options::default() }
}

fn chart(files: &[(&str, &str)]) -> Chart {
    let files = files.iter().map(|(n, d)| File { name: n.to_string(), data: d.as_bytes().to_vec() }).collect();
    Chart::from_files("test", files).unwrap()
}

fn assert_same(got: &str, want: &str) {
    if got != want {
        let line = got.lines().zip(want.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "differs at line {}:\n got: {:?}\nwant: {:?}\n--- got ---\n{got}",
            line + 1,
            got.lines().nth(line),
            want.lines().nth(line)
        );
    }
}

#[test]
fn helm_creates_chart_renders_as_helm_template_prints_it() {
    let chart = Chart::load_dir(&testdata("helm-create/nginx")).unwrap();
    let got = crate::template(&chart, &Value::Nil, &options("r1"), false).unwrap();
    assert_same(&got, &std::fs::read_to_string(testdata("helm-create/nginx.expected")).unwrap());
}

#[test]
fn helm_creates_chart_with_values_set_renders_as_helm_template_prints_it() {
    let chart = Chart::load_dir(&testdata("helm-create/nginx")).unwrap();
    let user = Value::from_json(
        &serde_json::json!({"replicaCount": 3, "ingress": {"enabled": true}, "autoscaling": {"enabled": true},
                            "serviceAccount": {"create": false}}),
        true,
    );
    let got = crate::template(&chart, &user, &options("r1"), false).unwrap();
    assert_same(&got, &std::fs::read_to_string(testdata("helm-create/nginx-set.expected")).unwrap());
}

#[test]
fn include_tpl_required_and_subchart_scopes() {
    let c = chart(&[
        ("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
        ("values.yaml", "greeting: hello {{ .Release.Name }}\nsub:\n  n: 2\n"),
        ("templates/_h.tpl", r#"{{ define "top.name" }}{{ .Chart.Name }}-{{ .Release.Name }}{{ end }}"#),
        (
            "templates/a.yaml",
            "name: {{ include \"top.name\" . }}\ngreet: {{ tpl .Values.greeting . }}\ntemplate: {{ .Template.Name }}\n",
        ),
        ("templates/b.yaml", "v: {{ required \"need x\" .Values.x }}\n"),
        ("charts/sub/Chart.yaml", "name: sub\nversion: 0.1.0\n"),
        ("charts/sub/values.yaml", "n: 1\nm: 5\n"),
        ("charts/sub/templates/s.yaml", "n: {{ .Values.n }}\nm: {{ .Values.m }}\nroot: {{ .Chart.IsRoot }}\n"),
    ]);
    let values = crate::values::coalesce(&c, &Value::from_json(&serde_json::json!({"x": "given"}), true));
    let out = render(&c, &values, &options("r")).unwrap();
    assert_eq!(out["top/templates/a.yaml"], "name: top-r\ngreet: hello r\ntemplate: top/templates/a.yaml\n");
    assert_eq!(out["top/templates/b.yaml"], "v: given\n");
    assert_eq!(out["top/charts/sub/templates/s.yaml"], "n: 2\nm: 5\nroot: false\n");
    assert!(!out.contains_key("top/templates/_h.tpl"));
    let values = crate::values::coalesce(&c, &Value::Nil);
    let err = render(&c, &values, &options("r")).unwrap_err().to_string();
    assert_eq!(err, "execution error at (top/templates/b.yaml:1:6): need x");
}

#[test]
fn the_operator_sdks_memcached_chart_renders_its_sample_as_helm_template_prints_it() {
    let chart = Chart::load_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/e2e/upstream/operator-sdk/testdata/helm/memcached-operator/helm-charts/memcached"),
    )
    .unwrap();
    let spec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(testdata("sdk-memcached/sample-spec.json")).unwrap()).unwrap();
    let got = crate::template(&chart, &Value::from_json(&spec, false), &options("memcached-sample"), false).unwrap();
    assert_same(&got, &std::fs::read_to_string(testdata("sdk-memcached/memcached.expected")).unwrap());
}

#[test]
fn recursion_stops_at_helms_depth_with_its_words() {
    // What `tpl` lets a resource's author write: a template that includes itself without end.
    let c = chart(&[
        ("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
        ("templates/a.yaml", "{{ tpl .Values.t . }}"),
    ]);
    let user = serde_json::json!({"t": "{{ define \"x\" }}{{ include \"x\" . }}{{ end }}{{ include \"x\" . }}"});
    let err = crate::on_render_thread(move || {
        let values = crate::values::coalesce(&c, &Value::from_json(&user, true));
        render(&c, &values, &options("r")).unwrap_err().to_string()
    })
    .unwrap();
    assert!(err.contains("rendering template has a nested reference name: x: unable to execute template"), "{err}");
}

#[test]
fn what_a_resource_may_ask_of_a_render_is_bounded() {
    for (t, words) in [
        ("{{ range 100000000 }}x{{ end }}", "range: more than 10000000 iterations"),
        ("{{ repeat 100000000 \"xxxxxxxxxx\" }}", "exceed 67108864 bytes"),
        ("{{ until 1000000000 | len }}", "more than 10000000 numbers"),
        ("{{ range until 5000 }}{{ range until 5000 }}{{ end }}{{ end }}", "range: more than 10000000 iterations"),
    ] {
        let c = chart(&[
            ("Chart.yaml", "apiVersion: v2\nname: top\nversion: 1.0.0\n"),
            ("templates/a.yaml", "{{ tpl .Values.t . }}"),
        ]);
        let values = crate::values::coalesce(&c, &Value::from_json(&serde_json::json!({"t": t}), true));
        let err = render(&c, &values, &options("r")).unwrap_err().to_string();
        assert!(err.contains(words), "{t}: {err}");
    }
}

#[test]
fn helmignore_keeps_out_what_helm_keeps_out() {
    let chart = Chart::load_dir(&testdata("helmignore/c")).unwrap();
    let got = crate::template(&chart, &Value::Nil, &options("r"), false).unwrap();
    assert_same(&got, &std::fs::read_to_string(testdata("helmignore/expected")).unwrap());
}

#[test]
fn sprigs_url_list_date_and_encoding_functions_render_as_helm_template_prints_them() {
    let chart = Chart::load_dir(&testdata("sprig-extras")).unwrap();
    let got = crate::template(&chart, &Value::Nil, &options("r1"), false).unwrap();
    assert_same(&got, &std::fs::read_to_string(testdata("sprig-extras.expected")).unwrap());
}

/// Every function Helm 3.17 gives templates: Sprig 3.3's `TxtFuncMap` (without `env` and `expandenv`,
/// which Helm removes) and Helm's own.
#[test]
fn every_function_helm_gives_templates_is_there() {
    let f = super::funcs(&crate::Options::default());
    let names: String = [
        "hello ago date date_in_zone date_modify dateInZone dateModify duration durationRound htmlDate ",
        "htmlDateInZone must_date_modify mustDateModify mustToDate now toDate unixEpoch abbrev abbrevboth ",
        "trunc trim upper lower title untitle substr repeat trimall trimAll trimSuffix trimPrefix nospace ",
        "initials randAlphaNum randAlpha randAscii randNumeric swapcase shuffle snakecase camelcase kebabcase ",
        "wrap wrapWith contains hasPrefix hasSuffix quote squote cat indent nindent replace plural sha1sum ",
        "sha256sum adler32sum toString atoi int64 int float64 seq toDecimal split splitList splitn toStrings ",
        "until untilStep add1 add sub div mod mul randInt add1f addf subf divf mulf biggest max min maxf minf ",
        "ceil floor round join sortAlpha default empty coalesce all any compact mustCompact fromJson toJson ",
        "toPrettyJson toRawJson mustFromJson mustToJson mustToPrettyJson mustToRawJson ternary deepCopy ",
        "mustDeepCopy typeOf typeIs typeIsLike kindOf kindIs deepEqual getHostByName base dir clean ext isAbs ",
        "osBase osClean osDir osExt osIsAbs b64enc b64dec b32enc b32dec tuple list dict get set unset hasKey ",
        "pluck keys pick omit merge mergeOverwrite mustMerge mustMergeOverwrite values append push mustAppend ",
        "mustPush prepend mustPrepend first mustFirst rest mustRest last mustLast initial mustInitial reverse ",
        "mustReverse uniq mustUniq without mustWithout has mustHas slice mustSlice concat dig chunk mustChunk ",
        "bcrypt htpasswd genPrivateKey derivePassword buildCustomCert genCA genCAWithKey genSelfSignedCert ",
        "genSelfSignedCertWithKey genSignedCert genSignedCertWithKey encryptAES decryptAES randBytes uuidv4 ",
        "semver semverCompare fail regexMatch mustRegexMatch regexFindAll mustRegexFindAll regexFind ",
        "mustRegexFind regexReplaceAll mustRegexReplaceAll regexReplaceAllLiteral mustRegexReplaceAllLiteral ",
        "regexSplit mustRegexSplit regexQuoteMeta urlParse urlJoin toToml fromToml toYaml fromYaml ",
        "fromYamlArray fromJsonArray include tpl required lookup ",
    ]
    .concat();
    let missing: Vec<&str> = names.split_whitespace().filter(|n| !f.contains_key(*n)).collect();
    assert!(missing.is_empty(), "missing: {missing:?}");
    assert!(!f.contains_key("env") && !f.contains_key("expandenv"), "Helm removes them");
}
