//! Tool names from `operationId`s (or method and path), and text stripped of what a reader
//! would not see (controls, direction overrides, zero-width and tag characters).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

/// Longest tool name.
pub const MAX_NAME: usize = 64;

/// Characters that render as nothing or reorder what surrounds them.
pub(crate) fn is_invisible(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}' | '\u{FEFF}' | '\u{FFA0}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E0FFF}')
}

/// `text` without invisible characters (newlines and tabs kept), cut to `max` characters.
pub(crate) fn clean_text(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max * 4));
    let mut count = 0;
    for c in text.chars() {
        if is_invisible(c) && c != '\n' && c != '\t' {
            continue;
        }
        if count == max {
            out.push('…');
            break;
        }
        out.push(c);
        count += 1;
    }
    out
}

/// An identifier-ish name (`[A-Za-z0-9_-]`, at most [`MAX_NAME`]) for `raw`, the same for the
/// same input: invisible characters dropped, other ASCII punctuation and spaces become `_`,
/// non-ASCII letters and digits become `u` and their code point in hex. Empty when nothing
/// usable is left.
pub(crate) fn sanitize(raw: &str) -> String {
    let mut out = String::new();
    for c in raw.chars() {
        if is_invisible(c) {
            continue;
        }
        if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
            out.push(c);
        } else if c.is_alphanumeric() {
            let _ = write!(out, "u{:04x}", u32::from(c));
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let trimmed = out.trim_matches(|c| c == '_' || c == '-');
    if trimmed.len() <= MAX_NAME {
        return trimmed.to_owned();
    }
    // Long ids keep a readable start and a hash of the whole, so two stay apart.
    let head = trimmed[..MAX_NAME - 9].trim_end_matches(['_', '-']);
    format!("{head}_{:08x}", fnv1a(raw))
}

/// `<method>_<path>` for an operation without an `operationId`.
pub(crate) fn fallback(method: &str, path: &str) -> String {
    sanitize(&format!("{method}_{}", path.replace(['{', '}'], "")))
}

fn fnv1a(s: &str) -> u32 {
    s.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Gives out names unique case-insensitively: a taken one gets `_2`, `_3`, ...
#[derive(Default)]
pub(crate) struct Namer {
    taken: HashSet<String>,
    /// Per lower-cased base, the next suffix to try (so many equal bases stay linear).
    next: HashMap<String, usize>,
}

impl Namer {
    /// The name for `base`, and whether it had to change.
    pub fn claim(&mut self, base: &str) -> (String, bool) {
        let base = if base.is_empty() { "operation" } else { base };
        let lower = base.to_ascii_lowercase();
        if self.taken.insert(lower.clone()) {
            return (base.to_owned(), false);
        }
        let mut n = self.next.get(&lower).copied().unwrap_or(2);
        loop {
            let suffix = format!("_{n}");
            let head = &base[..base.len().min(MAX_NAME - suffix.len())];
            let candidate = format!("{head}{suffix}");
            n += 1;
            if self.taken.insert(candidate.to_ascii_lowercase()) {
                self.next.insert(lower, n);
                return (candidate, true);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]
    use super::*;

    #[test]
    fn ids_are_mapped_deterministically() {
        assert_eq!(sanitize("repos/get-content"), "repos_get-content");
        assert_eq!(sanitize("get user!"), "get_user");
        assert_eq!(sanitize("listPets"), "listPets");
        assert_eq!(sanitize("café"), "cafu00e9");
        assert_eq!(sanitize("get\u{202E}Pets\u{200B}"), "getPets");
        assert_eq!(sanitize("a\u{E0041}b"), "ab");
        assert_eq!(sanitize("!!!"), "");
        assert_eq!(fallback("get", "/pets/{petId}/toys"), "get_pets_petId_toys");
    }

    #[test]
    fn long_ids_stay_distinct_and_bounded() {
        let a = sanitize(&"x".repeat(100));
        let b = sanitize(&format!("{}y", "x".repeat(99)));
        assert!(a.len() <= MAX_NAME && b.len() <= MAX_NAME);
        assert_ne!(a, b);
        assert_eq!(a, sanitize(&"x".repeat(100)));
    }

    #[test]
    fn collisions_get_suffixes_case_insensitively() {
        let mut n = Namer::default();
        assert_eq!(n.claim("getPet"), ("getPet".to_owned(), false));
        assert_eq!(n.claim("GETPET"), ("GETPET_2".to_owned(), true));
        assert_eq!(n.claim("getPet_2"), ("getPet_2_2".to_owned(), true));
        let long = "y".repeat(MAX_NAME);
        assert_eq!(n.claim(&long).0, long);
        let (second, changed) = n.claim(&long);
        assert!(changed && second.len() == MAX_NAME && second.ends_with("_2"));
    }

    #[test]
    fn text_loses_invisibles_and_is_bounded() {
        assert_eq!(clean_text("a\u{202E}b\u{0007}c\nd", 100), "abc\nd");
        assert_eq!(clean_text("abcdef", 3), "abc…");
    }
}
