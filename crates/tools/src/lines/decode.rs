//! How each side decodes a line: a large tool result of an upstream's straight to its type
//! ([`Decode::decode_directly`]), everything else as rmcp does.

use rmcp::service::{RxJsonRpcMessage, ServiceRole};
use serde_json::Value;

/// Lines at least this long are first decoded by [`Decode::decode_directly`].
pub(super) const DIRECT_DECODE_BYTES: usize = 64 << 10;

/// How a side decodes a large line of its peer's when the line has the one shape that makes
/// lines large: an upstream's tool result. rmcp decodes a message through two untagged enums
/// (its JSON-RPC message, then the union of every result), buffering it and copying its
/// strings at each: for a 6 MB result three times the work of decoding the result's own type
/// (about 15 ms against 5). `None`: the line is decoded as usual, as are all lines of a
/// server's client.
pub trait Decode: ServiceRole {
    /// Whether this side checks the JSON-RPC envelope of what arrives and answers a line
    /// that is not JSON: the server's side, whose peer is a client that may be anything; an
    /// upstream's stray output is only logged.
    const CHECKS_ENVELOPE: bool = false;

    fn decode_directly(_line: &[u8]) -> Option<RxJsonRpcMessage<Self>> {
        None
    }
}

impl Decode for rmcp::RoleServer {
    const CHECKS_ENVELOPE: bool = true;
}

impl Decode for rmcp::RoleClient {
    /// A response whose keys are `jsonrpc`, `id` and `result` only, and whose result's keys
    /// are those of a completed `CallToolResult` only: rmcp would decode it to the same
    /// message (no result type before `CallToolResult` in its union takes such an object,
    /// or every tool result would be taken for it), so the two decodings cannot disagree.
    fn decode_directly(line: &[u8]) -> Option<RxJsonRpcMessage<Self>> {
        use rmcp::model::{
            CallToolResult, ContentBlock, JsonRpcMessage, JsonRpcResponse, JsonRpcVersion2_0,
            MetaObject, RequestId, ResultType, ServerResult,
        };
        use serde::Deserialize;
        /// A present `null` is `Some(Null)`, as rmcp keeps it.
        fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
            Value::deserialize(d).map(Some)
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        struct ToolResult {
            #[serde(default)]
            result_type: Option<ResultType>,
            content: Vec<ContentBlock>,
            #[serde(default, deserialize_with = "present")]
            structured_content: Option<Value>,
            #[serde(default)]
            is_error: Option<bool>,
            #[serde(default, rename = "_meta")]
            meta: Option<MetaObject>,
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Response {
            jsonrpc: JsonRpcVersion2_0,
            id: RequestId,
            result: ToolResult,
        }
        let r: Response = serde_json::from_slice(line).ok()?;
        if r.result
            .result_type
            .as_ref()
            .is_some_and(|t| !t.is_complete())
        {
            return None;
        }
        let mut result = CallToolResult::success(r.result.content);
        result.result_type = r.result.result_type;
        result.structured_content = r.result.structured_content;
        result.is_error = r.result.is_error;
        result.meta = r.result.meta;
        Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: r.jsonrpc,
            id: r.id,
            result: ServerResult::CallToolResult(result),
        }))
    }
}
