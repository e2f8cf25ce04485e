//! An authenticated identity.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The user the kubeconfig's token authenticates as.
pub const ADMIN: &str = "uc-admin";

/// An authenticated identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct User {
    /// User name (`system:serviceaccount:<ns>:<name>` for service accounts).
    pub name: String,
    /// UID, when the authenticator knows one.
    pub uid: String,
    /// Groups, `system:authenticated` included.
    pub groups: Vec<String>,
    /// Extra attributes (a service account token's pod, for instance).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// The admin identity of the kubeconfig.
    pub fn admin() -> Self {
        Self {
            name: ADMIN.into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..Default::default()
        }
    }

    /// A service account.
    pub fn service_account(namespace: &str, name: &str, uid: &str) -> Self {
        Self {
            name: service_account_user(namespace, name),
            uid: uid.into(),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
            extra: BTreeMap::new(),
        }
    }

    /// Whether RBAC is bypassed for this user.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == "system:masters")
    }

    /// `authentication.k8s.io/v1 UserInfo`.
    pub fn user_info(&self) -> Value {
        let mut info = json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            info["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            info["extra"] = json!(self.extra);
        }
        info
    }
}

/// The user name of a service account.
pub fn service_account_user(namespace: &str, name: &str) -> String {
    format!("system:serviceaccount:{namespace}:{name}")
}
