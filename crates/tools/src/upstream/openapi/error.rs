//! Why an OpenAPI source could not start ([`StartError`]) or a call could not be made
//! ([`CallError`]). Neither ever holds a credential: URLs are shown with their query values
//! masked, and the pool's redactor takes out any configured secret that still gets through.

use std::net::IpAddr;

/// Why the document could not be read or the source set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error("reading the OpenAPI document {path}: {error}")]
    Read {
        path: String,
        error: crate::config::read::ReadError,
    },
    #[error("fetching the OpenAPI document {url}: {error}")]
    Fetch { url: String, error: Box<CallError> },
    #[error("the OpenAPI document {at}: {error}")]
    Parse {
        at: String,
        error: openapi::SpecError,
    },
    #[error(
        "the base URL: {0} (set \"baseUrl\" in the entry, or \"serverVariables\" for the document's servers)"
    )]
    BaseUrl(openapi::RequestError),
    #[error(
        "{url} {why}; requests go there only if the entry allows it: \"allowAddresses\": [\"{addr}\"]"
    )]
    SpecialAddress {
        url: String,
        addr: IpAddr,
        why: &'static str,
    },
    #[error("the base URL {0} is not http(s), or carries credentials (use \"auth\")")]
    BaseScheme(String),
    #[error("allowAddresses: {0}")]
    AllowAddresses(policy::error::NetRuleError),
    #[error("cannot make an HTTP client: {0}")]
    Client(reqwest::Error),
    #[error(
        "auth: the document defines no {0} scheme to place the credential; give \"name\" and \"in\""
    )]
    NoScheme(&'static str),
    #[error("the document was being read when the source stopped")]
    Abandoned,
}

/// Why one call failed before it had an HTTP answer to show.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    #[error("no operation is named `{0}` in this document")]
    UnknownOperation(String),
    #[error(transparent)]
    Operation(#[from] openapi::OperationError),
    #[error(transparent)]
    Request(#[from] openapi::RequestError),
    #[error("{url}: {addr} is {why}, which this entry may not reach (allowAddresses){}", redirect_note(*.redirected))]
    Special {
        url: String,
        addr: IpAddr,
        why: &'static str,
        redirected: bool,
    },
    #[error("{url}: only http(s) URLs without credentials are requested{}", redirect_note(*.redirected))]
    Scheme { url: String, redirected: bool },
    #[error("{url}: more than {max} redirects")]
    Redirects { url: String, max: u32 },
    #[error("{url} redirected to an invalid location: {error}")]
    Location { url: String, error: url::ParseError },
    #[error("{url}: {reason}")]
    Network { url: String, reason: String },
    #[error("{url}: the response is larger than {max} bytes; it was not read further")]
    TooLarge { url: String, max: usize },
    #[error("{url}: the header {name} cannot carry the credential")]
    Header { url: String, name: String },
    #[error("the token endpoint {url} answered {status}: {excerpt}")]
    Token {
        url: String,
        status: u16,
        excerpt: String,
    },
    #[error("the token endpoint {0} gave no access_token")]
    NoToken(String),
}

fn redirect_note(redirected: bool) -> &'static str {
    if redirected {
        " (reached by a redirect)"
    } else {
        ""
    }
}

/// A URL as shown in messages: query values masked (an API key in the query is a credential).
pub(crate) fn shown(url: &url::Url) -> String {
    crate::config::spec::mask_url(url.as_str())
}
