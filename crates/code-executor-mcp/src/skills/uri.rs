//! `skill://` URIs: the segments we put in them, percent-encoded, and the addresses of the
//! skills upstream servers serve, as we serve them again: `skill://upstream/<server>/<their
//! skill path>/<file>` for their `skill://<skill path>/<file>`, so the origin stays in the
//! address and two servers' same-named skills never meet.

use rmcp::model::{Skill, SkillResources};

pub(crate) const SCHEME: &str = "skill://";
const UPSTREAM: &str = "skill://upstream/";

/// A path segment with every byte outside RFC 3986's unreserved set percent-encoded.
pub(crate) fn encode(segment: &str) -> String {
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

pub(crate) fn decode(segment: &str) -> Option<String> {
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

/// Our address of `server`'s `uri` (`None` for a scheme other than `skill://`).
pub(crate) fn ours(server: &str, uri: &str) -> Option<String> {
    let rest = uri.strip_prefix(SCHEME)?;
    Some(format!("{UPSTREAM}{}/{rest}", encode(server)))
}

/// The server and its own address of one of our `skill://upstream/...` URIs.
pub(crate) fn theirs(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix(UPSTREAM)?;
    let (server, path) = rest.split_once('/')?;
    if path.is_empty() {
        return None;
    }
    Some((decode(server)?, format!("{SCHEME}{path}")))
}

/// `server`'s skill entry with every address ours (`None` when it is not under `skill://`).
pub(crate) fn rewrite(server: &str, skill: &Skill) -> Option<Skill> {
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
            Some(("my server".into(), "skill://acme/refunds/SKILL.md".into()))
        );
        assert_eq!(super::ours("s", "github://o/r/SKILL.md"), None);
        assert_eq!(theirs("skill://user/x/SKILL.md"), None);
        assert_eq!(theirs("skill://upstream/s/"), None);
    }
}
