//! The profiler's `distributedInfo`: which rank of how many wrote the trace, and its process
//! groups.

use serde::Serialize;

/// The trace's `distributedInfo`, read leniently (ranks written as strings are accepted).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DistributedInfo {
    pub rank: Option<i64>,
    pub world_size: Option<i64>,
    pub backend: Option<String>,
    /// The process-group configuration (`pg_config`) as compact JSON: ranks of one job share it.
    pub pg_config: Option<String>,
}

impl DistributedInfo {
    pub fn parse(raw: &str) -> Option<DistributedInfo> {
        let v: serde_json::Value = serde_json::from_str(raw).ok()?;
        let obj = v.as_object()?;
        let int = |k: &str| match obj.get(k)? {
            serde_json::Value::Number(n) => n.as_i64(),
            serde_json::Value::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        Some(DistributedInfo {
            rank: int("rank"),
            world_size: int("world_size"),
            backend: obj
                .get("backend")
                .and_then(|b| b.as_str())
                .map(str::to_owned),
            pg_config: obj.get("pg_config").map(|c| c.to_string()),
        })
    }
}
