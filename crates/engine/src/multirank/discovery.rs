//! Rank discovery and job assembly: which rank each file is, and which files belong together.
//!
//! The rank is `distributedInfo.rank` when the trace records one, else a rank written in the
//! file name (`rank-3`, `rank_3`, `rank3`, `rank[3]`, `worker3_`, `TP-3`), else the lowest rank
//! no other file claims (said in a diagnostic). TraceLens numbers files by their position in a
//! sorted list and never reads the trace (deviation D14). Files of another job (another world
//! size or process-group configuration than most files), ranks outside the world, and a
//! second file for one rank are left out with a diagnostic naming the files; missing ranks are
//! named too. Nothing is merged silently.

use std::collections::BTreeMap;

use serde::Serialize;

use super::summary::RankSummary;
use crate::diagnostics::{DiagnosticKind, Diagnostics};

/// Where a rank number came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankFrom {
    /// `distributedInfo.rank`.
    Trace,
    /// The file name.
    FileName,
    /// Neither: the lowest free rank, in file order.
    Position,
}

impl RankFrom {
    pub fn label(self) -> &'static str {
        match self {
            RankFrom::Trace => "trace",
            RankFrom::FileName => "file name",
            RankFrom::Position => "position",
        }
    }
}

/// One rank of the assembled job.
#[derive(Debug, Clone)]
pub struct JobRank {
    pub rank: u32,
    pub from: RankFrom,
    pub summary: RankSummary,
}

/// The ranks that form the job, ascending, and what was found on the way.
#[derive(Debug, Clone, Default)]
pub struct AssembledJob {
    pub ranks: Vec<JobRank>,
    /// The job's world size: recorded by most files, else the highest rank + 1.
    pub world_size: u32,
    pub diagnostics: Diagnostics,
}

/// The rank written in a file name, if any: in its last path component, else in the folder
/// holding it (`rank_3/trace.json`). The first of `rank`, `worker`, `tp` (case-insensitive, at
/// the start of a word) followed by an optional `-`, `_`, `[` or `.` and digits gives it.
pub fn rank_from_name(path: &str) -> Option<u32> {
    let mut parts = path.rsplit(['/', '\\']);
    let base = parts.next().unwrap_or(path);
    rank_in(base).or_else(|| parts.next().and_then(rank_in))
}

fn rank_in(component: &str) -> Option<u32> {
    let lower = component.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    for (word, seps) in [
        ("rank", &b"-_[."[..]),
        ("worker", &b"-_[."[..]),
        ("tp", &b"-_"[..]),
    ] {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(word) {
            let start = from + pos;
            from = start + word.len();
            if start > 0 && bytes[start - 1].is_ascii_alphabetic() {
                continue;
            }
            let mut i = start + word.len();
            if i < bytes.len() && seps.contains(&bytes[i]) {
                i += 1;
            } else if word == "tp" {
                continue;
            }
            let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 0 && digits <= 9 {
                if let Ok(r) = lower[i..i + digits].parse() {
                    return Some(r);
                }
            }
        }
    }
    None
}

/// The most common value (ties: the smallest).
fn majority<T: Ord + Clone>(values: impl Iterator<Item = T>) -> Option<T> {
    let mut counts: BTreeMap<T, usize> = BTreeMap::new();
    for v in values {
        *counts.entry(v).or_default() += 1;
    }
    let best = counts.values().copied().max()?;
    counts.into_iter().find(|(_, c)| *c == best).map(|(v, _)| v)
}

/// Orders the files by name, gives each a rank and keeps one file per rank of one job.
pub fn assemble(mut summaries: Vec<RankSummary>) -> AssembledJob {
    summaries.sort_by(|a, b| a.source.cmp(&b.source));
    let mut diags = Diagnostics::default();
    // The job: the world size and process-group configuration most files record.
    let world = majority(summaries.iter().filter_map(|s| s.world_size));
    let pg = majority(summaries.iter().filter_map(|s| s.pg_config.clone()));
    let mut kept = Vec::new();
    for s in summaries {
        let other_world = matches!((s.world_size, world), (Some(a), Some(b)) if a != b);
        let other_pg = matches!((&s.pg_config, &pg), (Some(a), Some(b)) if a != b);
        if other_world || other_pg {
            let what = if other_world {
                format!(
                    "world size {} (the job's is {})",
                    s.world_size.unwrap_or(0),
                    world.unwrap_or(0)
                )
            } else {
                "another process-group configuration".to_owned()
            };
            diags.add(
                DiagnosticKind::OtherJob,
                1,
                Some(format!("{}: {what}", s.source)),
            );
            continue;
        }
        kept.push(s);
    }
    // Ranks from the traces, then from the names; the rest get the lowest free ranks.
    let mut claimed: BTreeMap<u32, JobRank> = BTreeMap::new();
    let mut unranked = Vec::new();
    for s in kept {
        let given = s
            .trace_rank
            .and_then(|r| u32::try_from(r).ok())
            .map(|r| (r, RankFrom::Trace))
            .or_else(|| rank_from_name(&s.source).map(|r| (r, RankFrom::FileName)));
        let Some((rank, from)) = given else {
            unranked.push(s);
            continue;
        };
        if let Some(w) = world {
            if i64::from(rank) >= w {
                diags.add(
                    DiagnosticKind::OtherJob,
                    1,
                    Some(format!(
                        "{}: rank {rank} is outside world size {w}",
                        s.source
                    )),
                );
                continue;
            }
        }
        if from == RankFrom::FileName {
            diags.add(
                DiagnosticKind::RankFromFileName,
                1,
                Some(format!("{} → rank {rank}", s.source)),
            );
        }
        match claimed.get(&rank) {
            Some(first) => diags.add(
                DiagnosticKind::DuplicateRank,
                1,
                Some(format!(
                    "rank {rank}: {} kept, {} left out",
                    first.summary.source, s.source
                )),
            ),
            None => {
                claimed.insert(
                    rank,
                    JobRank {
                        rank,
                        from,
                        summary: s,
                    },
                );
            }
        }
    }
    let mut next = 0u32;
    for s in unranked {
        while claimed.contains_key(&next) {
            next += 1;
        }
        diags.add(
            DiagnosticKind::RankByPosition,
            1,
            Some(format!("{} → rank {next}", s.source)),
        );
        claimed.insert(
            next,
            JobRank {
                rank: next,
                from: RankFrom::Position,
                summary: s,
            },
        );
    }
    let highest = claimed.keys().next_back().map_or(0, |r| r + 1);
    let world_size = world
        .and_then(|w| u32::try_from(w).ok())
        .unwrap_or(highest)
        .max(highest);
    let missing: Vec<u32> = (0..world_size)
        .filter(|r| !claimed.contains_key(r))
        .collect();
    if !missing.is_empty() {
        diags.add(
            DiagnosticKind::MissingRanks,
            missing.len() as u64,
            Some(describe_ranks(&missing)),
        );
    }
    AssembledJob {
        ranks: claimed.into_values().collect(),
        world_size,
        diagnostics: diags,
    }
}

/// `0-3, 5, 9-127`: a rank list as runs.
pub fn describe_ranks(ranks: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ranks.len() {
        let mut j = i;
        while j + 1 < ranks.len() && ranks[j + 1] == ranks[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            ranks[i].to_string()
        } else {
            format!("{}-{}", ranks[i], ranks[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_from_file_names() {
        for (name, rank) in [
            ("rank-3.json.gz", Some(3)),
            ("trace_rank_12.json", Some(12)),
            ("rank7_trace.json", Some(7)),
            ("dir/rank[5].json", Some(5)),
            ("rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz", Some(70)),
            ("worker3_step10.pt.trace.json", Some(3)),
            ("host.worker0.1623143566756.pt.trace.json", Some(0)),
            ("llama_TP-6.json", Some(6)),
            ("tp_2.json", Some(2)),
            ("http.json", None),
            ("frank-3.json", None),
            ("trace.json", None),
            ("/data/rank-9/trace.json", Some(9)),
            ("/data/rank-9/worker1.json", Some(1)),
        ] {
            assert_eq!(rank_from_name(name), rank, "{name}");
        }
    }

    #[test]
    fn rank_runs() {
        assert_eq!(describe_ranks(&[0, 1, 2, 3, 5, 9, 10]), "0-3, 5, 9-10");
        assert_eq!(describe_ranks(&[]), "");
    }
}
