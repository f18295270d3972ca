//! The search evaluation: queries phrased the way an agent asks for a tool, each with the
//! tool it should find, over the five reference servers' real tools mixed into a synthetic
//! catalog of over 2,000 tools (`eval/` in this crate). Reports recall@1, recall@5 and MRR;
//! a test holds a floor and `bench` prints the numbers.

use std::sync::Arc;

use rmcp::model::Tool;
use serde::Deserialize;
use serde_json::{Value, json};

use super::search::Index;
use super::synthetic;

/// The 50 tools of server-everything, -filesystem, -memory, -time and -git, as captured.
pub const REFERENCE_TOOLS: &str = include_str!("../../eval/reference_tools.json");
/// The queries, in two sets: `reference` and `synthetic`.
pub const QUERIES: &str = include_str!("../../eval/queries.json");

#[derive(Debug, Clone, Deserialize)]
pub struct Query {
    pub query: String,
    /// `mcp__server__tool`.
    pub expected: String,
}

#[derive(Debug, Deserialize)]
struct Queries {
    reference: Vec<Query>,
    synthetic: Vec<Query>,
}

/// The reference servers' tools, by server.
pub fn reference_lists() -> Vec<(String, Arc<Vec<Tool>>)> {
    let by_server: serde_json::Map<String, Value> =
        serde_json::from_str(REFERENCE_TOOLS).unwrap_or_default();
    by_server
        .into_iter()
        .map(|(s, v)| {
            let tools: Vec<Tool> = serde_json::from_value(v).unwrap_or_default();
            (s, Arc::new(tools))
        })
        .collect()
}

/// Every query of the evaluation set.
pub fn queries() -> Vec<Query> {
    let q: Option<Queries> = serde_json::from_str(QUERIES).ok();
    q.map(|q| q.reference.into_iter().chain(q.synthetic).collect())
        .unwrap_or_default()
}

/// The evaluation catalog: the reference servers plus `synthetic_size` synthetic tools.
pub fn catalog(synthetic_size: usize) -> Vec<(String, Arc<Vec<Tool>>)> {
    let mut lists = reference_lists();
    lists.extend(synthetic::catalog(synthetic_size));
    lists
}

/// The 1-based rank of `expected` among the results of `query`, if found.
pub fn rank(index: &Index, query: &str, expected: &str) -> Option<usize> {
    index
        .search(query, |_, _| true)
        .iter()
        .position(|h| {
            let (s, t) = index.doc(h.doc);
            policy::qualified_name(s, &t.name) == expected
        })
        .map(|p| p + 1)
}

/// Recall@1, recall@5 and MRR of the evaluation set over `index`, with the misses (queries
/// whose tool is not in the top 5) and their ranks.
pub fn evaluate(index: &Index, queries: &[Query]) -> Value {
    let mut r1 = 0usize;
    let mut r5 = 0usize;
    let mut mrr = 0f64;
    let mut misses = Vec::new();
    for q in queries {
        let r = rank(index, &q.query, &q.expected);
        if r == Some(1) {
            r1 += 1;
        }
        if r.is_some_and(|r| r <= 5) {
            r5 += 1;
        } else {
            misses.push(json!({"query": q.query, "expected": q.expected, "rank": r}));
        }
        if let Some(r) = r {
            mrr += 1.0 / r as f64;
        }
    }
    let n = queries.len().max(1) as f64;
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({
        "queries": queries.len(),
        "tools": index.len(),
        "recall_at_1": round(r1 as f64 / n),
        "recall_at_5": round(r5 as f64 / n),
        "mrr": round(mrr / n),
        "misses": misses,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_well_formed() {
        let q = queries();
        let lists = catalog(synthetic::base_size());
        let index = Index::build(lists);
        assert!(index.len() >= 2050, "{}", index.len());
        let reference = q
            .iter()
            .filter(|q| {
                reference_lists()
                    .iter()
                    .any(|(s, _)| q.expected.starts_with(&format!("mcp__{s}__")))
            })
            .count();
        assert!(reference >= 60, "{reference} reference queries");
        let all: Vec<String> = (0..index.len())
            .map(|d| {
                let (s, t) = index.doc(d);
                policy::qualified_name(s, &t.name)
            })
            .collect();
        let missing: Vec<&str> = q
            .iter()
            .map(|q| q.expected.as_str())
            .filter(|e| !all.iter().any(|a| a == e))
            .collect();
        assert!(
            missing.is_empty(),
            "expected tools not in the catalog: {missing:?}"
        );
    }

    /// The floor the ranking must hold on the evaluation set (see `bench` for the numbers).
    #[test]
    fn search_quality_floor() {
        let index = Index::build(catalog(synthetic::base_size()));
        let report = evaluate(&index, &queries());
        eprintln!("{report:#}");
        assert!(
            report["recall_at_5"].as_f64().unwrap() >= 0.95,
            "{report:#}"
        );
        assert!(
            report["recall_at_1"].as_f64().unwrap() >= 0.85,
            "{report:#}"
        );
        assert!(report["mrr"].as_f64().unwrap() >= 0.90, "{report:#}");
    }
}
