//! What every writer of output files shares: a file as (path, bytes) and the error a writer
//! returns. A leaf module, so the writers (`contract`, `agent`, `replay`, `export`, `job_bundle`,
//! `compare_md`) can use one another in one direction only.

/// One output file: its path inside the output folder or bundle, and its bytes.
pub type OutputFile = (String, Vec<u8>);

/// Why an export could not be written.
#[derive(Debug, thiserror::Error)]
#[error("export failed: {0}")]
pub struct ExportError(pub String);
