//! The worker side: worker processes and their frames ([`process`]), pre-started pools of
//! them ([`pool`], and one per set of read grants: [`grants`]), the host's CPython with its
//! shim ([`python`]), the memory a pool may hold ([`memory`]), and what workers write:
//! directory trees measured and deleted by descriptor ([`tree`]), bounded workspaces
//! ([`bounded`], [`workspace`]) under a root per server ([`roots`]). Nothing here knows about
//! sessions, executions or the host side.

pub mod bounded;
pub mod grants;
pub mod memory;
pub mod pool;
pub mod process;
pub mod python;
pub mod python_error;
pub mod roots;
pub mod template;
pub mod tree;
pub mod workspace;

pub use process::{Language, WorkerProcess, WorkerSpawner};
