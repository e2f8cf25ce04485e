//! The Go objects Helm hands templates: `.Files` (with `Get`, `Glob`, `Lines`, `AsConfig`,
//! `AsSecrets`) and `.Capabilities` (`KubeVersion`, `APIVersions.Has`, `HelmVersion`).

use std::collections::BTreeMap;
use std::rc::Rc;

use base64::Engine as _;

use crate::chart::File;
use crate::error::HelmError;
use crate::gotemplate::{Member, Object, Value};

/// A chart's files (`.Files`), or those a `Glob` picked.
pub struct Files(pub Vec<File>);

impl Files {
    fn get(&self, name: &str) -> String {
        self.0
            .iter()
            .find(|f| f.name == name)
            .map(|f| String::from_utf8_lossy(&f.data).into_owned())
            .unwrap_or_default()
    }

    fn by_base_name(&self, value: impl Fn(&File) -> Value) -> Value {
        let m: BTreeMap<String, Value> =
            self.0.iter().map(|f| (f.name.rsplit('/').next().unwrap_or(&f.name).to_string(), value(f))).collect();
        Value::from(m)
    }
}

fn arg(a: &[Value], i: usize) -> Result<&str, HelmError> {
    a.get(i).and_then(Value::as_str).ok_or_else(|| HelmError::from("wrong type for value; expected string"))
}

impl Object for Files {
    fn type_name(&self) -> &str {
        "chart.Files"
    }

    fn member(&self, name: &str) -> Option<Member> {
        let files = self.0.clone();
        let me = Rc::new(Files(files));
        let method = |f: crate::gotemplate::Method| Some(Member::Method(f));
        match name {
            "Get" => method(Rc::new(move |a| Ok(Value::from(me.get(arg(a, 0)?))))),
            "GetBytes" => method(Rc::new(move |a| {
                Ok(Value::from(me.get(arg(a, 0)?).bytes().map(|b| Value::Int(i64::from(b))).collect::<Vec<_>>()))
            })),
            "Lines" => method(Rc::new(move |a| {
                let text = me.get(arg(a, 0)?);
                Ok(Value::from(text.split('\n').map(Value::from).collect::<Vec<_>>()))
            })),
            "Glob" => method(Rc::new(move |a| {
                let pattern = arg(a, 0)?.to_string();
                let picked = me.0.iter().filter(|f| glob(&pattern, &f.name)).cloned().collect();
                Ok(Value::Object(Rc::new(Files(picked))))
            })),
            "AsConfig" => method(Rc::new(move |_| {
                let m = me.by_base_name(|f| Value::from(String::from_utf8_lossy(&f.data).into_owned()));
                Ok(Value::from(if me.0.is_empty() { String::new() } else { crate::yaml::to_yaml(&m) }))
            })),
            "AsSecrets" => method(Rc::new(move |_| {
                let m = me.by_base_name(|f| Value::from(base64::engine::general_purpose::STANDARD.encode(&f.data)));
                Ok(Value::from(if me.0.is_empty() { String::new() } else { crate::yaml::to_yaml(&m) }))
            })),
            _ => None,
        }
    }

    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        let mut files: Vec<&File> = self.0.iter().collect();
        files.sort_by(|a, b| a.name.cmp(&b.name));
        let bytes = |d: &[u8]| Value::from(d.iter().map(|b| Value::Int(i64::from(*b))).collect::<Vec<_>>());
        Some(files.into_iter().map(|f| (Value::from(f.name.as_str()), bytes(&f.data))).collect())
    }

    fn print(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|f| format!("{}:[{}]", f.name, f.data.iter().map(u8::to_string).collect::<Vec<_>>().join(" ")))
            .collect();
        format!("map[{}]", parts.join(" "))
    }
}

/// gobwas/glob with `/` as the separator: `*` and `?` stay within a path segment, `**` crosses them.
pub fn glob(pattern: &str, name: &str) -> bool {
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') if p.get(1) == Some(&'*') => (0..=n.len()).any(|i| go(&p[2..], &n[i..])),
            Some('*') => (0..=n.len()).take_while(|&i| i == 0 || n[i - 1] != '/').any(|i| go(&p[1..], &n[i..])),
            Some('?') => n.first().is_some_and(|c| *c != '/') && go(&p[1..], &n[1..]),
            Some(c) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    go(&p, &n)
}

/// A struct of named fields printed as Go prints it: `{v1 v2 …}` or its `String()`.
pub struct Fields {
    pub type_name: &'static str,
    pub fields: Vec<(&'static str, Value)>,
    /// What `String()` returns, if the type has it.
    pub string: Option<String>,
}

impl Object for Fields {
    fn type_name(&self) -> &str {
        self.type_name
    }

    fn member(&self, name: &str) -> Option<Member> {
        self.fields.iter().find(|(n, _)| *n == name).map(|(_, v)| Member::Field(v.clone()))
    }

    fn print(&self) -> String {
        match &self.string {
            Some(s) => s.clone(),
            None => format!("{{{}}}", self.fields.iter().map(|(_, v)| v.print()).collect::<Vec<_>>().join(" ")),
        }
    }
}

/// The API versions a cluster serves (`.Capabilities.APIVersions`), `group/version` and
/// `group/version/Kind`.
pub struct VersionSet(pub Vec<String>);

impl Object for VersionSet {
    fn type_name(&self) -> &str {
        "chartutil.VersionSet"
    }

    fn member(&self, name: &str) -> Option<Member> {
        let versions = self.0.clone();
        match name {
            "Has" => Some(Member::Method(Rc::new(move |a| {
                Ok(Value::Bool(versions.iter().any(|v| Some(v.as_str()) == a.first().and_then(Value::as_str))))
            }))),
            _ => None,
        }
    }

    fn print(&self) -> String {
        format!("[{}]", self.0.join(" "))
    }

    fn entries(&self) -> Option<Vec<(Value, Value)>> {
        Some(self.0.iter().enumerate().map(|(i, v)| (Value::Int(i as i64), Value::from(v.as_str()))).collect())
    }
}

/// The versions `helm template` (3.17) assumes without a cluster: client-go's known group versions.
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1alpha1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1alpha1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "certificates.k8s.io/v1alpha1",
    "coordination.k8s.io/v1alpha2",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1beta2",
    "flowcontrol.apiserver.k8s.io/v1beta3",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1alpha1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "resource.k8s.io/v1beta1",
    "resource.k8s.io/v1alpha3",
    "scheduling.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "storagemigration.k8s.io/v1alpha1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// What the cluster is, as templates see it.
#[derive(Clone, Debug)]
pub struct Capabilities {
    /// `v1.32.0`.
    pub kube_version: String,
    pub api_versions: Vec<String>,
}

impl Default for Capabilities {
    /// `helm template`'s (3.17) assumptions.
    fn default() -> Self {
        Capabilities {
            kube_version: "v1.32.0".into(),
            api_versions: DEFAULT_API_VERSIONS.iter().map(|s| s.to_string()).collect(),
        }
    }
}

impl Capabilities {
    /// `.Capabilities`.
    pub fn value(&self) -> Value {
        let v = self.kube_version.trim_start_matches('v');
        let mut parts = v.split('.');
        let major = parts.next().unwrap_or("").to_string();
        let minor = parts.next().unwrap_or("").to_string();
        let kube = Fields {
            type_name: "chartutil.KubeVersion",
            fields: vec![
                ("Version", Value::from(self.kube_version.as_str())),
                ("Major", Value::from(major)),
                ("Minor", Value::from(minor)),
                ("GitVersion", Value::from(self.kube_version.as_str())),
            ],
            string: Some(self.kube_version.clone()),
        };
        let helm = Fields {
            type_name: "version.BuildInfo",
            fields: vec![
                ("Version", Value::from("v3.17.3")),
                ("GitCommit", Value::from("")),
                ("GitTreeState", Value::from("")),
                ("GoVersion", Value::from("")),
            ],
            string: None,
        };
        let caps = Fields {
            type_name: "chartutil.Capabilities",
            fields: vec![
                ("KubeVersion", Value::Object(Rc::new(kube))),
                ("APIVersions", Value::Object(Rc::new(VersionSet(self.api_versions.clone())))),
                ("HelmVersion", Value::Object(Rc::new(helm))),
            ],
            string: None,
        };
        Value::Object(Rc::new(caps))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_keep_to_segments_unless_doubled() {
        assert!(glob("files/*.conf", "files/a.conf"));
        assert!(!glob("files/*.conf", "files/sub/a.conf"));
        assert!(glob("files/**.conf", "files/sub/a.conf"));
        assert!(glob("?.txt", "a.txt"));
    }
}
