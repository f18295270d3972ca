//! Framing: a frame's length prefix, reading and writing whole frames, and the two frames
//! that carry strings as UTF-8 after their JSON ([`HostFrame::encode`],
//! [`WorkerFrame::decode`]; `docs/protocol.md`, "Texts after the JSON").

use std::io::{self, Read, Write};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::frames::{CallOutcome, CallRequest, HostFrame, HostFrameWire, WorkerFrame};

/// The JSON of a frame whose outcome's text follows it is at most this long; the host writes
/// no raw newline in any frame's JSON, so a newline this early ends such a JSON.
const TEXT_HEAD_BYTES: usize = 128;

impl HostFrame {
    /// Encodes the frame ([`encode`]); a reply whose outcome is a [`CallOutcome::Text`] as
    /// its JSON (`"outcome":{"status":"ok","text":true}`), a newline, and the text's bytes.
    pub fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        let HostFrame::Reply {
            id,
            outcome: CallOutcome::Text { text },
            kept,
        } = self
        else {
            return encode(self);
        };
        let kept = if *kept { r#","kept":true"# } else { "" };
        let head = format!(
            r#"{{"type":"reply","id":{id},"outcome":{{"status":"ok","text":true}}{kept}}}"#
        );
        let len = head.len() + 1 + text.len();
        let mut out = Vec::with_capacity(4 + len);
        out.extend_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(head.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(text.as_bytes());
        Ok(out)
    }

    /// Decodes a frame's body as [`HostFrame::encode`] wrote it.
    pub fn decode(mut body: Vec<u8>) -> Result<HostFrame, serde_json::Error> {
        let head = &body[..body.len().min(TEXT_HEAD_BYTES)];
        let Some(newline) = head.iter().position(|&b| b == b'\n') else {
            return serde_json::from_slice(&body);
        };
        let text = body.split_off(newline + 1);
        let text = String::from_utf8(text).map_err(|e| {
            <serde_json::Error as serde::de::Error>::custom(format!("a reply's text: {e}"))
        })?;
        let w: HostFrameWire = serde_json::from_slice(&body[..newline])?;
        match (w.kind.as_str(), w.id, w.outcome) {
            ("reply", Some(id), Some(outcome)) if outcome.text && outcome.status == "ok" => {
                Ok(HostFrame::Reply {
                    id,
                    outcome: CallOutcome::Text { text },
                    kept: w.kept,
                })
            }
            _ => Err(<serde_json::Error as serde::de::Error>::custom(
                "text after a frame's JSON that is not a reply with text",
            )),
        }
    }
}

/// Encodes one frame: length prefix plus JSON.
///
/// The body is written in place after room for the prefix, so a large frame is not copied.
pub fn encode<T: Serialize>(frame: &T) -> Result<Vec<u8>, serde_json::Error> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut out, frame)?;
    let len = u32::try_from(out.len() - 4).unwrap_or(u32::MAX);
    out[..4].copy_from_slice(&len.to_be_bytes());
    Ok(out)
}

/// Writes one frame and flushes.
pub fn write_frame<W: Write, T: Serialize>(w: &mut W, frame: &T) -> io::Result<()> {
    let bytes = encode(frame).map_err(io::Error::other)?;
    w.write_all(&bytes)?;
    w.flush()
}

/// Why a frame could not be read.
#[derive(Debug)]
pub enum FrameError {
    /// The stream ended cleanly between frames.
    Eof,
    TooLarge {
        len: usize,
        max: usize,
    },
    Io(io::Error),
    Malformed(serde_json::Error),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Eof => write!(f, "end of stream"),
            FrameError::TooLarge { len, max } => {
                write!(f, "frame of {len} bytes exceeds the {max}-byte limit")
            }
            FrameError::Io(e) => write!(f, "i/o error: {e}"),
            FrameError::Malformed(e) => write!(f, "malformed frame: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Checks a length prefix against `max`.
pub fn check_len(header: [u8; 4], max: usize) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(header) as usize;
    if len > max {
        return Err(FrameError::TooLarge { len, max });
    }
    Ok(len)
}

/// What [`WorkerFrame::decode`] reads of a call's JSON besides the frame: which arguments'
/// texts follow it.
#[derive(Deserialize)]
struct TextsWire {
    request: TextsRequest,
}

#[derive(Deserialize)]
struct TextsRequest {
    texts: Vec<(String, usize)>,
}

impl WorkerFrame {
    /// Decodes a frame's body. A tool call's JSON may be followed by a newline and the UTF-8
    /// bytes of some of its arguments' top-level strings, one after another, so that neither
    /// side writes or reads their JSON escapes: the request's `texts` names them in order
    /// (`[key, bytes]`), and each is `null` among the arguments, where its text goes (so the
    /// arguments keep their order).
    pub fn decode(body: &[u8]) -> Result<WorkerFrame, serde_json::Error> {
        use serde::de::Error;
        let mut frames = serde_json::Deserializer::from_slice(body).into_iter::<WorkerFrame>();
        let mut frame = frames
            .next()
            .unwrap_or_else(|| serde_json::from_slice(body))?;
        let end = frames.byte_offset();
        let rest = &body[end..];
        if rest.is_empty() {
            return Ok(frame);
        }
        // Texts follow a newline after a tool call's JSON that names them; anything else
        // after a frame's JSON may only be whitespace (a text may be whitespace too, so the
        // names decide, not the bytes).
        let texts = match (&frame, rest[0]) {
            (
                WorkerFrame::Call {
                    request: CallRequest::Tool { .. },
                    ..
                },
                b'\n',
            ) => serde_json::from_slice::<TextsWire>(&body[..end]).ok(),
            _ => None,
        };
        let Some(wire) = texts else {
            if rest.iter().all(u8::is_ascii_whitespace) {
                return Ok(frame);
            }
            return Err(Error::custom(
                "bytes after a frame's JSON that is not a tool call naming its texts",
            ));
        };
        let WorkerFrame::Call {
            request:
                CallRequest::Tool {
                    args: Value::Object(args),
                    ..
                },
            ..
        } = &mut frame
        else {
            return Err(Error::custom("texts for arguments that are not an object"));
        };
        let mut tail = &rest[1..];
        for (key, len) in wire.request.texts {
            let Some(slot @ Value::Null) = args.get_mut(&key) else {
                return Err(Error::custom(format!(
                    "a text for the argument {key:?}, which is not null"
                )));
            };
            let Some((text, more)) = tail.split_at_checked(len) else {
                return Err(Error::custom("a call's texts are shorter than they say"));
            };
            let text = std::str::from_utf8(text)
                .map_err(|e| Error::custom(format!("the text of argument {key:?}: {e}")))?;
            *slot = Value::String(text.to_owned());
            tail = more;
        }
        if !tail.is_empty() {
            return Err(Error::custom("a call's texts are longer than they say"));
        }
        Ok(frame)
    }
}

/// A frame's body decoded.
pub trait FromBody: Sized {
    fn from_body(body: Vec<u8>) -> Result<Self, serde_json::Error>;
}

impl FromBody for HostFrame {
    fn from_body(body: Vec<u8>) -> Result<Self, serde_json::Error> {
        HostFrame::decode(body)
    }
}

impl FromBody for WorkerFrame {
    fn from_body(body: Vec<u8>) -> Result<Self, serde_json::Error> {
        WorkerFrame::decode(&body)
    }
}

/// Reads one frame (blocking), refusing bodies above `max` bytes before reading them.
pub fn read_frame<R: Read, T: FromBody>(r: &mut R, max: usize) -> Result<T, FrameError> {
    let mut header = [0u8; 4];
    match r.read_exact(&mut header) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(FrameError::Eof),
        Err(e) => return Err(FrameError::Io(e)),
    }
    let len = check_len(header, max)?;
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).map_err(FrameError::Io)?;
    T::from_body(body).map_err(FrameError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frames::{MAX_HOST_FRAME_BYTES, MAX_WORKER_FRAME_BYTES};
    use serde_json::json;

    /// A tool's text follows the reply's JSON as it is, escapes and newlines included; written
    /// as plain JSON it is the same value.
    #[test]
    fn a_text_reply_carries_its_text_after_the_json() {
        let text = "line\none \"quoted\" \\ é 🚀 \u{1} {\"not\": json".repeat(3);
        for kept in [false, true] {
            let frame = HostFrame::Reply {
                id: 9,
                outcome: CallOutcome::Text { text: text.clone() },
                kept,
            };
            let bytes = frame.encode().unwrap();
            let body = &bytes[4..];
            assert_eq!(
                u32::from_be_bytes(bytes[..4].try_into().unwrap()) as usize,
                body.len()
            );
            let head = if kept {
                r#"{"type":"reply","id":9,"outcome":{"status":"ok","text":true},"kept":true}"#
            } else {
                r#"{"type":"reply","id":9,"outcome":{"status":"ok","text":true}}"#
            };
            assert_eq!(body, [head.as_bytes(), b"\n", text.as_bytes()].concat());
            let back: HostFrame = read_frame(&mut &bytes[..], MAX_HOST_FRAME_BYTES).unwrap();
            match back {
                HostFrame::Reply {
                    id: 9,
                    outcome: CallOutcome::Text { text: got },
                    kept: k,
                } => assert!(got == text && k == kept),
                other => panic!("{other:?}"),
            }
            // As plain JSON: an ordinary success with the text as its value.
            let json = encode(&frame).unwrap();
            let back: HostFrame = read_frame(&mut &json[..], MAX_HOST_FRAME_BYTES).unwrap();
            assert_eq!(back, frame);
            let HostFrame::Reply { outcome, .. } = back else {
                panic!()
            };
            assert!(matches!(outcome, CallOutcome::Ok { .. }));
            assert_eq!(outcome.value(), Some(Value::String(text.clone())));
        }
        // A text that is empty; a text outside a frame; text after a frame that is not a text
        // reply; a text that is not UTF-8.
        let empty = HostFrame::Reply {
            id: 1,
            outcome: CallOutcome::Text {
                text: String::new(),
            },
            kept: false,
        };
        let bytes = empty.encode().unwrap();
        assert_eq!(
            read_frame::<_, HostFrame>(&mut &bytes[..], 1 << 20).unwrap(),
            empty
        );
        assert!(
            serde_json::from_str::<HostFrame>(
                r#"{"type":"reply","id":1,"outcome":{"status":"ok","text":true}}"#
            )
            .is_err()
        );
        for body in [
            &b"{\"type\":\"reply\",\"id\":1,\"outcome\":{\"status\":\"ok\",\"value\":1}}\nx"[..],
            &b"{\"type\":\"reply\",\"id\":1,\"outcome\":{\"status\":\"err\",\"text\":true}}\nx"[..],
            &b"{\"type\":\"reply\",\"id\":1,\"outcome\":{\"status\":\"ok\",\"text\":true}}\n\xff"[..],
        ] {
            assert!(HostFrame::decode(body.to_vec()).is_err(), "{body:?}");
        }
    }

    /// A tool call's large strings follow its JSON as they are, in its arguments' order.
    #[test]
    fn a_calls_texts_follow_its_json_and_take_their_places() {
        let a = "line\none \"quoted\" é 🚀 \u{1}";
        let b = "{\"not\": json";
        let head = format!(
            r#"{{"type":"call","id":3,"request":{{"op":"tool","name":"mcp__s__t","args":{{"a":null,"n":1,"b":null}},"texts":[["b",{}],["a",{}]]}}}}"#,
            b.len(),
            a.len()
        );
        let body = [head.as_bytes(), b"\n", b.as_bytes(), a.as_bytes()].concat();
        let frame = WorkerFrame::decode(&body).unwrap();
        let WorkerFrame::Call {
            id: 3,
            request: CallRequest::Tool { args, .. },
            tail: false,
        } = &frame
        else {
            panic!("{frame:?}")
        };
        assert_eq!(args, &json!({"a": a, "n": 1, "b": b}));
        assert_eq!(
            args.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["a", "n", "b"]
        );
        let mut framed = (body.len() as u32).to_be_bytes().to_vec();
        framed.extend_from_slice(&body);
        let read: WorkerFrame = read_frame(&mut &framed[..], MAX_WORKER_FRAME_BYTES).unwrap();
        assert_eq!(read, frame);
        // Plain JSON, with whitespace after it, as before.
        let plain = br#"{"type":"log","level":"log","text":"x"}"#;
        assert!(WorkerFrame::decode(plain).is_ok());
        assert!(WorkerFrame::decode(&[&plain[..], b" \n"].concat()).is_ok());
        let call = |args: &str, texts: &str, tail: &[u8]| {
            let head = format!(
                r#"{{"type":"call","id":1,"request":{{"op":"tool","name":"t","args":{args},"texts":{texts}}}}}"#
            );
            WorkerFrame::decode(&[head.as_bytes(), b"\n", tail].concat())
        };
        assert!(call(r#"{"a":null}"#, r#"[["a",2]]"#, b"hi").is_ok());
        // A text of whitespace is a text, not whitespace after the JSON.
        for blank in [&b"   "[..], b"\n\n", b"\t"] {
            let frame = call(
                r#"{"a":null}"#,
                &format!(r#"[["a",{}]]"#, blank.len()),
                blank,
            );
            let Ok(WorkerFrame::Call {
                request: CallRequest::Tool { args, .. },
                ..
            }) = frame
            else {
                panic!("{frame:?}")
            };
            assert_eq!(args["a"], std::str::from_utf8(blank).unwrap());
        }
        for (args, texts, tail) in [
            (r#"{"a":1}"#, r#"[["a",2]]"#, &b"hi"[..]),
            (r#"{"b":null}"#, r#"[["a",2]]"#, b"hi"),
            (r#"{"a":null}"#, r#"[["a",3]]"#, b"hi"),
            (r#"{"a":null}"#, r#"[["a",1]]"#, b"hi"),
            (r#"{"a":null}"#, r#"[["a",2]]"#, b"\xff\xfe"),
            (r#"{"a":null}"#, r#"[]"#, b"hi"),
            (r#"[null]"#, r#"[["a",2]]"#, b"hi"),
        ] {
            assert!(call(args, texts, tail).is_err(), "{args} {texts} {tail:?}");
        }
        assert!(WorkerFrame::decode(&[&plain[..], b"\nhi"].concat()).is_err());
        assert!(WorkerFrame::decode(&[&plain[..], b"x"].concat()).is_err());
        assert!(WorkerFrame::decode(b"").is_err());
    }

    #[test]
    fn oversized_frame_is_refused_before_reading_the_body() {
        let header = (MAX_WORKER_FRAME_BYTES as u32 + 1).to_be_bytes();
        let err =
            read_frame::<_, WorkerFrame>(&mut &header[..], MAX_WORKER_FRAME_BYTES).unwrap_err();
        assert!(matches!(err, FrameError::TooLarge { .. }), "{err}");
    }

    #[test]
    fn garbage_is_malformed_and_empty_is_eof() {
        let mut bytes = 3u32.to_be_bytes().to_vec();
        bytes.extend_from_slice(b"{{{");
        assert!(matches!(
            read_frame::<_, WorkerFrame>(&mut &bytes[..], 100),
            Err(FrameError::Malformed(_))
        ));
        assert!(matches!(
            read_frame::<_, WorkerFrame>(&mut &[][..], 100),
            Err(FrameError::Eof)
        ));
    }
}
