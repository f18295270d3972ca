//! What a worker sends the host, kept within what the host takes: a tool call's large string
//! arguments sent as they are after the frame's JSON instead of quoted by QuickJS's
//! `JSON.stringify`, and calls and
//! failed runs that would pass the host's frame limit turned into the code's own errors
//! (a host that meets an oversized frame ends the worker as broken).

use rquickjs::{Ctx, Exception};
use worker_protocol::{ErrorInfo, MAX_WORKER_FRAME_BYTES, RunOutcome};

/// How much of an error's message and of its stack a failed run reports (code writes both).
const MAX_ERROR_TEXT_BYTES: usize = 1024 * 1024;

/// `outcome` with an error's message and stack cut to [`MAX_ERROR_TEXT_BYTES`] each (saying
/// so), so the frame stays under the host's limit whatever code threw.
pub(crate) fn within_frame(outcome: RunOutcome) -> RunOutcome {
    let cut = |text: String| {
        if text.len() <= MAX_ERROR_TEXT_BYTES {
            return text;
        }
        let mut end = MAX_ERROR_TEXT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!(
            "{}... (cut: {:.1} MiB in all)",
            &text[..end],
            text.len() as f64 / 1048576.0
        )
    };
    match outcome {
        RunOutcome::Err { error } => RunOutcome::Err {
            error: ErrorInfo {
                name: cut(error.name),
                message: cut(error.message),
                stack: error.stack.map(cut),
            },
        },
        ok => ok,
    }
}

/// A tool call whose frame would pass the host's limit (which the host treats as a broken
/// protocol): the code's error instead, thrown where it called.
pub(crate) fn call_too_large(
    ctx: &Ctx<'_>,
    id: u64,
    request_len: usize,
) -> Option<rquickjs::Error> {
    let frame = format!(r#"{{"type":"call","id":{id},"request":}}"#).len() + request_len;
    (frame > MAX_WORKER_FRAME_BYTES).then(|| {
        Exception::throw_range(
            ctx,
            &format!(
                "the tool call's arguments are {:.1} MiB as JSON; a call carries at most 16 MiB: \
                 pass less per call (split the data over several calls)",
                request_len as f64 / 1048576.0
            ),
        )
    })
}

/// A tool request the prelude encoded (`json`, each of its arguments' large top-level strings
/// replaced by `marker` and the string's index, as that argument's value) made ready to
/// follow a call frame with those strings after its JSON ([`worker_protocol::WorkerFrame::decode`]):
/// each marker becomes `null`, and the request names the strings in `texts` (`keys[i]` is
/// the argument of `bigs[i]`). A marker counts only as a whole string right after a `:`
/// (inside a JSON string a quote is escaped, so `:"` cannot occur there); `None` unless every
/// string is placed exactly once.
pub(crate) fn with_texts(
    json: &str,
    marker: &str,
    bigs: &[String],
    keys: &[String],
) -> Option<Vec<u8>> {
    let quoted = serde_json::to_string(marker).ok()?;
    let head = format!(":{}", &quoted[..quoted.len() - 1]);
    let body = json.strip_suffix('}')?;
    let mut out = Vec::with_capacity(json.len() + 32 * bigs.len());
    let mut placed = vec![false; bigs.len()];
    let mut rest = body;
    while let Some(at) = rest.find(&head) {
        let after = &rest[at + head.len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        if after.as_bytes().get(digits) != Some(&b'"') {
            return None;
        }
        let i: usize = after[..digits].parse().ok()?;
        if std::mem::replace(placed.get_mut(i)?, true) {
            return None;
        }
        out.extend_from_slice(&rest.as_bytes()[..=at]);
        out.extend_from_slice(b"null");
        rest = &after[digits + 1..];
    }
    if !placed.iter().all(|p| *p) || keys.len() != bigs.len() {
        return None;
    }
    out.extend_from_slice(rest.as_bytes());
    out.extend_from_slice(br#","texts":["#);
    for (i, (key, big)) in keys.iter().zip(bigs).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'[');
        serde_json::to_writer(&mut out, key).ok()?;
        out.extend_from_slice(format!(",{}]", big.len()).as_bytes());
    }
    out.extend_from_slice(b"]}");
    Some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn large_strings_leave_their_places_null_and_are_named() {
        let m = "\u{0}big-n0nce-";
        let bigs = ["a\"b\\c\n".to_string(), "é🚀".to_string()];
        let keys = ["z".to_string(), "x\"".to_string()];
        let json =
            r#"{"op":"tool","args":{"x\"":"\u0000big-n0nce-1","y":1,"z":"\u0000big-n0nce-0"}}"#;
        let out = String::from_utf8(with_texts(json, m, &bigs, &keys).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"{"op":"tool","args":{"x\"":null,"y":1,"z":null},"texts":[["z",6],["x\"",6]]}"#
        );
        // A marker missing, used twice, out of range, or not a whole value; a key missing:
        // refused.
        let one = r#"{"args":{"x":"\u0000big-n0nce-0"}}"#;
        assert!(with_texts(one, m, &bigs, &keys).is_none());
        assert!(with_texts(one, m, &bigs[..1], &[]).is_none());
        let twice = r#"{"args":{"x":"\u0000big-n0nce-0","y":"\u0000big-n0nce-0"}}"#;
        assert!(with_texts(twice, m, &bigs[..1], &keys[..1]).is_none());
        let range = r#"{"args":{"x":"\u0000big-n0nce-7"}}"#;
        assert!(with_texts(range, m, &bigs[..1], &keys[..1]).is_none());
        let inside = r#"{"args":{"x":"\u0000big-n0nce-0 and more"}}"#;
        assert!(with_texts(inside, m, &bigs[..1], &keys[..1]).is_none());
        // Text that only looks like a marker inside a string (its quote escaped) stays.
        let quoted = r#"{"args":{"x":"\u0000big-n0nce-0","y":"a:\"\u0000big-n0nce-0\""}}"#;
        let out =
            String::from_utf8(with_texts(quoted, m, &bigs[..1], &keys[..1]).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"{"args":{"x":null,"y":"a:\"\u0000big-n0nce-0\""},"texts":[["z",6]]}"#
        );
    }
}
