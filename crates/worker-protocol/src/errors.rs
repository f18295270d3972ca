//! The errors a request from code can end with, defined once for the host and both
//! languages.
//!
//! The host names each failure by a [`CallError`]; the JavaScript prelude and the Python shim
//! build their classes from [`CallError::table_json`], so that the same failure is the same
//! class, with the same parent, in both languages: `PolicyError` and `LimitError` are
//! `ToolError`s (as is a name that no tool has), an argument mistake is the language's own
//! `TypeError`, and a value out of range is `RangeError` in JavaScript and `ValueError` in
//! Python. A name the host sends that neither language knows becomes a subclass of
//! `ToolError` of that name.

/// Why a request from code failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallError {
    /// The upstream tool failed, its server could not be reached, no server or tool has the
    /// name asked for (however the call was written), or the host could not complete the call.
    Tool,
    /// The call is not allowed: a policy rule, the execution's `allowedTools`, a server held
    /// back or a tool hidden by the user's configuration.
    Policy,
    /// A limit of the execution or the client was reached (tool calls, discovery requests,
    /// rate).
    Limit,
    /// The code passed arguments that do not fit the tool's schema, or a name that could mean
    /// two tools.
    Argument,
    /// A value is outside what is accepted.
    Range,
    /// A person was asked to approve the call and said no, did not answer in time, or could
    /// not be asked (the configured fallback denied it). A `PolicyError`.
    ApprovalDenied,
    /// A `fetch` the host made failed on the network: connection refused, name not found,
    /// TLS, timeout. (A destination the grant does not allow is a `Policy` error.)
    Network,
}

impl CallError {
    /// Every kind, parents before children.
    pub const ALL: [CallError; 7] = [
        CallError::Tool,
        CallError::Policy,
        CallError::Limit,
        CallError::Argument,
        CallError::Range,
        CallError::ApprovalDenied,
        CallError::Network,
    ];

    /// The error's name, as the code sees it (`e.name`, `type(e).__name__`).
    pub fn name(self) -> &'static str {
        match self {
            CallError::Tool => "ToolError",
            CallError::Policy => "PolicyError",
            CallError::Limit => "LimitError",
            CallError::Argument => "TypeError",
            CallError::Range => "RangeError",
            CallError::ApprovalDenied => "ApprovalDenied",
            CallError::Network => "NetworkError",
        }
    }

    /// The class it extends, when it is one of ours.
    pub fn parent(self) -> Option<CallError> {
        match self {
            CallError::Policy | CallError::Limit | CallError::Network => Some(CallError::Tool),
            CallError::ApprovalDenied => Some(CallError::Policy),
            CallError::Tool | CallError::Argument | CallError::Range => None,
        }
    }

    /// The language's own class it is, when it is one (JavaScript, Python).
    pub fn builtin(self) -> Option<(&'static str, &'static str)> {
        match self {
            CallError::Argument => Some(("TypeError", "TypeError")),
            CallError::Range => Some(("RangeError", "ValueError")),
            CallError::Tool
            | CallError::Policy
            | CallError::Limit
            | CallError::ApprovalDenied
            | CallError::Network => None,
        }
    }

    /// One line for the class's documentation.
    pub fn doc(self) -> &'static str {
        match self {
            CallError::Tool => {
                "An upstream tool failed, no such server or tool (message names the nearest), or the host could not complete the call; message says why."
            }
            CallError::Policy => {
                "The call is not allowed for this execution; message names the rule."
            }
            CallError::Limit => {
                "A limit of this execution or client was reached; message names it."
            }
            CallError::Argument => {
                "Arguments that do not fit the tool's schema, or a name that could mean two tools."
            }
            CallError::Range => "A value outside what is accepted.",
            CallError::ApprovalDenied => {
                "A person denied the call (or did not answer in time); nothing was sent upstream."
            }
            CallError::Network => {
                "A fetch failed on the network (refused, not found, TLS, timeout); message says why."
            }
        }
    }

    /// The kind with this name, if it is one.
    pub fn from_name(name: &str) -> Option<CallError> {
        CallError::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The table both languages build their classes from: a JSON array of
    /// `{"name", "parent", "js", "py", "doc"}`, parents first (`parent`, `js` and `py` are
    /// `null` when they do not apply).
    pub fn table_json() -> String {
        let rows: Vec<serde_json::Value> = CallError::ALL
            .into_iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name(),
                    "parent": e.parent().map(CallError::name),
                    "js": e.builtin().map(|b| b.0),
                    "py": e.builtin().map(|b| b.1),
                    "doc": e.doc(),
                })
            })
            .collect();
        serde_json::Value::Array(rows).to_string()
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_come_first_and_names_round_trip() {
        for (i, e) in CallError::ALL.into_iter().enumerate() {
            assert_eq!(CallError::from_name(e.name()), Some(e));
            if let Some(p) = e.parent() {
                let at = CallError::ALL.iter().position(|x| *x == p).unwrap();
                assert!(at < i, "{e} before its parent {p}");
                assert!(
                    e.builtin().is_none(),
                    "{e}: one of ours or a builtin, not both"
                );
            }
        }
        let table: serde_json::Value = serde_json::from_str(&CallError::table_json()).unwrap();
        assert_eq!(table[1]["name"], "PolicyError");
        assert_eq!(table[1]["parent"], "ToolError");
        assert_eq!(table[4]["py"], "ValueError");
    }
}
