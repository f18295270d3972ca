//! Token counts with the cl100k tokenizer (what GPT-4-class models count; close to other
//! models'), shared by `demo`, `doctor`, `bench` and `eval`. A leaf: it depends on nothing of
//! ours. The tokenizer's tables are built once per process (about 100 ms) and kept.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

/// The tokenizer could not be built (its tables are compiled in; this does not happen in a
/// sound build).
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot build the cl100k tokenizer: {0}")]
pub struct TokenizerError(String);

fn bpe() -> Result<&'static CoreBPE, TokenizerError> {
    static BPE: OnceLock<Result<CoreBPE, TokenizerError>> = OnceLock::new();
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().map_err(|e| TokenizerError(e.to_string())))
        .as_ref()
        .map_err(Clone::clone)
}

/// cl100k tokens of a text.
pub fn count_tokens(text: &str) -> Result<usize, TokenizerError> {
    Ok(bpe()?.encode_with_special_tokens(text).len())
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_cl100k_tokens() {
        assert_eq!(super::count_tokens("hello world").unwrap(), 2);
        assert_eq!(super::count_tokens("").unwrap(), 0);
    }
}
