//! The universal controller engine.

pub mod hooks;
