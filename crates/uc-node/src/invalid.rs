//! A value the node was given and cannot use (a node config file's entry, a query parameter of a
//! kubelet request): which one, and why.

/// What is wrong, with the path of the value (`sinceTime`, `node.json: allowlist[0].program`).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    pub field: String,
    pub message: String,
}

impl Invalid {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Invalid {
        Invalid { field: field.into(), message: message.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_starts_with_the_field() {
        assert_eq!(
            Invalid::new("limitBytes", "must be greater than 0").to_string(),
            "limitBytes: must be greater than 0"
        );
    }
}
