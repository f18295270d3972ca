//! Bounding a future by an execution's deadline.

use crate::run::clock::Clock;

/// Runs `fut` until the execution's deadline, which stands still while the execution waits
/// for a person (`Err` when the deadline came first).
pub(super) async fn until<T>(
    clock: &Clock,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, ()> {
    tokio::select! {
        out = fut => Ok(out),
        () = clock.expired() => Err(()),
    }
}
