//! The frames the host and a worker exchange over the worker's inherited pipes.
//!
//! Every frame is a 4-byte big-endian length followed by that many bytes of UTF-8 JSON (a
//! text reply and a tool call may carry strings after their JSON: `framing`).
//! The host writes [`HostFrame`]s to the worker's stdin and reads [`WorkerFrame`]s from its
//! stdout. The Python shim speaks the same encoding; `docs/protocol.md` is the reference.
//!
//! The host treats every byte from a worker as untrusted: [`MAX_WORKER_FRAME_BYTES`] caps a
//! frame before its body is read, and a frame that does not decode ends that worker.
//!
//! Large values pass through without being decoded and encoded again: a reply's value is raw
//! JSON ([`RawValue`]), which the host writes as it got it (an upstream's JSON text) and the
//! JavaScript worker hands to `JSON.parse` as it arrived; [`RawWorkerFrame`] lets the worker
//! send a tool call's request and a run's result the same way.

mod errors;
mod frames;
mod framing;

pub use errors::CallError;
pub use frames::{
    AccessInfo, CallOutcome, CallRequest, Dialect, EngineLimits, ErrorInfo, FetchRequest,
    FetchResponse, HostFrame, LlmMessage, LogLevel, MAX_HOST_FRAME_BYTES, MAX_VALUE_DEPTH,
    MAX_WORKER_FRAME_BYTES, PROTOCOL_VERSION, RawRunOutcome, RawWorkerFrame, ResultShape,
    RunOutcome, RunRequest, ToolBinding, WorkerFrame, camel, has_lone_surrogate_escape, ident,
    json_depth, json_string_len,
};
pub use framing::{FrameError, FromBody, check_len, encode, read_frame, write_frame};
pub use serde_json::value::RawValue;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn json_depth_counts_levels_outside_strings_and_stops_past_its_bound() {
        for (text, depth) in [
            ("1", 0),
            ("[]", 1),
            (r#"{"a":[1,{"b":[]}]}"#, 4),
            (r#"["[[[{{", "\\", "\"[", {}]"#, 2),
            (r#"[[1],[2],[[3]]]"#, 3),
            (r#""[[[""#, 0),
        ] {
            assert_eq!(json_depth(text.as_bytes(), 1000), depth, "{text}");
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(
            json_depth(deep.as_bytes(), MAX_VALUE_DEPTH),
            MAX_VALUE_DEPTH + 1
        );
        assert_eq!(json_depth(deep.as_bytes(), usize::MAX), 100_000);
    }

    #[test]
    fn values_as_deep_as_the_limit_decode_in_every_frame_that_carries_them() {
        let nested = |levels: usize| format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
        // A tool call's arguments (their own object is the first level), a request's
        // values, a run's result.
        let args = format!(r#"{{"a":{}}}"#, nested(MAX_VALUE_DEPTH - 1));
        let frames = [
            format!(
                r#"{{"type":"call","id":1,"request":{{"op":"tool","name":"t","args":{args}}}}}"#
            ),
            format!(
                r#"{{"type":"call","id":1,"request":{{"op":"store","key":"k","value":{}}}}}"#,
                nested(MAX_VALUE_DEPTH)
            ),
            format!(
                r#"{{"type":"done","outcome":{{"status":"ok","result":{}}}}}"#,
                nested(MAX_VALUE_DEPTH)
            ),
        ];
        for frame in frames {
            assert!(
                WorkerFrame::decode(frame.as_bytes()).is_ok(),
                "{}",
                &frame[..80]
            );
            // The scan that workers run agrees: one level for the request or outcome around.
            assert!(json_depth(frame.as_bytes(), usize::MAX) <= MAX_VALUE_DEPTH + 3);
        }
    }

    #[test]
    fn camel_case_forms_of_names() {
        for (name, form) in [
            ("read_file", "readFile"),
            ("list_directory_with_sizes", "listDirectoryWithSizes"),
            ("get-page", "getPage"),
            ("get.page", "getPage"),
            ("thinkdeep", "thinkdeep"),
            ("_private__x", "privateX"),
            ("9lives", "_9lives"),
            ("naïve-tool", "naVeTool"),
            ("", ""),
        ] {
            assert_eq!(camel(name), form, "{name}");
        }
    }

    #[test]
    fn frames_round_trip_with_their_documented_json() {
        let frame = WorkerFrame::Call {
            id: 7,
            request: CallRequest::Tool {
                server: None,
                name: "mcp__fs__read".into(),
                args: json!({"path": "/a"}),
                shape: ResultShape::Structured,
            },
            tail: false,
        };
        let bytes = encode(&frame).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes[4..]).unwrap(),
            json!({"type": "call", "id": 7, "request": {"op": "tool", "name": "mcp__fs__read", "args": {"path": "/a"}}})
        );
        let back: WorkerFrame = read_frame(&mut &bytes[..], MAX_WORKER_FRAME_BYTES).unwrap();
        assert_eq!(back, frame);
    }

    /// A tool call's `shape`: `text` is written and read back; the default (`structured`) is
    /// not written, and a request without the field (an older worker's, a hand-written one)
    /// reads as the default.
    #[test]
    fn a_tool_calls_shape_round_trips_and_defaults_to_structured() {
        let text = CallRequest::Tool {
            server: Some("fs".into()),
            name: "read_file".into(),
            args: json!({"path": "/a"}),
            shape: ResultShape::Text,
        };
        let json = serde_json::to_value(&text).unwrap();
        assert_eq!(
            json,
            json!({"op": "tool", "server": "fs", "name": "read_file", "args": {"path": "/a"}, "shape": "text"})
        );
        assert_eq!(serde_json::from_value::<CallRequest>(json).unwrap(), text);
        let structured = CallRequest::Tool {
            server: None,
            name: "mcp__fs__read_file".into(),
            args: json!({}),
            shape: ResultShape::Structured,
        };
        let json = serde_json::to_value(&structured).unwrap();
        assert_eq!(json.get("shape"), None, "{json}");
        let old: CallRequest =
            serde_json::from_str(r#"{"op":"tool","name":"mcp__fs__read_file","args":{}}"#).unwrap();
        assert_eq!(old, structured);
        let explicit: CallRequest = serde_json::from_str(
            r#"{"op":"tool","name":"mcp__fs__read_file","args":{},"shape":"structured"}"#,
        )
        .unwrap();
        assert_eq!(explicit, structured);
        // An unknown shape is refused, not taken as the default.
        assert!(
            serde_json::from_str::<CallRequest>(r#"{"op":"tool","name":"x","shape":"markdown"}"#)
                .is_err()
        );
        // Through a frame, as a worker sends it.
        let frame = WorkerFrame::Call {
            id: 3,
            request: text,
            tail: false,
        };
        let bytes = encode(&frame).unwrap();
        let back: WorkerFrame = read_frame(&mut &bytes[..], MAX_WORKER_FRAME_BYTES).unwrap();
        assert_eq!(back, frame);
    }

    #[test]
    fn a_kept_reply_and_a_result_that_refers_to_it() {
        let frame = HostFrame::Reply {
            id: 5,
            outcome: CallOutcome::Ok {
                value: RawValue::from_string(r#""big""#.into()).unwrap(),
            },
            kept: true,
        };
        let bytes = encode(&frame).unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes[4..]).unwrap(),
            r#"{"type":"reply","id":5,"outcome":{"status":"ok","value":"big"},"kept":true}"#
        );
        let back: HostFrame = read_frame(&mut &bytes[..], MAX_HOST_FRAME_BYTES).unwrap();
        assert!(matches!(
            back,
            HostFrame::Reply {
                id: 5,
                kept: true,
                ..
            }
        ));
        let done = WorkerFrame::Done {
            outcome: RunOutcome::Reply { id: 5 },
        };
        let bytes = encode(&done).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes[4..]).unwrap(),
            json!({"type": "done", "outcome": {"status": "reply", "id": 5}})
        );
        let back: WorkerFrame = read_frame(&mut &bytes[..], MAX_WORKER_FRAME_BYTES).unwrap();
        assert_eq!(back, done);
    }

    #[test]
    fn a_tail_call_and_the_kept_answer_that_sends_nothing() {
        let call = WorkerFrame::Call {
            id: 9,
            request: CallRequest::Tool {
                server: Some("fs".into()),
                name: "read".into(),
                args: json!({}),
                shape: ResultShape::Structured,
            },
            tail: true,
        };
        let bytes = encode(&call).unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes[4..]).unwrap(),
            json!({"type": "call", "id": 9, "request": {"op": "tool", "server": "fs", "name": "read", "args": {}}, "tail": true})
        );
        let back = WorkerFrame::decode(&bytes[4..]).unwrap();
        assert_eq!(back, call);
        // A call that is not a tail call says nothing of it.
        let WorkerFrame::Call { id, request, .. } = call else {
            panic!("a call")
        };
        let plain = encode(&WorkerFrame::Call {
            id,
            request,
            tail: false,
        })
        .unwrap();
        assert!(!std::str::from_utf8(&plain[4..]).unwrap().contains("tail"));
        let kept = HostFrame::Kept { id: 9 };
        let bytes = kept.encode().unwrap();
        assert_eq!(
            std::str::from_utf8(&bytes[4..]).unwrap(),
            r#"{"type":"kept","id":9}"#
        );
        assert_eq!(HostFrame::decode(bytes[4..].to_vec()).unwrap(), kept);
        assert!(HostFrame::decode(br#"{"type":"kept"}"#.to_vec()).is_err());
    }

    #[test]
    fn a_json_strings_length_is_counted_without_writing_it() {
        let nasty = "q\"b\\n\nr\rt\tb\u{8}f\u{c}z\u{0}\u{1f}\u{7f}é🚀".repeat(50);
        // Blocks full of what is counted (each block's counts are bytes).
        let (quotes, controls) = ("\"".repeat(1000), "\u{1}\n".repeat(700));
        for text in ["", "plain", "\u{1}", "\"", &nasty, &quotes, &controls] {
            assert_eq!(
                json_string_len(text),
                serde_json::to_string(text).unwrap().len(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn replies_carry_raw_json_both_ways() {
        let text = r#"{"b": [1, 2.50, "é\u00e9"], "a": {"deep": [[[null]]]}}"#;
        let frame = HostFrame::Reply {
            id: 3,
            outcome: CallOutcome::Ok {
                value: RawValue::from_string(text.into()).unwrap(),
            },
            kept: false,
        };
        let bytes = encode(&frame).unwrap();
        // Written as it came: spacing, number forms and escapes untouched.
        let body = std::str::from_utf8(&bytes[4..]).unwrap();
        assert_eq!(
            body,
            format!(r#"{{"type":"reply","id":3,"outcome":{{"status":"ok","value":{text}}}}}"#)
        );
        let back: HostFrame = read_frame(&mut &bytes[..], MAX_HOST_FRAME_BYTES).unwrap();
        match &back {
            HostFrame::Reply {
                id: 3,
                outcome: CallOutcome::Ok { value },
                kept: false,
            } => assert_eq!(value.get(), text),
            other => panic!("{other:?}"),
        }
        let err = HostFrame::Reply {
            id: 4,
            kept: false,
            outcome: CallOutcome::Err {
                error: ErrorInfo {
                    name: "ToolError".into(),
                    message: "boom".into(),
                    stack: None,
                },
            },
        };
        let bytes = encode(&err).unwrap();
        assert_eq!(
            read_frame::<_, HostFrame>(&mut &bytes[..], 1 << 20).unwrap(),
            err
        );
        let run = HostFrame::Run(RunRequest {
            code: "1".into(),
            tools: vec![ToolBinding {
                server: "s".into(),
                tool: Some("t".into()),
            }],
            limits: EngineLimits {
                memory_bytes: 1,
                stack_bytes: 2,
                max_log_bytes: 3,
            },
            persist: true,
            access: None,
            args: Some(serde_json::json!({"a": [1, "x"]})),
            seed: Some(u64::MAX - 7),
        });
        let bytes = encode(&run).unwrap();
        assert_eq!(
            read_frame::<_, HostFrame>(&mut &bytes[..], 1 << 20).unwrap(),
            run
        );
        for bad in [
            r#"{"type":"reply","id":1,"outcome":{"status":"maybe"}}"#,
            r#"{"type":"reply","outcome":{"status":"ok","value":1}}"#,
            r#"{"type":"reply","id":1,"outcome":{"status":"err"}}"#,
            r#"{"type":"nope"}"#,
            r#"{"type":"reply","id":1,"outcome":{"status":"ok","value":[1,}}"#,
        ] {
            assert!(serde_json::from_str::<HostFrame>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn raw_worker_frames_are_the_frames_they_stand_for() {
        let request = r#"{"op":"tool","name":"mcp__a__b","args":{"x":"é"}}"#;
        let raw = RawValue::from_string(request.into()).unwrap();
        let bytes = encode(&RawWorkerFrame::Call {
            id: 9,
            request: &raw,
        })
        .unwrap();
        let back: WorkerFrame = read_frame(&mut &bytes[..], MAX_WORKER_FRAME_BYTES).unwrap();
        assert_eq!(
            back,
            WorkerFrame::Call {
                id: 9,
                request: CallRequest::Tool {
                    server: None,
                    name: "mcp__a__b".into(),
                    args: json!({"x": "é"}),
                    shape: ResultShape::Structured,
                },
                tail: false,
            }
        );
        let result = RawValue::from_string(r#"[1,{"a":"b"}]"#.into()).unwrap();
        let bytes = encode(&RawWorkerFrame::Done {
            outcome: RawRunOutcome::Ok { result: &result },
        })
        .unwrap();
        let back: WorkerFrame = read_frame(&mut &bytes[..], MAX_WORKER_FRAME_BYTES).unwrap();
        assert_eq!(
            back,
            WorkerFrame::Done {
                outcome: RunOutcome::Ok {
                    result: json!([1, {"a": "b"}]),
                },
            }
        );
    }

    #[test]
    fn lone_surrogate_escapes_are_found_and_pairs_are_not() {
        let cases = [
            (r#""plain é 🚀""#, false),
            (r#""\ud83d\ude80 pair""#, false),
            (r#""\uD83D\uDE80 pair in capitals""#, false),
            (r#""\ud800""#, true),
            (r#""\udc00 low alone""#, true),
            (r#""\ud800\u0041 high then not low""#, true),
            (r#""\ud800 then text \udc00""#, true),
            (r#""\\ud800 an escaped backslash, then text""#, false),
            (r#""\\\ud800""#, true),
            (r#""\n\t\u0000\u00e9""#, false),
            (r#""\ud83d\ude80\ud800""#, true),
        ];
        for (json, lone) in cases {
            assert_eq!(has_lone_surrogate_escape(json), lone, "{json}");
            // It agrees with what decoding says.
            assert_eq!(serde_json::from_str::<Value>(json).is_err(), lone, "{json}");
        }
        // Cut text ends where it ends.
        assert!(!has_lone_surrogate_escape(r#""ends in a backslash \"#));
        assert!(!has_lone_surrogate_escape(r#""cut \ud8"#));
    }
}
