//! The host side: what answers the requests code makes. Every request passes the bridge
//! ([`bridge`]: policy, schema, upstream, discovery, stored values); approvals
//! ([`approval`]), model calls ([`llm`]) and the network ([`fetch`]) hook in there. What
//! they share is one execution's [`scope::RunScope`], built complete by its constructor, with
//! the state it holds for approvals ([`remembered`]), the network ([`net`]) and the results
//! its calls handed code ([`handed`]). Tool calls and model answers go through the request's
//! call log, which a resumed run replays ([`logged`]). A tool's result reaches code in the shape the call
//! asked for: structured or text ([`shape`]). Skills
//! ([`skills`]) run as nested executions the runtime lends through a narrow trait, and so do
//! the executor's own execute tools when code calls them ([`own`]).

pub mod approval;
pub mod bridge;
pub mod calls;
pub mod fetch;
pub mod handed;
pub mod hooks;
pub mod inbox;
pub mod llm;
pub mod logged;
pub mod net;
pub mod own;
pub mod pii;
pub mod remembered;
pub mod scope;
pub mod shape;
pub mod skills;
