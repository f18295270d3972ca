//! The loader's errors: a `${VAR}` reference that cannot be expanded ([`ExpandError`]), a
//! server entry that is skipped and why ([`EntryError`], with its `oauth` object's
//! [`OAuthEntryError`]), and settings the server refuses to start on ([`SettingsError`]).
//! Shared by the config modules; it depends only on `read`'s [`ReadError`].

use std::path::PathBuf;

use serde_json::Value;

use super::read::ReadError;

/// A reference in a config value that cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("environment variable {0} is not set")]
    Unset(String),
    #[error("unclosed ${{ in \"{0}\"")]
    Unclosed(String),
    #[error("\"${{{0}}}\" is not a variable reference")]
    NotReference(String),
}

/// Why a server entry is skipped.
#[derive(Debug, thiserror::Error)]
pub enum EntryError {
    #[error("a server name must be non-empty and contain no spaces or control characters")]
    Name,
    #[error("an entry must be an object, not {0}")]
    NotObject(Value),
    #[error("{0}")]
    Shape(#[from] serde_json::Error),
    #[error(transparent)]
    Expand(#[from] ExpandError),
    /// A reference in the value of `key` (of `env` or the headers).
    #[error("{key}: {error}")]
    ExpandAt { key: String, error: ExpandError },
    #[error("env_http_headers is for HTTP servers, not stdio ones")]
    HeadersOnStdio,
    #[error("env_vars: {0} is not a variable name or {{name, source = \"local\"}}")]
    EnvVar(Value),
    #[error("\"command\" is missing")]
    NoCommand,
    /// The URL as shown (its secrets masked).
    #[error("url \"{0}\" is not an http(s) URL")]
    NotHttp(String),
    #[error("unknown transport type \"{0}\"")]
    UnknownTransport(String),
    #[error("transport type \"{0}\" needs a \"url\"")]
    NoUrl(String),
    #[error("oauth: {0}")]
    OAuth(#[from] OAuthEntryError),
    #[error("{0} must be a number of seconds above 0, at most 86400")]
    Seconds(&'static str),
    #[error("timeout must be milliseconds, not {0}")]
    TimeoutMs(Value),
    #[error("openapi: {0}")]
    OpenApi(#[from] OpenApiEntryError),
}

/// An OpenAPI entry (`"type": "openapi"`) that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OpenApiEntryError {
    #[error(
        "\"spec\" is missing: give the OpenAPI document's path (relative to this config file) or its https URL"
    )]
    NoSpec,
    #[error("{key}: {error}")]
    Expand {
        key: &'static str,
        error: ExpandError,
    },
    /// The URL as shown (its secrets masked).
    #[error("{key}: \"{url}\" is not an http(s) URL with a host")]
    NotHttp { key: &'static str, url: String },
    #[error(
        "auth: {0}; write one of {{\"bearer\": \"${{TOKEN}}\"}}, {{\"apiKey\": {{\"name\", \"in\", \"value\"}}}}, {{\"basic\": {{\"username\", \"password\"}}}}, {{\"oauth2ClientCredentials\": {{\"tokenUrl\", \"clientId\", \"clientSecret\", \"scopes\"}}}}"
    )]
    Auth(String),
    #[error("auth.apiKey.in must be header, query or cookie, not \"{0}\"")]
    ApiKeyIn(String),
    #[error("{0} is empty (is its environment variable set to a value?)")]
    EmptyCredential(&'static str),
    #[error("allowAddresses: {0} (give addresses or ranges, such as 127.0.0.1 or 10.0.0.0/8)")]
    AllowAddresses(policy::error::NetRuleError),
}

/// An entry's `oauth` object that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OAuthEntryError {
    #[error("{key}: {error}")]
    Expand {
        key: &'static str,
        error: ExpandError,
    },
    #[error("scopes: {0} is not a scope name")]
    Scope(Value),
    #[error("scopes: expected a list of strings, got {0}")]
    Scopes(Value),
}

/// Settings that cannot be used: the server refuses to start on them.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// A section the policy validates.
    #[error(transparent)]
    Policy(#[from] policy::error::SettingError),
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    #[error("poolSize {0} is above the maximum of 64")]
    PoolSize(usize),
    #[error("poolMax {0} is above the maximum of 64")]
    PoolMax(usize),
    #[error("poolMemoryMb {0} is outside 16..=1048576")]
    PoolMemory(u64),
    #[error("check.memoryMb {0} is out of range: give between 64 and 1048576 (MiB; default 1024)")]
    CheckMemory(u64),
    #[error("poolShrinkAfterMs must be between 100 and 3600000")]
    PoolShrinkAfter,
    #[error(
        "store.maxBytesPerClient {0} is out of range: give between 1024 and 1099511627776 \
         (bytes; default 67108864)"
    )]
    StoreBytes(u64),
    /// An entry of `directTools` that can pin nothing, or would pin everything.
    #[error("directTools: {0}")]
    DirectTool(String),
    /// An entry of `trustedProjects` (`setting` names it).
    #[error("{setting}: \"{}\" is not an absolute path", path.display())]
    NotAbsolute {
        setting: &'static str,
        path: PathBuf,
    },
    #[error("{var}={value:?} is not a number")]
    EnvNumber { var: &'static str, value: String },
    #[error("{var}={value:?} must be 1/0, true/false or yes/no")]
    EnvSwitch { var: &'static str, value: String },
    /// The file `$var` names is not there.
    #[error("{var} names {}, which is not a file", path.display())]
    NotAFile { var: &'static str, path: PathBuf },
    #[error("settings file {} {error}", path.display())]
    Read { path: PathBuf, error: ReadError },
    #[error("settings file {}: {error}", path.display())]
    In {
        path: PathBuf,
        error: Box<SettingsError>,
    },
    /// `trustedProjects` in a project's file (`user` is the user's file, as shown).
    #[error(
        "\"{setting}\" is read only from the user settings file ({user}) or ${var}, never from a project's {file}; move it there"
    )]
    TrustInProject {
        setting: &'static str,
        user: String,
        var: &'static str,
        file: &'static str,
    },
    #[error("settings files {user} and {} merged: {error}", project.display())]
    Merged {
        user: String,
        project: PathBuf,
        error: Box<SettingsError>,
    },
}

/// A client config file whose entries cannot be read.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The file's format (as named to the user) and the parser's complaint.
    #[error("not valid {format}: {reason}")]
    Invalid {
        format: &'static str,
        reason: String,
    },
}
