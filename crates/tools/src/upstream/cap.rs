//! A call's result held to `maxResultBytes`: its size as JSON, counted without encoding it
//! again, and a result over the cap cut to the start of its text with a note.

use rmcp::model::{CallToolResult, ContentBlock};

/// What a refused message's call is told to do.
pub(super) const OVERSIZED_HINT: &str =
    "Ask for less (filters, paging), or raise maxResultBytes in the settings";

/// Cuts a result larger than `max` bytes down to a text that says so and keeps the start.
/// Also returns the result's size, so nobody measures it again.
///
/// The size is that of the result as JSON, measured without encoding it again (see
/// [`result_size`]). The transport already refused, unread, any message above the cap plus
/// its envelope margin (`connect::message_limit`).
pub fn cap_result(result: CallToolResult, max: usize) -> (CallToolResult, usize) {
    let size = result_size(&result);
    if size <= max {
        return (result, size);
    }
    let text: String = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    let mut cut = max.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut r = CallToolResult::success(vec![
        ContentBlock::text(format!(
            "[result truncated: {size} bytes exceed the {max}-byte limit (maxResultBytes); the first {cut} bytes of its text follow]"
        )),
        ContentBlock::text(&text[..cut]),
    ]);
    r.is_error = result.is_error;
    (r, size)
}

/// The size of a result as JSON: a text block's by scanning its text for what JSON escapes
/// (no copy), everything else (other blocks, `structuredContent`) by counting its encoding.
fn result_size(result: &CallToolResult) -> usize {
    /// `{"type":"text","text":""}` around a text, and `{"content":[]}` around the blocks.
    const TEXT_BLOCK: usize = 25;
    const ENVELOPE: usize = 14;
    /// Counts what would be written.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(ENVELOPE + result.content.len());
    for block in &result.content {
        match block.as_text() {
            Some(t) => count.0 += TEXT_BLOCK + worker_protocol::json_string_len(&t.text) - 2,
            None => {
                let _ = serde_json::to_writer(&mut count, block);
            }
        }
    }
    if let Some(s) = &result.structured_content {
        let _ = serde_json::to_writer(&mut count, s);
    }
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oversized_results_are_cut_and_say_so() {
        let r = CallToolResult::success(vec![ContentBlock::text("é".repeat(100))]);
        let (capped, size) = cap_result(r.clone(), 50);
        assert!(size > 200);
        let texts: Vec<&str> = capped
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
            .collect();
        assert!(texts[0].starts_with("[result truncated:"), "{texts:?}");
        assert!(texts[1].len() <= 50 && texts[1].chars().all(|c| c == 'é'));
        assert_eq!(cap_result(r.clone(), 1 << 20).0, r);
    }

    /// A text counts as its JSON encoding, for text full of what JSON escapes.
    #[test]
    fn a_texts_size_is_its_encoded_length() {
        let nasty = "q\"b\\n\nr\rt\tb\u{8}f\u{c}z\u{0}\u{1f}\u{7f}é🚀".repeat(50);
        let size = |t: &str| result_size(&CallToolResult::success(vec![ContentBlock::text(t)]));
        for text in ["plain", "\u{1}", nasty.as_str()] {
            let encoded = serde_json::to_string(text).unwrap().len();
            assert_eq!(size(text) - size(""), encoded - 2, "{text:?}");
        }
    }
}
