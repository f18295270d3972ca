//! OpenAPI 3.0 and 3.1 documents (JSON or YAML) as MCP tools, on the host's side: this
//! crate reads a document within bounds, lists its operations cheaply, builds one tool
//! (name, description, input and output JSON Schemas, annotations, credentials asked for)
//! on demand, turns a tool call's arguments into an [`HttpRequest`], and a response into
//! JSON, text or binary content. It sends nothing: the host performs the requests.
//!
//! Untrusted documents are expected. Parsing caps bytes, nesting, values and YAML alias
//! expansion; `$ref`s stay inside the document unless the caller grants a directory
//! ([`RefPolicy::Directory`]), and never reach URLs; cycles become `$defs`; names and
//! descriptions lose invisible characters; path arguments cannot leave their segment nor
//! the base URL's path; header values cannot carry CR, LF or NUL.
//!
//! Swagger 2.0 is refused ([`SpecError::Swagger2`]): convert it first (swagger2openapi).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let doc = br#"{"openapi": "3.1.0", "info": {"title": "t", "version": "1"},
//!   "paths": {"/pets/{id}": {"get": {"operationId": "getPet",
//!     "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string"}}],
//!     "responses": {"200": {"description": "ok"}}}}}}"#;
//! let spec = openapi::Spec::parse(doc, openapi::Format::Sniff)?;
//! assert_eq!(spec.operations()[0].name, "getPet");
//! let op = spec.operation("getPet")?;
//! let base = url::Url::parse("https://api.example.com/v1")?;
//! let request = openapi::build_request(&op, &base, &serde_json::json!({"id": "a/b"}))?;
//! assert_eq!(request.url.as_str(), "https://api.example.com/v1/pets/a%2Fb");
//! # Ok(())
//! # }
//! ```

mod error;
mod names;
mod operation;
mod parse;
mod refs;
mod request;
mod response;
mod schema;
mod security;
mod spec;

pub use error::{OperationError, RefError, RequestError, ResponseError, SpecError};
pub use names::MAX_NAME;
pub use operation::{Annotations, Operation};
pub use parse::{Format, Limits};
pub use refs::RefPolicy;
pub use request::{HttpRequest, build_request};
pub use response::{ResponseBody, ResponseLimits, interpret_response};
pub use security::{ApiKeyLocation, SecurityRequirement, SecurityScheme, SecurityUse};
pub use spec::{Method, OperationSummary, ParseOptions, Spec, Version, Warning};
