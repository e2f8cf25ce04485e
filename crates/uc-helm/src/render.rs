//! Helm's rendering engine (`engine.Render`): every template of a chart and its subcharts parsed into
//! one set (deeper files first, so a parent's `define` wins), each executed with its chart's scope
//! (`.Values` of that chart, `.Chart`, `.Files`, `.Release`, `.Capabilities`, `.Template`), and Helm's
//! own functions: `include`, `tpl`, `required`, `fail`, `toYaml`/`fromYaml`, `toJson`/`fromJson`,
//! `lookup`.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::Value as Json;

use crate::chart::Chart;
use crate::error::HelmError;
use crate::gotemplate::{self, Funcs, Function, MissingKey, Templates, Ty, Value};
use crate::objects::{Capabilities, Files};

/// The release a render is for (`.Release`).
#[derive(Clone, Debug)]
pub struct Release {
    pub name: String,
    pub namespace: String,
    pub revision: i64,
    pub is_install: bool,
    pub is_upgrade: bool,
}

impl Default for Release {
    fn default() -> Self {
        Release {
            name: "release-name".into(),
            namespace: "default".into(),
            revision: 1,
            is_install: true,
            is_upgrade: false,
        }
    }
}

/// `lookup apiVersion kind namespace name`: an object, a list, or an empty map.
pub type Lookup = Rc<dyn Fn(&str, &str, &str, &str) -> Result<Value, HelmError>>;

/// What a render needs besides the chart and values.
#[derive(Clone, Default)]
pub struct Options {
    pub release: Release,
    pub capabilities: Capabilities,
    /// The cluster behind `lookup`; without one it answers an empty map, as `helm template` does.
    pub lookup: Option<Lookup>,
}

/// A render failure, in Helm's words.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RenderError {
    #[error("parse error at ({file}:{line}): {message}")]
    Parse { file: String, line: usize, message: String },
    #[error("{0}")]
    Exec(String),
}

/// Helm's markers around a `required`/`fail` message inside an execution error.
const WARN_START: &str = "HELM_ERR_START";
const WARN_END: &str = "HELM_ERR_END";

/// One template file to render, with its chart's scope.
struct Renderable {
    source: String,
    scope: Value,
    base_path: String,
}

/// `.Chart`: the metadata under Go's field names, each present (zero when `Chart.yaml` omits it).
fn chart_value(chart: &Chart, is_root: bool) -> Value {
    const FIELDS: &[(&str, &str, &str)] = &[
        ("name", "Name", "s"),
        ("home", "Home", "s"),
        ("sources", "Sources", "l"),
        ("version", "Version", "s"),
        ("description", "Description", "s"),
        ("keywords", "Keywords", "l"),
        ("maintainers", "Maintainers", "l"),
        ("icon", "Icon", "s"),
        ("apiVersion", "APIVersion", "s"),
        ("condition", "Condition", "s"),
        ("tags", "Tags", "s"),
        ("appVersion", "AppVersion", "s"),
        ("deprecated", "Deprecated", "b"),
        ("annotations", "Annotations", "m"),
        ("kubeVersion", "KubeVersion", "s"),
        ("dependencies", "Dependencies", "l"),
        ("type", "Type", "s"),
    ];
    let mut m = BTreeMap::new();
    for (json, go, kind) in FIELDS {
        let v = match (chart.metadata.get(*json), *kind) {
            (Some(Json::String(s)), _) => Value::from(s.as_str()),
            (Some(Json::Number(n)), "s") => Value::from(n.to_string()),
            (Some(v), _) if !v.is_null() => Value::from_json(v, true),
            (_, "s") => Value::from(""),
            (_, "b") => Value::Bool(false),
            (_, "m") => Value::from(BTreeMap::new()),
            _ => Value::from(Vec::new()),
        };
        m.insert(go.to_string(), v);
    }
    m.insert("IsRoot".into(), Value::Bool(is_root));
    Value::from(m)
}

/// `recAllTpls`: each template of `chart` (at `path`) with its scope; the chart's scope.
fn collect(chart: &Chart, parent: &Value, path: &str, is_root: bool, out: &mut BTreeMap<String, Renderable>) -> Value {
    let get = |v: &Value, k: &str| match v {
        Value::Map(m) => m.borrow().get(k).cloned(),
        _ => None,
    };
    let values = if is_root {
        get(parent, "Values").unwrap_or_default()
    } else {
        get(parent, "Values")
            .and_then(|v| get(&v, chart.name()))
            .filter(|v| matches!(v, Value::Map(_)))
            .unwrap_or_else(|| Value::from(BTreeMap::new()))
    };
    let subcharts = Value::from(BTreeMap::new());
    let scope = Value::map([
        ("Chart", chart_value(chart, is_root)),
        ("Files", Value::Object(Rc::new(Files(chart.files.clone())))),
        ("Release", get(parent, "Release").unwrap_or_default()),
        ("Capabilities", get(parent, "Capabilities").unwrap_or_default()),
        ("Values", values),
        ("Subcharts", subcharts.clone()),
    ]);
    for dep in &chart.dependencies {
        let sub = collect(dep, &scope, &format!("{path}/charts/{}", dep.name()), false, out);
        if let Value::Map(m) = &subcharts {
            m.borrow_mut().insert(dep.name().to_string(), sub);
        }
    }
    for t in &chart.templates {
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if chart.is_library() && !base.starts_with('_') {
            continue;
        }
        out.insert(
            format!("{path}/{}", t.name),
            Renderable {
                source: String::from_utf8_lossy(&t.data).into_owned(),
                scope: scope.clone(),
                base_path: format!("{path}/templates"),
            },
        );
    }
    scope
}

/// Helm's parse order: deeper paths first, then names in reverse order.
fn parse_order(names: impl Iterator<Item = String>) -> Vec<String> {
    let mut keys: Vec<String> = names.collect();
    keys.sort_by(|a, b| {
        let (ca, cb) = (a.matches('/').count(), b.matches('/').count());
        cb.cmp(&ca).then_with(|| b.cmp(a))
    });
    keys
}

/// Renders every template of the chart with `values` (already coalesced): file path → text.
pub fn render(chart: &Chart, values: &Value, options: &Options) -> Result<BTreeMap<String, String>, RenderError> {
    let r = &options.release;
    let top = Value::map([
        ("Values", values.clone()),
        (
            "Release",
            Value::map([
                ("Name", Value::from(r.name.as_str())),
                ("Namespace", Value::from(r.namespace.as_str())),
                ("IsUpgrade", Value::Bool(r.is_upgrade)),
                ("IsInstall", Value::Bool(r.is_install)),
                ("Revision", Value::Int(r.revision)),
                ("Service", Value::from("Helm")),
            ]),
        ),
        ("Capabilities", options.capabilities.value()),
    ]);
    let mut renderables = BTreeMap::new();
    collect(chart, &top, chart.name(), true, &mut renderables);
    let mut templates = Templates::new(funcs(options), MissingKey::Zero);
    let order = parse_order(renderables.keys().cloned());
    for name in &order {
        templates.parse(name, &renderables[name].source).map_err(|e| RenderError::Parse {
            file: e.file.clone(),
            line: e.line,
            message: e.message.clone(),
        })?;
    }
    let mut out = BTreeMap::new();
    for name in &order {
        if name.rsplit('/').next().is_some_and(|b| b.starts_with('_')) {
            continue;
        }
        let r = &renderables[name];
        if let Value::Map(m) = &r.scope {
            let template =
                Value::map([("Name", Value::from(name.as_str())), ("BasePath", Value::from(r.base_path.as_str()))]);
            m.borrow_mut().insert("Template".into(), template);
        }
        let text = templates.execute(name, &r.scope).map_err(|e| exec_error(name, &e))?;
        out.insert(name.clone(), text.replace("<no value>", ""));
    }
    Ok(out)
}

/// An execution error as Helm reports it: a `required`/`fail` message with where it happened, else Go's.
fn exec_error(name: &str, e: &gotemplate::Error) -> RenderError {
    let text = e.to_string();
    if let (Some(start), Some(end)) = (text.find(WARN_START), text.find(WARN_END)) {
        let warning = &text[start + WARN_START.len()..end];
        let location = match e {
            gotemplate::Error::Exec(x) => format!("{}:{}:{}", x.file, x.line, x.col),
            _ => name.to_string(),
        };
        return RenderError::Exec(format!("execution error at ({location}): {warning}"));
    }
    RenderError::Exec(text)
}

/// The functions templates have: `text/template`'s, Sprig's (without `env` and `expandenv`) and Helm's.
fn funcs(options: &Options) -> Funcs {
    use Ty::*;
    let mut f = crate::sprig::funcs();
    let mut add = |name: &str, func: Function| {
        f.insert(name.to_string(), func);
    };
    add(
        "include",
        Function::with_state(&[Str, Any], |state, a| {
            let name = a[0].as_str().unwrap_or("");
            state.include(name, &a[1]).map(Value::from)
        }),
    );
    add(
        "tpl",
        Function::with_state(&[Str, Any], |state, a| {
            state.tpl(a[0].as_str().unwrap_or(""), &a[1]).map(|s| Value::from(s.replace("<no value>", "")))
        }),
    );
    add(
        "required",
        Function::new(&[Str, Any], |a| match &a[1] {
            Value::Nil | Value::Invalid => {
                Err(HelmError::from(format!("{WARN_START}{}{WARN_END}", a[0].as_str().unwrap_or(""))))
            }
            Value::Str(s) if s.is_empty() => {
                Err(HelmError::from(format!("{WARN_START}{}{WARN_END}", a[0].as_str().unwrap_or(""))))
            }
            v => Ok(v.clone()),
        }),
    );
    add(
        "fail",
        Function::new(&[Str], |a| {
            Err(HelmError::from(format!("{WARN_START}{}{WARN_END}", a[0].as_str().unwrap_or(""))))
        }),
    );
    for name in ["toYaml", "mustToYaml"] {
        add(name, Function::new(&[Any], |a| Ok(Value::from(crate::yaml::to_yaml(&a[0])))));
    }
    for name in ["toJson", "mustToJson", "toRawJson", "mustToRawJson"] {
        add(name, Function::new(&[Any], |a| Ok(Value::from(crate::json::to_json(&a[0])))));
    }
    add(
        "toPrettyJson",
        Function::new(&[Any], |a| Ok(Value::from(serde_json::to_string_pretty(&a[0].to_json()).unwrap_or_default()))),
    );
    add(
        "mustToPrettyJson",
        Function::new(&[Any], |a| {
            serde_json::to_string_pretty(&a[0].to_json()).map(Value::from).map_err(|e| HelmError::from(e.to_string()))
        }),
    );
    add(
        "mustFromJson",
        Function::new(&[Str], |a| {
            serde_json::from_str::<Json>(a[0].as_str().unwrap_or(""))
                .map(|v| Value::from_json(&v, false))
                .map_err(|e| HelmError::from(format!("json: {e}")))
        }),
    );
    add("toToml", Function::new(&[Any], |a| Ok(Value::from(crate::toml::to_toml(&a[0])))));
    add("fromToml", Function::new(&[Str], |a| Ok(crate::toml::from_toml(a[0].as_str().unwrap_or("")))));
    add("fromYaml", Function::new(&[Str], |a| Ok(from_yaml(a[0].as_str().unwrap_or(""), false))));
    add("fromYamlArray", Function::new(&[Str], |a| Ok(from_yaml(a[0].as_str().unwrap_or(""), true))));
    add("fromJson", Function::new(&[Str], |a| Ok(from_json(a[0].as_str().unwrap_or(""), false))));
    add("fromJsonArray", Function::new(&[Str], |a| Ok(from_json(a[0].as_str().unwrap_or(""), true))));
    add("getHostByName", Function::new(&[Str], |_| Ok(Value::from(""))));
    let lookup = options.lookup.clone();
    add(
        "lookup",
        Function::new(&[Str, Str, Str, Str], move |a| {
            let s = |i: usize| a[i].as_str().unwrap_or("");
            match &lookup {
                Some(l) => l(s(0), s(1), s(2), s(3)),
                None => Ok(Value::from(BTreeMap::new())),
            }
        }),
    );
    f
}

/// `fromYaml`: a map (or with `array`, a list); what does not parse is `{"Error": …}` (`[…]`).
fn from_yaml(text: &str, array: bool) -> Value {
    match serde_yaml_ng::from_str::<Json>(text) {
        Ok(Json::Null) if !array => Value::from(BTreeMap::new()),
        Ok(v @ Json::Object(_)) if !array => Value::from_json(&v, false),
        Ok(v @ Json::Array(_)) if array => Value::from_json(&v, false),
        Ok(_) | Err(_) if array => Value::from(vec![Value::from("error unmarshaling JSON")]),
        Ok(_) => Value::map([(
            "Error",
            Value::from(
                "error unmarshaling JSON: json: cannot unmarshal into Go value of type map[string]interface {}",
            ),
        )]),
        Err(e) => Value::map([("Error", Value::from(format!("error converting YAML to JSON: {e}")))]),
    }
}

fn from_json(text: &str, array: bool) -> Value {
    match serde_json::from_str::<Json>(text) {
        Ok(v @ Json::Object(_)) if !array => Value::from_json(&v, false),
        Ok(v @ Json::Array(_)) if array => Value::from_json(&v, false),
        Ok(_) | Err(_) if array => Value::from(vec![Value::from("error unmarshaling JSON")]),
        Ok(_) | Err(_) => Value::map([("Error", Value::from("error unmarshaling JSON"))]),
    }
}

#[cfg(test)]
mod tests;
