//! Which replica minted a handle, when several servers share one address behind a load
//! balancer (docs/kubernetes.md, "Replicas and affinity").
//!
//! A stateless request (2026-07-28, no execution session) can be answered by any replica.
//! What outlives a request lives in one process's memory: execution sessions (`s_…`),
//! paused executions (`requestState`), tasks and runs that returned early (`run-…`). With
//! `--replica-id ID` (or `CODE_EXECUTOR_REPLICA_ID`) every such handle ends in `@ID`: the
//! **affinity key** a proxy routes on. A handle that arrives at another replica is refused
//! with an error naming the replica it belongs to, instead of the "unknown" a handle never
//! issued gets; its owner still checks the principal, so a handle stays as unguessable and
//! as bound to its client as before (the suffix adds a name, not a secret).
//!
//! Without a replica id, handles are as they always were (no suffix): a single server needs
//! no affinity. Such a server refuses a handle with a suffix the same clear way.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The separator between a handle's random part and the replica that minted it.
pub const SEPARATOR: char = '@';
/// Longest replica id: a DNS label (a pod's name is one).
pub const MAX_ID_LEN: usize = 63;

/// This process's replica id, if it is one of several; clones share the count of handles
/// refused for naming another replica (`/metrics`: a proxy that does not route on the key).
#[derive(Debug, Clone, Default)]
pub struct Replica {
    id: Option<Arc<str>>,
    misrouted: Arc<AtomicU64>,
}

/// A handle that another replica minted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elsewhere {
    /// The replica the handle names.
    pub owner: String,
    /// This one's id, when it has one.
    pub here: Option<String>,
}

impl std::fmt::Display for Elsewhere {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let here = match &self.here {
            Some(id) => format!("this is replica \"{id}\""),
            None => "this server is not one of its replicas (no --replica-id)".to_string(),
        };
        write!(
            f,
            "it belongs to replica \"{}\" and {here}: it lives in that replica's memory only. \
             Send requests that carry it to replica \"{}\": a proxy routes on the affinity key, \
             the text after '{SEPARATOR}' in the handle (docs/kubernetes.md)",
            self.owner, self.owner
        )
    }
}

/// A replica id that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaIdError {
    #[error("--replica-id hostname: cannot read the host name")]
    NoHostname,
    #[error(
        "replica id {0:?}: use 1 to {MAX_ID_LEN} letters, digits, '.', '-' or '_' (or \"hostname\")"
    )]
    Invalid(String),
}

impl Replica {
    /// No replica id: handles carry no suffix.
    pub fn single() -> Replica {
        Replica::default()
    }

    /// A replica named `id`: letters, digits, `.`, `-` and `_`, at most 63 characters;
    /// `hostname` takes the machine's host name (a pod's name in Kubernetes).
    pub fn named(id: &str) -> Result<Replica, ReplicaIdError> {
        let id = if id == "hostname" {
            hostname().ok_or(ReplicaIdError::NoHostname)?
        } else {
            id.to_string()
        };
        if !valid_id(&id) {
            return Err(ReplicaIdError::Invalid(id));
        }
        Ok(Replica {
            id: Some(id.into()),
            misrouted: Arc::default(),
        })
    }

    /// The id, when this process is a replica.
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// Handles refused so far because they name another replica.
    pub fn misrouted(&self) -> u64 {
        self.misrouted.load(Ordering::Relaxed)
    }

    /// `handle` with this replica's suffix (unchanged without a replica id).
    pub fn tag(&self, handle: String) -> String {
        match &self.id {
            Some(id) => format!("{handle}{SEPARATOR}{id}"),
            None => handle,
        }
    }

    /// `Err` when `handle` names another replica (or this process is none and it names one).
    pub fn check(&self, handle: &str) -> Result<(), Elsewhere> {
        match owner(handle) {
            Some(owner) if Some(owner) != self.id() => {
                self.misrouted.fetch_add(1, Ordering::Relaxed);
                Err(Elsewhere {
                    owner: owner.to_string(),
                    here: self.id().map(str::to_string),
                })
            }
            _ => Ok(()),
        }
    }
}

/// The replica a handle names: the text after its last separator, when that is a valid
/// replica id and what comes before ends in a handle's 32 hex digits. Anything else names
/// no replica (and is "unknown" to the table it is looked up in).
pub fn owner(handle: &str) -> Option<&str> {
    let (random, id) = handle.rsplit_once(SEPARATOR)?;
    let hex = random.len() >= 32
        && random.as_bytes()[random.len() - 32..]
            .iter()
            .all(u8::is_ascii_hexdigit);
    (hex && valid_id(id)).then_some(id)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_LEN
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
}

/// The machine's host name (`/proc/sys/kernel/hostname`, else `$HOSTNAME`).
fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|s| !s.is_empty()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use super::*;

    #[test]
    fn a_replica_tags_its_handles_and_refuses_another_replicas() {
        let a = Replica::named("web-0").unwrap();
        let b = Replica::named("web-1").unwrap();
        let h = a.tag(format!("s_{}", "0f".repeat(16)));
        assert_eq!(h, format!("s_{}@web-0", "0f".repeat(16)));
        assert_eq!(owner(&h), Some("web-0"));
        assert_eq!(a.check(&h), Ok(()));
        let err = b.check(&h).unwrap_err();
        assert_eq!(
            err,
            Elsewhere {
                owner: "web-0".into(),
                here: Some("web-1".into())
            }
        );
        let text = err.to_string();
        assert!(text.contains("replica \"web-0\"") && text.contains("this is replica \"web-1\""));
        assert_eq!(
            (a.misrouted(), b.misrouted(), b.clone().misrouted()),
            (0, 1, 1)
        );
        assert!(text.contains("affinity key"), "{text}");
    }

    #[test]
    fn a_single_server_keeps_handles_as_they_were_and_refuses_tagged_ones() {
        let one = Replica::single();
        let h = format!("run-{}", "a1".repeat(16));
        assert_eq!(one.tag(h.clone()), h);
        assert_eq!(one.check(&h), Ok(()));
        let err = one.check(&format!("{h}@web-2")).unwrap_err();
        assert_eq!(err.here, None);
        assert!(err.to_string().contains("no --replica-id"));
        // What is not a handle with a valid id names nobody: the table answers "unknown".
        for garbage in [
            format!("{h}@"),
            "run-abc@web-2".to_string(),
            format!("{h}@{}", "x".repeat(64)),
            format!("{h}@a b"),
            "x@y".to_string(),
        ] {
            assert_eq!(one.check(&garbage), Ok(()), "{garbage}");
        }
    }

    #[test]
    fn replica_ids_are_dns_label_like() {
        for bad in ["", "a b", "x@y", "é", &"a".repeat(64), "a/b", "a\nb"] {
            assert!(Replica::named(bad).is_err(), "{bad:?}");
        }
        for good in ["r1", "code-executor-7d9f8-abcde", "node_2.zone-a"] {
            assert_eq!(Replica::named(good).unwrap().id(), Some(good));
        }
        assert!(Replica::named("hostname").unwrap().id().is_some());
    }
}
