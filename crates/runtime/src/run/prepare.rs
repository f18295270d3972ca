//! Code made ready for a worker: TypeScript is stripped here, in the host; Python goes as
//! written (it compiles in the worker, which reports its syntax errors).
//!
//! Stripping parses untrusted code with a recursive parser, so it runs on threads of its own
//! whose stack fits the deepest code the nesting bound lets through
//! ([`js_worker::STRIP_STACK_BYTES`]), never on an async thread: a deep parse can neither
//! overflow a runtime thread's stack (which would abort the server) nor stall the requests
//! that thread serves. The wait counts against the execution's deadline.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};

use crate::worker::Language;

/// Threads that strip TypeScript: one per core of the machines we run on is plenty, since a
/// strip takes microseconds to milliseconds.
const STRIP_THREADS: usize = 2;

/// Code ready for a worker, and how to map its error positions back to the user's code.
pub struct Prepared {
    pub code: String,
    /// TypeScript: the line map of the stripped JavaScript.
    pub stripped: Option<js_worker::Stripped>,
}

/// Why code could not be prepared.
pub enum NotPrepared {
    /// The code's own fault: a syntax error, or nesting past the bound.
    Syntax(String),
    /// The threads that strip TypeScript are not there.
    Unavailable(String),
    /// The execution's deadline passed first.
    Deadline,
}

type Job = Box<dyn FnOnce() + Send>;

static STRIPPERS: OnceLock<std::io::Result<Sender<Job>>> = OnceLock::new();

fn start_strippers() -> std::io::Result<Sender<Job>> {
    let (tx, rx) = channel::<Job>();
    let rx = Arc::new(Mutex::new(rx));
    for i in 0..STRIP_THREADS {
        let rx: Arc<Mutex<Receiver<Job>>> = rx.clone();
        std::thread::Builder::new()
            .name(format!("strip-{i}"))
            .stack_size(js_worker::STRIP_STACK_BYTES)
            .spawn(move || {
                loop {
                    // The lock is held only while waiting for the next job.
                    let job = match rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => job(),
                        Err(_) => return,
                    }
                }
            })?;
    }
    Ok(tx)
}

/// Prepares `code` for a `language` worker, giving up at `deadline`. Session code (`keep`)
/// in JavaScript has its top-level declarations made globals, so the session's next run sees
/// them (`js_worker::globalize`); Python keeps its namespace in the worker.
pub async fn prepare(
    language: Language,
    code: &str,
    deadline: tokio::time::Instant,
    keep: bool,
) -> Result<Prepared, NotPrepared> {
    match language {
        Language::Python => Ok(Prepared {
            code: code.to_string(),
            stripped: None,
        }),
        Language::JavaScript => {
            let stripped = tokio::time::timeout_at(deadline, strip(code.to_string(), keep))
                .await
                .map_err(|_| NotPrepared::Deadline)??;
            Ok(Prepared {
                code: stripped.code.clone(),
                stripped: Some(stripped),
            })
        }
    }
}

async fn strip(code: String, keep: bool) -> Result<js_worker::Stripped, NotPrepared> {
    let unavailable = NotPrepared::Unavailable;
    let sender = STRIPPERS
        .get_or_init(start_strippers)
        .as_ref()
        .map_err(|e| unavailable(format!("cannot start a thread to strip TypeScript: {e}")))?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    sender
        .send(Box::new(move || {
            let _ = tx.send(js_worker::strip_types(&code).map(|mut s| {
                if keep {
                    s.code = js_worker::globalize(&s.code);
                }
                s
            }));
        }))
        .map_err(|_| unavailable("the threads that strip TypeScript stopped".into()))?;
    match rx.await {
        Ok(Ok(stripped)) => Ok(stripped),
        Ok(Err(e)) => Err(NotPrepared::Syntax(e.to_string())),
        Err(_) => Err(unavailable(
            "stripping TypeScript failed inside the parser".into(),
        )),
    }
}
