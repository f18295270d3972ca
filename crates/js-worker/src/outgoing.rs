//! What a worker sends the host, kept within what the host takes: a tool call's large string
//! arguments quoted here (serde) instead of by QuickJS's `JSON.stringify`, and calls and
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

/// `json` (a request the prelude encoded, each of its large strings replaced by `marker`
/// and the string's index, as an object's value) with each marker replaced by that string's
/// JSON. A marker counts only as a whole string right after a `:` (inside a JSON string a
/// quote is escaped, so `:"` cannot occur there); `None` unless every string is placed
/// exactly once.
pub(crate) fn splice_big_strings(json: &str, marker: &str, bigs: &[String]) -> Option<Vec<u8>> {
    let quoted = serde_json::to_string(marker).ok()?;
    let head = format!(":{}", &quoted[..quoted.len() - 1]);
    let mut out = Vec::with_capacity(
        json.len()
            + bigs
                .iter()
                .map(|b| b.len() + b.len() / 8 + 2)
                .sum::<usize>(),
    );
    let mut placed = vec![false; bigs.len()];
    let mut rest = json;
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
        serde_json::to_writer(&mut out, &bigs[i]).ok()?;
        rest = &after[digits + 1..];
    }
    out.extend_from_slice(rest.as_bytes());
    placed.iter().all(|p| *p).then_some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn spliced_strings_go_exactly_where_their_markers_are() {
        let m = "\u{0}big-n0nce-";
        let bigs = ["a\"b\\c\n".to_string(), "é🚀".to_string()];
        let json =
            r#"{"op":"tool","args":{"x":"\u0000big-n0nce-1","y":1,"z":"\u0000big-n0nce-0"}}"#;
        let out = String::from_utf8(splice_big_strings(json, m, &bigs).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"{"op":"tool","args":{"x":"é🚀","y":1,"z":"a\"b\\c\n"}}"#
        );
        // A marker missing, used twice, out of range, or not a whole value: refused.
        let one = r#"{"args":{"x":"\u0000big-n0nce-0"}}"#;
        assert!(splice_big_strings(one, m, &bigs).is_none());
        let twice = r#"{"args":{"x":"\u0000big-n0nce-0","y":"\u0000big-n0nce-0"}}"#;
        assert!(splice_big_strings(twice, m, &bigs[..1]).is_none());
        let range = r#"{"args":{"x":"\u0000big-n0nce-7"}}"#;
        assert!(splice_big_strings(range, m, &bigs[..1]).is_none());
        let inside = r#"{"args":{"x":"\u0000big-n0nce-0 and more"}}"#;
        assert!(splice_big_strings(inside, m, &bigs[..1]).is_none());
        // Text that only looks like a marker inside a string (its quote escaped) stays.
        let quoted = r#"{"args":{"x":"\u0000big-n0nce-0","y":"a:\"\u0000big-n0nce-0\""}}"#;
        let out = String::from_utf8(splice_big_strings(quoted, m, &bigs[..1]).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"{"args":{"x":"a\"b\\c\n","y":"a:\"\u0000big-n0nce-0\""}}"#
        );
    }
}
