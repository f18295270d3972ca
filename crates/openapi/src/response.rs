//! A response's status, type and bytes as what the host shows: JSON, text or binary, or an
//! error carrying the status and a bounded excerpt.

use serde_json::Value;

use crate::error::ResponseError;
use crate::names::clean_text;
use crate::operation::is_json;
use crate::parse::{Format, Limits, parse_value};

/// Caps on a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseLimits {
    /// Bodies above this are an error, not truncated (a cut JSON document is not JSON).
    pub max_body_bytes: usize,
    /// Characters of a failed response's body kept in the error.
    pub max_excerpt_chars: usize,
    /// Nesting of a JSON body.
    pub max_json_depth: usize,
}

impl Default for ResponseLimits {
    fn default() -> Self {
        Self {
            max_body_bytes: 8 << 20,
            max_excerpt_chars: 1_000,
            max_json_depth: 100,
        }
    }
}

/// A successful response's body.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseBody {
    /// A JSON type (`application/json`, `+json`) that parsed.
    Json(Value),
    /// Text types, XML, JSON that did not parse, an empty body, or bytes without a type
    /// that are UTF-8.
    Text(String),
    /// Anything else.
    Binary { mime: String, bytes: Vec<u8> },
}

/// What a response means: 2xx bodies by their type, anything else an
/// [`ResponseError::HttpStatus`].
pub fn interpret_response(
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
    limits: &ResponseLimits,
) -> Result<ResponseBody, ResponseError> {
    if !(200..300).contains(&status) {
        let text = String::from_utf8_lossy(
            &body[..body.len().min(limits.max_excerpt_chars.saturating_mul(4))],
        );
        let excerpt = clean_text(text.trim(), limits.max_excerpt_chars);
        return Err(ResponseError::HttpStatus { status, excerpt });
    }
    if body.len() > limits.max_body_bytes {
        return Err(ResponseError::TooLarge {
            len: body.len(),
            max: limits.max_body_bytes,
        });
    }
    let essence = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase())
        .filter(|c| !c.is_empty());
    if body.is_empty() {
        return Ok(ResponseBody::Text(String::new()));
    }
    match essence.as_deref() {
        Some(e) if is_json(e) => {
            let json_limits = Limits {
                max_bytes: limits.max_body_bytes,
                max_depth: limits.max_json_depth,
                ..Limits::default()
            };
            Ok(match parse_value(body, Format::Json, &json_limits) {
                Ok(v) => ResponseBody::Json(v),
                Err(_) => ResponseBody::Text(String::from_utf8_lossy(body).into_owned()),
            })
        }
        Some(e) if is_text(e) => Ok(ResponseBody::Text(
            String::from_utf8_lossy(body).into_owned(),
        )),
        None => Ok(match std::str::from_utf8(body) {
            Ok(text) => ResponseBody::Text(text.to_owned()),
            Err(_) => ResponseBody::Binary {
                mime: "application/octet-stream".to_owned(),
                bytes: body.to_vec(),
            },
        }),
        Some(e) => Ok(ResponseBody::Binary {
            mime: e.to_owned(),
            bytes: body.to_vec(),
        }),
    }
}

fn is_text(essence: &str) -> bool {
    essence.starts_with("text/")
        || essence.ends_with("+xml")
        || matches!(
            essence,
            "application/xml"
                | "application/javascript"
                | "application/x-www-form-urlencoded"
                | "application/yaml"
                | "application/x-yaml"
        )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_by_type() {
        let l = ResponseLimits::default();
        assert_eq!(
            interpret_response(
                200,
                Some("application/json; charset=utf-8"),
                br#"{"a":1}"#,
                &l
            )
            .unwrap(),
            ResponseBody::Json(json!({"a": 1}))
        );
        assert_eq!(
            interpret_response(200, Some("application/vnd.github+json"), b"[1]", &l).unwrap(),
            ResponseBody::Json(json!([1]))
        );
        assert_eq!(
            interpret_response(200, Some("application/json"), b"{not json", &l).unwrap(),
            ResponseBody::Text("{not json".to_owned())
        );
        assert_eq!(
            interpret_response(200, Some("text/plain"), b"hi", &l).unwrap(),
            ResponseBody::Text("hi".to_owned())
        );
        assert_eq!(
            interpret_response(204, Some("application/json"), b"", &l).unwrap(),
            ResponseBody::Text(String::new())
        );
        assert_eq!(
            interpret_response(200, Some("image/png"), b"\x89PNG", &l).unwrap(),
            ResponseBody::Binary {
                mime: "image/png".to_owned(),
                bytes: b"\x89PNG".to_vec()
            }
        );
        assert_eq!(
            interpret_response(200, None, b"\xff\xfe", &l).unwrap(),
            ResponseBody::Binary {
                mime: "application/octet-stream".to_owned(),
                bytes: b"\xff\xfe".to_vec()
            }
        );
    }

    #[test]
    fn failures_carry_status_and_a_bounded_clean_excerpt() {
        let l = ResponseLimits {
            max_excerpt_chars: 10,
            ..ResponseLimits::default()
        };
        let body = format!("not found\u{202E}{}", "x".repeat(10_000));
        match interpret_response(404, Some("text/plain"), body.as_bytes(), &l).unwrap_err() {
            ResponseError::HttpStatus { status, excerpt } => {
                assert_eq!(status, 404);
                assert_eq!(excerpt, "not foundx…");
            }
            other => panic!("{other}"),
        }
        assert!(matches!(
            interpret_response(302, None, b"", &l),
            Err(ResponseError::HttpStatus { status: 302, .. })
        ));
    }

    #[test]
    fn sizes_and_depth_are_capped() {
        let l = ResponseLimits {
            max_body_bytes: 4,
            ..ResponseLimits::default()
        };
        assert_eq!(
            interpret_response(200, Some("text/plain"), b"12345", &l),
            Err(ResponseError::TooLarge { len: 5, max: 4 })
        );
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        let out = interpret_response(
            200,
            Some("application/json"),
            deep.as_bytes(),
            &ResponseLimits::default(),
        )
        .unwrap();
        assert!(
            matches!(out, ResponseBody::Text(_)),
            "too deep JSON is shown as text, not parsed"
        );
    }
}
