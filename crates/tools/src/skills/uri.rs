//! `skill://` URIs: the segments we put in them, percent-encoded, and the addresses of the
//! skills upstream servers serve, as we serve them again: `skill://upstream/<server>/<their
//! skill path>/<file>` for their `skill://<skill path>/<file>`, so the origin stays in the
//! address and two servers' same-named skills never meet.
//!
//! Every path taken apart here is decoded first and checked after: [`segment`] decodes one
//! segment once, refuses what is still encoded after that (`%252E`: encoded twice, which a
//! server decoding again would read as `.`), and refuses any segment that is not a plain name
//! (`..`, `.`, empty, a `/` or `\` inside, NUL or another control character), whatever its
//! spelling (`%2E%2E`, `.%2E`, `%2e.`, `%2F`, `%5C`, `%00`).

use rmcp::model::{Skill, SkillResources};

use super::beneath::plain_segment;

pub const SCHEME: &str = "skill://";
const UPSTREAM: &str = "skill://upstream/";

/// A path segment with every byte outside RFC 3986's unreserved set percent-encoded.
pub fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn decode(segment: &str) -> Option<String> {
    let b = segment.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Why a path or address under `skill://` is refused; each says what to send instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PathError {
    #[error("{raw:?} is not valid percent-encoding of UTF-8 text")]
    BadEncoding { raw: String },
    #[error("{raw:?} is percent-encoded twice; encode each segment once")]
    EncodedTwice { raw: String },
    #[error(
        "{raw:?} (decoded {decoded:?}) is not a plain name: no empty, `.` or `..` segment, no \
         `/`, `\\` or control character"
    )]
    NotPlain { raw: String, decoded: String },
    #[error("the path is empty")]
    Empty,
    #[error("{rel:?} is absolute; give a path inside the skill")]
    Absolute { rel: String },
    #[error("{rel:?} has a query or fragment")]
    Query { rel: String },
    #[error("{uri} names no file of a skill")]
    NoFile { uri: String },
    #[error("{server:?} is not a server's name")]
    BadServer { server: String },
    #[error("{uri}: {why}")]
    In {
        uri: String,
        #[source]
        why: Box<PathError>,
    },
}

/// One segment of a path, decoded and checked: `Err` says why it is refused.
pub fn segment(raw: &str) -> Result<String, PathError> {
    let decoded = decode(raw).ok_or_else(|| PathError::BadEncoding { raw: raw.into() })?;
    if still_encoded(&decoded) {
        return Err(PathError::EncodedTwice { raw: raw.into() });
    }
    if !plain_segment(&decoded) {
        return Err(PathError::NotPlain {
            raw: raw.into(),
            decoded,
        });
    }
    Ok(decoded)
}

/// Whether `s` still holds a `%XX` escape.
fn still_encoded(s: &str) -> bool {
    s.as_bytes()
        .windows(3)
        .any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}

/// The segments of a relative path (`/`-separated), each decoded and checked by
/// [`segment`]; a path that is empty, absolute or has a query or fragment is refused.
pub fn segments(rel: &str) -> Result<Vec<String>, PathError> {
    if rel.is_empty() {
        return Err(PathError::Empty);
    }
    if rel.starts_with('/') {
        return Err(PathError::Absolute { rel: rel.into() });
    }
    if rel.contains(['?', '#']) {
        return Err(PathError::Query { rel: rel.into() });
    }
    rel.split('/').map(segment).collect()
}

/// Our address of `server`'s `uri` (`None` for a scheme other than `skill://`).
pub fn ours(server: &str, uri: &str) -> Option<String> {
    let rest = uri.strip_prefix(SCHEME)?;
    Some(format!("{UPSTREAM}{}/{rest}", encode(server)))
}

/// The server and its own address of one of our `skill://upstream/...` URIs: `None` when
/// `uri` is not one, `Err` (why) when its path is refused (see [`segments`]). The address
/// passed on is the one asked for, its every segment checked.
pub fn theirs(uri: &str) -> Option<Result<(String, String), PathError>> {
    let rest = uri.strip_prefix(UPSTREAM)?;
    let Some((server, path)) = rest.split_once('/') else {
        return Some(Err(PathError::NoFile { uri: uri.into() }));
    };
    Some(checked_theirs(server, path).map_err(|why| PathError::In {
        uri: uri.into(),
        why: Box::new(why),
    }))
}

fn checked_theirs(server: &str, path: &str) -> Result<(String, String), PathError> {
    let server = decode(server)
        .filter(|s| !s.is_empty() && !still_encoded(s) && !s.chars().any(char::is_control))
        .ok_or_else(|| PathError::BadServer {
            server: server.into(),
        })?;
    segments(path)?;
    Ok((server, format!("{SCHEME}{path}")))
}

/// `server`'s skill entry with every address ours (`None` when it is not under `skill://`).
pub fn rewrite(server: &str, skill: &Skill) -> Option<Skill> {
    let mut out = skill.clone();
    out.uri = ours(server, &skill.uri)?;
    if let SkillResources::Files(files) = &mut out.resources {
        for f in files.iter_mut() {
            f.uri = ours(server, &f.uri)?;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_round_trip_and_hostile_ones_are_refused() {
        for s in ["a b", "ünï", "%41", "x?y#z", "SKILL.md", "my/server"] {
            assert_eq!(decode(&encode(s)).as_deref(), Some(s));
        }
        assert_eq!(decode("%zz"), None);
        assert_eq!(decode("%C3"), None);
    }

    #[test]
    fn upstream_addresses_round_trip() {
        let ours = ours("my server", "skill://acme/refunds/SKILL.md").unwrap();
        assert_eq!(ours, "skill://upstream/my%20server/acme/refunds/SKILL.md");
        assert_eq!(
            theirs(&ours),
            Some(Ok((
                "my server".into(),
                "skill://acme/refunds/SKILL.md".into()
            )))
        );
        assert_eq!(super::ours("s", "github://o/r/SKILL.md"), None);
        assert_eq!(theirs("skill://user/x/SKILL.md"), None);
        assert!(matches!(theirs("skill://upstream/s/"), Some(Err(_))));
        assert!(matches!(theirs("skill://upstream/s"), Some(Err(_))));
    }

    /// Every spelling of a step out, an absolute path or a separator, in every position.
    const HOSTILE: &[&str] = &[
        "..",
        ".",
        "",
        "%2E%2E",
        "%2e%2e",
        ".%2E",
        "%2E.",
        "%2e.",
        ".%2e",
        "%2E",
        "%252E%252E",
        "%25252E%25252E",
        ".%252E",
        "a%2Fb",
        "a%2fb",
        "..%2F..",
        "%2F",
        "%2Fetc%2Fpasswd",
        "a%5Cb",
        "..%5C..",
        "a\\b",
        "..\\..",
        "%00",
        "a%00.md",
        "a%0A",
        "%C0%AE%C0%AE",
        "%zz",
        "%2",
        "%",
    ];

    #[test]
    fn a_hostile_segment_is_refused_in_every_spelling() {
        for bad in HOSTILE {
            assert!(segment(bad).is_err(), "{bad:?}");
        }
        for good in [
            "SKILL.md",
            "a%20b.md",
            "..a",
            "a..",
            "...x",
            "%C3%BC.md",
            "x%25y",
        ] {
            assert!(segment(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn a_hostile_path_is_refused_wherever_the_segment_is() {
        for bad in HOSTILE {
            for path in [
                bad.to_string(),
                format!("{bad}/x"),
                format!("a/{bad}"),
                format!("a/{bad}/b"),
                format!("a/b/{bad}"),
            ] {
                assert!(segments(&path).is_err(), "{path:?}");
                let uri = format!("skill://upstream/fx/{path}");
                assert!(
                    matches!(theirs(&uri), Some(Err(_))),
                    "{uri}: {:?}",
                    theirs(&uri)
                );
            }
        }
        for bad in ["/etc/passwd", "a//b", "a/", "/", "a?x=1", "a#b"] {
            assert!(segments(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(
            theirs("skill://upstream/%252E/x/SKILL.md"),
            Some(Err(_))
        ));
    }
}
