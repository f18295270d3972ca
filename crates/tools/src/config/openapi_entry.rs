//! An OpenAPI entry (`"type": "openapi"`) validated into [`Transport::OpenApi`]: its
//! document (a file, relative to the config file's directory, or an http(s) URL), base URL,
//! server variables, credential (`auth`), the special addresses it may reach
//! (`allowAddresses`) and the directory its `$ref`s may read (`refsDirectory`). Every value
//! may reference the environment (`${VAR}`); credentials should.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::error::{ExpandError, OpenApiEntryError};
use super::spec::{ApiKeyIn, DocumentLocation, OpenApiAuth, OpenApiSpec, Transport, mask_url};

/// The parts of an entry an OpenAPI source reads, as written.
pub(super) struct RawOpenApi<'a> {
    pub spec: Option<&'a str>,
    pub base_url: Option<&'a str>,
    pub server_variables: &'a BTreeMap<String, String>,
    pub auth: Option<&'a Value>,
    pub allow_addresses: &'a [String],
    pub refs_directory: Option<&'a Path>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
enum RawAuth {
    Bearer(String),
    ApiKey(RawApiKey),
    Basic(RawBasic),
    #[serde(rename = "oauth2ClientCredentials")]
    ClientCredentials(RawClientCredentials),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApiKey {
    name: Option<String>,
    #[serde(rename = "in")]
    location: Option<String>,
    value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBasic {
    username: String,
    password: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawClientCredentials {
    token_url: Option<String>,
    client_id: String,
    client_secret: String,
    #[serde(default)]
    scopes: Vec<String>,
}

fn http_url(url: &str, key: &'static str) -> Result<(), OpenApiEntryError> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        _ => Err(OpenApiEntryError::NotHttp {
            key,
            url: mask_url(url),
        }),
    }
}

/// Validates an OpenAPI entry; `dir` is the config file's directory.
pub(super) fn validate(
    raw: RawOpenApi<'_>,
    dir: &Path,
    ex: &dyn Fn(&str) -> Result<String, ExpandError>,
) -> Result<Transport, OpenApiEntryError> {
    let at = |key: &'static str| move |error| OpenApiEntryError::Expand { key, error };
    let spec = raw.spec.ok_or(OpenApiEntryError::NoSpec)?;
    let spec = ex(spec).map_err(at("spec"))?;
    let document = if spec.starts_with("http://") || spec.starts_with("https://") {
        http_url(&spec, "spec")?;
        DocumentLocation::Url(spec)
    } else if spec.contains("://") {
        return Err(OpenApiEntryError::NotHttp {
            key: "spec",
            url: mask_url(&spec),
        });
    } else {
        DocumentLocation::File(dir.join(spec))
    };
    let base_url = match raw.base_url {
        Some(u) => {
            let u = ex(u).map_err(at("baseUrl"))?;
            http_url(&u, "baseUrl")?;
            Some(u)
        }
        None => None,
    };
    let server_variables = raw
        .server_variables
        .iter()
        .map(|(k, v)| Ok((k.clone(), ex(v).map_err(at("serverVariables"))?)))
        .collect::<Result<BTreeMap<_, _>, OpenApiEntryError>>()?;
    let auth = match raw.auth {
        None | Some(Value::Null) => None,
        Some(v) => Some(auth(v, ex)?),
    };
    // Checked here so a typo is a load-time error, not a refused request.
    policy::access::Reach::of_addresses(raw.allow_addresses)
        .map_err(OpenApiEntryError::AllowAddresses)?;
    let refs_directory = raw.refs_directory.map(|d| dir.join(d));
    Ok(Transport::OpenApi(Box::new(OpenApiSpec {
        document,
        base_url,
        server_variables,
        auth,
        allow_addresses: raw.allow_addresses.to_vec(),
        refs_directory,
    })))
}

fn auth(
    v: &Value,
    ex: &dyn Fn(&str) -> Result<String, ExpandError>,
) -> Result<OpenApiAuth, OpenApiEntryError> {
    let raw: RawAuth =
        serde_json::from_value(v.clone()).map_err(|e| OpenApiEntryError::Auth(e.to_string()))?;
    let at = |key: &'static str| move |error| OpenApiEntryError::Expand { key, error };
    let non_empty = |v: String, key: &'static str| {
        if v.trim().is_empty() {
            Err(OpenApiEntryError::EmptyCredential(key))
        } else {
            Ok(v)
        }
    };
    Ok(match raw {
        RawAuth::Bearer(t) => OpenApiAuth::Bearer(non_empty(
            ex(&t).map_err(at("auth.bearer"))?,
            "auth.bearer",
        )?),
        RawAuth::ApiKey(k) => OpenApiAuth::ApiKey {
            name: k
                .name
                .map(|n| ex(&n))
                .transpose()
                .map_err(at("auth.apiKey.name"))?,
            location: match k
                .location
                .as_deref()
                .map(str::to_ascii_lowercase)
                .as_deref()
            {
                None => None,
                Some("header") => Some(ApiKeyIn::Header),
                Some("query") => Some(ApiKeyIn::Query),
                Some("cookie") => Some(ApiKeyIn::Cookie),
                Some(other) => return Err(OpenApiEntryError::ApiKeyIn(other.to_string())),
            },
            value: non_empty(
                ex(&k.value).map_err(at("auth.apiKey.value"))?,
                "auth.apiKey.value",
            )?,
        },
        RawAuth::Basic(b) => OpenApiAuth::Basic {
            username: ex(&b.username).map_err(at("auth.basic.username"))?,
            password: non_empty(
                ex(&b.password).map_err(at("auth.basic.password"))?,
                "auth.basic.password",
            )?,
        },
        RawAuth::ClientCredentials(c) => {
            let token_url = c
                .token_url
                .map(|u| ex(&u))
                .transpose()
                .map_err(at("auth.oauth2ClientCredentials.tokenUrl"))?;
            if let Some(u) = &token_url {
                http_url(u, "auth.oauth2ClientCredentials.tokenUrl")?;
            }
            OpenApiAuth::ClientCredentials {
                token_url,
                client_id: ex(&c.client_id).map_err(at("auth.oauth2ClientCredentials.clientId"))?,
                client_secret: non_empty(
                    ex(&c.client_secret)
                        .map_err(at("auth.oauth2ClientCredentials.clientSecret"))?,
                    "auth.oauth2ClientCredentials.clientSecret",
                )?,
                scopes: c.scopes,
            }
        }
    })
}

/// Where a document file is, for messages.
pub(crate) fn shown(location: &DocumentLocation) -> String {
    match location {
        DocumentLocation::File(p) => p.display().to_string(),
        DocumentLocation::Url(u) => mask_url(u),
    }
}
