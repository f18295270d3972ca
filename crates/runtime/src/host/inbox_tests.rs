//! Tests of `inbox`.

use super::*;

fn pending(principal: &str, args: &str) -> Pending {
    Pending {
        id: 0,
        principal: principal.into(),
        execution: "e1".into(),
        server: "gh".into(),
        tool: "create_issue".into(),
        rule: "approvals.approve: mcp__gh__*".into(),
        arguments: args.into(),
        code: String::new(),
        asked_at: 0,
    }
}

#[tokio::test]
async fn answers_reach_only_the_waiting_call_and_only_for_its_principal() {
    let inbox = Inbox::default();
    let mut a = inbox.submit(pending("alice", "{}")).unwrap();
    let b = inbox.submit(pending("bob", "{}")).unwrap();
    assert_eq!(inbox.list(Some("alice")).len(), 1);
    assert_eq!(inbox.list(None).len(), 2);
    let yes = Decision::local(true, "inbox-page");
    // Bob cannot see or answer Alice's.
    assert!(matches!(
        inbox.decide(a.id, Some("bob"), yes.clone()),
        Err(InboxError::NotFound(_))
    ));
    inbox.decide(a.id, Some("alice"), yes.clone()).unwrap();
    assert_eq!((&mut a.answer).await.unwrap(), yes);
    // Answered once only.
    assert!(inbox.decide(a.id, None, yes).is_err());
    // A call that stops waiting leaves the inbox.
    let bid = b.id;
    drop(b);
    assert!(inbox.list(None).iter().all(|p| p.id != bid));
    drop(a);
    assert!(inbox.list(None).is_empty());
}

#[test]
fn the_page_escapes_everything_shown_and_tokens_compare_exactly() {
    let html = render_page(
        &[pending(
            "<img src=x onerror=alert(1)>",
            "{\"title\": \"</pre><script>alert('x')</script>\"}",
        )],
        Some("t0k"),
    );
    assert!(!html.contains("<script>"));
    assert!(!html.contains("<img"));
    assert!(html.contains("&lt;/pre&gt;&lt;script&gt;"));
    assert!(token_ok("abc", "abc"));
    assert!(!token_ok("abc", "abd"));
    assert!(!token_ok("abc", "ab"));
    assert!(!token_ok("", ""));
    assert_eq!(parse_answer_path("/approvals/7/approve"), Some((7, true)));
    assert_eq!(parse_answer_path("/approvals/7/deny"), Some((7, false)));
    assert_eq!(parse_answer_path("/approvals/x/deny"), None);
    assert_eq!(parse_answer_path("/approvals/7/maybe"), None);
}

#[test]
fn the_inbox_holds_at_most_max_pending_and_frees_a_place_as_a_call_stops_waiting() {
    let inbox = Inbox::default();
    let mut held: Vec<Waiting<'_>> = (0..MAX_PENDING)
        .map(|_| inbox.submit(pending("a", "{}")).unwrap())
        .collect();
    assert!(matches!(
        inbox.submit(pending("a", "{}")),
        Err(InboxError::Full)
    ));
    assert_eq!(inbox.list(None).len(), MAX_PENDING);
    held.pop();
    let again = inbox.submit(pending("b", "{}")).unwrap();
    assert_eq!(inbox.list(Some("b")).len(), 1);
    // Ids are never reused.
    assert!(held.iter().all(|w| w.id < again.id));
}

#[test]
fn answer_paths_take_plain_digits_only() {
    for bad in [
        "/approvals/../approvals/7/approve",
        "/approvals/%37/approve",
        "/approvals/+7/approve",
        "/approvals/-7/deny",
        "/approvals/7/approve/",
        "/approvals/7/approve/x",
        "/approvals//approve",
        "/approvals/7",
        "/approvals/99999999999999999999/approve",
        "/approvals/7%2Fapprove",
        "/approvals/0x7/approve",
        "/approvals/７/approve",
    ] {
        assert_eq!(parse_answer_path(bad), None, "{bad}");
    }
    assert_eq!(parse_answer_path("/approvals/007/deny"), None);
    assert_eq!(parse_answer_path("/approvals/0/deny"), None);
    assert_eq!(parse_answer_path("/approvals/70/deny"), Some((70, false)));
}

#[test]
fn the_page_answers_only_requests_addressed_to_it() {
    let here = |host: Option<&str>, origin: Option<&str>| addressed_here(host, origin, 4242);
    assert!(here(Some("127.0.0.1:4242"), None));
    assert!(here(Some("LOCALHOST:4242"), Some("null")));
    assert!(here(Some("127.0.0.1:4242"), Some("http://127.0.0.1:4242")));
    for (host, origin) in [
        (None, None),
        (Some("evil.example"), None),
        (Some("evil.example:4242"), None),
        (Some("127.0.0.1:4243"), None),
        (Some("127.0.0.1"), None),
        (Some("127.0.0.1:4242"), Some("http://evil.example")),
        (Some("127.0.0.1:4242"), Some("https://127.0.0.1:4242")),
        (
            Some("127.0.0.1:4242"),
            Some("http://127.0.0.1:4242.evil.example"),
        ),
    ] {
        assert!(!here(host, origin), "{host:?} {origin:?}");
    }
}

#[test]
fn the_code_around_the_call_is_the_lines_naming_the_tool_bounded() {
    let code: String = (1..=40)
        .map(|i| match i {
            20 => "  const r = await tools.gh.create_issue({ title: 't' });\n".to_string(),
            5 => "  // create_issues_later is another name\n".to_string(),
            _ => format!("  let x{i} = {i};\n"),
        })
        .collect();
    let shown = code_around(&code, "create_issue");
    assert!(
        shown.contains(">  20 |   const r = await tools.gh.create_issue"),
        "{shown}"
    );
    assert!(
        shown.contains("  17 |") && shown.contains("  23 |"),
        "{shown}"
    );
    assert!(
        !shown.contains("  16 |") && !shown.contains("  24 |"),
        "{shown}"
    );
    assert!(shown.contains("(16 lines before)") && shown.contains("(17 lines after)"));
    // A tool named with a dash, called by its identifier.
    let shown = code_around("a\nb\nawait tools.fs.read_file({})\n", "read-file");
    assert!(shown.contains(">   3 |"), "{shown}");
    // No line names it: the first lines, bounded; long lines are cut.
    let long = format!("{}\n", "y".repeat(10_000)).repeat(1_000);
    let shown = code_around(&long, "tick");
    assert_eq!(shown.lines().count(), MAX_CODE_LINES + 1, "{shown}");
    assert!(shown.len() < 4_000, "{}", shown.len());
    assert!(shown.contains("(cut)") && shown.contains("lines after"));
    // Every field a tool, a server, a client or code controls is escaped.
    let mut p = pending("a", "{}");
    p.server = "s\"><script>alert(1)</script>".into();
    p.tool = "<svg onload=alert(1)>".into();
    p.rule = "r'><iframe src=//x>".into();
    p.execution = "e<b>".into();
    let html = render_page(&[p], Some("t\"><script>"));
    for bad in ["<script", "<svg", "<iframe", "<b>e"] {
        assert!(!html.contains(bad), "{bad} in {html}");
    }
    // What the page shows of the code is escaped.
    let mut p = pending("a", "{}");
    p.code = code_around(
        "await tools.x.tick('</pre><script>alert(1)</script>')",
        "tick",
    );
    let html = render_page(&[p], None);
    assert!(
        !html.contains("<script>") && html.contains("&lt;script&gt;"),
        "{html}"
    );
    assert!(!html.contains("name=\"token\""), "no token field over HTTP");
}
