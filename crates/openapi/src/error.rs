//! The crate's errors: each says what is wrong and where (a JSON pointer into the document,
//! a `$ref` as written, an argument's name).

use thiserror::Error;

/// A document that cannot be used at all.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SpecError {
    #[error("the document is {len} bytes, more than the limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
    #[error("the document nests deeper than {max} levels at {pointer}")]
    TooDeep { max: usize, pointer: String },
    #[error(
        "the document expands to more than {max} values (YAML aliases repeated too often?) near {pointer}"
    )]
    TooManyNodes { max: usize, pointer: String },
    #[error(
        "the document's strings expand to more than {max} bytes (YAML aliases?) near {pointer}"
    )]
    TooManyBytes { max: usize, pointer: String },
    #[error("the document is not valid JSON: {0}")]
    Json(String),
    #[error("the document is not valid YAML: {0}")]
    Yaml(String),
    #[error("the document is not an object at its top level")]
    NotAnObject,
    #[error(
        "this is a Swagger 2.0 document (`swagger: {version}`); only OpenAPI 3.0 and 3.1 are read. Convert it first, e.g. `npx swagger2openapi spec.json -o openapi.json`"
    )]
    Swagger2 { version: String },
    #[error("the document has no `openapi` field (/openapi): it is not an OpenAPI 3 document")]
    NotOpenApi,
    #[error("unsupported OpenAPI version `{0}` at /openapi: only 3.0.x and 3.1.x are read")]
    UnsupportedVersion(String),
    #[error("{pointer}: {message}")]
    Invalid { pointer: String, message: String },
}

/// A `$ref` that cannot be followed.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RefError {
    #[error(
        "`$ref: {reference}` at {at} points outside the document, and external references are refused (grant a directory with RefPolicy::Directory to read files from it)"
    )]
    ExternalRefused { reference: String, at: String },
    #[error("`$ref: {reference}` at {at} is a URL; references to URLs are always refused")]
    UrlRefused { reference: String, at: String },
    #[error("`$ref: {reference}` at {at} is refused: {why}")]
    PathRefused {
        reference: String,
        at: String,
        why: String,
    },
    #[error("`$ref: {reference}` at {at} points nowhere (no value at {pointer})")]
    Dangling {
        reference: String,
        at: String,
        pointer: String,
    },
    #[error("`$ref: {reference}` at {at} is not a valid JSON pointer: {why}")]
    BadPointer {
        reference: String,
        at: String,
        why: String,
    },
    #[error(
        "`$ref: {reference}` at {at} starts a chain of references longer than {max} (or a loop)"
    )]
    ChainTooLong {
        reference: String,
        at: String,
        max: usize,
    },
    #[error("`$ref: {reference}` at {at}: the referenced file could not be read: {why}")]
    File {
        reference: String,
        at: String,
        why: String,
    },
}

/// An operation that cannot be turned into a tool.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum OperationError {
    #[error("no operation is named `{0}` (by tool name or operationId)")]
    NotFound(String),
    #[error(transparent)]
    Ref(#[from] RefError),
    #[error("{pointer}: {message}")]
    Invalid { pointer: String, message: String },
    #[error(
        "the tool's schema would exceed {max} values (a schema too large or references too deep) at {pointer}"
    )]
    SchemaTooLarge { max: usize, pointer: String },
}

/// Arguments that cannot be turned into an HTTP request.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestError {
    #[error("the arguments must be a JSON object, not {0}")]
    NotAnObject(&'static str),
    #[error("missing required argument(s): {}", .0.join(", "))]
    MissingRequired(Vec<String>),
    #[error("unknown argument(s): {}; accepted: {}", .unknown.join(", "), if .accepted.is_empty() { "none".to_owned() } else { .accepted.join(", ") })]
    UnknownArguments {
        unknown: Vec<String>,
        accepted: Vec<String>,
    },
    #[error("argument `{name}`: {message}")]
    BadArgument { name: String, message: String },
    #[error(
        "path parameter `{name}` would change the path (empty, `.` or `..`); refused to keep the request inside its path"
    )]
    PathTraversal { name: String },
    #[error("header `{name}`: values may not contain CR, LF, NUL or other control characters")]
    HeaderValue { name: String },
    #[error("the request would leave the base URL's path `{base}` (built `{built}`)")]
    EscapesBase { base: String, built: String },
    #[error("server URL: {0}")]
    Server(String),
    #[error("the request body is not supported: {0}")]
    Body(String),
}

/// A response the caller should report as a failure.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseError {
    #[error("HTTP {status}: {excerpt}")]
    HttpStatus { status: u16, excerpt: String },
    #[error("the response body is {len} bytes, more than the limit of {max} bytes")]
    TooLarge { len: usize, max: usize },
}
