//! The credentials an operation asks for: its requirements (or the document's) and the
//! schemes they name, so the host can attach an API key, a bearer token, basic credentials
//! or an OAuth2 client-credentials token.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::refs::DocId;
use crate::spec::Spec;

/// Schemes that must all be satisfied together. An empty one means anonymous access is
/// allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityRequirement {
    pub schemes: Vec<SecurityUse>,
}

/// One scheme a requirement names, with the scopes it asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecurityUse {
    /// The scheme's name under `components.securitySchemes`.
    pub name: String,
    pub scopes: Vec<String>,
    pub scheme: SecurityScheme,
}

/// How a credential is attached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecurityScheme {
    ApiKey {
        name: String,
        location: ApiKeyLocation,
    },
    Bearer {
        format: Option<String>,
    },
    Basic,
    OAuth2 {
        /// `flows.clientCredentials.tokenUrl`, when that flow is offered.
        client_credentials_token_url: Option<String>,
    },
    OpenIdConnect {
        url: String,
    },
    /// A scheme this crate does not know how to attach (`mutualTLS`, other `http` schemes).
    Other {
        kind: String,
    },
    /// Named by a requirement but not defined under `components.securitySchemes`.
    Undefined,
}

/// Where an API key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyLocation {
    Header,
    Query,
    Cookie,
}

impl Spec {
    pub(crate) fn security(&self, op: &Value) -> Vec<SecurityRequirement> {
        let root = &self.docs.root;
        let Some(requirements) = op
            .get("security")
            .or_else(|| root.get("security"))
            .and_then(Value::as_array)
        else {
            return Vec::new();
        };
        let schemes = self.security_schemes();
        requirements
            .iter()
            .filter_map(Value::as_object)
            .map(|req| SecurityRequirement {
                schemes: req
                    .iter()
                    .map(|(name, scopes)| SecurityUse {
                        name: name.clone(),
                        scopes: scopes
                            .as_array()
                            .map(|s| {
                                s.iter()
                                    .filter_map(Value::as_str)
                                    .map(str::to_owned)
                                    .collect()
                            })
                            .unwrap_or_default(),
                        scheme: schemes
                            .get(name)
                            .cloned()
                            .unwrap_or(SecurityScheme::Undefined),
                    })
                    .collect(),
            })
            .collect()
    }

    /// The document's `components.securitySchemes`, by name.
    pub fn security_schemes(&self) -> BTreeMap<String, SecurityScheme> {
        let Some(map) = self
            .docs
            .root
            .pointer("/components/securitySchemes")
            .and_then(Value::as_object)
        else {
            return BTreeMap::new();
        };
        map.iter()
            .map(|(name, raw)| {
                let at = format!("/components/securitySchemes/{}", escape(name));
                let scheme = match self.docs.deref(&DocId::Root, raw, &at) {
                    Ok((_, s)) => security_scheme(s),
                    Err(e) => SecurityScheme::Other {
                        kind: format!("unresolved ({e})"),
                    },
                };
                (name.clone(), scheme)
            })
            .collect()
    }
}

fn security_scheme(s: &Value) -> SecurityScheme {
    let text = |k: &str| s.get(k).and_then(Value::as_str).map(str::to_owned);
    let kind = text("type").unwrap_or_default();
    match kind.as_str() {
        "apiKey" => {
            let location = match text("in").as_deref() {
                Some("query") => ApiKeyLocation::Query,
                Some("cookie") => ApiKeyLocation::Cookie,
                _ => ApiKeyLocation::Header,
            };
            SecurityScheme::ApiKey {
                name: text("name").unwrap_or_default(),
                location,
            }
        }
        "http" => match text("scheme").map(|s| s.to_ascii_lowercase()).as_deref() {
            Some("bearer") => SecurityScheme::Bearer {
                format: text("bearerFormat"),
            },
            Some("basic") => SecurityScheme::Basic,
            other => SecurityScheme::Other {
                kind: format!("http {}", other.unwrap_or("")),
            },
        },
        "oauth2" => SecurityScheme::OAuth2 {
            client_credentials_token_url: s
                .pointer("/flows/clientCredentials/tokenUrl")
                .and_then(Value::as_str)
                .map(str::to_owned),
        },
        "openIdConnect" => SecurityScheme::OpenIdConnect {
            url: text("openIdConnectUrl").unwrap_or_default(),
        },
        _ => SecurityScheme::Other { kind },
    }
}

fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
