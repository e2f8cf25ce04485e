//! Go's `text/template`, as Helm uses it: a set of named templates parsed from files (each file a
//! template, and the templates its `define`s name), executed by name with `missingkey` as Helm sets
//! it, and errors as Go prints them (`template: file:line:col: executing "name" at <node>: …`).
//!
//! Written here rather than taken from a crate: the one maintained port measured (gotmpl 0.6) prints a
//! float64 `1000000` as `1000000` where Go and Helm print `1e+06`, lets `.a.b` through a missing `.a`
//! where Go fails with `nil pointer evaluating interface {}.b`, and cannot call methods
//! (`.Capabilities.APIVersions.Has "apps/v1"`, `.Files.Get "f"`), all in its executor.

pub mod exec;
pub mod funcs;
pub mod lex;
pub mod parse;
pub mod printf;
pub mod set;
pub mod value;

pub use funcs::{Call, Funcs, Function, Ty};
pub use set::{Error, ExecError, MissingKey, ParseError, Templates, Tree};
pub use value::{Dict, Member, Method, Object, Value};

#[cfg(test)]
mod tests;
