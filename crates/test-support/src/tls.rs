//! The TLS provider of the HTTP clients here.

/// HTTP clients here use rustls with the ring provider, as the server does.
pub fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
