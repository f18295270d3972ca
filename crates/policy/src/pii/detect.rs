//! The detectors of personal data: which spans of a text are an email address, a phone
//! number, an IBAN, a card number, an IP address, an API key or token, or match a
//! user-named pattern.
//!
//! One pass finds every built-in candidate: a single regular expression (the `regex` crate:
//! finite automata, no backtracking, so its time is linear in the text) whose alternatives
//! have bounded repetitions, so that no candidate is longer than [`MAX_MATCH_BYTES`]. Each
//! candidate is then classified by a check on its own bytes (the IBAN's mod-97, the card's
//! Luhn sum, an address's parse, a phone's digit count): the work after the scan is bounded
//! by the candidates' total length, which is at most the text's. A user pattern is one more
//! pass of its own regular expression, compiled with a size limit, and accepted only when its
//! longest match is bounded by [`MAX_MATCH_BYTES`].
//!
//! Why bounded: the `regex` crate bounds one search by the text's length, but a search for
//! every match runs many searches, each of which may look ahead to the end of the text
//! before settling on a match (`.*x|y` on `yyyy...`): quadratic. When no match can be longer
//! than `L`, a search never looks further than `L` past its start, so finding every match
//! costs at most the text's length plus `L` per match: linear.
//!
//! Spans never start inside a JSON escape sequence when the text is JSON (`\n`, `\u00e9`):
//! a token replacing one keeps the JSON valid.

use std::net::{Ipv4Addr, Ipv6Addr};

use regex::Regex;

/// Longest span a detector reports, in bytes: longer candidates are not personal data of
/// any shape we know (an email address is at most 254 characters).
pub const MAX_MATCH_BYTES: usize = 256;

/// Compiled size limit of one user pattern (the `regex` crate's own default is 10 MiB):
/// large enough for any sensible pattern, small enough that a hostile one cannot hold
/// the server's memory.
const USER_PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// What a detector found: the kind names the token (`[EMAIL_1_...]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Builtin {
    Email,
    Phone,
    Iban,
    Card,
    Ip,
    Secret,
}

impl Builtin {
    pub const ALL: [Builtin; 6] = [
        Builtin::Email,
        Builtin::Phone,
        Builtin::Iban,
        Builtin::Card,
        Builtin::Ip,
        Builtin::Secret,
    ];

    /// The name in the settings (`pii.detectors`).
    pub fn setting(self) -> &'static str {
        match self {
            Builtin::Email => "email",
            Builtin::Phone => "phone",
            Builtin::Iban => "iban",
            Builtin::Card => "card",
            Builtin::Ip => "ip",
            Builtin::Secret => "secret",
        }
    }

    /// The label of its tokens and of the audit's counts.
    pub fn label(self) -> &'static str {
        match self {
            Builtin::Email => "EMAIL",
            Builtin::Phone => "PHONE",
            Builtin::Iban => "IBAN",
            Builtin::Card => "CARD",
            Builtin::Ip => "IP",
            Builtin::Secret => "SECRET",
        }
    }

    pub fn from_setting(name: &str) -> Option<Builtin> {
        Builtin::ALL.into_iter().find(|b| b.setting() == name)
    }
}

/// The longest built-in candidate, in bytes (an email address: 64 + 1 + 7 labels of 63 and
/// their dots), checked by a test against the expression.
#[cfg(test)]
pub const MAX_CANDIDATE_BYTES: usize = 512;

/// The one expression of every built-in candidate. `(?-u:\b)` is an ASCII word boundary,
/// which the lazy DFA supports on any input (a Unicode one would send it to a slower
/// engine on non-ASCII text).
pub(super) const CANDIDATES: &str = concat!(
    // An IBAN: country, check digits, 11 to 30 more in groups of up to four.
    r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{1,4}){3,8}(?-u:\b)",
    // An email address.
    r"|[A-Za-z0-9._%+\-]{1,64}@[A-Za-z0-9\-]{1,63}(?:\.[A-Za-z0-9\-]{1,63}){1,6}",
    // Key and token shapes.
    r"|(?-u:\b)(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,99}",
    r"|(?-u:\b)sk-[A-Za-z0-9_\-]{20,160}",
    r"|(?-u:\b)(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,80}",
    r"|(?-u:\b)github_pat_[A-Za-z0-9_]{22,120}",
    r"|(?-u:\b)xox[abprs]-[A-Za-z0-9\-]{10,120}",
    r"|(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
    r"|(?-u:\b)AIza[0-9A-Za-z_\-]{35}",
    r"|(?-u:\b)eyJ[A-Za-z0-9_\-]{8,80}\.eyJ[A-Za-z0-9_\-]{8,160}\.[A-Za-z0-9_\-]{8,160}",
    // An IPv6 address (validated by its parse).
    r"|(?-u:\b)[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{0,4}){2,7}",
    // Digits with separators: an IPv4 address, a card number or a phone number.
    r"|\+?\(?[0-9][0-9 ().\-]{5,30}[0-9]",
);

/// The detectors one policy runs.
#[derive(Debug, Clone)]
pub struct Detectors {
    candidates: Option<Regex>,
    builtins: Vec<Builtin>,
    /// User patterns by label (`CUSTOMER_ID`).
    patterns: Vec<(String, Regex)>,
}

/// What is wrong with a detector's setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DetectorError {
    #[error("\"{0}\" is not a detector (email, phone, iban, card, ip, secret)")]
    Unknown(String),
    #[error(
        "\"{0}\": a pattern's name is 1 to 32 capital letters, digits and underscores, starting with a letter"
    )]
    Name(String),
    #[error("pattern {name}: {reason}")]
    Pattern { name: String, reason: String },
    #[error("pattern {0} matches the empty string")]
    Empty(String),
    #[error(
        "pattern {0} can match more than {MAX_MATCH_BYTES} bytes: bound its repetitions ({{1,64}} instead of + or *)"
    )]
    Unbounded(String),
}

/// One span found: where, and its label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub start: usize,
    pub end: usize,
    pub label: Label,
    /// The value decoded, when the span is encoded (`judy%40example.com`: `judy@example.com`);
    /// `None`: the span's own text.
    pub value: Option<String>,
}

impl Found {
    /// The value found in `text` (the text [`Detectors::find`] searched).
    pub fn value<'t>(&'t self, text: &'t str) -> &'t str {
        self.value
            .as_deref()
            .unwrap_or_else(|| text.get(self.start..self.end).unwrap_or_default())
    }
}

/// A detector's label: a built-in kind or a user pattern's name (its index).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Label {
    Builtin(Builtin),
    Pattern(usize),
}

impl Detectors {
    /// The detectors named (`builtins`) and the user patterns, compiled. Nothing named:
    /// nothing is ever found.
    pub fn new(builtins: &[String], patterns: &[(String, String)]) -> Result<Self, DetectorError> {
        let mut kinds = Vec::new();
        for b in builtins {
            let kind = Builtin::from_setting(b).ok_or_else(|| DetectorError::Unknown(b.clone()))?;
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        let candidates = if kinds.is_empty() {
            None
        } else {
            Some(Regex::new(CANDIDATES).map_err(|e| DetectorError::Pattern {
                name: "built-in".into(),
                reason: e.to_string(),
            })?)
        };
        let mut compiled = Vec::new();
        for (name, pattern) in patterns {
            let ok_name = (1..=32).contains(&name.len())
                && name.starts_with(|c: char| c.is_ascii_uppercase())
                && name
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
            if !ok_name {
                return Err(DetectorError::Name(name.clone()));
            }
            let re = regex::RegexBuilder::new(pattern)
                .size_limit(USER_PATTERN_SIZE_LIMIT)
                .dfa_size_limit(USER_PATTERN_SIZE_LIMIT)
                .build()
                .map_err(|e| DetectorError::Pattern {
                    name: name.clone(),
                    reason: e.to_string(),
                })?;
            if re.is_match("") {
                return Err(DetectorError::Empty(name.clone()));
            }
            let longest = regex_syntax::Parser::new()
                .parse(pattern)
                .ok()
                .and_then(|hir| hir.properties().maximum_len());
            if longest.is_none_or(|n| n > MAX_MATCH_BYTES) {
                return Err(DetectorError::Unbounded(name.clone()));
            }
            compiled.push((name.clone(), re));
        }
        Ok(Detectors {
            candidates,
            builtins: kinds,
            patterns: compiled,
        })
    }

    /// Whether any detector is on.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_none() && self.patterns.is_empty()
    }

    /// The label's name in tokens and in the audit (`EMAIL`, `CUSTOMER_ID`).
    pub fn label_name(&self, label: Label) -> &str {
        match label {
            Label::Builtin(b) => b.label(),
            Label::Pattern(i) => self.patterns.get(i).map_or("PII", |(n, _)| n.as_str()),
        }
    }

    /// Every span of `text` a detector claims, in order, not overlapping (a user pattern's
    /// span overlapping a built-in one is dropped), also where the value is encoded
    /// (percent-encoding, `+` for a space in a query, HTML character references, `\u`
    /// escapes: `crate::decode`): the detectors then run on the decoded text, and
    /// each span is the encoded one of the original, with its decoded value. `json`: the
    /// text is JSON, so that no span starts inside an escape sequence. `work` counts the
    /// bytes examined after the scan (classification), for the tests that bound it.
    pub fn find(&self, text: &str, json: bool, work: &mut usize) -> Vec<Found> {
        let views = crate::decode::views(text, json);
        if views.is_empty() {
            return self.find_plain(text, json, work);
        }
        let mut all: Vec<Found> = Vec::new();
        for (off, view) in &views {
            let decoded = view.text();
            for f in self.find_plain(decoded, false, work) {
                let (s, e) = view.source(f.start, f.end);
                let (start, end) = (off + s, off + e);
                let Some(original) = text.get(start..end) else {
                    continue;
                };
                let value = &decoded[f.start..f.end];
                // A span without an encoded sequence is the plain search's (below).
                if value != original {
                    all.push(Found {
                        start,
                        end,
                        label: f.label,
                        value: Some(value.to_string()),
                    });
                }
            }
        }
        // The text as it is too: where decoding misreads it (a literal `+` in an address in
        // a query, which decoding takes for a space), the wider span wins.
        all.extend(self.find_plain(text, json, work));
        all.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
        let mut found: Vec<Found> = Vec::with_capacity(all.len());
        for f in all {
            match found.last_mut() {
                Some(last) if f.start < last.end => {
                    if f.end - f.start > last.end - last.start {
                        *last = f;
                    }
                }
                _ => found.push(f),
            }
        }
        // Replacing a span may have made it overlap the one before.
        found.dedup_by(|b, a| b.start < a.end);
        found
    }

    /// [`Detectors::find`] on the text as it is.
    fn find_plain(&self, text: &str, json: bool, work: &mut usize) -> Vec<Found> {
        let mut found = Vec::new();
        if let Some(re) = &self.candidates {
            for m in re.find_iter(text) {
                let Some((start, end)) = outside_escape(text, m.start(), m.end(), json) else {
                    continue;
                };
                let mut end = end;
                let span = &text[start..end];
                *work += span.len();
                let mut kind = classify(span);
                // An IBAN followed by a word in capitals (`... 0130 00 HTTP`, `... EUR`)
                // reads as one candidate: without its trailing groups of letters only.
                if kind.is_none()
                    && let Some(cut) = iban_before_word(span)
                {
                    *work += cut;
                    end = start + cut;
                    kind = Some(Builtin::Iban);
                }
                if let Some(kind) = kind
                    && self.builtins.contains(&kind)
                {
                    // A phone or card span may carry separators at its ends.
                    let (s, e) = trim_span(text, start, end, kind);
                    found.push(Found {
                        start: s,
                        end: e,
                        label: Label::Builtin(kind),
                        value: None,
                    });
                }
            }
        }
        for (i, (_, re)) in self.patterns.iter().enumerate() {
            let mut extra = Vec::new();
            for m in re.find_iter(text) {
                let end = floor_char(text, (m.start() + MAX_MATCH_BYTES).min(m.end()));
                let Some((start, end)) = outside_escape(text, m.start(), end, json) else {
                    continue;
                };
                *work += end - start;
                if start < end {
                    extra.push(Found {
                        start,
                        end,
                        label: Label::Pattern(i),
                        value: None,
                    });
                }
            }
            if !extra.is_empty() {
                found = merge(found, extra);
            }
        }
        found
    }
}

/// `a` and `b` (each sorted, not overlapping) as one sorted list; `b`'s spans that overlap
/// one of `a` are dropped.
fn merge(a: Vec<Found>, b: Vec<Found>) -> Vec<Found> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut ai = a.into_iter().peekable();
    for f in b {
        while let Some(x) = ai.next_if(|x| x.end <= f.start) {
            out.push(x);
        }
        let overlaps = ai.peek().is_some_and(|x| x.start < f.end)
            || out.last().is_some_and(|x: &Found| x.end > f.start);
        if !overlaps {
            out.push(f);
        }
    }
    out.extend(ai);
    out
}

fn floor_char(text: &str, mut i: usize) -> usize {
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The span moved past a JSON escape it starts in (`\n`, `\"`, `\u00e9`), or `None` when
/// nothing is left of it. Not JSON: the span as it is.
fn outside_escape(text: &str, start: usize, end: usize, json: bool) -> Option<(usize, usize)> {
    if !json {
        return Some((start, end));
    }
    let b = text.as_bytes();
    let mut start = start;
    // A backslash at most 5 bytes before the start may open an escape covering it.
    let from = start.saturating_sub(5);
    if let Some(rel) = b[from..start].iter().rposition(|&c| c == b'\\') {
        let esc = from + rel;
        // An escaped backslash (an even run) opens nothing.
        let run = b[..=esc].iter().rev().take_while(|&&c| c == b'\\').count();
        if run % 2 == 1 {
            let covers = if b.get(esc + 1) == Some(&b'u') { 6 } else { 2 };
            if esc + covers > start {
                start = esc + covers;
            }
        }
    }
    // A span never ends inside an escape either: no detector's bytes include a backslash,
    // so the end is never past one.
    (start < end && text.is_char_boundary(start)).then_some((start, end))
}

/// The kind of a built-in candidate, by the checks of its shape; `None`: not personal data.
pub fn classify(span: &str) -> Option<Builtin> {
    let b = span.as_bytes();
    if span.contains('@') {
        return is_email(span).then_some(Builtin::Email);
    }
    if b.len() >= 2 && b[0].is_ascii_uppercase() && b[1].is_ascii_uppercase() {
        if is_iban(span) {
            return Some(Builtin::Iban);
        }
        return is_secret(span).then_some(Builtin::Secret);
    }
    if is_secret(span) {
        return Some(Builtin::Secret);
    }
    if span.contains(':') {
        return span.parse::<Ipv6Addr>().is_ok().then_some(Builtin::Ip);
    }
    if span.parse::<Ipv4Addr>().is_ok() {
        return Some(Builtin::Ip);
    }
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    if is_card(span, digits) {
        return Some(Builtin::Card);
    }
    is_phone(span, digits).then_some(Builtin::Phone)
}

fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let tld = domain.rsplit('.').next().unwrap_or_default();
    !local.is_empty()
        && !local.starts_with('.')
        && domain.contains('.')
        && tld.len() >= 2
        && tld.bytes().all(|c| c.is_ascii_alphabetic())
        && domain.split('.').all(|l| !l.is_empty())
}

/// The length of `span` without its trailing space-separated groups of letters only, when
/// that is an IBAN (and the whole is not).
fn iban_before_word(span: &str) -> Option<usize> {
    let b = span.as_bytes();
    if b.len() < 4
        || !b[..2].iter().all(u8::is_ascii_uppercase)
        || !b[2..4].iter().all(u8::is_ascii_digit)
    {
        return None;
    }
    let mut cut = span.len();
    while let Some(sp) = span[..cut].rfind(' ') {
        let group = &span[sp + 1..cut];
        if group.is_empty() || group.bytes().any(|c| c.is_ascii_digit()) {
            return None;
        }
        cut = sp;
        if is_iban(&span[..cut]) {
            return Some(cut);
        }
    }
    None
}

/// An IBAN by ISO 13616: two letters, two check digits, up to 30 letters and digits,
/// the whole (country and checks moved to the end, letters as 10..35) congruent to 1 mod 97.
pub fn is_iban(s: &str) -> bool {
    let compact: Vec<u8> = s.bytes().filter(|&c| c != b' ').collect();
    if !(15..=34).contains(&compact.len())
        || !compact[..2].iter().all(u8::is_ascii_uppercase)
        || !compact[2..4].iter().all(u8::is_ascii_digit)
    {
        return false;
    }
    let mut rem: u32 = 0;
    for &c in compact[4..].iter().chain(&compact[..4]) {
        let v = match c {
            b'0'..=b'9' => u32::from(c - b'0'),
            b'A'..=b'Z' => u32::from(c - b'A') + 10,
            _ => return false,
        };
        rem = if v >= 10 {
            (rem * 100 + v) % 97
        } else {
            (rem * 10 + v) % 97
        };
    }
    rem == 1
}

/// A card number: 13 to 19 digits, separated by single spaces or dashes only, passing Luhn.
pub fn is_card(s: &str, digits: usize) -> bool {
    let t = s.trim_matches(|c: char| !c.is_ascii_digit());
    if !(13..=19).contains(&digits)
        || !t
            .bytes()
            .all(|c| c.is_ascii_digit() || c == b' ' || c == b'-')
    {
        return false;
    }
    luhn(t.bytes().filter(u8::is_ascii_digit).map(|c| c - b'0'))
}

/// The Luhn checksum over digits, most significant first.
pub fn luhn(digits: impl DoubleEndedIterator<Item = u8>) -> bool {
    let sum: u32 = digits
        .rev()
        .enumerate()
        .map(|(i, d)| {
            let d = u32::from(d);
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// A phone number: with a leading `+`, 8 to 15 digits (E.164); without, 10 to 15 digits
/// and at least one separator (a bare run of digits is an id or an amount more often than
/// a phone number); never a date-like run of dots.
pub fn is_phone(s: &str, digits: usize) -> bool {
    let intl = s.trim_start_matches('(').starts_with('+');
    let seps = s
        .bytes()
        .filter(|c| !c.is_ascii_digit() && *c != b'+')
        .count();
    let dots = s.bytes().filter(|&c| c == b'.').count();
    if dots > 0 && dots == seps {
        return false;
    }
    // A date (`2024-01-15 10`, `2024/01/15`) is not a phone number.
    let groups: Vec<usize> = s
        .split(|c: char| !c.is_ascii_digit())
        .filter(|g| !g.is_empty())
        .map(str::len)
        .collect();
    if groups.len() >= 3 && groups[0] == 4 && groups[1] <= 2 && groups[2] <= 2 && !intl {
        return false;
    }
    if intl {
        (8..=15).contains(&digits)
    } else {
        (10..=15).contains(&digits) && seps > 0
    }
}

fn is_secret(s: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "sk_live_",
        "sk_test_",
        "pk_live_",
        "pk_test_",
        "rk_live_",
        "rk_test_",
        "sk-",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
        "xoxa-",
        "xoxb-",
        "xoxp-",
        "xoxr-",
        "xoxs-",
        "AKIA",
        "ASIA",
        "AIza",
        "eyJ",
    ];
    PREFIXES.iter().any(|p| s.starts_with(p)) && s.len() >= 20
}

/// A phone or card span without the separators the candidate took around it (`(`, `-`).
fn trim_span(text: &str, start: usize, end: usize, kind: Builtin) -> (usize, usize) {
    if !matches!(kind, Builtin::Phone | Builtin::Card) {
        return (start, end);
    }
    let span = &text[start..end];
    let keep_open = kind == Builtin::Phone;
    let lead = span.len()
        - span
            .trim_start_matches(|c: char| {
                !(c.is_ascii_digit() || c == '+' || (keep_open && c == '('))
            })
            .len();
    let trail = span.len() - span.trim_end_matches(|c: char| !c.is_ascii_digit()).len();
    (start + lead, end - trail)
}
