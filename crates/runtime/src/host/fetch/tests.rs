//! The fetch path with a lookup table standing in for DNS: names that resolve to loopback
//! (an alias), several answers, a name answering differently on its second lookup, a GET and
//! a POST to the same name; each hop admitted and sent as `fetch` does.

use super::*;
use crate::host::net::{Clients, GuardedResolver, Lookup, Refused, system_lookup};
use reqwest::dns::{Name, Resolve};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::Mutex;

use policy::access::NetRule;

fn grant(rules: &[serde_json::Value]) -> Arc<Grant> {
    Arc::new(Grant {
        net: rules.iter().map(|r| NetRule::parse(r).unwrap()).collect(),
        ..Grant::default()
    })
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A lookup answering from a table (a name's successive answers, the last repeated),
/// counting the lookups of each name: names that resolve to loopback without touching
/// `/etc/hosts` or DNS.
fn table(answers: &[(&str, &[&[&str]])]) -> (Lookup, Arc<Mutex<HashMap<String, usize>>>) {
    let answers: HashMap<String, Vec<Vec<IpAddr>>> = answers
        .iter()
        .map(|(n, a)| {
            (
                n.to_string(),
                a.iter()
                    .map(|x| x.iter().map(|s| ip(s)).collect())
                    .collect(),
            )
        })
        .collect();
    let counts = Arc::new(Mutex::new(HashMap::<String, usize>::new()));
    let seen = counts.clone();
    let lookup: Lookup = Arc::new(move |host: String| {
        let mut counts = seen.lock().unwrap();
        let n = counts.entry(host.clone()).or_default();
        let found = answers
            .get(&host)
            .map(|a| a[(*n).min(a.len() - 1)].clone())
            .unwrap_or_default();
        *n += 1;
        Box::pin(async move { Ok(found) })
    });
    (lookup, counts)
}

/// An HTTP/1.1 server on 127.0.0.1 answering every request `200 ok` (then closing).
fn loopback_server() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() != "" {
                line.clear();
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    port
}

/// One hop as `fetch` makes it: admitted by the grant, sent through the client of its
/// reach; the status and the address connected to, or the refusal.
async fn hop(
    clients: &Clients,
    grant: &Grant,
    method: &str,
    url: &str,
) -> Result<(u16, Option<SocketAddr>), String> {
    let url = url::Url::parse(url).unwrap();
    let (_, reach) = grant
        .admit(&Hop { method, url: &url })
        .map_err(|e| e.to_string())?;
    let client = clients.get(&reach).map_err(|e| e.to_string())?;
    match client
        .request(reqwest::Method::from_str(method).unwrap(), url.clone())
        .send()
        .await
    {
        Ok(r) => Ok((r.status().as_u16(), r.remote_addr())),
        Err(e) => Err(match refused(&e) {
            Some(u) => grant.unreachable(
                u.addr,
                url.host_str().unwrap(),
                url.port_or_known_default().unwrap(),
                method,
            ),
            None => format!("network: {e:?}"),
        }),
    }
}

/// The addresses the client connects to are the ones checked here, from one lookup.
#[tokio::test]
async fn the_resolver_refuses_a_name_that_resolves_to_loopback_unless_an_address_is_granted() {
    let resolve = |g: Arc<Grant>, port: u16, method: &str| {
        GuardedResolver {
            reach: g.reach(port, method),
            lookup: system_lookup(),
        }
        .resolve(Name::from_str("localhost").unwrap())
    };
    let e = resolve(grant(&[serde_json::json!("localhost:8080")]), 8080, "GET")
        .await
        .err()
        .expect("refused");
    assert!(refused_in(&*e).is_some_and(|u| u.addr.is_loopback()), "{e}");
    let both = grant(&[
        serde_json::json!("localhost:8080"),
        serde_json::json!("GET 127.0.0.1:8080"),
    ]);
    let allowed = resolve(both.clone(), 8080, "GET").await.expect("allowed");
    // Only the granted address is left (`::1`, if the name has it too, is dropped).
    let addrs: Vec<SocketAddr> = allowed.collect();
    assert!(!addrs.is_empty(), "{addrs:?}");
    assert!(
        addrs
            .iter()
            .all(|a| a.ip() == std::net::Ipv4Addr::LOCALHOST),
        "{addrs:?}"
    );
    // The rule names the address, but for GET on 8080: not for a POST, nor port 80.
    for (port, method) in [(8080, "POST"), (80, "GET")] {
        assert!(
            resolve(both.clone(), port, method).await.is_err(),
            "{method} :{port}"
        );
    }
}

fn refused_in(e: &(dyn std::error::Error + 'static)) -> Option<Unreachable> {
    e.downcast_ref::<Refused>().map(|r| r.0)
}

/// The attack of issue 39: `*` lets any name through, and a rule naming 127.0.0.1 for
/// another port (or only for GET) must not open loopback to a name that resolves to it
/// (an `/etc/hosts` alias, a wildcard-DNS name), on any port or with another method.
#[tokio::test]
async fn a_name_resolving_to_loopback_needs_a_rule_naming_the_address_for_this_port_and_method() {
    let port = loopback_server();
    let (lookup, _) = table(&[("alias.test", &[&["127.0.0.1"]])]);
    let clients = Clients::with_lookup(lookup);
    let url = format!("http://alias.test:{port}/");
    let other = port.wrapping_add(1).max(1);
    // `*` admits the hop on `port`; the rule naming the address admits another port only.
    let g = grant(&[
        serde_json::json!({"host": "*", "ports": [port]}),
        serde_json::json!(format!("GET 127.0.0.1:{other}")),
    ]);
    let e = hop(&clients, &g, "GET", &url).await.unwrap_err();
    assert!(
        e.contains("127.0.0.1 is a loopback address (alias.test resolves to it)")
            && e.contains(&format!("do not admit GET to port {port}")),
        "{e}"
    );
    // Named for GET on this port: GET reaches the server, POST does not, even right after
    // the GET (a kept connection belongs to the GET's client).
    let g = grant(&[
        serde_json::json!({"host": "*", "ports": [port]}),
        serde_json::json!(format!("GET 127.0.0.1:{port}")),
    ]);
    let (status, addr) = hop(&clients, &g, "GET", &url).await.unwrap();
    assert_eq!((status, addr.map(|a| a.ip())), (200, Some(ip("127.0.0.1"))));
    let e = hop(&clients, &g, "POST", &url).await.unwrap_err();
    assert!(e.contains("do not admit POST"), "{e}");
    // A range is the same: `10.0.0.0/8`-style rules name addresses for their ports only.
    let g = grant(&[
        serde_json::json!({"host": "*", "ports": [port]}),
        serde_json::json!({"host": "127.0.0.0/8", "ports": [other]}),
    ]);
    let e = hop(&clients, &g, "GET", &url).await.unwrap_err();
    assert!(e.contains("127.0.0.0/8:"), "{e}");
    let g = grant(&[
        serde_json::json!({"host": "*", "ports": [port]}),
        serde_json::json!({"host": "127.0.0.0/8", "ports": [port], "methods": ["GET"]}),
    ]);
    assert_eq!(hop(&clients, &g, "GET", &url).await.unwrap().0, 200);
}

/// Several addresses, one special: the special one is dropped, never connected to.
#[tokio::test]
async fn of_several_addresses_the_special_ones_outside_the_reach_are_dropped() {
    let (lookup, _) = table(&[
        (
            "mixed.test",
            &[&["127.0.0.1", "93.184.216.34", "::1", "10.1.2.3"]],
        ),
        ("inner.test", &[&["10.1.2.3", "169.254.169.254"]]),
    ]);
    let g = grant(&[serde_json::json!("*"), serde_json::json!("10.0.0.0/8")]);
    let resolve = |name: &str| {
        GuardedResolver {
            reach: g.reach(443, "GET"),
            lookup: lookup.clone(),
        }
        .resolve(Name::from_str(name).unwrap())
    };
    let got: Vec<IpAddr> = resolve("mixed.test")
        .await
        .unwrap()
        .map(|a| a.ip())
        .collect();
    assert_eq!(got, [ip("93.184.216.34"), ip("10.1.2.3")]);
    let got: Vec<IpAddr> = resolve("inner.test")
        .await
        .unwrap()
        .map(|a| a.ip())
        .collect();
    assert_eq!(got, [ip("10.1.2.3")]);
    let e = GuardedResolver {
        reach: g.reach(8080, "GET"),
        lookup: lookup.clone(),
    }
    .resolve(Name::from_str("inner.test").unwrap())
    .await
    .err()
    .unwrap();
    assert_eq!(refused_in(&*e).map(|u| u.addr), Some(ip("10.1.2.3")));
}

/// A name that answers differently on a second lookup (DNS rebinding) cannot move the
/// connection: it is looked up once, and the connection goes to the address checked.
#[tokio::test]
async fn a_name_is_looked_up_once_and_the_connection_goes_to_the_address_checked() {
    let port = loopback_server();
    let (lookup, counts) = table(&[("rebind.test", &[&["127.0.0.1"], &["169.254.169.254"]])]);
    let clients = Clients::with_lookup(lookup);
    let g = grant(&[
        serde_json::json!({"host": "rebind.test", "ports": [port]}),
        serde_json::json!(format!("127.0.0.1:{port}")),
    ]);
    let url = format!("http://rebind.test:{port}/");
    let (status, addr) = hop(&clients, &g, "GET", &url).await.unwrap();
    assert_eq!((status, addr.map(|a| a.ip())), (200, Some(ip("127.0.0.1"))));
    assert_eq!(counts.lock().unwrap().get("rebind.test"), Some(&1));
    // The next connection looks it up again (the server closed the first) and is
    // refused: the new answer is checked, not the old one reused.
    let e = hop(&clients, &g, "GET", &url).await.unwrap_err();
    assert!(e.contains("cloud metadata"), "{e}");
    assert_eq!(counts.lock().unwrap().get("rebind.test"), Some(&2));
}
