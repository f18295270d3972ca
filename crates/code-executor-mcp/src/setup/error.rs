//! Why a client file cannot be edited (`EditError`): the JSON text editor (`json_text`) and
//! the edits (`edit`) both fail with it.

/// Why a file cannot be edited.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("not valid JSON: {0}")]
    Json(String),
    #[error("not valid TOML: {0}")]
    Toml(String),
    #[error("`{0}` is not an object")]
    NotAnObject(String),
    #[error(
        "it has comments or trailing commas, which a rewrite would drop; add the entry by hand:\n{0}"
    )]
    Comments(String),
}
