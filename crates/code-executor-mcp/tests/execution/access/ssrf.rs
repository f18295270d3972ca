//! SSRF through names (issue 39, item 2), from code in both languages against the loopback
//! server: with `*` granted on a port and a rule naming `127.0.0.1` for another port or
//! method, no spelling of a loopback name or address, and no redirect, reaches the server
//! for a port or method that rule does not admit. Each hop is checked with its own method.
//!
//! Names other than `localhost` that resolve to loopback (a hosts-file alias, wildcard DNS,
//! several answers, rebinding) are covered in process with a lookup table, by
//! `runtime::fetch::tests`; the decision itself by the property test in
//! `policy::access::net_prop`.

use super::*;

/// Code that fetches each of `urls` with `method` (a body for methods that carry one) and
/// returns, for each, `"200 <text>"` or `"<ErrorName>: <message>"`: one execution for many
/// attempts.
fn fetch_each(lang: Lang, method: &str, urls: &[String]) -> String {
    let body = !matches!(method, "GET" | "HEAD");
    let urls = serde_json::to_string(urls).unwrap();
    match lang {
        Lang::Ts => {
            let body = if body { ", body: 'x'" } else { "" };
            format!(
                "const out = [];
                 for (const u of {urls}) {{
                   try {{ const r = await fetch(u, {{method: {method:?}{body}}}); out.push(r.status + ' ' + await r.text()); }}
                   catch (e) {{ out.push(e.name + ': ' + e.message); }}
                 }}
                 return out;"
            )
        }
        Lang::Py => {
            let body = if body { ", body='x'" } else { "" };
            format!(
                "out = []
for u in {urls}:
    try:
        r = fetch(u, method={method:?}{body})
        out.append(f'{{r.status}} {{r.text()}}')
    except Exception as e:
        out.append(f'{{type(e).__name__}}: {{e}}')
out"
            )
        }
    }
}

/// What [`fetch_each`] returned, one string per URL.
async fn attempts(h: &Harness, lang: Lang, method: &str, urls: &[String]) -> Vec<String> {
    let v = ok(
        h,
        lang,
        &fetch_each(lang, method, urls),
        json!({"net": true}),
    )
    .await;
    let got: Vec<String> = v
        .as_array()
        .unwrap_or_else(|| panic!("{lang:?}: {v}"))
        .iter()
        .map(|x| x.as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(got.len(), urls.len(), "{lang:?}: {got:?}");
    got
}

/// The attack of the issue: `*` on the server's port, and `127.0.0.1` named for another port.
/// Every spelling of a loopback name or address is refused on the server's port (before the
/// fix, the names reached the server: the resolver looked at every rule).
#[tokio::test]
async fn a_name_or_address_for_loopback_is_refused_when_the_rule_naming_it_admits_another_port() {
    let f = files();
    let port = http_server();
    let other = port.wrapping_add(1).max(1);
    let ceiling = json!([{"host": "*", "ports": [port]}, format!("GET 127.0.0.1:{other}")]);
    let (h, _d) = server_with_net(&f.project, ceiling).await;
    let names = ["localhost", "LOCALHOST.", "LocalHost", "ｌｏｃａｌｈｏｓｔ"];
    let addresses = [
        "127.1",
        "0x7f.0.0.1",
        "2130706433",
        "127.0.0.1.",
        "[::ffff:127.0.0.1]",
        "[::ffff:7f00:1]",
        "[::127.0.0.1]",
        "[64:ff9b::7f00:1]",
        "[::1]",
        "0.0.0.0",
        "[::]",
        "169.254.169.254",
    ];
    let urls: Vec<String> = names
        .iter()
        .chain(&addresses)
        .map(|host| format!("http://{host}:{port}/echo"))
        .collect();
    // Each refusal is one `deny` line in the audit log.
    let mut refused = 0;
    for lang in BOTH {
        for method in ["GET", "POST"] {
            let got = attempts(&h, lang, method, &urls).await;
            refused += got.iter().filter(|g| g.starts_with("PolicyError")).count();
            for (url, got) in urls.iter().zip(&got) {
                // `localhost.` (absolute) is not in every resolver's hosts table: where it does
                // not resolve, it is a `NetworkError`; it never reaches the server.
                let unresolved = url.contains(".:") && got.starts_with("NetworkError: ");
                assert!(
                    unresolved
                        || got.starts_with("PolicyError: ")
                            && got.contains("such addresses are refused unless a granted rule names the address itself and admits this port and method"),
                    "{lang:?} {method} {url}: {got}"
                );
            }
            // The names say what they resolved to, and which rule names the address for what.
            assert!(
                got[0].contains("loopback address (localhost resolves to it)")
                    && got[0].contains(&format!(
                        "the rules naming it (GET 127.0.0.1:{other}) do not admit {method} to port {port}"
                    )),
                "{lang:?}: {}",
                got[0]
            );
        }
    }
    let denied = audit_lines(&h, "net.fetch")
        .into_iter()
        .filter(|l| l["decision"] == "deny")
        .count();
    assert_eq!(denied, refused);
    assert!(refused >= 2 * 2 * (urls.len() - 1), "{refused}");
}

/// The rule naming `127.0.0.1` admits GET on the server's port: a name resolving to it gets
/// GET through, and nothing else (POST, PUT, DELETE).
#[tokio::test]
async fn a_name_for_loopback_reaches_it_only_with_the_methods_the_rule_naming_it_admits() {
    let f = files();
    let port = http_server();
    let ceiling = json!([
        {"host": "*", "ports": [port]},
        format!("GET 127.0.0.1:{port}"),
    ]);
    let (h, _d) = server_with_net(&f.project, ceiling).await;
    let urls: Vec<String> = ["localhost", "LocalHost", "ｌｏｃａｌｈｏｓｔ"]
        .iter()
        .map(|host| format!("http://{host}:{port}/echo"))
        .collect();
    for lang in BOTH {
        let got = attempts(&h, lang, "GET", &urls).await;
        assert!(got.iter().all(|g| g == "200 GET  "), "{lang:?}: {got:?}");
        for method in ["POST", "PUT", "DELETE"] {
            let got = attempts(&h, lang, method, &urls).await;
            for (url, got) in urls.iter().zip(&got) {
                assert!(
                    got.starts_with("PolicyError: ")
                        && got.contains(&format!("do not admit {method} to port {port}")),
                    "{lang:?} {method} {url}: {got}"
                );
            }
        }
    }
}

/// Each redirect hop is checked with its own method: a POST granted to `127.0.0.1` that a 303
/// turns into a GET to `localhost` is refused (only POST is named for the address); a 307
/// keeps the POST, which the rule admits.
#[tokio::test]
async fn a_redirect_to_a_loopback_name_is_checked_with_the_method_of_its_own_hop() {
    let f = files();
    let port = http_server();
    let ceiling = json!([format!("POST 127.0.0.1:{port}"), {"host": "*", "ports": [port]}]);
    let (h, _d) = server_with_net(&f.project, ceiling).await;
    let urls: Vec<String> = ["303", "302", "307"]
        .iter()
        .map(|code| format!("http://127.0.0.1:{port}/to-localhost/{code}"))
        .collect();
    for lang in BOTH {
        let got = attempts(&h, lang, "POST", &urls).await;
        for (url, got) in urls[..2].iter().zip(&got) {
            assert!(
                got.starts_with("PolicyError: ")
                    && got.contains("localhost resolves to it")
                    && got.contains(&format!("do not admit GET to port {port}"))
                    && got.contains("reached by a redirect"),
                "{lang:?} {url}: {got}"
            );
        }
        assert_eq!(got[2], "200 POST  x", "{lang:?}");
    }
}
