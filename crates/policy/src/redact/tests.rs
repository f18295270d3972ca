//! The redactor by value: each echoed form of a secret, the longest match, valid JSON after
//! redaction, large texts, values too short or common to be secrets, userinfo, learned values.

use super::*;
use serde_json::json;

const TOKEN: &str = "ghp_Secret0123456789";

#[test]
fn a_secret_is_replaced_wherever_it_occurs() {
    let r = Redactor::new([TOKEN]);
    assert_eq!(
        r.str(&format!("token {TOKEN} twice {TOKEN}.")),
        "token [redacted] twice [redacted]."
    );
}

#[test]
fn text_without_a_secret_is_borrowed_not_copied() {
    let r = Redactor::new([TOKEN]);
    assert!(matches!(r.str("nothing here"), Cow::Borrowed(_)));
    assert!(matches!(r.bytes(b"nothing here"), Cow::Borrowed(_)));
    assert_eq!(r.json_message(br#"{"a":"nothing"}"#), None);
}

/// Short values and common words are no secrets: text that merely contains them is left as
/// it is.
#[test]
fn short_values_and_common_words_are_not_redacted() {
    let r = Redactor::new([
        "admin",
        "1234567",
        "production",
        "/usr/local/bin",
        "https://api.example.com/v1",
    ]);
    assert!(r.is_empty());
    let text = "admin runs 1234567 in production from /usr/local/bin at https://api.example.com/v1";
    assert_eq!(r.str(text), text);
    // Exactly the threshold is a secret.
    let r = Redactor::new(["abcdefgh"]);
    assert_eq!(r.str("xabcdefghx abcdefg"), "x[redacted]x abcdefg");
}

#[test]
fn echoed_encodings_are_redacted() {
    let secret = "p@ss w\"ord/é+1";
    let r = Redactor::new([secret]);
    for form in [
        secret.to_string(),
        // JSON-escaped, as serde_json and as Python's json.dumps write it.
        "p@ss w\\\"ord/é+1".to_string(),
        "p@ss w\\\"ord/\\u00e9+1".to_string(),
        // Percent-encoded, RFC 3986 and form encoding.
        "p%40ss%20w%22ord%2F%C3%A9%2B1".to_string(),
        "p%40ss+w%22ord%2F%C3%A9%2B1".to_string(),
    ] {
        assert_eq!(r.str(&format!("<{form}>")), "<[redacted]>", "{form}");
    }
}

#[test]
fn the_longest_form_wins() {
    let r = Redactor::new(["password123", "alice:password123"]);
    assert_eq!(
        r.str("u alice:password123 p password123"),
        "u [redacted] p [redacted]"
    );
}

#[test]
fn a_json_value_is_redacted_in_strings_and_keys() {
    let r = Redactor::new([TOKEN]);
    let mut v = json!({"a": [format!("x{TOKEN}"), 1, null], TOKEN: {"deep": TOKEN}});
    r.value(&mut v);
    assert_eq!(
        v,
        json!({"a": ["x[redacted]", 1, null], "[redacted]": {"deep": "[redacted]"}})
    );
}

/// A serialized message stays valid JSON when a secret sits next to an escape sequence or
/// contains what JSON escapes.
#[test]
fn a_serialized_message_stays_valid_json() {
    let secret = "nquoted\"secret\\x";
    let r = Redactor::new([secret, "abcdefgh"]);
    let msg = json!({"text": format!("line\n{secret}\tabcdefgh"), "n": 12345678});
    let bytes = serde_json::to_vec(&msg).unwrap();
    let out = r.json_message(&bytes).expect("a secret was found");
    let back: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        back,
        json!({"text": "line\n[redacted]\t[redacted]", "n": 12345678})
    );
    // A text that holds a JSON dump of the secret (escaped twice on the wire).
    let dump = serde_json::to_string(&json!({"t": secret})).unwrap();
    let bytes = serde_json::to_vec(&json!({"text": dump})).unwrap();
    let out = r.json_message(&bytes).unwrap();
    assert!(
        !String::from_utf8_lossy(&out).contains("quoted"),
        "{}",
        String::from_utf8_lossy(&out)
    );
    serde_json::from_slice::<Value>(&out).unwrap();
}

#[test]
fn a_large_text_is_redacted_at_its_ends_and_middle() {
    let r = Redactor::new([TOKEN]);
    let filler = "x".repeat(3 << 20);
    let text = format!("{TOKEN}{filler}{TOKEN}{filler}{TOKEN}");
    let out = r.str(&text);
    assert_eq!(out.len(), text.len() - 3 * (TOKEN.len() - REDACTED.len()));
    assert!(out.starts_with(REDACTED) && out.ends_with(REDACTED));
    assert!(!out.contains(TOKEN));
}

#[test]
fn basic_credentials_are_the_base64_of_user_and_password() {
    assert_eq!(basic_credentials("alice", "secret"), "YWxpY2U6c2VjcmV0");
}

#[test]
fn our_messages_lose_a_urls_userinfo_whatever_its_length() {
    assert_eq!(
        strip_userinfo(
            "error sending request for url (http://a:pw@127.0.0.1:9/mcp) and https://tok@x.test?q=1"
        ),
        "error sending request for url (http://[redacted]@127.0.0.1:9/mcp) and https://[redacted]@x.test?q=1"
    );
    let plain = "see https://example.com/a@b and mailto:x@y.z";
    assert!(matches!(strip_userinfo(plain), Cow::Borrowed(_)));
    assert_eq!(strip_userinfo("http://[redacted]@h"), "http://[redacted]@h");
}

/// A token refreshed after the start joins the same redactor every holder shares.
#[test]
fn a_learned_value_is_redacted_from_then_on() {
    let r = std::sync::Arc::new(Redactor::new([TOKEN]));
    let shared = r.clone();
    assert_eq!(
        shared.str("new access-token-refreshed-1"),
        "new access-token-refreshed-1"
    );
    r.learn("access-token-refreshed-1");
    r.learn("short");
    assert_eq!(
        shared.str(
            "new access-token-refreshed-1 and {TOKEN}"
                .replace("{TOKEN}", TOKEN)
                .as_str()
        ),
        "new [redacted] and [redacted]"
    );
    let empty = Redactor::default();
    empty.learn("access-token-refreshed-2");
    assert!(!empty.is_empty());
}

/// The encoded forms of a secret: base64 (standard and URL-safe, with and without padding,
/// alone and inside a longer base64 string at each of the three byte alignments), hex
/// (lower and upper case), percent-encoding (every byte, only some, in two layers), JSON
/// `\u` escapes (every character, or some) and HTML character references. None survives.
#[test]
fn every_encoded_form_of_a_secret_is_redacted() {
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    // Chosen so that its base64 holds `+` and `/` (which the URL-safe alphabet changes).
    let secret = "tok~>?>?-Zz9_secret?>";
    let r = Redactor::new([secret]);
    let mut forms: Vec<String> = Vec::new();
    for prefix in ["", "a", "ab", "abc", "user:"] {
        let bytes = format!("{prefix}{secret}-and-more");
        for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
            forms.push(engine.encode(&bytes));
            forms.push(engine.encode(format!("{prefix}{secret}")));
        }
    }
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    forms.push(hex.clone());
    forms.push(hex.to_ascii_uppercase());
    let pct_all: String = secret.bytes().map(|b| format!("%{b:02X}")).collect();
    forms.push(pct_all.clone());
    forms.push(pct_all.to_ascii_lowercase());
    forms.push(pct_all.replace('%', "%25"));
    forms.push(secret.replace('_', "%5F").replace('?', "%3f"));
    let u_all: String = secret
        .chars()
        .map(|c| format!("\\u{:04x}", c as u32))
        .collect();
    forms.push(u_all);
    forms.push(secret.replace('_', "\\u005F"));
    forms.push(
        secret
            .replace('>', "&gt;")
            .replace('_', "&#95;")
            .replace('-', "&#x2d;"),
    );
    for form in &forms {
        for text in [
            format!("value: {form} end"),
            format!("https://x.example/cb?t={form}&x=1"),
            serde_json::json!({ "k": form }).to_string(),
        ] {
            let out = r.str(&text);
            assert!(!out.contains(form.as_str()), "{form}: {out}");
            assert!(out.contains(REDACTED), "{form}: {out}");
            assert!(r.finds(text.as_bytes()), "{form}");
        }
    }
    // In a JSON message, the redacted message is still JSON.
    let msg = serde_json::json!({"a": format!("x {} y", forms[0]), "b": "\\u0074ok"}).to_string();
    let out = r.json_message(msg.as_bytes()).expect("found");
    serde_json::from_slice::<serde_json::Value>(&out).expect("still JSON");
}

/// A secret split across the text blocks of a result, or the strings of an array (code can
/// join them), is cut in every part it spans; a part without a piece of it is left alone.
#[test]
fn a_secret_split_across_parts_is_redacted_in_each() {
    let r = Redactor::new([TOKEN]);
    for cut in [1, 4, 10, TOKEN.len() - 1] {
        let mut a = format!("head {}", &TOKEN[..cut]);
        let mut b = format!("{} tail", &TOKEN[cut..]);
        let mut c = "untouched".to_string();
        r.across(&mut [&mut a, &mut b, &mut c]);
        let joined = format!("{a}{b}{c}");
        assert!(!joined.contains(TOKEN), "{cut}: {joined}");
        assert!(a.starts_with("head ") && b.ends_with(" tail"), "{a} | {b}");
        assert_eq!(c, "untouched");
    }
    // Over three parts, the middle one entirely a piece.
    let (x, y, z) = (&TOKEN[..3], &TOKEN[3..9], &TOKEN[9..]);
    let (mut a, mut b, mut c) = (x.to_string(), y.to_string(), z.to_string());
    r.across(&mut [&mut a, &mut b, &mut c]);
    assert!(
        ![&a, &b, &c].iter().any(|p| p.contains(&TOKEN[3..9])),
        "{a}|{b}|{c}"
    );
    // Its base64 split in two as well.
    let b64 = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(TOKEN)
    };
    let (mut a, mut b) = (b64[..7].to_string(), b64[7..].to_string());
    r.across(&mut [&mut a, &mut b]);
    assert!(!format!("{a}{b}").contains(&b64[2..20]), "{a}|{b}");
    // The strings of an array.
    let mut v = json!({"chunks": [&TOKEN[..5], &TOKEN[5..], 1, "other"]});
    r.value(&mut v);
    let joined: String = v["chunks"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x.as_str())
        .collect();
    assert!(!joined.contains(TOKEN), "{v}");
    assert_eq!(v["chunks"][3], "other");
}
