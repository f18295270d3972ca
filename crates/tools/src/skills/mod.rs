//! Skills: code that is saved, found, reused and shared. A skill is an Agent Skills directory
//! (`SKILL.md` and its files) in the user's skills directory, a trusted project's, or one the
//! user serves ([`store`]); one saved from code carries its script and what it calls
//! ([`skill`]), and is flagged when those tools change ([`changes`]). The runtime calls them
//! (`skills.name(args)`), `search_tools` finds them, and the server serves them over the MCP
//! skills extension (SEP-2640).

pub mod beneath;
pub mod changes;
pub mod error;
pub mod request;
pub mod skill;
pub mod store;
pub mod uri;
