//! The drive loop of one execution: the worker's frames in, the host's replies out, every
//! request served through the [`Host`] the execution was given.
//!
//! The loop owns nothing: the execution's task lends it the worker, the run scope and the
//! log collector, and gets back how the run ended. What answers a request from code is the
//! [`Host`] trait, so that approvals, sampling or progress can wrap it without touching this
//! loop; `runtime::host::bridge::RunHost` is the one that reaches the catalog and upstreams.

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::io::AsyncWriteExt;
use worker_protocol::{CallOutcome, CallRequest, HostFrame, RunOutcome, WorkerFrame};

use super::output::LogCollector;
use crate::worker::{memory, process as worker};

/// What serves the requests code makes of the host (tool calls, discovery, stored values).
/// The host is given per execution: it holds what the execution may do.
pub trait Host: Send + Sync {
    /// Answers one request of the execution. Never fails: a failure is a
    /// [`CallOutcome::Err`] the code sees as an exception.
    fn handle(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome>;
}

/// How a run the worker finished ended.
pub struct Finished {
    pub outcome: RunOutcome,
    /// Bytes of the worker's done frame: the result's size as the worker sent it, measured
    /// without encoding the result again (for a result that is a kept reply's string, that
    /// reply's value).
    pub bytes: usize,
    /// No reply was left half-written or unsent: the worker can take another run (sessions).
    pub clean: bool,
}

pub enum Failure {
    /// The worker broke the protocol; it is killed.
    Protocol(String),
    /// The worker exited before finishing.
    Exited,
    /// The session's workspace grew past a limit (the reason); the worker is killed.
    Quota(String),
}

/// A reply whose value is a string of this many bytes of JSON or more is kept until the run
/// ends (the latest one), so that a run returning that very string need not send it back
/// ([`RunOutcome::Reply`]): code that returns what a tool gave it saves the way back through
/// the worker. At most what a done frame could carry, so results too large for one are
/// refused by the worker as before.
const KEPT_REPLY_BYTES: std::ops::RangeInclusive<usize> =
    (1 << 20)..=(worker_protocol::MAX_WORKER_FRAME_BYTES - 64);

/// The latest kept reply: its id, its string (a tool's text, or the JSON of a string value,
/// decoded only if a result refers to it), and the string's length as JSON. `tail`: the
/// reply to a tail call, not sent ([`HostFrame::Kept`]); it stays kept for the rest of the
/// run, whatever replies come after it, since the worker never had it.
struct Kept {
    id: u64,
    outcome: CallOutcome,
    json_len: usize,
    tail: bool,
}

/// The length as JSON of a reply's string, if it is one to keep ([`KEPT_REPLY_BYTES`]: a
/// tool's text of at least its start, whose JSON a done frame could carry).
fn to_keep(outcome: &CallOutcome) -> Option<usize> {
    match outcome {
        CallOutcome::Text { text } if text.len() >= *KEPT_REPLY_BYTES.start() => {
            Some(worker_protocol::json_string_len(text))
        }
        CallOutcome::Ok { value } if value.get().starts_with('"') => Some(value.get().len()),
        _ => None,
    }
    .filter(|len| KEPT_REPLY_BYTES.contains(len))
}

/// Bytes of replies the worker has not read yet past which the host stops reading its
/// requests (and stops producing answers): a worker that asks and never reads blocks itself,
/// not the server's memory.
const MAX_UNREAD_REPLY_BYTES: usize = 2 << 20;
/// Bytes of requests the host may hold at once for one execution (each frame is at most
/// `worker_protocol::MAX_WORKER_FRAME_BYTES`).
const MAX_HELD_REQUEST_BYTES: usize = 8 << 20;
/// Requests of one execution the host may hold at once; more wait in the worker's pipe.
const MAX_HELD_REQUESTS: usize = 256;

/// Serves the requests of a worker that received its run until it is done.
///
/// Calls are futures polled by this loop (no task per call); replies go into an outbox that is
/// written as the worker's stdin takes it. Reading never waits for a write: a worker blocked
/// on writing a frame while the host waits to hand it a large reply would otherwise be stuck.
/// What the host holds for an execution is bounded: past [`MAX_UNREAD_REPLY_BYTES`] of
/// unread replies no call is finished and no request read, and past [`MAX_HELD_REQUESTS`]
/// requests or [`MAX_HELD_REQUEST_BYTES`] of them no request is read, until the worker
/// catches up (both workers read replies while they wait to write).
pub async fn drive(
    worker: &mut worker::WorkerProcess,
    host: &dyn Host,
    logs: &mut LogCollector,
) -> Result<Finished, Failure> {
    let mut calls = FuturesUnordered::new();
    // Replies not yet written start at `sent`: a large reply is written a pipe's worth at a
    // time, and taking each piece off the front of the buffer would move the rest every time.
    let mut outbox: Vec<u8> = Vec::new();
    let mut sent = 0usize;
    let mut held_bytes = 0usize;
    let mut kept: Option<Kept> = None;
    let (frames, stdin) = worker.io();
    loop {
        let answering = outbox.len() - sent < MAX_UNREAD_REPLY_BYTES;
        let reading =
            answering && calls.len() < MAX_HELD_REQUESTS && held_bytes < MAX_HELD_REQUEST_BYTES;
        tokio::select! {
            biased;
            written = stdin.write(&outbox[sent..]), if sent < outbox.len() => match written {
                Ok(n) if n > 0 => {
                    sent += n;
                    if sent == outbox.len() {
                        outbox.clear();
                        sent = 0;
                        if outbox.capacity() > MAX_UNREAD_REPLY_BYTES {
                            outbox = Vec::new();
                        }
                    }
                }
                Ok(_) => return Err(Failure::Exited),
                Err(e) => {
                    tracing::debug!("cannot write to worker: {e}");
                    return Err(Failure::Exited);
                }
            },
            Some((id, outcome, len, tail)) = calls.next(), if answering && !calls.is_empty() => {
                held_bytes -= len;
                // A tail call's kept value is not sent at all: the code returns it as it is.
                // Once one is kept, no later reply takes its place.
                let keep = to_keep(&outcome).filter(|_| !kept.as_ref().is_some_and(|k| k.tail));
                let (reply, outcome) = if tail && keep.is_some() {
                    (HostFrame::Kept { id }.encode(), Some(outcome))
                } else {
                    let frame = HostFrame::Reply { id, outcome, kept: keep.is_some() };
                    let reply = frame.encode();
                    let outcome = match frame {
                        HostFrame::Reply { outcome, .. } => Some(outcome),
                        _ => None,
                    };
                    (reply, outcome)
                };
                if let (Some(outcome), Some(json_len)) = (outcome, keep) {
                    kept = Some(Kept { id, outcome, json_len, tail });
                }
                if let Ok(bytes) = &reply {
                    memory::SERVER.moved(bytes.len());
                    if bytes.len() >= tools::pipes::LARGE_MESSAGE_BYTES {
                        tools::pipes::widen(&*stdin);
                    }
                }
                match reply {
                    // The written part is dropped once it is most of the buffer, so the
                    // buffer holds at most about twice what is unwritten.
                    Ok(bytes) if outbox.is_empty() => outbox = bytes,
                    Ok(bytes) => {
                        if sent > outbox.len() / 2 {
                            outbox.drain(..sent);
                            sent = 0;
                        }
                        outbox.extend_from_slice(&bytes);
                    }
                    Err(e) => return Err(Failure::Protocol(format!("cannot encode a reply: {e}"))),
                }
            }
            frame = frames.recv(), if reading => match frame {
                None => return Err(Failure::Exited),
                Some(Err(e)) => return Err(Failure::Protocol(e)),
                Some(Ok(WorkerFrame::Log { level, text })) => logs.push(level, text),
                Some(Ok(WorkerFrame::LogsTruncated)) => logs.truncated_by_worker(),
                Some(Ok(WorkerFrame::Done { outcome: RunOutcome::Reply { id } })) => {
                    // The result is the kept reply's string: a tool's text as it is, a
                    // string value decoded once, here.
                    let Some(Kept { outcome, json_len, .. }) = kept.take().filter(|k| k.id == id) else {
                        return Err(Failure::Protocol(format!(
                            "the result refers to reply {id}, which the host did not keep"
                        )));
                    };
                    let text = match outcome {
                        CallOutcome::Text { text } => text,
                        CallOutcome::Ok { value } => serde_json::from_str(value.get()).map_err(|e| {
                            Failure::Protocol(format!("the kept reply {id} is not a string: {e}"))
                        })?,
                        CallOutcome::Err { .. } => {
                            return Err(Failure::Protocol(format!("the kept reply {id} is an error")));
                        }
                    };
                    return Ok(Finished {
                        outcome: RunOutcome::Ok {
                            result: serde_json::Value::String(text),
                        },
                        bytes: json_len,
                        clean: sent == outbox.len() && calls.is_empty(),
                    });
                }
                Some(Ok(WorkerFrame::Done { outcome })) => {
                    memory::SERVER.moved(frames.last_len());
                    return Ok(Finished {
                        outcome,
                        bytes: frames.last_len(),
                        clean: sent == outbox.len() && calls.is_empty(),
                    });
                }
                Some(Ok(WorkerFrame::Call { id, request, tail })) => {
                    let len = frames.last_len();
                    memory::SERVER.moved(len);
                    held_bytes += len;
                    calls.push(async move {
                        (id, host.handle(request).await, len, tail)
                    });
                }
                Some(Ok(WorkerFrame::Ready { .. })) => {
                    return Err(Failure::Protocol("worker sent a second ready frame".into()));
                }
            },
        }
    }
}

/// Rewrites `code.ts:LINE:COL` positions of the generated JavaScript to the user's lines and
/// drops frames of our own prelude, which mean nothing to the user.
pub fn map_stack(stack: &str, stripped: &js_worker::Stripped) -> String {
    let stack: String = stack
        .lines()
        .filter(|l| !l.contains("(prelude.js:"))
        .collect::<Vec<_>>()
        .join("\n");
    let stack = stack.as_str();
    let needle = format!("{}:", js_worker::SOURCE_NAME);
    let mut out = String::with_capacity(stack.len());
    let mut rest = stack;
    while let Some(i) = rest.find(&needle) {
        let (before, after) = rest.split_at(i + needle.len());
        out.push_str(before);
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        match digits.parse::<u32>() {
            Ok(line) => {
                out.push_str(&stripped.original_line(line).to_string());
                let after_line = &after[digits.len()..];
                // The column refers to generated code; drop it rather than mislead.
                let col_len = after_line
                    .strip_prefix(':')
                    .map(|r| 1 + r.chars().take_while(char::is_ascii_digit).count())
                    .unwrap_or(0);
                rest = &after_line[col_len..];
            }
            Err(_) => rest = after,
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_lines_are_mapped_to_user_lines() {
        let stripped = js_worker::strip_types("type A = 1;\n\nthrow new Error('x');\n").unwrap();
        let gen_line = stripped
            .code
            .lines()
            .position(|l| l.contains("throw"))
            .unwrap()
            + 1;
        let stack =
            format!("    at <anonymous> (code.ts:{gen_line}:7)\n    at run (prelude.js:9:3)");
        assert_eq!(
            map_stack(&stack, &stripped),
            "    at <anonymous> (code.ts:3)"
        );
    }
}
