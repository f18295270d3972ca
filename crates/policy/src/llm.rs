//! Language-model calls from code (`llm.ask`, `llm.think`): the `llm` settings and the
//! per-execution budget. Off unless the settings enable it or the call asks for it
//! (`enableSampling: true`).
//!
//! ```json
//! "llm": {
//!   "enabled": true,
//!   "prefer": "client",
//!   "provider": {"api": "anthropic", "model": "claude-sonnet-4-5", "apiKeyEnv": "ANTHROPIC_API_KEY"},
//!   "maxCalls": 20, "maxInputTokens": 100000, "maxOutputTokens": 20000
//! }
//! ```
//!
//! The client's sampling is asked first (`prefer: "client"`, the default) and the provider is
//! the fallback; `prefer: "provider"` turns that round. A provider is reached by HTTPS at
//! `baseUrl` (defaults: `https://api.anthropic.com` for `anthropic`, `https://api.openai.com/v1`
//! for `openai`, which also covers every OpenAI-compatible endpoint); its key is read from the
//! environment variable `apiKeyEnv` at each call and never written in the settings.

use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;

use super::error::{LlmBudgetError, SettingError};

/// Model calls one execution may make by default: a loop that asks the model for every item
/// of a large list should be a decision, not an accident.
pub const DEFAULT_MAX_CALLS: u32 = 20;
/// Input tokens (prompts and system prompts, all calls) one execution may send by default.
pub const DEFAULT_MAX_INPUT_TOKENS: u64 = 100_000;
/// Output tokens one execution may receive by default; also caps one answer.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 20_000;
/// An answer's length when the call names none.
pub const DEFAULT_ANSWER_TOKENS: u32 = 1_024;
/// Default wait for a provider's answer.
pub const DEFAULT_PROVIDER_TIMEOUT_MS: u64 = 60_000;

/// Who is asked first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Prefer {
    #[default]
    Client,
    Provider,
}

/// The wire style of a provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// The Anthropic Messages API (`POST {baseUrl}/v1/messages`).
    Anthropic,
    /// An OpenAI-compatible chat endpoint (`POST {baseUrl}/chat/completions`).
    Openai,
}

/// A model provider reached directly.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderSettings {
    pub api: Api,
    pub base_url: Option<String>,
    pub model: String,
    /// The environment variable holding the API key (none: no key is sent, for local servers).
    pub api_key_env: Option<String>,
    pub timeout_ms: Option<u64>,
}

impl ProviderSettings {
    pub fn base_url(&self) -> String {
        let url = self.base_url.clone().unwrap_or_else(|| match self.api {
            Api::Anthropic => "https://api.anthropic.com".into(),
            Api::Openai => "https://api.openai.com/v1".into(),
        });
        url.trim_end_matches('/').to_string()
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.unwrap_or(DEFAULT_PROVIDER_TIMEOUT_MS))
    }
}

/// The `llm` settings.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct LlmSettings {
    pub enabled: bool,
    pub prefer: Prefer,
    pub provider: Option<ProviderSettings>,
    pub max_calls: u32,
    pub max_input_tokens: u64,
    pub max_output_tokens: u64,
}

impl Default for LlmSettings {
    fn default() -> Self {
        LlmSettings {
            enabled: false,
            prefer: Prefer::Client,
            provider: None,
            max_calls: DEFAULT_MAX_CALLS,
            max_input_tokens: DEFAULT_MAX_INPUT_TOKENS,
            max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
        }
    }
}

impl LlmSettings {
    pub fn validate(self) -> Result<Self, SettingError> {
        if let Some(p) = &self.provider {
            let url = p.base_url();
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(SettingError::LlmBaseUrl(url.to_string()));
            }
            if p.model.trim().is_empty() {
                return Err(SettingError::LlmModelEmpty);
            }
            if let Some(env) = &p.api_key_env
                && (env.is_empty() || env.contains('='))
            {
                return Err(SettingError::LlmKeyEnv(env.clone()));
            }
        }
        Ok(self)
    }
}

/// What one execution spent on model calls (reported as `llm` in its result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LlmUsage {
    pub calls: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// The budget of one execution, shared by its concurrent calls.
#[derive(Debug, Default)]
pub struct LlmBudget {
    used: Mutex<LlmUsage>,
}

impl LlmBudget {
    pub fn usage(&self) -> LlmUsage {
        *self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Reserves one call that sends about `input_tokens` and may receive `max_tokens`: the
    /// answer's allowed length (at most what is left), or why the budget does not allow it.
    pub fn reserve(
        &self,
        settings: &LlmSettings,
        input_tokens: u64,
        max_tokens: u32,
    ) -> Result<u32, LlmBudgetError> {
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if used.calls >= settings.max_calls {
            return Err(LlmBudgetError::Calls(settings.max_calls));
        }
        if used.input_tokens + input_tokens > settings.max_input_tokens {
            return Err(LlmBudgetError::InputTokens {
                asked: input_tokens,
                left: settings.max_input_tokens.saturating_sub(used.input_tokens),
                max: settings.max_input_tokens,
            });
        }
        let left = settings
            .max_output_tokens
            .saturating_sub(used.output_tokens);
        if left == 0 {
            return Err(LlmBudgetError::OutputTokens(settings.max_output_tokens));
        }
        used.calls += 1;
        used.input_tokens += input_tokens;
        Ok(u64::from(max_tokens).min(left) as u32)
    }

    /// Records what a call actually used: its real input count when the provider reported
    /// one (replacing the estimate `estimated`), and its output.
    pub fn settle(&self, estimated: u64, input_tokens: Option<u64>, output_tokens: u64) {
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(real) = input_tokens {
            used.input_tokens = used.input_tokens.saturating_sub(estimated) + real;
        }
        used.output_tokens += output_tokens;
    }
}

/// A rough token count for text (about four characters a token), for budgets when the
/// answering side reports none.
pub fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_caps_calls_and_tokens() {
        let s = LlmSettings {
            max_calls: 3,
            max_input_tokens: 100,
            max_output_tokens: 50,
            ..LlmSettings::default()
        };
        let b = LlmBudget::default();
        assert_eq!(b.reserve(&s, 10, 1000), Ok(50));
        b.settle(10, Some(20), 30);
        assert_eq!(b.reserve(&s, 10, 1000), Ok(20));
        b.settle(10, None, 20);
        assert!(
            b.reserve(&s, 10, 5)
                .unwrap_err()
                .to_string()
                .contains("output tokens")
        );
        let b = LlmBudget::default();
        assert!(
            b.reserve(&s, 101, 5)
                .unwrap_err()
                .to_string()
                .contains("input tokens")
        );
        for _ in 0..3 {
            b.reserve(&s, 1, 1).unwrap();
        }
        assert!(
            b.reserve(&s, 1, 1)
                .unwrap_err()
                .to_string()
                .contains("3 model calls")
        );
        assert_eq!(
            b.usage(),
            LlmUsage {
                calls: 3,
                input_tokens: 3,
                output_tokens: 0
            }
        );
    }
}
