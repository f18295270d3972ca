//! TLS for HTTPS connections (upstreams, OAuth endpoints): one process-wide provider.

/// TLS for HTTPS upstreams uses rustls with the ring provider (lighter to build than
/// aws-lc); installed once, on first use.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
