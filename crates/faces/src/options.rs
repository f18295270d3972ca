//! How the core is started ([`CoreOptions`]): the binary re-entered for workers, the pools'
//! sizes and memory, the sandbox mode, Python, and the replica.

use std::path::PathBuf;

use policy::replica;
use runtime::python::PythonOptions;

/// How the core is started.
#[derive(Debug, Clone)]
pub struct CoreOptions {
    /// The binary re-entered for workers (normally `std::env::current_exe()`).
    pub exe: PathBuf,
    /// Warm workers per language kept however idle the server is (for Python:
    /// `python.pool_size`).
    pub pool_size: usize,
    /// `pool_size` was chosen (flag, environment or settings): without `pool_max` the pool
    /// then keeps exactly that many.
    pub pool_size_pinned: bool,
    /// Most workers each pool grows to under demand (`None`: [`runtime::pool::DEFAULT_POOL_MAX`],
    /// or the pool's own size if larger; a pool of size 0 stays empty).
    pub pool_max: Option<usize>,
    /// Memory all pools' ready workers may hold together.
    pub pool_memory_bytes: u64,
    /// Idle time after which a grown pool stops one surplus worker.
    pub pool_shrink_after: std::time::Duration,
    pub sandbox: sandbox::SandboxMode,
    pub python: PythonOptions,
    /// Set when this server is one of several replicas: the handles of what outlives a
    /// request name it (`replica`, docs/kubernetes.md).
    pub replica: replica::Replica,
    /// Where what outlives the process is kept (`--store`, the `store` setting): opened by
    /// the serving commands ([`crate::composition::open_store`]).
    pub store: store::Spec,
    /// The store was named (`--store`, `CODE_EXECUTOR_STORE`, `store.url`): one that cannot
    /// be opened stops the server. The default one falls back to memory, loudly.
    pub store_named: bool,
    pub store_limits: store::Limits,
}

impl CoreOptions {
    /// How a pool of `min` warm workers is sized.
    pub(crate) fn sizing(&self, min: usize, pinned: bool) -> runtime::pool::PoolSizing {
        let max = match self.pool_max {
            Some(max) => max.max(min),
            None if min == 0 || pinned => min,
            None => tools::defaults::DEFAULT_POOL_MAX.max(min),
        };
        runtime::pool::PoolSizing {
            min,
            max,
            shrink_after: self.pool_shrink_after,
        }
    }
}
