use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::super::store::{ParkError, Parked, Published};
use super::Kind;
use crate::live::durable::Durable;
use crate::outcome::ExecOutcome;
use crate::run::execution::ExecContext;
use policy::long_runs::LongRunLimits;
use policy::principal::Principal;
use policy::redact::Redactor;

/// A table over the SQLite store in `dir`, as one server process has it.
async fn server(dir: &std::path::Path) -> (Parked, store::Shared) {
    let store: store::Shared = Arc::new(
        store::sqlite::Sqlite::open(&dir.join("store.sqlite3"), store::Limits::default())
            .await
            .unwrap(),
    );
    let mut p = Parked::new(LongRunLimits::default());
    p.set_durable(Durable::new(
        store.clone(),
        Arc::new(Redactor::new(["sekrit-value-123"])),
    ));
    (p, store)
}

async fn handed(p: &Parked, who: &Principal) -> String {
    let h = p
        .reserve(
            Kind::Task,
            Duration::from_secs(60),
            &ExecContext::new(who.clone()),
        )
        .unwrap();
    assert!(matches!(
        p.publish_as(&h, Duration::ZERO, true).await,
        Some(Published::Handed(_))
    ));
    h
}

#[tokio::test]
async fn a_restarted_server_answers_finished_runs_and_reports_lost_ones() {
    let dir = test_support::TempDir::new("recall");
    let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
    let (done, running, unhanded) = {
        let (p, _) = server(&dir.0).await;
        let done = handed(&p, &alice).await;
        let mut o = ExecOutcome::cancelled();
        o.error = None;
        o.result = json!({"answer": 42, "token": "sekrit-value-123"});
        p.finish(&done, o);
        p.persist(&done).await;
        let running = handed(&p, &alice).await;
        // Its calls are in the store as they complete (the log was armed when handed).
        let calls = p.lock().handles.get(&running).unwrap().calls.clone();
        calls
            .record(crate::run::calllog::Entry::Call {
                tool: "crm.delete".into(),
                args: "a".repeat(64),
                result: "b".repeat(64),
                failed: false,
                outcome: crate::run::calllog::Called::Err(worker_protocol::ErrorInfo {
                    name: "x".into(),
                    message: "sekrit-value-123".into(),
                    stack: None,
                }),
            })
            .await;
        // Reserved, never handed out: nothing is written.
        let unhanded = p
            .reserve(
                Kind::Task,
                Duration::from_secs(60),
                &ExecContext::new(alice.clone()),
            )
            .unwrap();
        (done, running, unhanded)
    };
    // A new process on the same store.
    let (p, store) = server(&dir.0).await;
    // tasks/list has both (the finished one and the lost one), not the one never handed
    // out; another principal has none.
    let mut listed: Vec<String> = p
        .tasks(&alice)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.handle)
        .collect();
    listed.sort();
    let mut both = vec![done.clone(), running.clone()];
    both.sort();
    assert_eq!(listed, both);
    assert!(p.tasks(&bob).await.unwrap().is_empty());
    let snap = p.get_or_recall(&alice, &done).await.unwrap();
    let outcome = snap.outcome.unwrap();
    assert_eq!(outcome.result["answer"], json!(42));
    // Secrets the server knows never reach the store in the clear.
    assert_eq!(outcome.result["token"], json!("[redacted]"));
    let raw = store
        .get(store::Key::new("alice", crate::live::durable::RUN, &done))
        .await
        .unwrap()
        .unwrap();
    assert!(!String::from_utf8_lossy(&raw).contains("sekrit-value-123"));
    let lost = p.get_or_recall(&alice, &running).await.unwrap();
    let error = lost.outcome.unwrap().error.clone().unwrap();
    assert_eq!(error.name, "LostToRestart");
    assert!(
        error.message.contains("lost to a server restart"),
        "{error:?}"
    );
    // With the ledger of what it had completed.
    assert!(
        error
            .message
            .contains("(1 tool call): call 1: crm.delete (args sha256 aaaa"),
        "{error:?}"
    );
    let raw = store
        .list("alice", crate::run::calllog::CALLLOG, "")
        .await
        .unwrap();
    assert_eq!(raw.len(), 1);
    assert!(!String::from_utf8_lossy(&raw[0].1).contains("sekrit-value-123"));
    // wait and tasks/result answer the same.
    let waited = p
        .wait(
            &alice,
            &running,
            Duration::ZERO,
            false,
            &policy::audit::AuditLog::disabled(),
        )
        .await
        .unwrap();
    assert!(waited.outcome.is_some());
    // Another principal, a handle never handed out, one never issued: unknown.
    for (who, h) in [
        (&bob, &done),
        (&alice, &unhanded),
        (&alice, &"run-nope".to_string()),
    ] {
        assert_eq!(
            p.get_or_recall(who, h).await.err(),
            Some(ParkError::Unknown(h.clone())),
            "{who:?} {h}"
        );
    }
}

/// Replica `id` of a fleet sharing the SQLite store in `dir`; alive when `beats`.
async fn replica(dir: &std::path::Path, id: &str, beats: bool) -> Parked {
    let store: store::Shared = Arc::new(
        store::sqlite::Sqlite::open(&dir.join("store.sqlite3"), store::Limits::default())
            .await
            .unwrap(),
    );
    let durable = Durable::new(store, Arc::new(Redactor::new(["sekrit-value-123"])));
    if beats {
        durable.beat().await.unwrap();
    }
    let mut p = Parked::new(LongRunLimits::default())
        .with_replica(policy::replica::Replica::named(id).unwrap());
    p.set_durable(durable);
    p
}

#[tokio::test]
async fn another_replica_answers_finished_runs_waits_for_running_ones_and_reports_lost_ones() {
    let dir = test_support::TempDir::new("recall-replicas");
    let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
    let audit = policy::audit::AuditLog::disabled();
    let r0 = replica(&dir.0, "r0", true).await;
    let r1 = replica(&dir.0, "r1", true).await;
    // A replica that stopped saying it is alive (killed): its running runs are lost.
    let gone = replica(&dir.0, "r2", false).await;

    let done = handed(&r0, &alice).await;
    let mut o = ExecOutcome::cancelled();
    o.error = None;
    o.result = json!({"answer": 42});
    r0.finish(&done, o);
    r0.persist(&done).await;
    let snap = r1.get_or_recall(&alice, &done).await.unwrap();
    assert_eq!(snap.outcome.unwrap().result["answer"], json!(42));
    // Cancelling a run that ended is answered as it is, on any replica.
    r1.cancel_or_recall(&alice, &done, "tasks/cancel", &audit)
        .await
        .unwrap();

    // Running on r0, which is alive: running, on r1 too.
    let running = handed(&r0, &alice).await;
    let snap = r1.get_or_recall(&alice, &running).await.unwrap();
    assert!(snap.outcome.is_none(), "{:?}", snap.outcome);
    // A cancel at r1 is left in the store for r0, which carries it out; r1 answers it
    // as asked.
    r1.cancel_or_recall(&alice, &running, "tasks/cancel", &audit)
        .await
        .unwrap();
    assert_eq!(r0.get(&alice, &running).unwrap().cancelled_by, None);
    r0.cancels_from_store(&audit).await;
    assert_eq!(
        r0.get(&alice, &running).unwrap().cancelled_by,
        Some("tasks/cancel")
    );
    // Carried out once: the request is gone.
    let durable = r0.durable.clone().unwrap();
    assert!(durable.cancel_requests(&alice).await.unwrap().is_empty());
    // A `wait` on r1 sees it finish on r0 within its time.
    let waiting = {
        let (r1, alice, running) = (&r1, alice.clone(), running.clone());
        async move {
            r1.wait(
                &alice,
                &running,
                Duration::from_secs(30),
                false,
                &policy::audit::AuditLog::disabled(),
            )
            .await
        }
    };
    let finishing = async {
        let mut o = ExecOutcome::cancelled();
        o.error = None;
        o.result = json!("finished on r0");
        r0.finish(&running, o);
        r0.persist(&running).await;
    };
    let (waited, ()) = tokio::join!(waiting, finishing);
    assert_eq!(
        waited.unwrap().outcome.unwrap().result,
        json!("finished on r0")
    );
    // A `wait` whose time runs out first answers running.
    let slow = handed(&r0, &alice).await;
    let snap = r1
        .wait(&alice, &slow, Duration::from_millis(300), false, &audit)
        .await
        .unwrap();
    assert!(snap.outcome.is_none());

    // tasks/list at r1 has r0's tasks too, the running one as running.
    let listed = r1.tasks(&alice).await.unwrap();
    assert!(
        listed
            .iter()
            .any(|s| s.handle == done && s.outcome.is_some())
    );
    assert!(
        listed
            .iter()
            .any(|s| s.handle == slow && s.outcome.is_none())
    );

    // Running on a replica that is gone: lost, on any replica.
    let lost = handed(&gone, &alice).await;
    let snap = r1.get_or_recall(&alice, &lost).await.unwrap();
    assert_eq!(
        snap.outcome.unwrap().error.as_ref().unwrap().name,
        "LostToRestart"
    );

    // Another principal gets the error naming the replica, as for a handle never written.
    match r1.get_or_recall(&bob, &done).await {
        Err(ParkError::WrongReplica { elsewhere, .. }) => assert_eq!(elsewhere.owner, "r0"),
        other => panic!("{:?}", other.err()),
    }
}

/// Says whether a person can be asked; counts the runs it was asked to start.
struct Fake {
    inbox: bool,
    started: Arc<std::sync::atomic::AtomicU32>,
}

impl super::Resumer for Fake {
    fn asks_a_person(&self) -> bool {
        self.inbox
    }

    fn resume(
        &self,
        _: &Principal,
        _: &str,
        _: Kind,
        _: crate::live::durable::Resume,
        _: Vec<super::Entry>,
    ) -> Result<bool, ParkError> {
        self.started
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(false)
    }
}

#[tokio::test]
async fn a_run_waiting_for_a_person_is_started_again_only_when_one_can_be_asked() {
    let dir = test_support::TempDir::new("resume");
    let alice = Principal::new("alice");
    let waiting = {
        let (p, _) = server(&dir.0).await;
        let h = handed(&p, &alice).await;
        p.set_resume(
            &h,
            crate::live::durable::Resume {
                language: "typescript".into(),
                code: "1".into(),
                timeout_ms: None,
                allowed_tools: None,
                limits: policy::RequestLimits::default(),
                enable_sampling: false,
                permissions: None,
                seed: 7,
            },
        );
        p.persist(&h).await;
        let calls = p.lock().handles.get(&h).unwrap().calls.clone();
        calls
            .record(super::Entry::Asking {
                tool: "mcp__fix__write_note".into(),
            })
            .await;
        h
    };
    for inbox in [false, true] {
        let (p, _) = server(&dir.0).await;
        let started = Arc::new(std::sync::atomic::AtomicU32::new(0));
        p.set_resumer(Box::new(Fake {
            inbox,
            started: started.clone(),
        }));
        let got = p.get_or_recall(&alice, &waiting).await;
        let n = started.load(std::sync::atomic::Ordering::Relaxed);
        if inbox {
            // Started (the fake says another request did first: not here, so unknown).
            assert_eq!(n, 1);
            assert!(got.is_err(), "{:?}", got.ok().map(|s| s.outcome));
        } else {
            assert_eq!(n, 0);
            let error = got.unwrap().outcome.unwrap().error.clone().unwrap();
            assert_eq!(error.name, "LostToRestart");
            assert!(
                error.message.contains(
                    "waiting for a person to approve a call to \
                     mcp__fix__write_note"
                ) && error.message.contains("approvals.fallback \"inbox\""),
                "{error:?}"
            );
        }
    }
}
