//! How a run ends, as the outcome the host is sent: the prelude's settled JSON passed on as it
//! is, a string result encoded here, and a thrown value (QuickJS's out-of-memory `null` among
//! them) described as an error.

use rquickjs::{Ctx, Value};
use worker_protocol::{ErrorInfo, RawValue, RunOutcome, has_lone_surrogate_escape};

/// How a run ended: a successful result as the JSON text the prelude made (sent on as it is),
/// the kept reply's string (by its id), or any other outcome.
pub(crate) enum Finished {
    Result(Box<RawValue>),
    Reply(u64),
    Outcome(RunOutcome),
}

impl From<RunOutcome> for Finished {
    fn from(o: RunOutcome) -> Self {
        Finished::Outcome(o)
    }
}

/// The prelude's settled run (`{"status":"ok","result":...}` or an error), read without
/// decoding the result into a tree.
#[derive(serde::Deserialize)]
struct Settled<'a> {
    status: String,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<ErrorInfo>,
}

/// An `InternalError` outcome: the engine could not make a result of what the run settled with.
fn internal(message: String) -> Finished {
    RunOutcome::Err {
        error: ErrorInfo {
            name: "InternalError".into(),
            message,
            stack: None,
        },
    }
    .into()
}

pub(crate) fn settled(text: String, memory_limit: u64) -> Finished {
    if has_lone_surrogate_escape(&text) {
        // No UTF-8 form: decoding says so, as it always did.
        return match serde_json::from_str::<RunOutcome>(&text) {
            Ok(RunOutcome::Err { error }) => RunOutcome::Err {
                error: name_oom(error, memory_limit),
            }
            .into(),
            Ok(ok) => ok.into(),
            Err(e) => internal(format!("result could not be encoded: {e}")),
        };
    }
    match serde_json::from_str::<Settled<'_>>(&text) {
        Ok(Settled { status, result, .. }) if status == "ok" => {
            Finished::Result(result.map_or_else(|| RawValue::NULL.to_owned(), |r| r.to_owned()))
        }
        Ok(Settled {
            error: Some(error), ..
        }) => RunOutcome::Err {
            error: name_oom(error, memory_limit),
        }
        .into(),
        Ok(_) => internal("the run settled without a result or an error".into()),
        Err(e) => internal(format!("result could not be encoded: {e}")),
    }
}

/// A run that returned a string: the string encoded here as JSON (serde's encoder instead of
/// `JSON.stringify` and its replacer in QuickJS). A string with a lone surrogate has no UTF-8
/// form and is an error, as it is when `JSON.stringify` writes it as an escape.
pub(crate) fn string_result(
    ctx: &Ctx<'_>,
    string: Option<rquickjs::String<'_>>,
    memory_limit: u64,
) -> Finished {
    let Some(string) = string else {
        return internal("the run settled without a result or an error".into());
    };
    match string.to_string() {
        Ok(text) => match serde_json::value::to_raw_value(&text) {
            Ok(raw) => Finished::Result(raw),
            Err(e) => internal(format!("result could not be encoded: {e}")),
        },
        Err(rquickjs::Error::Utf8(_)) => internal(
            "result could not be encoded: the string has a lone UTF-16 surrogate, which has no \
             UTF-8 form"
                .into(),
        ),
        // The one other failure is QuickJS running out of memory for the UTF-8 copy.
        Err(_) => {
            let _ = ctx.catch();
            RunOutcome::Err {
                error: memory_error(memory_limit),
            }
            .into()
        }
    }
}

/// Turns an engine exception (from `eval` or a call) into a run outcome.
pub(crate) fn exception_outcome(
    ctx: &Ctx<'_>,
    err: rquickjs::Error,
    memory_limit: u64,
) -> RunOutcome {
    let error = if err.is_exception() {
        value_error(&ctx.catch(), memory_limit)
    } else {
        ErrorInfo {
            name: "InternalError".into(),
            message: err.to_string(),
            stack: None,
        }
    };
    RunOutcome::Err { error }
}

fn memory_error(memory_limit: u64) -> ErrorInfo {
    ErrorInfo {
        name: "MemoryError".into(),
        message: format!(
            "out of memory: the engine's limit of {} MiB was reached",
            memory_limit / (1024 * 1024)
        ),
        stack: None,
    }
}

/// QuickJS's own out-of-memory error, renamed so the cause is plain.
fn name_oom(error: ErrorInfo, memory_limit: u64) -> ErrorInfo {
    if error.name == "InternalError" && error.message == "out of memory" {
        memory_error(memory_limit)
    } else {
        error
    }
}

/// Describes a thrown value. QuickJS reports out-of-memory as a thrown `null`.
pub(crate) fn value_error(v: &Value<'_>, memory_limit: u64) -> ErrorInfo {
    if v.is_null() {
        return memory_error(memory_limit);
    }
    if let Some(obj) = v.as_object() {
        let name: Option<String> = obj.get("name").ok();
        let message: Option<String> = obj.get("message").ok();
        let stack: Option<String> = obj.get("stack").ok();
        let message = message.unwrap_or_default();
        let name = name.unwrap_or_else(|| "Error".into());
        return name_oom(
            ErrorInfo {
                name,
                message,
                stack: stack
                    .map(|s| s.trim_end().to_string())
                    .filter(|s| !s.is_empty()),
            },
            memory_limit,
        );
    }
    let text = v
        .as_string()
        .and_then(|s| s.to_string().ok())
        .or_else(|| v.as_number().map(|n| n.to_string()))
        .unwrap_or_else(|| format!("{:?}", v.type_of()));
    ErrorInfo {
        name: "Error".into(),
        message: format!("Uncaught {text}"),
        stack: None,
    }
}
