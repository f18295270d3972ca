use super::*;

fn sessions(limits: SessionLimits) -> (Sessions, test_support::TempDir) {
    let dir = test_support::TempDir::new("sessions");
    (Sessions::new(limits, dir.0.clone()), dir)
}

#[test]
fn handles_are_unguessable_and_bound_to_their_principal() {
    let (s, _d) = sessions(SessionLimits::default());
    let audit = AuditLog::disabled();
    let alice = Principal::new("alice");
    let bob = Principal::new("bob");
    let a = s.create(&alice, Language::Python, &audit).unwrap();
    assert!(a.id.starts_with("s_") && a.id.len() == 34, "{}", a.id);
    assert!(a.workspace.is_dir());
    assert!(s.get(&alice, &a.id, Language::Python).is_ok());
    assert_eq!(
        s.get(&bob, &a.id, Language::Python).err(),
        Some(SessionError::Unknown(a.id.clone()))
    );
    assert!(matches!(
        s.get(&alice, &a.id, Language::JavaScript),
        Err(SessionError::WrongLanguage { .. })
    ));
    let b = s.create(&alice, Language::Python, &audit).unwrap();
    assert_ne!(a.id, b.id);
}

#[test]
fn reports_show_only_the_callers_own_handles() {
    let (s, _d) = sessions(SessionLimits::default());
    let audit = AuditLog::disabled();
    let (alice, bob) = (Principal::new("alice"), Principal::new("bob"));
    let a = s.create(&alice, Language::Python, &audit).unwrap();
    let b = s.create(&bob, Language::JavaScript, &audit).unwrap();
    let report = s.report(&alice);
    assert_eq!(report["count"], json!(2));
    let text = report.to_string();
    assert!(text.contains(&a.id), "{text}");
    assert!(
        !text.contains(&b.id),
        "another client's handle leaked: {text}"
    );
    assert_eq!(report["mine"][0]["language"], json!("python"));
}

#[test]
fn the_oldest_idle_session_is_evicted_and_says_so() {
    let limits = SessionLimits {
        max_per_client: 2,
        ..SessionLimits::default()
    };
    let (s, _d) = sessions(limits);
    let audit = AuditLog::disabled();
    let p = Principal::new("p");
    let first = s.create(&p, Language::JavaScript, &audit).unwrap();
    let second = s.create(&p, Language::JavaScript, &audit).unwrap();
    // The first is busy: the second, although newer, is the one evicted.
    let _busy = first.in_use();
    let third = s.create(&p, Language::JavaScript, &audit).unwrap();
    assert!(s.get(&p, &first.id, Language::JavaScript).is_ok());
    assert!(s.get(&p, &third.id, Language::JavaScript).is_ok());
    match s.get(&p, &second.id, Language::JavaScript) {
        Err(SessionError::Ended { why, .. }) => assert!(why.contains("evicted"), "{why}"),
        other => panic!("{:?}", other.err()),
    }
    // Both left are busy: no room, and the error says what to do.
    let _busy3 = third.in_use();
    match s.create(&p, Language::JavaScript, &audit) {
        Err(SessionError::Full(m)) => assert!(m.contains("maxPerClient"), "{m}"),
        other => panic!("{:?}", other.err()),
    }
}

#[test]
fn the_store_is_capped_and_deletes_free_room() {
    let limits = SessionLimits {
        max_store_bytes: 100,
        ..SessionLimits::default()
    };
    let (s, _d) = sessions(limits);
    let a = s
        .create(
            &Principal::new("p"),
            Language::Python,
            &AuditLog::disabled(),
        )
        .unwrap();
    a.store("k".into(), Some(json!("x".repeat(80)))).unwrap();
    let err = a
        .store("j".into(), Some(json!("y".repeat(30))))
        .unwrap_err();
    assert!(err.to_string().contains("maxStoreBytes"), "{err}");
    // Replacing a key counts its new size only.
    a.store("k".into(), Some(json!("z".repeat(60)))).unwrap();
    assert_eq!(a.load("k"), Some(json!("z".repeat(60))));
    a.store("k".into(), None).unwrap();
    assert_eq!(a.load("k"), None);
    a.store("j".into(), Some(json!("y".repeat(90)))).unwrap();
}

#[test]
fn an_ended_session_loses_its_workspace() {
    let (s, _d) = sessions(SessionLimits::default());
    let audit = AuditLog::disabled();
    let p = Principal::new("p");
    let a = s.create(&p, Language::Python, &audit).unwrap();
    let ws = a.workspace.clone();
    std::fs::write(ws.join("f.txt"), "data").unwrap();
    s.end(&a.id, EndReason::Reset, &audit);
    assert!(ws.is_dir(), "an execution still holds it");
    let id = a.id.clone();
    drop(a);
    assert!(!ws.exists());
    match s.get(&p, &id, Language::Python) {
        Err(SessionError::Ended { why, .. }) => assert!(why.contains("reset"), "{why}"),
        other => panic!("{:?}", other.err()),
    }
}
