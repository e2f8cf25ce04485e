//! Karmada's `ResourceInterpreterContext` (config.karmada.io/v1alpha1), the messages of a resource
//! interpreter webhook: what the control plane asks about one object, and the webhook's answer. One home
//! for both sides: the control plane's client (`interpret.rs`) and the interpreter uc serves itself
//! (the multi-cluster ZooKeeper operator's). The objects asked about and the status answered are of any
//! kind.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uc_api::GroupVersionKind;

use crate::plane::CONFIG_API;

/// The kind of the messages.
pub const KIND: &str = "ResourceInterpreterContext";

/// A request or its response.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InterpreterContext {
    pub api_version: String,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request: Option<InterpreterRequest>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<InterpreterResponse>,
}

impl InterpreterContext {
    /// A context carrying `request`.
    pub fn asking(request: InterpreterRequest) -> InterpreterContext {
        InterpreterContext { api_version: CONFIG_API.into(), kind: KIND.into(), request: Some(request), response: None }
    }

    /// A context carrying `response`.
    pub fn answering(response: InterpreterResponse) -> InterpreterContext {
        InterpreterContext {
            api_version: CONFIG_API.into(),
            kind: KIND.into(),
            request: None,
            response: Some(response),
        }
    }
}

/// What the control plane asks about one object (Karmada's `ResourceInterpreterRequest`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InterpreterRequest {
    pub uid: String,
    pub kind: GroupVersionKind,
    pub name: String,
    pub namespace: String,
    /// `InterpretReplica`, `ReviseReplica`, `InterpretStatus`, `InterpretHealth`, …
    pub operation: String,
    /// The object, as the control plane or a member holds it.
    pub object: Value,
    /// `ReviseReplica`'s replicas (Karmada's `desiredReplicas`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// The webhook's answer (Karmada's `ResourceInterpreterResponse`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct InterpreterResponse {
    pub uid: String,
    pub successful: bool,
    /// Why it was not successful.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<RequestStatus>,
    /// A JSON patch, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The status to reflect to the control plane, of the object's own shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_status: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
}

/// Why a request was not answered.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RequestStatus {
    pub code: i32,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_messages_as_karmada_writes_them() {
        let request = InterpreterRequest {
            uid: "u".into(),
            kind: GroupVersionKind { group: "apps".into(), version: "v1".into(), kind: "Deployment".into() },
            name: "d".into(),
            namespace: "ns".into(),
            operation: "ReviseReplica".into(),
            object: json!({"spec": {"replicas": 3}}),
            replicas: Some(2),
        };
        assert_eq!(
            serde_json::to_value(InterpreterContext::asking(request)).unwrap(),
            json!({"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterContext",
                   "request": {"uid": "u", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                               "name": "d", "namespace": "ns", "operation": "ReviseReplica",
                               "object": {"spec": {"replicas": 3}}, "replicas": 2}})
        );
        // An answer reads with what it leaves out absent.
        let answer: InterpreterContext = serde_json::from_value(json!({"response": {"uid": "u", "successful": false,
            "status": {"code": 400, "message": "no"}}}))
        .unwrap();
        let response = answer.response.unwrap();
        assert_eq!((response.successful, response.status.unwrap().message.as_str()), (false, "no"));
        assert_eq!((response.replicas, response.healthy, response.raw_status), (None, None, None));
    }
}
