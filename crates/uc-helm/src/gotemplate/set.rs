//! A set of named templates (Go's `*template.Template` with its associated templates), the options
//! of their execution, and the errors of parsing and executing them, as Go prints them.

use std::collections::HashMap;
use std::rc::Rc;

use super::funcs::{self, Funcs};
use super::parse;

/// What a field a map lacks gives (Go's `missingkey` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MissingKey {
    /// No value (`<no value>` when printed): Go's default.
    #[default]
    Invalid,
    /// The map's zero value, a nil interface: Helm's setting.
    Zero,
    /// An error.
    Error,
}

/// One named template: its body, and the file it was parsed from (for error positions).
#[derive(Debug)]
pub struct Tree {
    pub name: String,
    pub file: String,
    pub source: Rc<str>,
    pub body: Vec<parse::Node>,
}

impl Tree {
    /// The 1-based line and column of a byte offset of its source.
    pub fn line_col(&self, pos: usize) -> (usize, usize) {
        let before = &self.source[..pos.min(self.source.len())];
        let line = before.matches('\n').count() + 1;
        let col = before.rfind('\n').map(|i| pos - i - 1).unwrap_or(pos);
        (line, col)
    }
}

/// A parse failure, as Go prints it: `template: file:line: message`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("template: {file}:{line}: {message}")]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub message: String,
}

/// An execution failure, as Go prints it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("template: {file}:{line}:{col}: executing {template:?} at <{at}>: {message}")]
pub struct ExecError {
    pub file: String,
    pub line: usize,
    pub col: usize,
    pub template: String,
    pub at: String,
    pub message: String,
}

/// Parsing or executing failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Parse(#[from] ParseError),
    #[error(transparent)]
    Exec(#[from] ExecError),
    #[error("template: no template {0:?} associated with template \"gotpl\"")]
    NoTemplate(String),
}

/// A set of named templates sharing functions.
#[derive(Clone)]
pub struct Templates {
    trees: HashMap<String, Rc<Tree>>,
    pub(crate) funcs: Rc<Funcs>,
    pub(crate) missing_key: MissingKey,
    /// `range` iterations of the execution under way (shared with the sets `tpl` clones).
    pub(crate) range_iterations: Rc<std::cell::Cell<u64>>,
}

impl Templates {
    /// An empty set with `text/template`'s builtins and these functions over them.
    pub fn new(funcs: Funcs, missing_key: MissingKey) -> Self {
        let mut all = funcs::builtins();
        all.extend(funcs);
        Templates { trees: HashMap::new(), funcs: Rc::new(all), missing_key, range_iterations: Rc::default() }
    }

    /// Parses `source` as the template `name` (Go's `t.New(name).Parse(source)`): its body becomes
    /// `name` (unless empty and `name` exists) and its definitions replace earlier ones unless empty.
    pub fn parse(&mut self, name: &str, source: &str) -> Result<(), ParseError> {
        let funcs = self.funcs.clone();
        let parsed = parse::parse(source, &|f| funcs.contains_key(f)).map_err(|e| {
            let src = Tree { name: name.into(), file: name.into(), source: source.into(), body: Vec::new() };
            let (line, col) = src.line_col(e.pos);
            ParseError { file: name.into(), line, col, message: e.message }
        })?;
        let source: Rc<str> = source.into();
        let mut add = |tname: &str, body: Vec<parse::Node>, always: bool| {
            if !always && parse::is_empty(&body) && self.trees.contains_key(tname) {
                return;
            }
            let tree = Tree { name: tname.into(), file: name.into(), source: source.clone(), body };
            self.trees.insert(tname.into(), Rc::new(tree));
        };
        let body_empty = parse::is_empty(&parsed.body);
        add(name, parsed.body, !body_empty);
        for (dname, body) in parsed.defines {
            add(&dname, body, false);
        }
        Ok(())
    }

    /// The template named `name`.
    pub fn tree(&self, name: &str) -> Option<Rc<Tree>> {
        self.trees.get(name).cloned()
    }

    /// Whether `name` is a template of the set.
    pub fn has(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }
}
