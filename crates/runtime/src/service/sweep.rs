//! Background work that lives as long as the runtime: idle sessions ended, expired results
//! dropped.

use std::sync::Weak;

use super::state::Runtime;
use crate::live::parked::{self};

/// Ends idle sessions in the background, as long as the runtime lives.
pub fn end_idle_sessions(runtime: Weak<Runtime>) {
    let Some(rt) = runtime.upgrade() else {
        return;
    };
    let period = (rt.live().sessions().limits().idle_timeout() / 4).clamp(
        std::time::Duration::from_millis(200),
        std::time::Duration::from_secs(30),
    );
    drop(rt);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(rt) = runtime.upgrade() else {
                return;
            };
            rt.live().sessions().end_idle(&rt.policy().audit);
            rt.live().sessions().touch_durable().await;
        }
    });
}

/// Drops expired results every few seconds, so their memory goes even when nobody asks;
/// stops with the runtime. From now on the table of parked runs can start again, through
/// the runtime, a run lost to a restart while it waited for a person (`super::resume`).
pub fn sweep_periodically(runtime: Weak<Runtime>) {
    if let Some(rt) = runtime.upgrade() {
        rt.live()
            .parked()
            .set_resumer(Box::new(super::resume::Restarter(runtime.clone())));
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(parked::SWEEP_EVERY);
        loop {
            tick.tick().await;
            let Some(rt) = runtime.upgrade() else {
                return;
            };
            rt.live().parked().sweep_now();
        }
    });
}

/// How often cancel requests other replicas left in the store are read.
const REMOTE_CANCELS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Carries out, every second, the cancel requests other replicas sharing the store left for
/// runs running here (`Parked::cancels_from_store`); stops with the runtime. Nothing is
/// read when nothing runs here.
pub fn cancels_from_store_periodically(runtime: Weak<Runtime>) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(REMOTE_CANCELS_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(rt) = runtime.upgrade() else {
                return;
            };
            rt.live()
                .parked()
                .cancels_from_store(&rt.policy().audit)
                .await;
        }
    });
}

/// How often expired records are deleted from the durable store.
const STORE_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Deletes expired records from the durable store every minute (expired ones are never
/// read meanwhile), as long as the process runs.
pub fn sweep_store_periodically(store: Option<store::Shared>) {
    let Some(store) = store else {
        return;
    };
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(STORE_SWEEP_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            match store.sweep().await {
                Ok(0) => {}
                Ok(n) => tracing::debug!("store: {n} expired records deleted"),
                Err(e) => tracing::warn!("store: expired records not deleted: {e}"),
            }
        }
    });
}
