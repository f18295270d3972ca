//! Which upstreams' requests (elicitation, sampling, roots) are routed to the client:
//! `forwardRequests` in the settings (see `upstream::forward`).

use serde::Deserialize;

use super::error::SettingError;

/// The `forwardRequests` settings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForwardSettings {
    /// Servers whose requests are routed to the client (`"*"`: all).
    #[serde(default)]
    pub servers: Vec<String>,
    /// Roots (`file://` URIs) an upstream may see at most.
    #[serde(default)]
    pub roots: Vec<String>,
}

impl ForwardSettings {
    pub fn forwards(&self, server: &str) -> bool {
        self.servers.iter().any(|s| s == "*" || s == server)
    }

    pub fn validate(self) -> Result<Self, SettingError> {
        match self.roots.iter().find(|r| !r.starts_with("file://")) {
            Some(r) => Err(SettingError::ForwardRoot(r.clone())),
            None => Ok(self),
        }
    }
}
