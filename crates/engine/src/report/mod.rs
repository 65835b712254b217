//! Everything Jarvis writes from an analysis: the seeds' reports and output contract, TraceLens's
//! agent contract, comparisons, job reports, replay packages and bundles. The tables they are
//! built from live in [`crate::sheet`] (re-exported here for the crate's users).

pub mod agent;
pub mod compare_md;
pub mod contract;
pub mod critical_path;
pub mod distributed_md;
pub mod export;
pub mod files;
pub mod findings_md;
pub mod job_bundle;
pub mod memory;
pub mod reopen;
pub mod replay;
mod rows;
pub mod standalone_fair;
pub mod standalone_rough;

pub use crate::sheet::{pyrepr, Cell, PerfReport, Sheet};
