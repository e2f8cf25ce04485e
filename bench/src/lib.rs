//! What the benchmark binaries share: a throwaway `uc up` and the report writer.

pub mod cluster;
pub mod report;
