//! Network attacks: each must fail under Enforce. Canary listeners run in the test, on
//! loopback only; the same payload under Disabled reaches them, which shows the test can fail.
use std::net::TcpListener;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::time::{Duration, Instant};

use crate::common::*;
use sandbox::SandboxMode::{Disabled, Enforce};

/// How long a canary waits for a connection that already should have arrived.
const CANARY_WAIT: Duration = Duration::from_millis(300);

fn tcp_canary_reached(listener: &TcpListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    let start = Instant::now();
    while start.elapsed() < CANARY_WAIT {
        if listener.accept().is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn unix_canary_reached(listener: &UnixListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    let start = Instant::now();
    while start.elapsed() < CANARY_WAIT {
        if listener.accept().is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

fn tcp_connect(host: &str, port: u16) -> sandbox::WorkerCommand {
    python(&format!(
        "import socket\nattempt(lambda: socket.create_connection(({host:?}, {port}), timeout=2) and 'connected')"
    ))
}

#[test]
fn tcp_connect_to_ipv4_loopback_canary() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("tcp4");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let confined = run(&tcp_connect("127.0.0.1", port), &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"], "{confined:?}");
    assert!(!tcp_canary_reached(&listener));
    let open = run(&tcp_connect("127.0.0.1", port), &fx.policy(Disabled));
    assert_eq!(open.lines(), ["OK connected"], "{open:?}");
    assert!(tcp_canary_reached(&listener));
}

#[test]
fn tcp_connect_to_ipv6_loopback_canary() {
    if skip_unless_sandbox_available() {
        return;
    }
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        skip_loudly("this machine has no IPv6 loopback to listen on");
        return;
    };
    let fx = Fixture::new("tcp6");
    let port = listener.local_addr().unwrap().port();
    let confined = run(&tcp_connect("::1", port), &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"], "{confined:?}");
    assert!(!tcp_canary_reached(&listener));
    let open = run(&tcp_connect("::1", port), &fx.policy(Disabled));
    assert_eq!(open.lines(), ["OK connected"], "{open:?}");
    assert!(tcp_canary_reached(&listener));
}

fn socket_attempt(family: &str, kind: &str, proto: &str) -> sandbox::WorkerCommand {
    python(&format!(
        "import socket\nattempt(lambda: socket.socket(socket.{family}, socket.{kind}, {proto}) and 'created')"
    ))
}

#[test]
fn create_raw_socket() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("raw");
    let payload = socket_attempt("AF_INET", "SOCK_RAW", "socket.IPPROTO_ICMP");
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"], "{confined:?}");
    if nix::unistd::geteuid().is_root() {
        let open = run(&payload, &fx.policy(Disabled));
        assert_eq!(open.lines(), ["OK created"], "{open:?}");
    }
}

#[test]
fn create_packet_socket() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("packet");
    let payload = socket_attempt("AF_PACKET", "SOCK_RAW", "0");
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"], "{confined:?}");
    if nix::unistd::geteuid().is_root() {
        let open = run(&payload, &fx.policy(Disabled));
        assert_eq!(open.lines(), ["OK created"], "{open:?}");
    }
}

#[test]
fn create_netlink_socket() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("netlink");
    let payload = socket_attempt("AF_NETLINK", "SOCK_RAW", "0");
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"], "{confined:?}");
    let open = run(&payload, &fx.policy(Disabled));
    assert_eq!(open.lines(), ["OK created"], "{open:?}");
}

#[test]
fn create_vsock_socket() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("vsock");
    let payload = socket_attempt("AF_VSOCK", "SOCK_STREAM", "0");
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED EPERM"], "{confined:?}");
}

#[test]
fn create_udp_socket_and_socketpair_of_inet() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("udp");
    let payload = python(
        "import socket\n\
         attempt(lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) and 'created')\n\
         attempt(lambda: socket.socketpair(socket.AF_INET) and 'created')\n\
         attempt(lambda: socket.socketpair(socket.AF_UNIX) and 'created')",
    );
    let confined = run(&payload, &fx.policy(Enforce));
    // AF_UNIX pairs stay allowed: a worker may use them between its own processes.
    assert_eq!(
        confined.lines(),
        ["BLOCKED EPERM", "BLOCKED EPERM", "OK created"],
        "{confined:?}"
    );
}

#[test]
fn connect_to_host_unix_socket() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("unix");
    let path = fx.home.path().join("host.sock");
    let listener = UnixListener::bind(&path).unwrap();
    let payload = python(&format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\nattempt(lambda: s.connect({:?}) or 'connected')",
        path.display().to_string()
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    assert_eq!(confined.lines(), ["BLOCKED ENOENT"], "{confined:?}");
    assert!(!unix_canary_reached(&listener));
    let open = run(&payload, &fx.policy(Disabled));
    assert_eq!(open.lines(), ["OK connected"], "{open:?}");
    assert!(unix_canary_reached(&listener));
}

#[test]
fn connect_to_host_abstract_unix_socket() {
    if skip_unless_sandbox_available() {
        return;
    }
    let fx = Fixture::new("abstract");
    let name = format!("sandbox-test-canary-{}", std::process::id());
    let addr =
        <SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(name.as_bytes())
            .unwrap();
    let listener = UnixListener::bind_addr(&addr).unwrap();
    let payload = python(&format!(
        "import socket\ns = socket.socket(socket.AF_UNIX)\nattempt(lambda: s.connect('\\0{name}') or 'connected')"
    ));
    let confined = run(&payload, &fx.policy(Enforce));
    // The abstract namespace belongs to the network namespace: the name does not exist inside.
    assert!(confined.stdout.starts_with("BLOCKED"), "{confined:?}");
    assert!(!unix_canary_reached(&listener));
    let open = run(&payload, &fx.policy(Disabled));
    assert_eq!(open.lines(), ["OK connected"], "{open:?}");
    assert!(unix_canary_reached(&listener));
}
