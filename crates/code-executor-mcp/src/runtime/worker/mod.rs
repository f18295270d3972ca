//! The worker side: worker processes and their frames ([`process`]), pre-started pools of
//! them ([`pool`], and one per set of read grants: [`grants`]), the host's CPython with its
//! shim ([`python`]), the memory a pool may hold ([`memory`]), and what workers write:
//! directory trees measured and deleted by descriptor ([`tree`]), bounded workspaces
//! ([`bounded`], [`workspace`]) under a root per server ([`roots`]). Nothing here knows about
//! sessions, executions or the host side.

pub(crate) mod bounded;
pub(crate) mod grants;
pub(crate) mod memory;
pub(crate) mod pool;
pub(crate) mod process;
pub(crate) mod python;
pub(crate) mod python_error;
pub(crate) mod roots;
pub(crate) mod tree;
pub(crate) mod workspace;

pub(crate) use process::{Language, WorkerProcess, WorkerSpawner};
