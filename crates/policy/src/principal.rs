//! Who is calling: the principal that owns executions and sessions and keys admission, rate
//! limits and audit lines.
//!
//! A principal is a name and how it was established ([`AuthMethod`]):
//! - over stdio there is one client per server process, named by its `initialize` (what it
//!   says it is, which is all stdio has): [`AuthMethod::Declared`];
//! - over HTTP (`serve --http`, the `http` module) the transport authenticates each request:
//!   a static bearer token maps to its configured name ([`AuthMethod::Token`]), an OAuth access
//!   token to its subject ([`AuthMethod::OAuth`]). On loopback without configured tokens the
//!   client's declared name is used, as on stdio.
//!
//! Two principals are the same only when both the name and the method are: a bearer token
//! named `alice` and an OAuth subject `alice` are different callers, and neither can become
//! the other by declaring a name. Whatever keys state by caller (sessions, paused executions,
//! tasks, admission) compares whole principals, or their [`Display`](fmt::Display) form, which
//! is unique per principal: the bare name for a declared one (so stdio's audit lines are what
//! they were), `token:NAME` and `oauth:NAME` for authenticated ones. Another principal asking
//! for something it does not own gets the same "unknown" as for a handle never issued.
//!
//! The handler reads a request's principal with `server::principal_of`.

use std::fmt;
use std::sync::Arc;

/// How a principal was established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AuthMethod {
    /// The client's own word (`clientInfo.name`): stdio, the command line, loopback HTTP
    /// without tokens.
    Declared,
    /// A static bearer token from the tokens file or environment.
    Token,
    /// An OAuth 2.1 access token (a JWT validated against the authorization server's keys).
    OAuth,
}

impl AuthMethod {
    /// The word used in logs, metrics and the principal's display form.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::Declared => "declared",
            AuthMethod::Token => "token",
            AuthMethod::OAuth => "oauth",
        }
    }
}

/// A caller's identity. Cheap to clone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal {
    name: Arc<str>,
    via: AuthMethod,
}

impl Principal {
    /// A principal that named itself (stdio's `clientInfo.name`, the command line).
    pub fn new(name: &str) -> Principal {
        Principal {
            name: Arc::from(name),
            via: AuthMethod::Declared,
        }
    }

    /// A principal the transport authenticated.
    pub fn authenticated(name: &str, via: AuthMethod) -> Principal {
        Principal {
            name: Arc::from(name),
            via,
        }
    }

    /// The name alone (a token's configured name, a token's subject, a declared name).
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn via(&self) -> AuthMethod {
        self.via
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.via {
            AuthMethod::Declared => f.write_str(&self.name),
            via => write!(f, "{}:{}", via.as_str(), self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A declared name cannot pass for an authenticated principal, nor one method for another.
    #[test]
    fn the_method_is_part_of_the_identity() {
        let declared = Principal::new("alice");
        let token = Principal::authenticated("alice", AuthMethod::Token);
        let oauth = Principal::authenticated("alice", AuthMethod::OAuth);
        assert_ne!(declared, token);
        assert_ne!(token, oauth);
        assert_eq!(
            [declared.to_string(), token.to_string(), oauth.to_string()],
            ["alice", "token:alice", "oauth:alice"]
        );
        assert_eq!(token.name(), "alice");
        assert_eq!(oauth.via(), AuthMethod::OAuth);
    }
}
