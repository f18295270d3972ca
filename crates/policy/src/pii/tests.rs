//! The detectors by table, a property test of random records against a reference written
//! here (which values a generator planted, its own mod-97 and Luhn), the token map, and
//! hostile input whose work stays linear.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::detect::{Builtin, Detectors, classify, is_iban, luhn};
use super::vault::Vault;
use super::{Elsewhere, Pii, PiiSettings, SandboxSees};

fn all() -> Detectors {
    let names: Vec<String> = Builtin::ALL.iter().map(|b| b.setting().into()).collect();
    Detectors::new(&names, &[("CUSTOMER_ID".into(), "CUS-[0-9]{6}".into())]).unwrap()
}

fn labels(d: &Detectors, text: &str) -> Vec<(String, String)> {
    let mut work = 0;
    d.find(text, false, &mut work)
        .into_iter()
        .map(|f| {
            (
                d.label_name(f.label).to_string(),
                text[f.start..f.end].to_string(),
            )
        })
        .collect()
}

#[test]
fn detector_table() {
    let d = all();
    let cases: &[(&str, &[(&str, &str)])] = &[
        (
            "write to ada.lovelace@example.co.uk today",
            &[("EMAIL", "ada.lovelace@example.co.uk")],
        ),
        ("call +44 20 7946 0958.", &[("PHONE", "+44 20 7946 0958")]),
        ("office (555) 010-0199 x", &[("PHONE", "(555) 010-0199")]),
        (
            "card 4111 1111 1111 1111 ok",
            &[("CARD", "4111 1111 1111 1111")],
        ),
        ("card 4111-1111-1111-1112 bad", &[]),
        (
            "iban DE89 3704 0044 0532 0130 00 end",
            &[("IBAN", "DE89 3704 0044 0532 0130 00")],
        ),
        (
            "iban GB82WEST12345698765432",
            &[("IBAN", "GB82WEST12345698765432")],
        ),
        ("iban GB83WEST12345698765432", &[]),
        (
            "pay DE89 3704 0044 0532 0130 00 EUR now",
            &[("IBAN", "DE89 3704 0044 0532 0130 00")],
        ),
        ("from 192.168.10.200 and", &[("IP", "192.168.10.200")]),
        (
            "v6 2001:db8::8a2e:370:7334 here",
            &[("IP", "2001:db8::8a2e:370:7334")],
        ),
        ("at 12:30:45 the", &[]),
        (
            "key ghp_abcdefghijklmnopqrstuvwxyz0123456789 used",
            &[("SECRET", "ghp_abcdefghijklmnopqrstuvwxyz0123456789")],
        ),
        (
            "AKIAIOSFODNN7EXAMPLE",
            &[("SECRET", "AKIAIOSFODNN7EXAMPLE")],
        ),
        ("customer CUS-123456 paid", &[("CUSTOMER_ID", "CUS-123456")]),
        // Not personal data: ids, amounts, dates, versions, times.
        ("order 1234567890 of 2024-01-15 10:30 v1.2.3 for 42.50", &[]),
        ("id 4111111111111112", &[]),
        ("not an email: user@localhost, a@b", &[]),
    ];
    for (text, want) in cases {
        let got = labels(&d, text);
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(l, v)| (l.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want, "{text}");
    }
}

/// Every built-in candidate is bounded, so that finding every match stays linear.
#[test]
fn every_candidate_is_bounded() {
    let n = regex_syntax::Parser::new()
        .parse(super::detect::CANDIDATES)
        .unwrap()
        .properties()
        .maximum_len();
    assert!(
        n.is_some_and(|n| n <= super::detect::MAX_CANDIDATE_BYTES),
        "{n:?}"
    );
}

#[test]
fn only_the_detectors_named_run() {
    let d = Detectors::new(&["email".into()], &[]).unwrap();
    assert_eq!(
        labels(&d, "a@example.com +44 20 7946 0958"),
        vec![("EMAIL".to_string(), "a@example.com".to_string())]
    );
    assert!(Detectors::new(&["ssn".into()], &[]).is_err());
    assert!(Detectors::new(&[], &[("lower".into(), "x".into())]).is_err());
    assert!(Detectors::new(&[], &[("EMPTY".into(), "x*".into())]).is_err());
    assert!(Detectors::new(&[], &[("BAD".into(), "(".into())]).is_err());
    assert!(Detectors::new(&[], &[("LONG".into(), "CUS-[0-9]+".into())]).is_err());
    assert!(Detectors::new(&[], &[("WIDE".into(), "[a-z]{1,300}".into())]).is_err());
}

#[test]
fn settings_are_checked_and_off_by_default() {
    let bad = |v: Value| {
        serde_json::from_value::<PiiSettings>(v)
            .map_err(|e| e.to_string())
            .and_then(|s| s.validate().map_err(|e| e.to_string()))
            .unwrap_err()
    };
    assert!(bad(json!({"scan": ["crm"]})).contains("pii"));
    assert!(bad(json!({"scan": ["*"], "detectors": ["dna"]})).contains("dna"));
    assert!(bad(json!({"patterns": {"X": "("}})).contains("pattern X"));
    assert!(bad(json!({"sandboxSees": "both"})).contains("both"));
    assert!(!Pii::default().enabled());
    let p = Pii::new(
        serde_json::from_value::<PiiSettings>(json!({
            "scan": ["mcp__crm__*"], "restoreTo": ["mcp__mail__send"], "elsewhere": "deny",
            "sandboxSees": "values"}))
        .unwrap()
        .validate()
        .unwrap(),
    );
    let servers = ["crm", "mail", "web"];
    assert!(p.enabled());
    assert!(p.scans(servers.iter().copied(), "crm", "customers"));
    assert!(!p.scans(servers.iter().copied(), "web", "search"));
    assert!(p.restores_to(servers.iter().copied(), "mail", "send"));
    assert!(!p.restores_to(servers.iter().copied(), "web", "search"));
    assert_eq!(p.elsewhere(), Elsewhere::Deny);
    assert_eq!(p.sandbox_sees(), SandboxSees::Values);
}

#[test]
fn the_same_value_gets_the_same_token_and_maps_differ() {
    let d = all();
    let v = Vault::new();
    let mut made = BTreeMap::new();
    let a = v.tokenise(&d, "a@example.com, b@example.com, a@example.com", &mut made);
    let s = v.salt();
    assert_eq!(a, format!("[EMAIL_1_{s}], [EMAIL_2_{s}], [EMAIL_1_{s}]"));
    assert_eq!(made, BTreeMap::from([("EMAIL".to_string(), 2)]));
    let again = v.tokenise(&d, "b@example.com", &mut made);
    assert_eq!(again, format!("[EMAIL_2_{s}]"));
    // Another map (another session) has another suffix: its tokens restore nothing here.
    let other = Vault::new();
    assert_ne!(other.salt(), v.salt());
    let foreign = other.tokenise(&d, "a@example.com", &mut BTreeMap::new());
    let mut n = 0;
    assert_eq!(v.restore(&foreign, &mut n), foreign);
    assert_eq!(n, 0);
    let mut args = json!({"to": format!("[EMAIL_2_{s}]"), "cc": [format!("x [EMAIL_1_{s}] y")]});
    v.restore_value(&mut args, &mut n);
    assert_eq!(
        args,
        json!({"to": "b@example.com", "cc": ["x a@example.com y"]})
    );
    assert_eq!(n, 2);
}

#[test]
fn tokens_keep_json_valid_even_next_to_escapes() {
    let d = all();
    let v = Vault::new();
    let doc = json!({
        "a": "line\nada@example.com",
        "b": "\u{e9}bob@example.com",
        "c": "q\"carl@example.com\\",
        "d": "tab\t+44 20 7946 0958"
    })
    .to_string();
    let out = v.tokenise(&d, &doc, &mut BTreeMap::new());
    let parsed: Value = serde_json::from_str(&out).expect("still JSON");
    for raw in ["ada@", "bob@", "carl@", "7946"] {
        assert!(!out.contains(raw), "{raw} in {out}");
    }
    assert!(parsed["a"].as_str().unwrap().starts_with("line\n[EMAIL_"));
    // A \u escape before the address stays whole.
    let escaped = r#"{"x":"\u00e9bob@example.com"}"#;
    let out = v.tokenise(&d, escaped, &mut BTreeMap::new());
    let parsed: Value = serde_json::from_str(&out).expect("still JSON");
    assert!(parsed["x"].as_str().unwrap().starts_with('\u{e9}'), "{out}");
}

/// Splitmix64, as `policy::access::net_prop` uses: seeded, reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn digits(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b'0' + self.below(10) as u8))
            .collect()
    }
    fn word(&mut self, n: usize) -> String {
        (0..n)
            .map(|_| char::from(b'a' + self.below(26) as u8))
            .collect()
    }
}

/// The reference's Luhn check digit, by the textbook: double every second digit from the
/// right of the payload with its check digit appended.
fn ref_luhn_digit(payload: &str) -> u32 {
    let mut sum = 0;
    for (i, c) in payload.chars().rev().enumerate() {
        let d = c.to_digit(10).unwrap();
        sum += if i % 2 == 0 {
            let x = d * 2;
            x / 10 + x % 10
        } else {
            d
        };
    }
    (10 - sum % 10) % 10
}

/// The reference's IBAN check digits: the digit string mod 97, by long division over the
/// decimal expansion (letters as two digits each).
fn ref_iban(country: &str, bban: &str) -> String {
    let expanded: String = format!("{bban}{country}00")
        .chars()
        .map(|c| match c.to_digit(36) {
            Some(v) => v.to_string(),
            None => unreachable!(),
        })
        .collect();
    let rem = expanded.chars().fold(0u64, |r, c| {
        (r * 10 + u64::from(c.to_digit(10).unwrap())) % 97
    });
    format!("{country}{:02}{bban}", 98 - rem)
}

/// A planted value of each kind, and what filler must stay as it is.
fn planted(r: &mut Rng) -> (&'static str, String) {
    match r.below(7) {
        0 => (
            "EMAIL",
            format!(
                "{}.{}@{}.{}",
                r.word(5),
                r.word(3),
                r.word(6),
                ["com", "org", "io"][r.below(3) as usize]
            ),
        ),
        1 => (
            "PHONE",
            format!(
                "+{} {} {} {}",
                1 + r.below(98),
                r.digits(3),
                r.digits(3),
                r.digits(4)
            ),
        ),
        2 => {
            let payload = format!("4{}", r.digits(14));
            let check = ref_luhn_digit(&payload);
            let n = format!("{payload}{check}");
            let spaced = r.below(2) == 0;
            (
                "CARD",
                if spaced {
                    format!("{} {} {} {}", &n[..4], &n[4..8], &n[8..12], &n[12..])
                } else {
                    n
                },
            )
        }
        3 => {
            let country = ["DE", "FR", "GB", "NL"][r.below(4) as usize];
            ("IBAN", ref_iban(country, &r.digits(18)))
        }
        4 => (
            "IP",
            format!("10.{}.{}.{}", r.below(256), r.below(256), r.below(256)),
        ),
        5 => ("SECRET", format!("ghp_{}{}", r.word(20), r.digits(16))),
        _ => ("CUSTOMER_ID", format!("CUS-{}", r.digits(6))),
    }
}

fn filler(r: &mut Rng) -> Value {
    match r.below(6) {
        0 => {
            let n = 1 + r.below(12) as usize;
            json!(r.word(n))
        }
        1 => json!(r.below(100_000)),
        2 => json!(format!(
            "2024-{:02}-{:02} 10:{:02}",
            1 + r.below(12),
            1 + r.below(28),
            r.below(60)
        )),
        3 => json!(format!("order {}", r.digits(8))),
        4 => json!(format!("v{}.{}.{}", r.below(10), r.below(10), r.below(10))),
        _ => json!(format!("{} {}", r.word(4), r.word(7))),
    }
}

/// Random records (planted values among filler, inside sentences, in JSON with escapes)
/// through the detectors and back: no planted value is left, each became a token of its
/// kind, every filler value is untouched, the JSON stays valid, and restoring gives the
/// input back exactly.
#[test]
fn random_records_against_the_reference() {
    let seed = std::env::var("PII_PROP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5049_4931_u64);
    let mut r = Rng(seed);
    let d = all();
    for case in 0..400 {
        let v = Vault::new();
        let mut records = Vec::new();
        let mut values = Vec::new();
        let mut fillers = Vec::new();
        for _ in 0..(1 + r.below(8)) {
            let mut rec = serde_json::Map::new();
            for f in 0..(1 + r.below(6)) {
                if r.below(2) == 0 {
                    let (kind, value) = planted(&mut r);
                    let text = match r.below(3) {
                        0 => value.clone(),
                        1 => format!("see {value} now"),
                        _ => format!("\"{value}\"\n"),
                    };
                    rec.insert(format!("f{f}"), json!(text));
                    values.push((kind, value));
                } else {
                    let x = filler(&mut r);
                    fillers.push(x.clone());
                    rec.insert(format!("f{f}"), x);
                }
            }
            records.push(Value::Object(rec));
        }
        let text = Value::Array(records).to_string();
        let mut made = BTreeMap::new();
        let out = v.tokenise(&d, &text, &mut made).into_owned();
        let ctx = || format!("seed {seed} case {case}:\n{text}\n{out}");
        let parsed: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {}", ctx()));
        for (kind, value) in &values {
            assert!(
                !out.contains(value.as_str()),
                "{kind} {value} left: {}",
                ctx()
            );
            let token = v.tokenise(&d, value, &mut BTreeMap::new()).into_owned();
            assert!(
                token.starts_with(&format!("[{kind}_")),
                "{value} is {token}, not {kind}: {}",
                ctx()
            );
        }
        let all_strings = parsed.to_string();
        for f in &fillers {
            let s = f.to_string();
            assert!(all_strings.contains(&s), "filler {s} changed: {}", ctx());
        }
        let mut n = 0;
        assert_eq!(v.restore(&out, &mut n), text, "{}", ctx());
    }
}

/// Checksums agree with the reference on random digits (valid and off by one).
#[test]
fn checksums_agree_with_the_reference() {
    let mut r = Rng(7);
    for _ in 0..2000 {
        let payload = r.digits(15);
        let check = ref_luhn_digit(&payload);
        let good = format!("{payload}{check}");
        let bad = format!("{payload}{}", (check + 1) % 10);
        assert!(luhn(good.bytes().map(|c| c - b'0')), "{good}");
        assert!(!luhn(bad.bytes().map(|c| c - b'0')), "{bad}");
        let iban = ref_iban("DE", &r.digits(18));
        assert!(is_iban(&iban), "{iban}");
        let mut wrong = iban.clone().into_bytes();
        wrong[10] = if wrong[10] == b'9' {
            b'0'
        } else {
            wrong[10] + 1
        };
        assert!(!is_iban(std::str::from_utf8(&wrong).unwrap()));
    }
    assert_eq!(classify("4111111111111111"), Some(Builtin::Card));
}

/// A megabyte of near matches (addresses without a domain, digit runs with separators,
/// IBAN-like groups, key prefixes, half escapes): the work after the scan is at most the
/// text's length (each candidate is bounded), and the text comes back unchanged. The
/// scan itself is the `regex` crate's automaton: linear in the text.
#[test]
fn hostile_input_costs_linear_work() {
    let d = all();
    let shapes = [
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa@",
        "1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1-1 ",
        "DE00 0000 0000 0000 0000 0000 0000 0000 0000 0000 ",
        "ghp_short sk-short xoxb- eyJ.eyJ. ",
        "1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1.1 ",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff ",
        "\\u00 \\\\\\ @@@@ ...",
    ];
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 1 << 20 {
        text.push_str(shapes[i % shapes.len()]);
        i += 1;
    }
    let mut work = 0;
    let found = d.find(&text, true, &mut work);
    assert!(
        work <= text.len(),
        "{work} bytes of work for {}",
        text.len()
    );
    // Each span is a candidate of at least seven bytes, and none overlaps another.
    assert!(found.len() <= text.len() / 7);
    assert!(found.windows(2).all(|w| w[0].end <= w[1].start));
}

/// One value of every detector (and a user pattern), as they are planted in the tests of
/// encodings and echoes.
pub const EVERY: &[(&str, &str)] = &[
    ("EMAIL", "judy.m+news@example.com"),
    ("PHONE", "+1 415 555 0132"),
    ("IBAN", "DE89 3704 0044 0532 0130 00"),
    ("CARD", "4111 1111 1111 1111"),
    ("IP", "192.168.10.200"),
    ("IP", "2001:db8::8a2e:370:7334"),
    ("SECRET", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("SECRET", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("CUSTOMER_ID", "CUS-123456"),
];

/// The encodings a result carries a value in: each is `(name, encoder)`; a `+` for a space
/// only where a query or form body makes it one.
/// An encoder of a value, as a result may carry it.
type Encoder = Box<dyn Fn(&str) -> String>;

fn encodings() -> Vec<(&'static str, Encoder)> {
    fn each(v: &str, all: bool, f: impl Fn(char) -> String) -> String {
        v.chars()
            .map(|c| {
                if all || !c.is_ascii_alphanumeric() {
                    f(c)
                } else {
                    c.to_string()
                }
            })
            .collect()
    }
    fn pct(c: char) -> String {
        let mut b = [0u8; 4];
        c.encode_utf8(&mut b)
            .bytes()
            .map(|x| format!("%{x:02X}"))
            .collect()
    }
    vec![
        ("percent", Box::new(|v: &str| each(v, false, pct))),
        (
            "percent lower",
            Box::new(|v: &str| each(v, false, |c| pct(c).to_ascii_lowercase())),
        ),
        ("percent all", Box::new(|v: &str| each(v, true, pct))),
        (
            "percent twice",
            Box::new(|v: &str| each(&each(v, false, pct), false, pct)),
        ),
        (
            "form",
            Box::new(|v: &str| each(v, false, |c| if c == ' ' { "+".into() } else { pct(c) })),
        ),
        (
            "html decimal",
            Box::new(|v: &str| each(v, false, |c| format!("&#{};", c as u32))),
        ),
        (
            "html hex all",
            Box::new(|v: &str| each(v, true, |c| format!("&#x{:x};", c as u32))),
        ),
        (
            "html named",
            Box::new(|v: &str| {
                v.replace('@', "&commat;")
                    .replace('.', "&period;")
                    .replace('+', "&plus;")
                    .replace(':', "&colon;")
                    .replace('_', "&lowbar;")
                    .replace('-', "&hyphen;")
            }),
        ),
        (
            "html entity escaped",
            Box::new(|v: &str| each(v, false, |c| format!("&amp;#{};", c as u32))),
        ),
        (
            "json \\u",
            Box::new(|v: &str| each(v, false, |c| format!("\\u{:04x}", c as u32))),
        ),
        (
            "json \\u all",
            Box::new(|v: &str| each(v, true, |c| format!("\\u{:04X}", c as u32))),
        ),
    ]
}

/// Every detector's value, in every encoding, in a URL's query, in prose and inside a JSON
/// document: found, replaced by its token in its encoding (nothing of the encoded form is
/// left), the same token as the plain value gets, and restored to the value.
#[test]
fn encoded_values_are_found_and_tokenised_in_their_encoding() {
    let d = all();
    let v = Vault::new();
    let mut made = BTreeMap::new();
    for (label, value) in EVERY {
        let plain = v.tokenise(&d, value, &mut made).into_owned();
        assert!(plain.starts_with(&format!("[{label}_")), "{value}: {plain}");
        for (name, encode) in encodings() {
            let enc = encode(value);
            let contexts = [
                format!("https://crm.example/find?q={enc}&page=2"),
                format!("GET /u?who={enc} HTTP/1.1"),
                format!("note: {enc} (end)"),
                json!({"k": enc, "list": [format!("x {enc} y")]}).to_string(),
            ];
            for (i, text) in contexts.iter().enumerate() {
                // `+` is a space in a query only.
                if name == "form" && i >= 2 && value.contains(' ') {
                    continue;
                }
                let out = v.tokenise(&d, text, &mut made);
                assert!(
                    out.contains(&plain),
                    "{label} {name}: {text} -> {out} (want {plain})"
                );
                assert!(!out.contains(&enc), "{label} {name}: {out}");
                if i == 3 {
                    let parsed: Value = serde_json::from_str(&out).expect("still JSON");
                    assert_eq!(parsed["k"], json!(plain), "{label} {name}: {out}");
                }
                let mut n = 0;
                let back = v.restore(&out, &mut n);
                assert!(back.contains(value), "{label} {name}: {back}");
            }
        }
    }
}

/// A value the map holds comes back from anywhere (an echo of a restored argument, another
/// tool): [`Vault::echoes`] gives the token again, plain or encoded, but never inside a
/// longer word or number.
#[test]
fn a_value_the_map_holds_is_tokenised_wherever_it_comes_back() {
    let d = all();
    let v = Vault::new();
    let mut made = BTreeMap::new();
    let tokens: Vec<String> = EVERY
        .iter()
        .map(|(_, value)| v.tokenise(&d, value, &mut made).into_owned())
        .collect();
    // Searched for as of the last refresh (once per result).
    assert!(v.echoes(EVERY[0].1).contains(EVERY[0].1));
    v.refresh();
    for ((_, value), token) in EVERY.iter().zip(&tokens) {
        for text in [
            format!("sent to {value}."),
            format!("{{\"to\": \"{value}\"}}"),
            format!(
                "echo?to={}",
                value
                    .replace('+', "%2B")
                    .replace('@', "%40")
                    .replace(' ', "+")
            ),
        ] {
            let out = v.echoes(&text);
            assert!(out.contains(token.as_str()), "{text} -> {out}");
            assert!(!out.contains(value), "{text} -> {out}");
        }
        let mut val = json!({ *value: [value], "n": {"deep": format!("a {value} b")} });
        v.echoes_value(&mut val);
        assert!(!val.to_string().contains(value), "{val}");
    }
    // Part of a longer number or word: not the value.
    assert_eq!(
        v.echoes("at 192.168.10.2001 and xCUS-123456"),
        "at 192.168.10.2001 and xCUS-123456"
    );
    assert!(matches!(
        v.echoes("nothing here"),
        std::borrow::Cow::Borrowed(_)
    ));
    assert!(matches!(
        Vault::new().echoes("judy.m+news@example.com"),
        std::borrow::Cow::Borrowed(_)
    ));
}
