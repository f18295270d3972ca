//! Tests of the line transport.

use super::*;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};

type Server = LineTransport<RoleServer, DuplexStream, DuplexStream>;

/// A server-side transport, the client's end of its input, and its output as lines.
fn server(
    max_line: usize,
) -> (
    Server,
    DuplexStream,
    tokio::io::Lines<BufReader<DuplexStream>>,
) {
    let (client_in, read) = tokio::io::duplex(1 << 20);
    let (write, client_out) = tokio::io::duplex(1 << 20);
    let t = LineTransport::new(read, write, max_line, Arc::new(Unfiltered));
    (t, client_in, BufReader::new(client_out).lines())
}

fn ping(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#)
}

/// An upstream's large tool result decodes directly to what rmcp makes of it; every other
/// shape (another result, a result type that is not complete, a stray key, a request, an
/// error) is left to rmcp.
#[test]
fn a_large_tool_result_decodes_directly_to_what_rmcp_makes_of_it() {
    use rmcp::RoleClient;
    use rmcp::model::ServerResult;
    let big = "she said \"hi\"\n\t é 🚀 \u{1}".repeat(4000);
    let text = json!({"type": "text", "text": big});
    let direct = [
        json!({"content": [text]}),
        json!({"content": [text, {"type": "image", "data": "AAAA", "mimeType": "image/png"}],
               "isError": true, "_meta": {"k": 1}}),
        json!({"resultType": "complete", "content": [], "structuredContent": {"t": big}}),
        json!({"content": [text], "structuredContent": null}),
        json!({"content": [text], "structuredContent": big}),
    ];
    let left_to_rmcp = [
        json!({"resultType": "input_required", "content": [text]}),
        json!({"content": [text], "extra": 1}),
        json!({"contents": [{"uri": "a:b", "text": big}]}),
        json!({"structuredContent": big}),
    ];
    let line = |result: &Value| {
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": "r-1", "result": result})).unwrap()
    };
    for result in &direct {
        let line = line(result);
        let ours = RoleClient::decode_directly(&line).expect("decoded directly");
        let theirs: RxJsonRpcMessage<RoleClient> = serde_json::from_slice(&line).unwrap();
        assert_eq!(
            serde_json::to_value(&ours).unwrap(),
            serde_json::to_value(&theirs).unwrap()
        );
        for m in [ours, theirs] {
            let JsonRpcMessage::Response(r) = m else {
                panic!("not a response")
            };
            assert!(matches!(r.result, ServerResult::CallToolResult(_)));
        }
    }
    for result in &left_to_rmcp {
        assert!(
            RoleClient::decode_directly(&line(result)).is_none(),
            "{result}"
        );
    }
    let others = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {"x": big}}),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": big}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [text]}, "error": null}),
    ];
    for m in others {
        assert!(RoleClient::decode_directly(&serde_json::to_vec(&m).unwrap()).is_none());
    }
    assert!(RoleServer::decode_directly(&line(&direct[0])).is_none());
}

fn is_ping(msg: &ClientJsonRpcMessage, want: u64) -> bool {
    matches!(msg, JsonRpcMessage::Request(r)
        if matches!(r.request, ClientRequest::PingRequest(_))
            && r.id == rmcp::model::NumberOrString::Number(want as i64))
}

/// Everything a server-side transport delivers from `input` (as JSON) and what it writes
/// back, until the input ends.
async fn deliveries<T: Transport<RoleServer>>(
    make: impl FnOnce(DuplexStream, DuplexStream) -> T,
    input: &[u8],
) -> (Vec<Value>, String) {
    let (mut client_in, read) = tokio::io::duplex(1 << 20);
    let (write, mut client_out) = tokio::io::duplex(1 << 20);
    let mut t = make(read, write);
    let input = input.to_vec();
    let feed = tokio::spawn(async move {
        client_in.write_all(&input).await.unwrap();
    });
    let mut got = Vec::new();
    while let Some(msg) = t.receive().await {
        got.push(serde_json::to_value(&msg).unwrap());
    }
    feed.await.unwrap();
    drop(t);
    let mut out = String::new();
    client_out.read_to_string(&mut out).await.unwrap();
    (got, out)
}

#[tokio::test]
async fn lines_arrive_exactly_as_from_rmcps_transport() {
    let input = [
        format!("\u{feff}{}\r\n", ping(1)), // byte order mark, CRLF
        "\n\r\n".to_string(),              // empty lines
        "this is not json\n".to_string(),   // ignored, no answer
        "{\"jsonrpc\":\"2.0\",\"method\":\"window/logMessage\",\"params\":{}}\n".to_string(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/unknown/thing\"}\n".to_string(),
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"notifications/odd\"}\n".to_string(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"tools/list\"}\n".to_string(), // a request without id
        format!("{}\n", ping(2)),
        "{\"jsonrpc\":\"2.0\",\"id\":3,\"bogus\":true}\n".to_string(), // JSON, not JSON-RPC
        "[1,2]\n".to_string(),
        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"name\":\"x\",\"arguments\":{\"s\":\"\u{2028}é🚀\"}}}\n".to_string(),
        "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{}}\n".to_string(),
        "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":1,\"message\":\"m\"}}\n".to_string(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":4}}\n".to_string(),
        "\u{feff}\n".to_string(),
        format!("{}\n", ping(6)),
        // A line without its newline at the end of the stream is no message.
        ping(7),
    ]
    .concat();
    let ours = deliveries(
        |r, w| LineTransport::<RoleServer, _, _>::new(r, w, 1 << 20, Arc::new(Unfiltered)),
        input.as_bytes(),
    )
    .await;
    let rmcps = deliveries(
        rmcp::transport::async_rw::AsyncRwTransport::<RoleServer, _, _>::new,
        input.as_bytes(),
    )
    .await;
    // The same messages arrive; where rmcp stays silent or leaves the id out, JSON-RPC 2.0's
    // answers go back.
    assert_eq!(ours.0, rmcps.0);
    assert!(ours.0.len() >= 6, "{:?}", ours.0);
    let answers: Vec<Value> = ours
        .1
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let codes: Vec<(i64, Value)> = answers
        .iter()
        .map(|a| (a["error"]["code"].as_i64().unwrap(), a["id"].clone()))
        .collect();
    assert_eq!(
        codes,
        [
            (-32700, Value::Null),
            (-32600, json!(3)),
            (-32600, Value::Null),
        ],
        "{answers:?}"
    );
}

/// Reads `input` into a server-side transport with a line limit of `max_line`: what it
/// delivers, and its answers as JSON.
async fn answers_to(input: &str, max_line: usize) -> (Vec<ClientJsonRpcMessage>, Vec<Value>) {
    let (got, out) = deliveries(
        |r, w| LineTransport::<RoleServer, _, _>::new(r, w, max_line, Arc::new(Unfiltered)),
        input.as_bytes(),
    )
    .await;
    let got = got
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    let out = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (got, out)
}

/// Every shape of a line that is not a valid request gets JSON-RPC 2.0's answer (its id when
/// it can be read, else `"id": null`), and the next request is still served.
#[tokio::test]
async fn each_invalid_line_is_answered_with_its_code_and_id_and_serving_goes_on() {
    let cases: &[(&str, i64, Value)] = &[
        ("this is not json", -32700, Value::Null),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"",
            -32700,
            Value::Null,
        ),
        ("\u{1}\u{2}", -32700, Value::Null),
        ("{}", -32600, Value::Null),
        ("[]", -32600, Value::Null),
        (
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]",
            -32600,
            Value::Null,
        ),
        ("42", -32600, Value::Null),
        ("\"ping\"", -32600, Value::Null),
        ("null", -32600, Value::Null),
        (
            "{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}",
            -32600,
            json!(5),
        ),
        ("{\"id\":\"s-1\",\"method\":\"ping\"}", -32600, json!("s-1")),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":7}",
            -32600,
            json!(6),
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":\"x\"}",
            -32600,
            json!(7),
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":5}",
            -32600,
            json!(8),
        ),
        (
            "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}",
            -32600,
            Value::Null,
        ),
        ("{\"jsonrpc\":\"2.0\",\"id\":9}", -32600, json!(9)),
    ];
    for (line, code, id) in cases {
        let (got, out) = answers_to(&format!("{line}\n{}\n", ping(100)), 1 << 20).await;
        assert_eq!(out.len(), 1, "{line}: {out:?}");
        assert_eq!(out[0]["jsonrpc"], "2.0", "{line}");
        assert_eq!(out[0]["error"]["code"], *code, "{line}: {out:?}");
        assert_eq!(out[0].get("id"), Some(id), "{line}: {out:?}");
        assert!(
            !out[0]["error"]["message"].as_str().unwrap().is_empty(),
            "{line}"
        );
        assert_eq!(got.len(), 1, "{line}: {got:?}");
        assert!(is_ping(&got[0], 100), "{line}: served on");
    }
}

/// A request over the line limit is answered with an error with its id (wherever the id
/// is in it), one with too many items or nested too deep too, before anything decodes it;
/// a notification is dropped; serving goes on.
#[tokio::test]
async fn an_oversized_request_is_answered_with_its_id_without_being_decoded() {
    let long = "a".repeat(200_000);
    let too_long = [
        format!(r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"x":"{long}"}}}}"#),
        format!(r#"{{"jsonrpc":"2.0","method":"ping","params":{{"x":"{long}"}},"id":"last"}}"#),
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"x":"{long}"}}}}"#
        ),
        ping(1),
    ];
    let (got, out) = answers_to(&(too_long.join("\n") + "\n"), 100_000).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(is_ping(&got[0], 1));
    let ids: Vec<&Value> = out.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(9), &json!("last")], "{out:?}");
    let message = out[0]["error"]["message"].as_str().unwrap();
    assert!(message.contains("over the 100000-byte limit"), "{message}");
    assert!(message.contains("send less"), "{message}");

    // Within the line limit, but a million items, or 100 levels deep.
    let zeros = format!("[{}0]", "0,".repeat(1_000_000));
    let deep = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    let pad = "p".repeat(70_000);
    let shapes = [
        format!(
            r#"{{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{zeros}}}}}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{{"name":"x","arguments":{{"a":{deep},"pad":"{pad}"}}}}}}"#
        ),
        zeros,
        ping(2),
    ];
    let (got, out) = answers_to(&(shapes.join("\n") + "\n"), 16 << 20).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(is_ping(&got[0], 2));
    let ids: Vec<&Value> = out.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(10), &json!(11), &Value::Null], "{out:?}");
    for a in &out {
        assert_eq!(a["error"]["code"], -32600, "{a}");
    }
    let message = |a: &Value| a["error"]["message"].as_str().unwrap().to_string();
    assert!(message(&out[0]).contains("200000 JSON items"), "{out:?}");
    assert!(message(&out[1]).contains("64 levels"), "{out:?}");
}

/// An upstream's answer over the limit becomes an error answer for its call, with its id
/// (JavaScript servers write the id last), naming the size and the limit; an oversized
/// request of the upstream's is answered, its notification dropped; the next line is read.
#[tokio::test]
async fn an_oversized_answer_fails_its_call_with_the_size_and_the_limit() {
    use rmcp::RoleClient;
    let big = "x".repeat(500);
    let input = [
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"{big}"}}]}}}}"#
        ),
        format!(r#"{{"result":{{"text":"{big}","id":99}},"jsonrpc":"2.0","id":"a,}}b"}}"#),
        format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage","params":{{"x":"{big}"}}}}"#
        ),
        format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":"{big}"}}"#),
        r#"{"jsonrpc":"2.0","id":8,"result":{}}"#.to_string(),
    ];
    let first_size = input[0].len() + 1;
    let input = input.join("\n") + "\n";
    let (mut from_upstream, read) = tokio::io::duplex(7);
    let (write, mut to_upstream) = tokio::io::duplex(1 << 16);
    let mut t: LineTransport<RoleClient, _, _> =
        LineTransport::new(read, write, 300, Arc::new(Unfiltered)).refusal_hint("Ask for less");
    let feed = tokio::spawn(async move { from_upstream.write_all(input.as_bytes()).await });
    let mut got = Vec::new();
    while let Some(msg) = t.receive().await {
        got.push(serde_json::to_value(&msg).unwrap());
    }
    feed.await.unwrap().unwrap();
    drop(t);
    let mut answered = String::new();
    to_upstream.read_to_string(&mut answered).await.unwrap();
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0]["id"], 7);
    assert_eq!(got[1]["id"], "a,}b");
    let message = got[0]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("is {first_size} bytes, over the 300-byte limit")),
        "{message}"
    );
    assert!(message.ends_with("Ask for less"), "{message}");
    assert_eq!(got[2], json!({"jsonrpc": "2.0", "id": 8, "result": {}}));
    let answered: Value = serde_json::from_str(answered.trim()).unwrap();
    assert_eq!(
        (answered["id"].clone(), answered["error"]["code"].clone()),
        (json!(3), json!(-32600))
    );
}

/// A line's buffer never grows past the line limit, however the line arrives.
#[tokio::test]
async fn a_lines_buffer_stays_within_the_limit() {
    let max = 3 << 20;
    let (mut t, mut input, _output) = server(max);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"x":"{}"}}}}}}"#,
        "b".repeat(max - 100)
    );
    let writer = tokio::spawn(async move {
        input
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        input
    });
    let Read::Line = t.read_line().await.unwrap() else {
        panic!("a line within the limit")
    };
    assert!(t.line.capacity() <= max, "{} > {max}", t.line.capacity());
    drop(writer.await.unwrap());
}

#[tokio::test]
async fn a_line_over_the_limit_is_dropped_and_the_next_one_read() {
    let (mut t, mut input, mut _output) = server(4096);
    let long = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"ping","params":{{"x":"{}"}}}}"#,
        "a".repeat(200_000)
    );
    input
        .write_all(format!("{long}\n{}\n", ping(1)).as_bytes())
        .await
        .unwrap();
    assert!(is_ping(&t.receive().await.unwrap(), 1));
    assert!(!t.discarding);
    let answer: Value = serde_json::from_str(&_output.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(
        (answer["id"].clone(), answer["error"]["code"].clone()),
        (json!(9), json!(-32600))
    );
}

#[tokio::test]
async fn a_large_line_is_not_kept_and_a_small_one_is() {
    let (mut t, mut input, _output) = server(64 << 20);
    let large = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"_meta":{{"x":"{}"}}}}}}"#,
        "é".repeat(2 << 20)
    );
    let writer = tokio::spawn(async move {
        input
            .write_all(format!("{large}\n{}\n", ping(2)).as_bytes())
            .await
            .unwrap();
        input
    });
    assert!(is_ping(&t.receive().await.unwrap(), 1));
    assert!(
        t.line.capacity() <= KEPT_BYTES,
        "{} bytes kept",
        t.line.capacity()
    );
    assert!(is_ping(&t.receive().await.unwrap(), 2));
    assert!(
        t.line.capacity() > 0,
        "a small line's buffer is kept for the next"
    );
    drop(writer.await.unwrap());
}

/// A real pair of pipes: what goes into `cat` comes back out.
fn cat() -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    tokio::process::ChildStdout,
) {
    let mut cat = tokio::process::Command::new("cat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("cat runs");
    let (stdin, stdout) = (cat.stdin.take().unwrap(), cat.stdout.take().unwrap());
    (cat, stdin, stdout)
}

#[tokio::test]
async fn a_large_line_widens_the_pipes_it_passes_and_small_ones_do_not() {
    use std::os::fd::AsFd;
    let (mut cat, stdin, stdout) = cat();
    let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().unwrap();
    let (probe_in, probe_out) = (dup(stdin.as_fd()), dup(stdout.as_fd()));
    let mut t: LineTransport<RoleServer, _, _> =
        LineTransport::new(stdout, stdin, 16 << 20, Arc::new(Unfiltered))
            .widening(Some(dup(probe_out.as_fd())), Some(dup(probe_in.as_fd())));
    let ping_with = |id: u64, text: &str| -> TxJsonRpcMessage<RoleServer> {
        serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "ping", "params": {"_meta": {"x": text}}
        }))
        .unwrap()
    };
    let echoed = |msg: &ClientJsonRpcMessage| serde_json::to_value(msg).unwrap();
    let narrow = crate::pipes::size(&probe_in);
    assert!(narrow < crate::pipes::WIDE_BYTES);

    let small = "s".repeat(100 << 10);
    let (sent, got) = tokio::join!(t.send(ping_with(1, &small)), t.receive());
    sent.unwrap();
    assert_eq!(
        echoed(&got.unwrap())["params"]["_meta"]["x"],
        small.as_str()
    );
    assert_eq!(
        crate::pipes::size(&probe_in),
        narrow,
        "100 KiB do not widen"
    );
    assert_eq!(crate::pipes::size(&probe_out), narrow);

    let large = "é\"\n🚀".repeat(600 << 10);
    let (sent, got) = tokio::join!(t.send(ping_with(2, &large)), t.receive());
    sent.unwrap();
    assert!(is_ping(got.as_ref().unwrap(), 2));
    assert_eq!(
        echoed(&got.unwrap())["params"]["_meta"]["x"],
        large.as_str()
    );
    assert_eq!(crate::pipes::size(&probe_in), crate::pipes::WIDE_BYTES);
    assert_eq!(crate::pipes::size(&probe_out), crate::pipes::WIDE_BYTES);

    // The writer's duplicate goes with it: `cat` sees the end of its input and exits.
    t.close().await.unwrap();
    drop(probe_in);
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), cat.wait()).await;
    assert!(status.expect("cat saw its input end").unwrap().success());
}

#[tokio::test]
async fn a_transport_that_never_widened_still_closes_its_peers_input() {
    use std::os::fd::AsFd;
    let (mut cat, stdin, stdout) = cat();
    let dup = |fd: std::os::fd::BorrowedFd<'_>| fd.try_clone_to_owned().ok();
    let (read_pipe, write_pipe) = (dup(stdout.as_fd()), dup(stdin.as_fd()));
    let mut t: LineTransport<RoleServer, _, _> =
        LineTransport::new(stdout, stdin, 1 << 20, Arc::new(Unfiltered))
            .widening(read_pipe, write_pipe);
    t.close().await.unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(10), cat.wait()).await;
    assert!(status.expect("cat saw its input end").unwrap().success());
    drop(t);
}

#[tokio::test]
async fn a_read_dropped_midway_loses_nothing() {
    let (mut t, mut input, _output) = server(1 << 20);
    let msg = ping(7);
    let (head, tail) = msg.split_at(10);
    input.write_all(head.as_bytes()).await.unwrap();
    // The receive is dropped while it waits for the rest of the line (as rmcp's select!
    // does when something else is ready first).
    let dropped = futures::FutureExt::now_or_never(t.receive());
    assert!(dropped.is_none(), "nothing complete to deliver yet");
    input
        .write_all(format!("{tail}\n").as_bytes())
        .await
        .unwrap();
    assert!(is_ping(&t.receive().await.unwrap(), 7));
}

struct Upper;
impl LineFilter for Upper {
    fn inbound(&self, line: &[u8]) -> Option<Vec<u8>> {
        String::from_utf8(line.to_vec())
            .ok()
            .map(|s| s.replace("PONG", "ping").into_bytes())
    }
    fn outbound(&self, line: &[u8]) -> Option<Vec<u8>> {
        Some(line.to_ascii_uppercase())
    }
}

#[tokio::test]
async fn messages_go_out_one_per_line_through_the_filter_until_closed() {
    let (client_in, read) = tokio::io::duplex(1 << 16);
    let (write, client_out) = tokio::io::duplex(1 << 16);
    let mut t: LineTransport<RoleServer, _, _, Upper> =
        LineTransport::new(read, write, 1 << 20, Arc::new(Upper));
    let mut output = BufReader::new(client_out).lines();
    let mut input = client_in;
    input
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"PONG\"}\n")
        .await
        .unwrap();
    assert!(
        is_ping(&t.receive().await.unwrap(), 1),
        "the inbound filter ran"
    );
    let answer = rmcp::model::ServerJsonRpcMessage::error(
        ErrorData::invalid_params("nope", None),
        Some(rmcp::model::NumberOrString::Number(1)),
    );
    t.send(answer.clone()).await.unwrap();
    t.send(answer.clone()).await.unwrap();
    for _ in 0..2 {
        let line = output.next_line().await.unwrap().unwrap();
        assert!(
            line.contains("\"JSONRPC\":\"2.0\"") && line.contains("NOPE"),
            "{line}"
        );
    }
    t.close().await.unwrap();
    let err = t.send(answer).await.unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotConnected);
}
