//! Personal data kept out of the model: `pii` in the settings.
//!
//! ```json
//! "pii": {
//!   "scan": ["mcp__crm__*"],
//!   "detectors": ["email", "phone", "iban", "card", "ip", "secret"],
//!   "patterns": { "CUSTOMER_ID": "CUS-[0-9]{6}" },
//!   "restoreTo": ["mcp__crm__*", "mcp__mailer__send_message"],
//!   "elsewhere": "token",
//!   "sandboxSees": "tokens"
//! }
//! ```
//!
//! Off unless `scan` names tools (the `allowedTools` pattern syntax, `policy::pattern`; `*`:
//! every tool). The results of those tools pass the detectors ([`detect`]) at the bridge, and
//! each value found is replaced by a token (`[EMAIL_1_3fa9c2]`) from the execution's, or the
//! session's, token map ([`vault`]). `sandboxSees: "tokens"` (the default): code sees the
//! tokens only, so nothing it returns, prints, writes, asks a model or fails with can hold a
//! value. `"values"`: code sees the real values (to compute with them) and every exit
//! (result, logs, the output file, errors, progress, `llm.ask` prompts) passes the same
//! detectors and map on its way out. A token in a tool call's arguments is put back for the
//! tools `restoreTo` names; elsewhere it goes as it is (`elsewhere: "token"`) or the call is
//! refused (`"deny"`). The map lives in the host only; the audit log gets counts per
//! detector. The detectors see through the common encodings (`crate::decode`:
//! percent, a query's `+`, HTML references, `\u` escapes), and a value the map holds is
//! made its token again wherever it comes back ([`vault::Vault::echoes`]).

pub mod detect;
pub mod vault;

use std::collections::BTreeMap;

use serde::Deserialize;

use super::error::SettingError;
use super::pattern;
use detect::{Builtin, Detectors};

/// Where a token bound for a tool not in `restoreTo` goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Elsewhere {
    /// The token goes as it is.
    #[default]
    Token,
    /// The call is refused (a `PolicyError`).
    Deny,
}

/// What code inside the sandbox sees of the values found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxSees {
    #[default]
    Tokens,
    Values,
}

/// The `pii` settings, as written.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PiiSettings {
    /// Tools whose results are scanned (patterns; `*` for all). Empty: off.
    #[serde(default)]
    pub scan: Vec<String>,
    /// Built-in detectors on (default: all).
    pub detectors: Option<Vec<String>>,
    /// User patterns by name (a regular expression of the `regex` crate's syntax).
    #[serde(default)]
    pub patterns: BTreeMap<String, String>,
    /// Tools a token is restored for (patterns).
    #[serde(default)]
    pub restore_to: Vec<String>,
    #[serde(default)]
    pub elsewhere: Elsewhere,
    #[serde(default)]
    pub sandbox_sees: SandboxSees,
}

impl PiiSettings {
    /// Checks the patterns and compiles the detectors once (a bad regular expression is
    /// named here, at start, not at the first result).
    pub fn validate(self) -> Result<Self, SettingError> {
        for p in self.scan.iter().chain(&self.restore_to) {
            if let Some(problem) = pattern::problem(p) {
                return Err(SettingError::Pii(problem));
            }
        }
        self.detectors()
            .map_err(|e| SettingError::Pii(e.to_string()))?;
        Ok(self)
    }

    fn detectors(&self) -> Result<Detectors, detect::DetectorError> {
        let builtins: Vec<String> = match &self.detectors {
            Some(d) => d.clone(),
            None => Builtin::ALL
                .iter()
                .map(|b| b.setting().to_string())
                .collect(),
        };
        let patterns: Vec<(String, String)> = self
            .patterns
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Detectors::new(&builtins, &patterns)
    }
}

/// The compiled `pii` policy.
#[derive(Debug, Clone, Default)]
pub struct Pii {
    settings: PiiSettings,
    detectors: Option<Detectors>,
}

impl Pii {
    /// From validated settings (an invalid pattern, impossible after `validate`, turns the
    /// detectors off and says so).
    pub fn new(settings: PiiSettings) -> Pii {
        let detectors = match settings.detectors() {
            Ok(d) => Some(d),
            Err(e) => {
                tracing::error!("pii detectors off: {e}");
                None
            }
        };
        Pii {
            settings,
            detectors,
        }
    }

    /// Whether anything is scanned at all.
    pub fn enabled(&self) -> bool {
        !self.settings.scan.is_empty() && self.detectors.as_ref().is_some_and(|d| !d.is_empty())
    }

    pub fn detectors(&self) -> Option<&Detectors> {
        self.detectors.as_ref().filter(|_| self.enabled())
    }

    /// Whether the results of `tool` of `server` are scanned.
    pub fn scans<'a>(
        &self,
        servers: impl Iterator<Item = &'a str> + Clone,
        server: &str,
        tool: &str,
    ) -> bool {
        self.enabled()
            && self
                .settings
                .scan
                .iter()
                .any(|p| pattern::matches(p, servers.clone(), server, tool))
    }

    /// Whether `tool` of `server` may receive the real values behind tokens.
    pub fn restores_to<'a>(
        &self,
        servers: impl Iterator<Item = &'a str> + Clone,
        server: &str,
        tool: &str,
    ) -> bool {
        self.settings
            .restore_to
            .iter()
            .any(|p| pattern::matches(p, servers.clone(), server, tool))
    }

    pub fn elsewhere(&self) -> Elsewhere {
        self.settings.elsewhere
    }

    pub fn sandbox_sees(&self) -> SandboxSees {
        self.settings.sandbox_sees
    }
}

/// The filter of the server's log lines when `pii` is on: every span a detector finds becomes
/// its label alone (`[EMAIL]`): a library's debug line may quote an upstream's message, and
/// the log is not the place for a token map.
pub fn log_filter(pii: &Pii) -> Option<impl Fn(&[u8]) -> Option<Vec<u8>> + Send + Sync + 'static> {
    let detectors = pii.detectors()?.clone();
    Some(move |line: &[u8]| {
        let text = std::str::from_utf8(line).ok()?;
        let mut work = 0;
        let found = detectors.find(text, vault::looks_json(text), &mut work);
        if found.is_empty() {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in &found {
            out.push_str(&text[at..f.start]);
            out.push('[');
            out.push_str(detectors.label_name(f.label));
            out.push(']');
            at = f.end;
        }
        out.push_str(&text[at..]);
        Some(out.into_bytes())
    })
}

/// Tokens made, by detector label (shared by everything of one execution that makes them).
pub type Made = std::sync::Arc<std::sync::Mutex<BTreeMap<String, u32>>>;

/// What leaves an execution whose code sees values passes here: every value the detectors
/// find becomes its token in the execution's map.
#[derive(Debug, Clone)]
pub struct Exit {
    pii: std::sync::Arc<Pii>,
    vault: std::sync::Arc<vault::Vault>,
    made: Made,
}

impl Exit {
    /// The exit of an execution with this policy and map: `None` unless code sees values.
    pub fn new(
        pii: &std::sync::Arc<Pii>,
        vault: &std::sync::Arc<vault::Vault>,
        made: &Made,
    ) -> Option<Exit> {
        (pii.enabled() && pii.sandbox_sees() == SandboxSees::Values).then(|| Exit {
            pii: pii.clone(),
            vault: vault.clone(),
            made: made.clone(),
        })
    }

    fn count(&self, made: BTreeMap<String, u32>) {
        count(&self.made, made);
    }

    /// `text` tokenised; borrowed when nothing was found.
    pub fn text<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        let Some(d) = self.pii.detectors() else {
            return std::borrow::Cow::Borrowed(text);
        };
        let mut made = BTreeMap::new();
        self.vault.refresh();
        let out = self.vault.tokenise(d, text, &mut made);
        self.count(made);
        out
    }

    /// `v`'s strings tokenised in place.
    pub fn value(&self, v: &mut serde_json::Value) {
        if let Some(d) = self.pii.detectors() {
            let mut made = BTreeMap::new();
            self.vault.refresh();
            self.vault.tokenise_value(d, v, &mut made);
            self.count(made);
        }
    }

    /// The map and the detectors (for the arguments of a tool not allowed to receive values).
    pub fn parts(&self) -> Option<(&vault::Vault, &Detectors)> {
        Some((&*self.vault, self.pii.detectors()?))
    }
}

/// Adds `made` to `into`.
pub fn count(into: &Made, made: BTreeMap<String, u32>) {
    if made.is_empty() {
        return;
    }
    if let Ok(mut m) = into.lock() {
        for (k, n) in made {
            *m.entry(k).or_insert(0) += n;
        }
    }
}

#[cfg(test)]
mod tests;
