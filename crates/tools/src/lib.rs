//! Where tools come from and what is known about them: the settings and the client files they
//! are read from ([`config`], with [`oauth`] for upstreams that need a login), the connections
//! to upstream MCP servers ([`upstream`]), the catalog over them (names, search, schemas:
//! [`catalog`]), the skills store ([`skills`]), and our own tools' names and parameters
//! ([`own_tools`]). Below them, the plumbing every floor above shares: starting child
//! processes ([`child`]), line framing and wide pipes ([`lines`], [`pipes`]), TLS set-up
//! ([`tls`]), trace context ([`trace`]) and the pools' defaults ([`defaults`]).
//!
//! Depends on the policy crate (settings types, redaction); the runtime and the server faces
//! depend on it.

pub mod catalog;
pub mod child;
pub mod config;
pub mod console;
pub mod defaults;
pub mod lines;
pub mod net;
pub mod oauth;
pub mod own_tools;
pub mod pipes;
pub mod skills;
pub mod tls;
pub mod trace;
pub mod upstream;
