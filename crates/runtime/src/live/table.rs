//! The one table every live handle is kept in: sessions, parked runs and tasks, paused
//! executions each hold a [`Handles`] of their own entries, and this is where the rules they
//! share are written, once:
//!
//! - **Minting** ([`mint`]): a kind's prefix and 128 random bits in hex, suffixed with the
//!   replica's `@ID` (see `policy::replica`): opaque and unguessable.
//! - **Replica check**: a handle another replica minted is answered with where it lives,
//!   before anything else is looked at.
//! - **Principal binding** ([`Handles::find`]): an entry is found only by the principal it
//!   was minted for (and only while its kind shows it); anyone else gets [`Miss::Unknown`],
//!   the same answer as for a handle never issued. A handle that ended is remembered with
//!   why (a bounded number, per kind), for its own principal only.
//! - **Expiry** ([`Handles::expire`]): each kind says when one of its entries is past its
//!   time ([`Fate`]); the table ends those entries, remembering why when the kind wants the
//!   next call with the handle to say so.

use std::collections::{HashMap, VecDeque};

use crate::ids::random_hex;
use policy::principal::Principal;
use policy::replica::{Elsewhere, Replica};

/// A fresh handle of a kind: `prefix` and 128 random bits in hex, tagged with `replica`.
pub fn mint(replica: &Replica, prefix: &str) -> String {
    replica.tag(format!("{prefix}{}", random_hex::<16>()))
}

/// Why a handle was not found for a principal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss<R> {
    /// Another replica minted it.
    Elsewhere(Elsewhere),
    /// Never issued to this principal (or not shown yet).
    Unknown,
    /// It was this principal's and ended: why.
    Gone(R),
}

/// What the expiry rule of a kind says about one entry.
pub enum Fate<R> {
    /// Still within its time.
    Stays,
    /// Past its time: it ends, remembered with why (`None`: forgotten at once).
    Ends(Option<R>),
}

/// The live entries of one kind, by handle, each bound to its principal; and the handles
/// that ended, with why (`R`).
pub struct Handles<E, R> {
    entries: HashMap<String, (Principal, E)>,
    gone: VecDeque<(String, Principal, R)>,
    /// Ended handles remembered at most.
    gone_kept: usize,
}

impl<E, R: Clone> Handles<E, R> {
    /// A table that remembers up to `gone_kept` ended handles.
    pub fn new(gone_kept: usize) -> Self {
        Handles {
            entries: HashMap::new(),
            gone: VecDeque::new(),
            gone_kept,
        }
    }

    /// Keeps `entry` under `handle` for `owner`.
    pub fn insert(&mut self, handle: String, owner: Principal, entry: E) {
        self.entries.insert(handle, (owner, entry));
    }

    /// The entry of `handle` for `owner`: the replica check, then the binding (`shown`: the
    /// kind shows this entry to its owner now), then the handles that ended.
    pub fn find(
        &mut self,
        replica: &Replica,
        owner: &Principal,
        handle: &str,
        shown: impl FnOnce(&E) -> bool,
    ) -> Result<&mut E, Miss<R>> {
        replica.check(handle).map_err(Miss::Elsewhere)?;
        match self.entries.get_mut(handle) {
            Some((o, e)) if o == owner && shown(e) => Ok(e),
            Some(_) => Err(Miss::Unknown),
            None => match self.gone.iter().find(|(h, o, _)| h == handle && o == owner) {
                Some((_, _, why)) => Err(Miss::Gone(why.clone())),
                None => Err(Miss::Unknown),
            },
        }
    }

    /// The entry of `handle`, whoever holds it (for the runtime's own bookkeeping, never for
    /// a principal's request).
    pub fn get(&self, handle: &str) -> Option<&E> {
        self.entries.get(handle).map(|(_, e)| e)
    }

    /// The entry of `handle` with its principal (the runtime's own bookkeeping).
    pub fn get_with_owner(&self, handle: &str) -> Option<(&Principal, &E)> {
        self.entries.get(handle).map(|(o, e)| (o, e))
    }

    /// As [`Handles::get`], to change it.
    pub fn get_mut(&mut self, handle: &str) -> Option<&mut E> {
        self.entries.get_mut(handle).map(|(_, e)| e)
    }

    /// Ends `handle`: its entry leaves the table, remembered with `why` if given.
    pub fn end(&mut self, handle: &str, why: impl FnOnce(&E) -> Option<R>) -> Option<E> {
        let (owner, entry) = self.entries.remove(handle)?;
        if let Some(why) = why(&entry) {
            self.remember(handle.to_string(), owner, why);
        }
        Some(entry)
    }

    /// Remembers that `handle` of `owner` ended, and why.
    pub fn remember(&mut self, handle: String, owner: Principal, why: R) {
        if self.gone_kept == 0 {
            return;
        }
        if self.gone.len() >= self.gone_kept {
            self.gone.pop_front();
        }
        self.gone.push_back((handle, owner, why));
    }

    /// The expiry rule: every entry `fate` says is past its time ends (see [`Fate`]); the
    /// ended entries are returned for what their kind does when one ends.
    pub fn expire(&mut self, mut fate: impl FnMut(&E) -> Fate<R>) -> Vec<(String, E)> {
        let due: Vec<(String, Option<R>)> = self
            .entries
            .iter()
            .filter_map(|(h, (_, e))| match fate(e) {
                Fate::Stays => None,
                Fate::Ends(why) => Some((h.clone(), why)),
            })
            .collect();
        due.into_iter()
            .filter_map(|(h, why)| {
                let entry = self.end(&h, |_| why)?;
                Some((h, entry))
            })
            .collect()
    }

    /// Every live entry, with its handle and owner.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Principal, &E)> {
        self.entries.iter().map(|(h, (o, e))| (h, o, e))
    }

    /// The live entries `owner` holds.
    pub fn held_by<'a>(&'a self, owner: &'a Principal) -> impl Iterator<Item = &'a E> {
        self.entries
            .values()
            .filter(move |(o, _)| o == owner)
            .map(|(_, e)| e)
    }

    /// Live entries now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// No entry is live now.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}
