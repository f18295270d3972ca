//! The accounting of one run of a task one way: the tokens that pass through the model's
//! context, turn by turn, and the turns and wall time it took.
//!
//! A model turn reads the whole context so far and writes one thing: a tool call (its
//! arguments as JSON) or the final answer. After each call, the result's text joins the
//! context. So with the tool schemas `S` and the prompt `P` loaded first:
//! - `context`: `S + P + every call's arguments + every result + the answer`: what passes
//!   into the context once, the size of the conversation at its end;
//! - `input`: the sum over turns of the context each turn reads (no prompt caching), what an
//!   API bills as input tokens;
//! - `output`: the arguments and the answer the model writes.
//!
//! Message framing (roles, tool-call wrappers) is left out, the same both ways.

use serde::Serialize;

use faces::tokens::count_tokens;

/// Token counts of one run (cl100k).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Tally {
    /// The tool definitions loaded (the `tools/list` the model is given).
    pub schemas: usize,
    pub prompt: usize,
    /// What the model writes for its calls: arguments as JSON (code mode: `{"code": ...}`).
    pub calls: usize,
    /// What comes back into the context from the calls.
    pub results: usize,
    pub answer: usize,
    /// The context at the end: the sum of the five above.
    pub context: usize,
    /// Input tokens over all turns (each turn reads the whole context so far).
    pub input: usize,
    /// Output tokens over all turns (calls and answer).
    pub output: usize,
}

/// One tool call in a conversation: what the model wrote, and the result's text.
pub(crate) struct Turn {
    pub written: String,
    pub result: String,
}

impl Tally {
    /// The tally of a conversation: `schemas` and `prompt` first, then each call, then the
    /// answer.
    pub(crate) fn of(
        schemas: usize,
        prompt: &str,
        turns: &[Turn],
        answer: &str,
    ) -> Result<Tally, faces::tokens::TokenizerError> {
        let prompt = count_tokens(prompt)?;
        let mut t = Tally {
            schemas,
            prompt,
            ..Tally::default()
        };
        let mut context = schemas + prompt;
        for turn in turns {
            let w = count_tokens(&turn.written)?;
            let r = count_tokens(&turn.result)?;
            // This turn reads the context so far and writes the call.
            t.input += context;
            t.output += w;
            t.calls += w;
            t.results += r;
            context += w + r;
        }
        let a = count_tokens(answer)?;
        t.input += context;
        t.output += a;
        t.answer = a;
        t.context = context + a;
        Ok(t)
    }
}

/// The median of samples (the mean of the middle two for an even count); NaN for none.
pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Milliseconds with three decimals.
pub(crate) fn round_ms(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_turn_reads_the_context_so_far() {
        let turns = [
            Turn {
                written: "a".into(),
                result: "b c".into(),
            },
            Turn {
                written: "d".into(),
                result: String::new(),
            },
        ];
        let t = Tally::of(100, "p", &turns, "z").unwrap();
        let (w, r) = (1, count_tokens("b c").unwrap());
        assert_eq!(t.calls, 2);
        assert_eq!(t.results, r);
        assert_eq!(t.context, 100 + 1 + 2 + r + 1);
        // Turn 1 reads 101, turn 2 reads 101 + w + r, the answer turn 101 + 2w + r.
        assert_eq!(t.input, 101 + (101 + w + r) + (101 + 2 * w + r));
        assert_eq!(t.output, 3);
    }

    #[test]
    fn the_median_of_an_even_count_is_the_middle_mean() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }
}
