//! What the benchmark binaries share: a throwaway `uc up`, the Foo parents of the convergence runs, and
//! the report writer.

pub mod cluster;
pub mod foos;
pub mod report;
