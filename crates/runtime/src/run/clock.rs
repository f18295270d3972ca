//! An execution's deadline that stops while the execution waits for a person or the client.
//!
//! The deadline bounds the time code runs, not the time a human takes to read an approval
//! prompt: while any pause is open ([`Clock::pause`]) the clock stands still, and when the last
//! one closes the deadline moves by the time spent paused. Waiting for an answer has its own,
//! separate limit (the approval timeout). [`Clock::expired`] is what the host races the run
//! against.

use std::sync::{Arc, Mutex};
use tokio::sync::Notify;
use tokio::time::Instant;

/// The deadline of one execution (shared by its drive loop and every request it makes).
#[derive(Debug)]
pub struct Clock {
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug)]
struct State {
    deadline: Instant,
    /// Pauses open now.
    paused: u32,
    /// When the first of the open pauses began.
    since: Option<Instant>,
}

impl Clock {
    pub fn new(deadline: std::time::Instant) -> Arc<Clock> {
        let deadline = Instant::from_std(deadline);
        Arc::new(Clock {
            state: Mutex::new(State {
                deadline,
                paused: 0,
                since: None,
            }),
            changed: Notify::new(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The deadline as it stands now; while paused, as if the pause ended now.
    pub fn deadline(&self) -> std::time::Instant {
        let s = self.state();
        match s.since {
            Some(since) => s.deadline + since.elapsed(),
            None => s.deadline,
        }
        .into_std()
    }

    /// Stops the clock until the returned guard is dropped (pauses nest).
    pub fn pause(self: &Arc<Self>) -> Paused {
        let mut s = self.state();
        s.paused += 1;
        if s.paused == 1 {
            s.since = Some(Instant::now());
        }
        drop(s);
        self.changed.notify_waiters();
        Paused(self.clone())
    }

    /// Resolves when the deadline has passed with no pause open.
    pub async fn expired(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let (deadline, paused) = {
                let s = self.state();
                (s.deadline, s.paused > 0)
            };
            if paused {
                changed.await;
                continue;
            }
            if Instant::now() >= deadline {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => {}
                () = &mut changed => {}
            }
        }
    }
}

/// An open pause; the clock runs again when the last one is dropped.
#[derive(Debug)]
pub struct Paused(Arc<Clock>);

impl Drop for Paused {
    fn drop(&mut self) {
        let mut s = self.0.state();
        s.paused = s.paused.saturating_sub(1);
        if s.paused == 0
            && let Some(since) = s.since.take()
        {
            s.deadline += since.elapsed();
        }
        drop(s);
        self.0.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_pause_moves_the_deadline_by_its_length() {
        let clock = Clock::new(std::time::Instant::now() + Duration::from_millis(50));
        let started = Instant::now();
        let pause = clock.pause();
        let waiter = {
            let clock = clock.clone();
            tokio::spawn(async move { clock.expired().await })
        };
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(!waiter.is_finished(), "expired while paused");
        drop(pause);
        waiter.await.unwrap();
        assert!(started.elapsed() >= Duration::from_millis(195));
    }

    #[tokio::test]
    async fn without_pauses_it_expires_at_the_deadline() {
        let clock = Clock::new(std::time::Instant::now() + Duration::from_millis(20));
        let t = std::time::Instant::now();
        clock.expired().await;
        assert!(t.elapsed() >= Duration::from_millis(19));
    }
}
