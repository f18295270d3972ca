//! A bound on each message a stdio upstream sends, that answers instead of hanging.
//!
//! A stdio MCP server sends one JSON-RPC message per line. Without a bound, a server that
//! answers with a gigabyte makes us buffer a gigabyte; with rmcp's own bound the line is
//! dropped silently and the call waits for its timeout. [`BoundedLines`] sits between the
//! child's stdout and rmcp: it passes lines through untouched up to `limit` bytes; a longer
//! line is cut there (the cut line no longer parses, and rmcp ignores it), the rest of it is
//! read and thrown away, and when the line was a response, a JSON-RPC error response with the
//! same id is passed on in its place. The call that asked gets that error at once, naming
//! the size and the setting to raise (`maxResultBytes`). Memory stays bounded by `limit`.
//!
//! To find the id of a response whose `id` comes after the cut (JavaScript servers write
//! `{"result": ..., "jsonrpc": "2.0", "id": 7}`), every byte goes through a small JSON
//! scanner that tracks strings, nesting, and the top-level `id` and `method` members.

use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Longest id kept (ids are small numbers or short strings).
const MAX_ID_BYTES: usize = 128;

/// Watches one line for its top-level `"id"` value and whether it has a `"method"`.
#[derive(Default)]
struct Scanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, a string here is a member name.
    expect_key: bool,
    /// The member name being read (only the first few bytes matter).
    key: Vec<u8>,
    reading_key: bool,
    /// The last member name read at depth 1.
    last_key: Vec<u8>,
    /// Reading the value of the top-level `id`.
    in_id: bool,
    id: Vec<u8>,
    id_done: bool,
    has_method: bool,
}

impl Scanner {
    fn feed(&mut self, b: u8) {
        if self.in_id && !self.id_done {
            let ends = !self.in_string && self.depth == 1 && (b == b',' || b == b'}');
            if ends {
                self.id_done = true;
            } else if self.id.len() < MAX_ID_BYTES
                && !(self.id.is_empty() && b.is_ascii_whitespace())
            {
                self.id.push(b);
            }
        }
        if self.in_string {
            if self.reading_key && (self.escaped || b != b'"') && self.key.len() < 16 {
                self.key.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.reading_key {
                    self.reading_key = false;
                    self.last_key = std::mem::take(&mut self.key);
                    if self.last_key == b"method" {
                        self.has_method = true;
                    }
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.reading_key = true;
                    self.expect_key = false;
                    self.key.clear();
                }
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.expect_key = true;
                }
            }
            b'}' | b']' => self.depth = self.depth.saturating_sub(1),
            b',' if self.depth == 1 => {
                self.expect_key = true;
                if self.in_id {
                    self.in_id = false;
                }
            }
            b':' if self.depth == 1 && self.last_key == b"id" && !self.id_done => {
                self.in_id = true;
                self.id.clear();
            }
            _ => {}
        }
    }

    /// The raw JSON of the top-level id, if the line had a complete one.
    fn id(&self) -> Option<&[u8]> {
        let id = self.id.trim_ascii_end();
        let valid = !id.is_empty()
            && id.len() < MAX_ID_BYTES
            && (id.iter().all(|b| b.is_ascii_digit() || *b == b'-')
                || (id.len() >= 2 && id.starts_with(b"\"") && id.ends_with(b"\"")));
        (self.id_done && valid).then_some(id)
    }
}

/// See the module docs.
pub struct BoundedLines<R> {
    inner: R,
    limit: usize,
    /// The current line so far (at most `limit` bytes), kept to find its id if it is cut.
    head: Vec<u8>,
    /// Past the limit: the rest of the line is discarded.
    discarding: bool,
    /// Bytes of the over-long line seen in all.
    dropped_len: usize,
    scanner: Scanner,
    /// Bytes read from `inner`: `input[input_pos..input_len]` are not handled yet.
    input: Box<[u8]>,
    input_pos: usize,
    input_len: usize,
    /// Bytes we made up (an error response), passed on before anything else.
    made: Vec<u8>,
    made_pos: usize,
}

impl<R> BoundedLines<R> {
    pub fn new(inner: R, limit: usize) -> Self {
        BoundedLines {
            inner,
            limit,
            head: Vec::new(),
            discarding: false,
            dropped_len: 0,
            scanner: Scanner::default(),
            input: vec![0; 64 * 1024].into_boxed_slice(),
            input_pos: 0,
            input_len: 0,
            made: Vec::new(),
            made_pos: 0,
        }
    }

    /// The error response that replaces an over-long answer.
    fn replacement(&self) -> Option<Vec<u8>> {
        if self.scanner.has_method {
            return None; // a request or notification: nothing waits for it by id
        }
        let id = String::from_utf8_lossy(self.scanner.id()?).into_owned();
        let message = format!(
            "the server's answer is {} bytes, over the {}-byte limit for one message \
             (twice maxResultBytes); it was dropped. Ask for less (filters, paging), or raise \
             maxResultBytes in the settings",
            self.dropped_len, self.limit
        );
        let mut out = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32603,"message":{}}}}}"#,
            serde_json::Value::String(message)
        )
        .into_bytes();
        out.push(b'\n');
        Some(out)
    }

    /// Handles pending input: passes what may pass into `out`, cuts and discards the rest of
    /// an over-long line, and queues its replacement.
    fn process(&mut self, out: &mut ReadBuf<'_>) {
        while self.input_pos < self.input_len
            && out.remaining() > 0
            && self.made_pos >= self.made.len()
        {
            let avail = &self.input[self.input_pos..self.input_len];
            let newline = memchr::memchr(b'\n', avail);
            if self.discarding {
                let end = newline.map_or(avail.len(), |i| i + 1);
                for b in &avail[..end] {
                    self.scanner.feed(*b);
                }
                self.dropped_len += end;
                self.input_pos += end;
                if newline.is_some() {
                    tracing::warn!(
                        bytes = self.dropped_len,
                        limit = self.limit,
                        "an upstream message over the size limit was dropped"
                    );
                    self.made = self.replacement().unwrap_or_default();
                    self.made_pos = 0;
                    self.discarding = false;
                    self.scanner = Scanner::default();
                }
                continue;
            }
            let room = self.limit - self.head.len();
            let take = match newline {
                Some(i) if i <= room => i + 1,
                _ => avail.len().min(room),
            }
            .min(out.remaining());
            if take == 0 {
                // Over the limit: end the partial line, so rmcp discards it as unparsable,
                // and read the rest of it looking for its id.
                self.discarding = true;
                self.dropped_len = self.head.len();
                for b in std::mem::take(&mut self.head) {
                    self.scanner.feed(b);
                }
                out.put_slice(b"\n");
                continue;
            }
            let chunk = &avail[..take];
            out.put_slice(chunk);
            if chunk.ends_with(b"\n") {
                // A large line's copy is let go rather than kept for the connection's life.
                if self.head.capacity() > crate::lines::KEPT_BYTES {
                    self.head = Vec::new();
                } else {
                    self.head.clear();
                }
            } else {
                self.head.extend_from_slice(chunk);
            }
            self.input_pos += take;
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if this.made_pos < this.made.len() {
                let n = (this.made.len() - this.made_pos).min(buf.remaining());
                buf.put_slice(&this.made[this.made_pos..this.made_pos + n]);
                this.made_pos += n;
                return Poll::Ready(Ok(()));
            }
            if this.input_pos < this.input_len {
                let before = buf.filled().len();
                this.process(buf);
                if buf.filled().len() > before {
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            let mut chunk = ReadBuf::new(&mut this.input);
            match Pin::new(&mut this.inner).poll_read(cx, &mut chunk) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    let n = chunk.filled().len();
                    if n == 0 {
                        return Poll::Ready(Ok(())); // end of the stream
                    }
                    this.input_pos = 0;
                    this.input_len = n;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &[u8], limit: usize) -> String {
        // A reader that hands out small pieces, like a pipe.
        let (mut w, r) = tokio::io::duplex(7);
        let data = input.to_vec();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = w.write_all(&data).await;
        });
        let mut out = String::new();
        BoundedLines::new(r, limit)
            .read_to_string(&mut out)
            .await
            .unwrap();
        out
    }

    #[tokio::test]
    async fn lines_within_the_limit_pass_untouched() {
        let input = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"a\":\"x\\ny\"}\n";
        assert_eq!(read_all(input.as_bytes(), 64).await, input);
    }

    #[tokio::test]
    async fn an_over_long_response_becomes_an_error_with_its_id() {
        let big = "x".repeat(500);
        for (line, id) in [
            (
                format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"text":"{big}"}}}}"#),
                "7",
            ),
            // JavaScript servers write the id last.
            (
                format!(r#"{{"result":{{"text":"{big}","id":99}},"jsonrpc":"2.0","id":"a,}}b"}}"#),
                "\"a,}b\"",
            ),
        ] {
            let input = format!("{line}\n{{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{{}}}}\n");
            let out = read_all(input.as_bytes(), 100).await;
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 3, "{out}");
            assert_eq!(lines[0].len(), 100);
            let err: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
            assert_eq!(err["id"].to_string(), id, "{out}");
            let message = err["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(&format!("{} bytes", line.len() + 1)),
                "{message}"
            );
            assert!(message.contains("maxResultBytes"), "{message}");
            assert_eq!(lines[2], r#"{"jsonrpc":"2.0","id":8,"result":{}}"#);
        }
    }

    #[tokio::test]
    async fn an_over_long_request_or_notification_is_dropped() {
        let big = "x".repeat(500);
        let input = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"sampling/createMessage\",\"params\":\"{big}\"}}\n{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":\"{big}\"}}\nok\n"
        );
        let out = read_all(input.as_bytes(), 100).await;
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{out}");
        assert_eq!(lines[2], "ok");
    }
}
