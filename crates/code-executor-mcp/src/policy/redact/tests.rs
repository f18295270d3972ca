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
