//! What a check reports: the diagnostics found in the code, and why code was not run or
//! could not be checked (one mapping to the message code and clients see).

/// Diagnostics shown in the error; the rest are counted.
const MAX_SHOWN: usize = 20;

/// A problem the checker found in the code, at a place in the code as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

/// Why code was not run, or could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The code has type errors: nothing ran.
    #[error("{}", found(.checker, .diagnostics))]
    Found {
        checker: String,
        diagnostics: Vec<Diagnostic>,
    },
    /// No checker for the language.
    #[error(
        "the code was to be type-checked (check: true), but no {language} checker was found: \
         {hint}; or call without check"
    )]
    NoChecker {
        language: &'static str,
        hint: String,
    },
    /// The checker could not be run, or gave no answer we could read.
    #[error(
        "the code could not be type-checked: {0}; nothing ran (call without check to run it unchecked)"
    )]
    Failed(String),
    /// The check did not finish within the time it had: what was left of the execution's
    /// deadline, or `check.timeoutMs`.
    #[error(
        "the type check did not finish within the {0} ms it had (what was left of the \
         execution's timeoutMs, at most check.timeoutMs); nothing ran (simplify the types, give \
         the execution more time, or call without check to run it unchecked)"
    )]
    Timeout(u128),
}

fn found(checker: &str, diagnostics: &[Diagnostic]) -> String {
    let mut s = format!(
        "the code does not type-check ({checker}, against our API and the declared and \
         inferred types of the tools it can reach); nothing ran:"
    );
    for d in diagnostics.iter().take(MAX_SHOWN) {
        s.push_str(&format!(
            "\n  line {}, column {}: {}",
            d.line, d.column, d.message
        ));
    }
    if diagnostics.len() > MAX_SHOWN {
        s.push_str(&format!(
            "\n  ... and {} more",
            diagnostics.len() - MAX_SHOWN
        ));
    }
    s
}
