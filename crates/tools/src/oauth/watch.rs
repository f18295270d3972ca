//! One connection's authorization state: the manager its requests share
//! ([`SharedManager`]), the last failure that needs the user ([`AuthWatch`]), and which
//! OAuth errors mean a new login ([`needs_login`]).

use std::sync::Arc;

use rmcp::transport::auth::{AuthError, AuthorizationManager};

/// The last authorization failure on one connection (a 401 that refreshing did not fix, a
/// refresh token the server rejected), for the error message of the call that failed.
#[derive(Debug, Default)]
pub struct AuthWatch(std::sync::Mutex<Option<String>>);

impl AuthWatch {
    pub fn record(&self, why: impl Into<String>) {
        let why = why.into();
        tracing::debug!("upstream authorization failed: {why}");
        if let Ok(mut w) = self.0.lock() {
            *w = Some(why);
        }
    }

    pub fn clear(&self) {
        if let Ok(mut w) = self.0.lock() {
            *w = None;
        }
    }

    /// Why the server refused us, when it did.
    pub fn failure(&self) -> Option<String> {
        self.0.lock().ok().and_then(|w| w.clone())
    }
}

/// Says why an OAuth error means the user has to log in again, or `None` when it does not.
pub fn needs_login(e: &AuthError) -> Option<&'static str> {
    match e {
        AuthError::AuthorizationRequired => {
            Some("the stored token expired and could not be refreshed")
        }
        AuthError::TokenRefreshRejected(_) => {
            Some("the authorization server rejected the stored refresh token")
        }
        _ => None,
    }
}

/// A shared authorization manager (one per connection).
pub type SharedManager = Arc<tokio::sync::Mutex<AuthorizationManager>>;
