//! The process's memory allocator, chosen by measurement (docs/benchmarks.md, "Memory under churn").
//!
//! glibc's malloc keeps what a burst of work freed: after 1,000 pods came and went, `uc up` held ~15× its
//! live heap. jemalloc, with one arena and freed pages handed back to the kernel within a second by its
//! background thread (its options are in `.cargo/config.toml`), follows the live heap down.

#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[cfg(all(feature = "mimalloc", not(feature = "jemalloc")))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
