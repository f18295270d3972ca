//! The catalog's errors: a name that names no server or tool, or more than one
//! ([`NameError`]), and a call target or search it cannot serve ([`CatalogError`]).

use crate::upstream::UpstreamError;

/// A server or tool name that does not name exactly one; the advice fits the asker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// `what` is the kind of name ("server", "tool of server \"x\""); `nearest` lists the
    /// likeliest meant (`names::nearest_list`).
    #[error("no {what} named \"{wanted}\"; nearest: {nearest}")]
    NotFound {
        what: String,
        wanted: String,
        nearest: String,
    },
    #[error("\"{wanted}\" could mean the {what}s {candidates}; use the exact name")]
    Ambiguous {
        what: String,
        wanted: String,
        candidates: String,
    },
    #[error(
        "\"{qualified}\" is not a qualified tool name; write mcp__<server>__<tool>, or {advice}"
    )]
    NotQualified {
        qualified: String,
        advice: &'static str,
    },
    /// A qualified name whose server part names no configured server.
    #[error(
        "unknown tool {qualified}: no MCP server named \"{server}\"; nearest: {nearest}; {advice}"
    )]
    NoServer {
        qualified: String,
        server: String,
        nearest: String,
        advice: &'static str,
    },
    #[error("\"{qualified}\" is ambiguous: {readings}; {advice}")]
    AmbiguousQualified {
        qualified: String,
        readings: String,
        advice: &'static str,
    },
}

/// A call target, schema or search the catalog cannot serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    #[error(transparent)]
    Name(#[from] NameError),
    /// A call target that names no tool, however it was written (`mcp__server__tool`, or the
    /// server and the tool apart): the qualified name asked for, why (with the nearest names)
    /// and where to look.
    #[error("unknown tool {qualified}: {why}; {advice}")]
    UnknownTool {
        qualified: String,
        why: Box<NameError>,
        advice: &'static str,
    },
    /// Refused by the user's client configs: the server is held back, or the tool hidden by
    /// the server's own tool filter (the reason as the upstreams word it).
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error("tool {0} vanished")]
    Vanished(String),
    #[error(
        "detail must be \"names\", \"summary\" or \"full\" (or \"minimal\", \"standard\"), not \"{0}\""
    )]
    Detail(String),
    #[error("invalid cursor \"{0}\"; pass the nextCursor of a previous answer")]
    Cursor(String),
}

/// The runtime and the server still carry these as text.
impl From<CatalogError> for String {
    fn from(e: CatalogError) -> String {
        e.to_string()
    }
}

impl From<NameError> for String {
    fn from(e: NameError) -> String {
        e.to_string()
    }
}
