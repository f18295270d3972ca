//! One ledger per request ([`Ledger`]): what a top-level execution and every skill it calls,
//! at any depth, draw from together. A skill runs as an execution of its own
//! (`Nested::run_nested`); it gets the caller's ledger, never a fresh one, so nesting cannot
//! multiply a budget:
//!
//! - tool calls (`maxToolCalls`), counted on one counter, and the permits of calls in flight
//!   (`maxConcurrentToolCalls`), one semaphore for the whole tree;
//! - discovery requests (`maxDiscoveryCalls`);
//! - model calls and their tokens (`llm.maxCalls`, `maxInputTokens`, `maxOutputTokens`);
//! - `fetch` requests and received bytes (`permissions.fetch.maxRequests`, `maxTotalBytes`);
//! - captured output (`maxLogBytes`): a skill's lines are taken while it runs, and handed
//!   to its caller's output when it ends (the caller prints them, taking them again);
//! - the workers its skills hold at once ([`SkillSlots`]).
//!
//! What the caller reports (`toolCalls`, `llm`) is read from the ledger, so it is the whole
//! tree's. The limits themselves are the top-level execution's: a skill runs with its
//! caller's request limits, resolved against the same settings.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use tokio::sync::{Notify, Semaphore};

use policy::Limits;
use policy::llm::LlmBudget;

/// Skills calling skills: at most this deep.
pub const MAX_SKILL_DEPTH: u32 = 4;

/// What one request and the skills under it spend, shared by all of them.
pub struct Ledger {
    /// Tool-call attempts of the whole tree (the top-level execution's counter, which its
    /// `run.end` line and a parked run's snapshot read too).
    pub tool_calls: Arc<AtomicU32>,
    /// Upstream calls in flight at once, in the whole tree.
    pub in_flight: Semaphore,
    /// Discovery requests of the whole tree.
    pub discovery_calls: AtomicU32,
    /// Model calls and tokens of the whole tree.
    pub llm: LlmBudget,
    /// `fetch` requests (redirect hops count) and response bytes of the whole tree.
    pub fetch_requests: AtomicU32,
    pub fetch_bytes: AtomicU64,
    /// Captured output left for the whole tree (starts at `maxLogBytes`).
    pub output: OutputBudget,
    /// Workers the tree's skills hold at once.
    pub skills: SkillSlots,
    /// The request's call log: the calls and answers of the whole tree, in order.
    pub calls: Arc<super::calllog::CallLog>,
}

impl Ledger {
    /// The ledger of a top-level execution with `limits`, counting tool calls on
    /// `tool_calls`; its skills run at most `max_concurrent_skills` at a time (see
    /// [`SkillSlots`]); its calls and answers go in `calls`.
    pub fn new(
        limits: &Limits,
        tool_calls: Arc<AtomicU32>,
        max_concurrent_skills: usize,
        calls: Arc<super::calllog::CallLog>,
    ) -> Ledger {
        Ledger {
            tool_calls,
            in_flight: Semaphore::new(limits.max_concurrent_tool_calls.max(1)),
            discovery_calls: AtomicU32::new(0),
            llm: LlmBudget::default(),
            fetch_requests: AtomicU32::new(0),
            fetch_bytes: AtomicU64::new(0),
            output: OutputBudget::new(limits.max_log_bytes),
            skills: SkillSlots::new(max_concurrent_skills),
            calls,
        }
    }
}

/// Model calls and tokens of one execution and the nested executions under it: what a nested
/// run's `samplingMetrics` say (the ledger's `llm` is the whole request's and holds its
/// budget). Each call is added to its execution's tally and to each caller's.
#[derive(Debug, Default)]
pub struct LlmSpent(std::sync::Mutex<policy::llm::LlmUsage>);

impl LlmSpent {
    /// One model call that sent `input` and received `output` tokens.
    pub fn add(&self, input: u64, output: u64) {
        let mut u = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        u.calls += 1;
        u.input_tokens += input;
        u.output_tokens += output;
    }

    pub fn usage(&self) -> policy::llm::LlmUsage {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Bytes of captured output left for a request and its skills: each execution's collector
/// takes each line it keeps from here.
#[derive(Clone, Debug)]
pub struct OutputBudget(Arc<AtomicU64>);

impl OutputBudget {
    pub fn new(bytes: u64) -> OutputBudget {
        OutputBudget(Arc::new(AtomicU64::new(bytes)))
    }

    /// Takes `len` bytes if that many are left.
    pub fn take(&self, len: u64) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |left| {
                left.checked_sub(len)
            })
            .is_ok()
    }

    /// Gives `len` bytes back: a skill's lines handed to its caller, whose output takes them
    /// again as the caller prints them.
    pub fn give_back(&self, len: u64) {
        self.0.fetch_add(len, Ordering::AcqRel);
    }

    /// Bytes left.
    #[cfg(test)]
    pub fn left(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// The workers a request's skills hold at once, at every depth together.
///
/// A skill waiting for a skill it called keeps its own worker, so one semaphore of `cap`
/// permits could deadlock: `cap` skills each waiting for a slot for their own callee. Each
/// level of nesting gets one slot of headroom instead: a skill at depth `d` (1: called by
/// the request's own code) starts only while fewer than `cap + d - 1` skills of the request
/// run. Skills called by the request's code run at most `cap` at a time; the whole tree holds
/// at most `cap + MAX_SKILL_DEPTH - 1` skill workers. No wait can be circular: the deepest
/// skills call no skill and always finish, and each level can take a slot the levels above
/// it cannot fill. The rest queue, within the caller's deadline.
pub struct SkillSlots {
    cap: usize,
    running: std::sync::Mutex<usize>,
    freed: Notify,
    /// Most skills of the request that ran at once.
    peak: AtomicUsize,
}

/// One running skill's slot; given back when dropped.
pub struct SkillSlot<'a>(&'a SkillSlots);

impl Drop for SkillSlot<'_> {
    fn drop(&mut self) {
        let mut n = self
            .0
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *n = n.saturating_sub(1);
        drop(n);
        self.0.freed.notify_waiters();
    }
}

impl SkillSlots {
    pub fn new(cap: usize) -> SkillSlots {
        SkillSlots {
            cap: cap.max(1),
            running: std::sync::Mutex::new(0),
            freed: Notify::new(),
            peak: AtomicUsize::new(0),
        }
    }

    /// Most skill workers the request may hold at once, at every depth.
    #[cfg(test)]
    pub fn most(&self) -> usize {
        self.cap + MAX_SKILL_DEPTH as usize - 1
    }

    /// Most skills of the request that ran at once so far.
    #[cfg(test)]
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// Whether a skill at `depth` would wait now.
    #[cfg(test)]
    pub fn full_for(&self, depth: u32) -> bool {
        let n = *self
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        n >= self.limit(depth)
    }

    fn limit(&self, depth: u32) -> usize {
        self.cap + (depth.max(1) as usize - 1)
    }

    /// A slot for a skill at `depth`, once one is free for it (dropping the future leaves
    /// the queue).
    pub async fn take(&self, depth: u32) -> SkillSlot<'_> {
        let limit = self.limit(depth);
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            // Registered before the count is read, so a slot given back in between wakes it.
            freed.as_mut().enable();
            {
                let mut n = self
                    .running
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if *n < limit {
                    *n += 1;
                    self.peak.fetch_max(*n, Ordering::Relaxed);
                    return SkillSlot(self);
                }
            }
            freed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn skills_at_the_first_depth_run_at_most_cap_at_once() {
        let slots = SkillSlots::new(2);
        let a = slots.take(1).await;
        let _b = slots.take(1).await;
        assert!(slots.full_for(1));
        let third = slots.take(1);
        tokio::pin!(third);
        assert!(
            futures::poll!(third.as_mut()).is_pending(),
            "a third waits for a slot"
        );
        drop(a);
        let _c = third.await;
        assert_eq!(slots.peak(), 2);
    }

    #[tokio::test]
    async fn each_depth_has_one_slot_of_headroom_and_the_tree_is_bounded() {
        let slots = SkillSlots::new(1);
        // A chain as deep as skills go holds one slot per level, never more.
        let mut held = Vec::new();
        for depth in 1..=MAX_SKILL_DEPTH {
            assert!(!slots.full_for(depth), "depth {depth}");
            held.push(slots.take(depth).await);
            assert!(slots.full_for(depth), "depth {depth}");
        }
        assert_eq!(slots.peak(), slots.most());
        assert_eq!(slots.most(), 4);
    }

    /// Many callers at every depth, each holding its slot while its callee runs: all finish
    /// (no circular wait), and the count never passes the bound.
    #[tokio::test]
    async fn a_tree_of_parallel_callers_never_deadlocks() {
        fn call(slots: Arc<SkillSlots>, depth: u32) -> futures::future::BoxFuture<'static, ()> {
            Box::pin(async move {
                let _slot = slots.take(depth).await;
                if depth < MAX_SKILL_DEPTH {
                    let kids: Vec<_> = (0..3)
                        .map(|_| tokio::spawn(call(slots.clone(), depth + 1)))
                        .collect();
                    for k in kids {
                        k.await.unwrap();
                    }
                } else {
                    tokio::task::yield_now().await;
                }
            })
        }
        for cap in [1, 2, 3] {
            let slots = Arc::new(SkillSlots::new(cap));
            let top: Vec<_> = (0..4)
                .map(|_| tokio::spawn(call(slots.clone(), 1)))
                .collect();
            tokio::time::timeout(Duration::from_secs(20), async {
                for t in top {
                    t.await.unwrap();
                }
            })
            .await
            .expect("every call finished");
            assert!(slots.peak() <= slots.most(), "cap {cap}: {}", slots.peak());
            assert!(!slots.full_for(1));
        }
    }

    #[test]
    fn output_is_taken_from_one_budget() {
        let b = OutputBudget::new(10);
        let other = b.clone();
        assert!(b.take(6));
        assert!(!other.take(5));
        assert!(other.take(4));
        assert_eq!(b.left(), 0);
        b.give_back(3);
        assert!(other.take(3));
        assert!(!b.take(1));
    }
}
