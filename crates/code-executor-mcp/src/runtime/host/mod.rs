//! The host side: what answers the requests code makes. Every request passes the bridge
//! ([`bridge`]: policy, schema, upstream, discovery, stored values); approvals
//! ([`approval`]), model calls ([`llm`]) and the network ([`fetch`]) hook in there. What
//! they share is one execution's [`scope::RunScope`], built complete by its constructor, with
//! the state it holds for approvals ([`remembered`]), the network ([`net`]) and the results
//! its calls handed code ([`handed`]). A tool's result reaches code in the shape the call
//! asked for: structured or text ([`shape`]). Skills
//! ([`skills`]) run as nested executions the runtime lends through a narrow trait, and so do
//! the executor's own execute tools when code calls them ([`own`]).

pub(crate) mod approval;
pub(crate) mod bridge;
pub(crate) mod fetch;
pub(crate) mod handed;
pub(crate) mod hooks;
pub(crate) mod inbox;
pub(crate) mod llm;
pub(crate) mod net;
pub(crate) mod own;
pub(crate) mod pii;
pub(crate) mod remembered;
pub(crate) mod scope;
pub(crate) mod shape;
pub(crate) mod skills;
