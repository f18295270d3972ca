//! Fresh random identifiers: execution ids, session, result and state handles, directory tags.

use std::sync::atomic::{AtomicU64, Ordering};

/// `N` random bytes in hex (`2 * N` digits, `N` at most 32). Without an entropy source, a
/// SHA-256 of the time, the process and a counter: still unique, though no longer unguessable.
pub fn random_hex<const N: usize>() -> String {
    let mut b = [0u8; N];
    if getrandom::fill(&mut b).is_err() {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let seed = format!("{t}:{}:{n}", std::process::id());
        return policy::audit::sha256_hex(seed.as_bytes())[..2 * N].to_string();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_have_their_length_and_differ() {
        let (a, b) = (random_hex::<16>(), random_hex::<16>());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
        assert_eq!(random_hex::<8>().len(), 16);
    }
}
