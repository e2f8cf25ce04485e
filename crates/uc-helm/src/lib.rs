//! Helm charts rendered in-process, as the Operator SDK's Helm operators render them: Go's
//! `text/template` ([`gotemplate`]), with Sprig's and Helm's functions, over a chart's values.

pub mod gotemplate;
pub mod sprig;
pub mod yaml;
