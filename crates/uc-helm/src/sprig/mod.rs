//! Sprig's template functions (Masterminds/sprig v3, `TxtFuncMap`), as Helm registers them, with the
//! Go types of their parameters (the executor checks arguments against them) and Go's conversions of
//! what they are given (`strval`, `cast.ToInt64`, `cast.ToFloat64`).

mod collections;
mod convert;
pub mod semver;
mod strings;

use crate::gotemplate::{Funcs, Value};

pub use collections::deep_copy;
pub use convert::{strval, to_f64, to_i64};

/// Every Sprig function uc provides, by name.
pub fn funcs() -> Funcs {
    let mut f = Funcs::new();
    strings::register(&mut f);
    collections::register(&mut f);
    convert::register(&mut f);
    semver::register(&mut f);
    f
}

/// Go's `empty`: nil, zero numbers, false, and empty strings, lists and maps.
pub fn empty(v: &Value) -> bool {
    !v.truth()
}

#[cfg(test)]
mod tests;
