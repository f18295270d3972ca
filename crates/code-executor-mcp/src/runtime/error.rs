//! The errors of a run as code and clients see them (`ErrorInfo { name, message }`).

use worker_protocol::ErrorInfo;

/// An error named `name` (the class code sees) with `message`.
pub(crate) fn error(name: &str, message: impl Into<String>) -> ErrorInfo {
    ErrorInfo {
        name: name.into(),
        message: message.into(),
        stack: None,
    }
}
