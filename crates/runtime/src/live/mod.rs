//! The table of live handles: everything that outlives one request and is named by an
//! opaque, unguessable, principal-bound, expiring handle: sessions ([`sessions`]), parked runs
//! and tasks ([`parked`]), executions paused for their client's answers ([`paused`]). The
//! rules they share (minting, the principal binding, the replica check, expiry) are written
//! once, in [`table`]; every server face asks [`Live`], which holds the three.

pub mod durable;
pub mod parked;
pub mod paused;
pub mod revive;
pub mod sessions;
pub mod table;

use std::sync::Arc;

use parked::Parked;
use paused::PausedTable;
use policy::long_runs::LongRunLimits;
use policy::replica::Replica;
use sessions::Sessions;

/// Every live handle of the server, by kind, all minted for one replica.
pub struct Live {
    sessions: Sessions,
    /// Executions that outlive their request (tasks, `yieldAfterMs`).
    parked: Parked,
    /// Executions waiting for their client's answers (MRTR).
    paused: Arc<PausedTable>,
    /// The durable store, when the server has one (`--store`).
    durable: Option<durable::Durable>,
}

impl Live {
    /// The table of `sessions` and of long runs within `long_runs`; every handle names
    /// `replica`.
    pub fn new(sessions: Sessions, long_runs: LongRunLimits, replica: Replica) -> Live {
        Live {
            parked: Parked::new(long_runs).with_replica(replica.clone()),
            sessions: sessions.with_replica(replica.clone()),
            paused: PausedTable::new(replica),
            durable: None,
        }
    }

    /// Keeps sessions' stored values and runs with a handle in `durable` too (see
    /// [`durable`]).
    pub fn set_durable(&mut self, durable: durable::Durable) {
        self.sessions.set_durable(durable.clone());
        self.parked.set_durable(durable.clone());
        self.durable = Some(durable);
    }

    pub fn durable(&self) -> Option<&durable::Durable> {
        self.durable.as_ref()
    }

    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    pub fn parked(&self) -> &Parked {
        &self.parked
    }

    pub fn paused(&self) -> &Arc<PausedTable> {
        &self.paused
    }
}
