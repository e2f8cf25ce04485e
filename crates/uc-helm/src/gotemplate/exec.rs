//! Executing a parsed template as `text/template`'s `exec.go` does: pipelines, field chains on maps
//! and objects, function calls with Go's argument checks, `if`/`range`/`with`, variables, nested
//! templates — and its errors, in its words, at the node that failed.

use std::rc::Rc;

use super::funcs::{Call, Function, Ty};
use super::parse::{Arg, Branch, Command, Node, Pipe};
use super::set::{Error, ExecError, MissingKey, Templates, Tree};
use super::value::{Member, Value};
use crate::error::HelmError;

/// How deep templates may call templates (`template`, `include`) before execution stops.
pub const MAX_DEPTH: usize = 1000;

/// The most text one template's execution may produce (Go sets none; a chart's input must not exhaust
/// the operator's memory).
pub const MAX_OUTPUT: usize = 64 << 20;

/// The most `range` iterations of one execution, nested ones included.
pub const MAX_RANGE_ITERATIONS: u64 = 10_000_000;

/// Execution of a set's templates.
impl Templates {
    /// Executes the template `name` with `dot` as data.
    pub fn execute(&self, name: &str, dot: &Value) -> Result<String, Error> {
        self.range_iterations.set(0);
        self.execute_at_depth(name, dot, 0)
    }

    /// Executes `name` from inside another execution (`include`), `depth` templates deep.
    pub(crate) fn execute_at_depth(&self, name: &str, dot: &Value, depth: usize) -> Result<String, Error> {
        let tree = self.tree(name).ok_or_else(|| Error::NoTemplate(name.to_string()))?;
        let mut state = State::new(self, tree, dot, depth);
        state.run(dot)?;
        Ok(state.out)
    }
}

/// What a walk ends with.
enum Flow {
    Normal,
    Break,
    Continue,
}

/// A failure before it knows its node.
pub(crate) struct Fail(pub String);

type Res<T> = Result<T, ExecError>;

/// One execution of one template.
pub struct State<'a> {
    pub(crate) templates: &'a Templates,
    pub(crate) tree: Rc<Tree>,
    pub(crate) vars: Vec<(String, Value)>,
    pub(crate) depth: usize,
    pub(crate) out: String,
}

impl<'a> State<'a> {
    pub(crate) fn new(templates: &'a Templates, tree: Rc<Tree>, dot: &Value, depth: usize) -> Self {
        State { templates, tree, vars: vec![("$".into(), dot.clone())], depth, out: String::new() }
    }

    /// Runs the template's body with `dot`.
    pub(crate) fn run(&mut self, dot: &Value) -> Res<()> {
        let tree = self.tree.clone();
        self.walk_list(dot, &tree.body).map(|_| ())
    }

    fn error(&self, pos: usize, at: &str, message: impl Into<String>) -> ExecError {
        let (line, col) = self.tree.line_col(pos);
        ExecError {
            file: self.tree.file.clone(),
            line,
            col,
            template: self.tree.name.clone(),
            at: at.to_string(),
            message: message.into(),
        }
    }

    fn walk_list(&mut self, dot: &Value, list: &[Node]) -> Res<Flow> {
        for node in list {
            match self.walk(dot, node)? {
                Flow::Normal => {}
                flow => return Ok(flow),
            }
        }
        Ok(Flow::Normal)
    }

    fn walk(&mut self, dot: &Value, node: &Node) -> Res<Flow> {
        match node {
            Node::Text(t) => self.emit(t, 0, "text")?,
            Node::Action(pipe) => {
                let v = self.eval_pipeline(dot, pipe)?;
                if pipe.decl.is_empty() {
                    self.print(&v, pipe)?;
                }
            }
            Node::If(b) | Node::With(b) => return self.if_or_with(dot, b, matches!(node, Node::With(_))),
            Node::Range(b) => return self.range(dot, b),
            Node::Template { pos, name, pipe } => self.template(dot, *pos, name, pipe.as_ref())?,
            Node::Break(_) => return Ok(Flow::Break),
            Node::Continue(_) => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn print(&mut self, v: &Value, pipe: &Pipe) -> Res<()> {
        if let Value::Object(o) = v
            && o.type_name().starts_with("func")
        {
            return Err(self.error(
                pipe.pos,
                &pipe.to_string(),
                format!("can't print {pipe} of type {}", o.type_name()),
            ));
        }
        let text = v.print();
        self.emit(&text, pipe.pos, &pipe.to_string())
    }

    /// Appends text, within [`MAX_OUTPUT`].
    fn emit(&mut self, text: &str, pos: usize, at: &str) -> Res<()> {
        if self.out.len() + text.len() > MAX_OUTPUT {
            return Err(self.error(pos, at, format!("the template's output exceeds {MAX_OUTPUT} bytes")));
        }
        self.out.push_str(text);
        Ok(())
    }

    fn if_or_with(&mut self, dot: &Value, b: &Branch, with: bool) -> Res<Flow> {
        let mark = self.vars.len();
        let v = self.eval_pipeline(dot, &b.pipe)?;
        let flow = if v.truth() {
            if with { self.walk_list(&v, &b.list)? } else { self.walk_list(dot, &b.list)? }
        } else if let Some(else_list) = &b.else_list {
            self.walk_list(dot, else_list)?
        } else {
            Flow::Normal
        };
        self.vars.truncate(mark);
        Ok(flow)
    }

    fn range(&mut self, dot: &Value, b: &Branch) -> Res<Flow> {
        let mark = self.vars.len();
        let v = self.eval_pipeline(dot, &b.pipe)?;
        let items: Vec<(Value, Value)> = match &v {
            Value::List(items) => items.iter().enumerate().map(|(i, x)| (Value::Int(i as i64), x.clone())).collect(),
            Value::Map(m) => m.borrow().iter().map(|(k, x)| (Value::from(k.as_str()), x.clone())).collect(),
            Value::Int(n) if *n as u64 > MAX_RANGE_ITERATIONS => {
                let at = b.pipe.to_string();
                return Err(self.error(b.pos, &at, format!("range: more than {MAX_RANGE_ITERATIONS} iterations")));
            }
            Value::Int(n) => {
                if b.pipe.decl.len() > 1 {
                    let at = b.pipe.to_string();
                    return Err(self.error(
                        b.pos,
                        &at,
                        format!("can't use {} to iterate over more than one variable", n),
                    ));
                }
                (0..*n).map(|i| (Value::Int(i), Value::Int(i))).collect()
            }
            Value::Invalid | Value::Nil => Vec::new(),
            Value::Object(o) if o.entries().is_some() => o.entries().unwrap_or_default(),
            other => {
                let at = b.pipe.to_string();
                return Err(self.error(b.pos, &at, format!("range can't iterate over {}", other.print())));
            }
        };
        let after_decl = self.vars.len();
        let mut flow = Flow::Normal;
        for (index, elem) in &items {
            if self.templates.range_iterations.get() >= MAX_RANGE_ITERATIONS {
                let at = b.pipe.to_string();
                return Err(self.error(b.pos, &at, format!("range: more than {MAX_RANGE_ITERATIONS} iterations")));
            }
            self.templates.range_iterations.set(self.templates.range_iterations.get() + 1);
            self.set_range_vars(&b.pipe, mark, index, elem)?;
            let body = self.walk_list(elem, &b.list)?;
            self.vars.truncate(after_decl);
            if matches!(body, Flow::Break) {
                break;
            }
        }
        if items.is_empty()
            && let Some(else_list) = &b.else_list
        {
            flow = self.walk_list(dot, else_list)?;
        }
        self.vars.truncate(mark);
        Ok(flow)
    }

    fn set_range_vars(&mut self, pipe: &Pipe, mark: usize, index: &Value, elem: &Value) -> Res<()> {
        match (pipe.decl.len(), pipe.is_assign) {
            (0, _) => {}
            (1, true) => self.assign(&pipe.decl[0], elem.clone(), pipe)?,
            (_, true) => {
                self.assign(&pipe.decl[0], index.clone(), pipe)?;
                self.assign(&pipe.decl[1], elem.clone(), pipe)?;
            }
            (1, false) => self.vars[mark].1 = elem.clone(),
            (_, false) => {
                self.vars[mark].1 = index.clone();
                self.vars[mark + 1].1 = elem.clone();
            }
        }
        Ok(())
    }

    fn template(&mut self, dot: &Value, pos: usize, name: &str, pipe: Option<&Pipe>) -> Res<()> {
        let Some(tree) = self.templates.tree(name) else {
            return Err(self.error(
                pos,
                &format!("{{{{template {name:?}}}}}"),
                format!("template {name:?} not defined"),
            ));
        };
        if self.depth >= MAX_DEPTH {
            let at = format!("{{{{template {name:?}}}}}");
            return Err(self.error(pos, &at, format!("exceeded maximum template depth ({MAX_DEPTH})")));
        }
        let dot = match pipe {
            Some(p) => self.eval_pipeline(dot, p)?,
            None => Value::Invalid,
        };
        let mut inner = State::new(self.templates, tree, &dot, self.depth + 1);
        inner.run(&dot)?;
        self.emit(&inner.out, pos, &format!("{{{{template {name:?}}}}}"))
    }

    fn push_var(&mut self, name: &str, v: Value) {
        self.vars.push((name.to_string(), v));
    }

    fn assign(&mut self, name: &str, v: Value, pipe: &Pipe) -> Res<()> {
        match self.vars.iter_mut().rev().find(|(n, _)| n == name) {
            Some(slot) => {
                slot.1 = v;
                Ok(())
            }
            None => Err(self.error(pipe.pos, &pipe.to_string(), format!("undefined variable: {name}"))),
        }
    }

    fn var(&self, name: &str, pos: usize) -> Res<Value> {
        match self.vars.iter().rev().find(|(n, _)| n == name) {
            Some((_, v)) => Ok(v.clone()),
            None => Err(self.error(pos, name, format!("undefined variable: {name}"))),
        }
    }

    pub(crate) fn eval_pipeline(&mut self, dot: &Value, pipe: &Pipe) -> Res<Value> {
        let mut value: Option<Value> = None;
        for cmd in &pipe.cmds {
            let v = self.eval_command(dot, cmd, value.take())?;
            // A nil interface is dug out to no value, as Go does between commands.
            value = Some(if matches!(v, Value::Nil) { Value::Invalid } else { v });
        }
        let value = value.unwrap_or_default();
        for name in &pipe.decl {
            if pipe.is_assign {
                self.assign(name, value.clone(), pipe)?;
            } else {
                self.push_var(name, value.clone());
            }
        }
        Ok(value)
    }

    fn eval_command(&mut self, dot: &Value, cmd: &Command, last: Option<Value>) -> Res<Value> {
        let first = &cmd.args[0];
        match first {
            Arg::Field { names, .. } => return self.eval_field_chain(dot, dot.clone(), first, names, cmd, last),
            Arg::Chain { node, fields, pos } => {
                if matches!(**node, Arg::Nil(_)) {
                    return Err(self.error(
                        *pos,
                        &first.to_string(),
                        format!("indirection through explicit nil in {first}"),
                    ));
                }
                let receiver = self.eval_arg(dot, Ty::Any, node)?;
                return self.eval_field_chain(dot, receiver, first, fields, cmd, last);
            }
            Arg::Identifier { name, pos } => return self.eval_function(dot, name, *pos, cmd, last),
            Arg::Variable { names, pos } => {
                let v = self.var(&names[0], *pos)?;
                if names.len() == 1 {
                    self.not_a_function(cmd, &last)?;
                    return Ok(v);
                }
                return self.eval_field_chain(dot, v, first, &names[1..], cmd, last);
            }
            Arg::Pipe(p) => {
                self.not_a_function(cmd, &last)?;
                return self.eval_pipeline(dot, p);
            }
            _ => {}
        }
        self.not_a_function(cmd, &last)?;
        match first {
            Arg::Bool(b) => Ok(Value::Bool(*b)),
            Arg::Dot(_) => Ok(dot.clone()),
            Arg::Nil(pos) => Err(self.error(*pos, "nil", "nil is not a command")),
            Arg::Number { .. } => Ok(ideal_constant(first)),
            Arg::Str(s) => Ok(Value::from(s.as_str())),
            _ => Err(self.error(cmd.pos, &cmd.to_string(), format!("can't evaluate command {first}"))),
        }
    }

    fn not_a_function(&self, cmd: &Command, last: &Option<Value>) -> Res<()> {
        if cmd.args.len() > 1 || last.is_some() {
            let first = &cmd.args[0];
            return Err(self.error(
                first.pos(),
                &first.to_string(),
                format!("can't give argument to non-function {first}"),
            ));
        }
        Ok(())
    }

    fn eval_field_chain(
        &mut self,
        dot: &Value,
        mut receiver: Value,
        node: &Arg,
        names: &[String],
        cmd: &Command,
        last: Option<Value>,
    ) -> Res<Value> {
        let n = names.len();
        for name in &names[..n - 1] {
            receiver = self.eval_field(dot, name, node, None, None, receiver)?;
        }
        self.eval_field(dot, &names[n - 1], node, Some(cmd), last, receiver)
    }

    /// `.name` on `receiver`; `cmd` holds the arguments when this is the chain's last field.
    fn eval_field(
        &mut self,
        dot: &Value,
        name: &str,
        node: &Arg,
        cmd: Option<&Command>,
        last: Option<Value>,
        receiver: Value,
    ) -> Res<Value> {
        let has_args = cmd.is_some_and(|c| c.args.len() > 1) || last.is_some();
        let fail = |s: &Self, m: String| Err(s.error(node.pos(), &node.to_string(), m));
        match receiver {
            Value::Invalid => match self.templates.missing_key {
                MissingKey::Error => fail(self, format!("nil data; no entry for key {name:?}")),
                _ => Ok(Value::Invalid),
            },
            Value::Nil => fail(self, format!("nil pointer evaluating interface {{}}.{name}")),
            Value::Object(o) => match o.member(name) {
                Some(Member::Method(m)) => {
                    let f = Function::method(m);
                    let empty = Command { pos: node.pos(), args: vec![node.clone()] };
                    self.call(dot, &f, name, node.pos(), cmd.unwrap_or(&empty), last)
                }
                Some(Member::Field(v)) if has_args => {
                    let _ = v;
                    fail(self, format!("{name} has arguments but cannot be invoked as function"))
                }
                Some(Member::Field(v)) => Ok(v),
                None => fail(self, format!("can't evaluate field {name} in type {}", o.type_name())),
            },
            Value::Map(m) => {
                if has_args {
                    return fail(self, format!("{name} is not a method but has arguments"));
                }
                let found = m.borrow().get(name).cloned();
                match found {
                    Some(v) => Ok(v),
                    None => match self.templates.missing_key {
                        MissingKey::Invalid => Ok(Value::Invalid),
                        MissingKey::Zero => Ok(Value::Nil),
                        MissingKey::Error => fail(self, format!("map has no entry for key {name:?}")),
                    },
                }
            }
            other => fail(self, format!("can't evaluate field {name} in type {}", other.type_name())),
        }
    }

    fn eval_function(&mut self, dot: &Value, name: &str, pos: usize, cmd: &Command, last: Option<Value>) -> Res<Value> {
        let Some(f) = self.templates.funcs.get(name).cloned() else {
            return Err(self.error(pos, name, format!("{name:?} is not a defined function")));
        };
        if name == "and" || name == "or" {
            return self.and_or(dot, name == "or", pos, cmd, last);
        }
        self.call(dot, &f, name, pos, cmd, last)
    }

    fn and_or(&mut self, dot: &Value, or: bool, pos: usize, cmd: &Command, last: Option<Value>) -> Res<Value> {
        let name = if or { "or" } else { "and" };
        let given = cmd.args.len() - 1 + usize::from(last.is_some());
        if given == 0 {
            return Err(self.error(pos, name, format!("wrong number of args for {name}: want at least 1 got 0")));
        }
        let mut v = Value::Invalid;
        for arg in &cmd.args[1..] {
            v = self.eval_arg(dot, Ty::Any, arg)?;
            if v.truth() == or {
                return Ok(v);
            }
        }
        if let Some(last) = last {
            v = last;
        }
        Ok(v)
    }

    /// Calls `f` with the command's arguments after the first, and `last` (the pipeline's value).
    fn call(
        &mut self,
        dot: &Value,
        f: &Function,
        name: &str,
        pos: usize,
        cmd: &Command,
        last: Option<Value>,
    ) -> Res<Value> {
        let given = cmd.args.len() - 1 + usize::from(last.is_some());
        let fixed = f.params.len();
        let wrong = match f.variadic {
            Some(_) if given < fixed => Some(format!("want at least {fixed} got {given}")),
            None if given != fixed => Some(format!("want {fixed} got {given}")),
            _ => None,
        };
        if let Some(w) = wrong {
            return Err(self.error(pos, name, format!("wrong number of args for {name}: {w}")));
        }
        let ty = |i: usize| f.params.get(i).copied().or(f.variadic).unwrap_or(Ty::Any);
        let mut args = Vec::with_capacity(given);
        for (i, arg) in cmd.args[1..].iter().enumerate() {
            args.push(self.eval_arg(dot, ty(i), arg)?);
        }
        if let Some(last) = last {
            let t = ty(given - 1);
            args.push(self.validate(last, t).map_err(|Fail(m)| self.error(pos, name, m))?);
        }
        (f.call)(self, &args).map_err(|e| self.error(pos, name, format!("error calling {name}: {e}")))
    }

    /// An argument evaluated for a parameter of type `ty`, with Go's checks.
    fn eval_arg(&mut self, dot: &Value, ty: Ty, arg: &Arg) -> Res<Value> {
        let at = |s: &Self, m: String| s.error(arg.pos(), &arg.to_string(), m);
        let v = match arg {
            Arg::Dot(_) => dot.clone(),
            Arg::Nil(_) => {
                return if ty.can_be_nil() {
                    Ok(Value::Nil)
                } else {
                    Err(at(self, format!("cannot assign nil to {}", ty.go_name())))
                };
            }
            Arg::Field { names, .. } => {
                let cmd = Command { pos: arg.pos(), args: vec![arg.clone()] };
                self.eval_field_chain(dot, dot.clone(), arg, names, &cmd, None)?
            }
            Arg::Variable { names, pos } => {
                let v = self.var(&names[0], *pos)?;
                if names.len() == 1 {
                    v
                } else {
                    let cmd = Command { pos: *pos, args: vec![arg.clone()] };
                    self.eval_field_chain(dot, v, arg, &names[1..], &cmd, None)?
                }
            }
            Arg::Pipe(p) => self.eval_pipeline(dot, p)?,
            Arg::Identifier { name, pos } => {
                let cmd = Command { pos: *pos, args: vec![arg.clone()] };
                self.eval_function(dot, name, *pos, &cmd, None)?
            }
            Arg::Chain { .. } => {
                let cmd = Command { pos: arg.pos(), args: vec![arg.clone()] };
                self.eval_command(dot, &cmd, None)?
            }
            Arg::Bool(_) | Arg::Number { .. } | Arg::Str(_) => return constant(arg, ty).map_err(|Fail(m)| at(self, m)),
        };
        self.validate(v, ty).map_err(|Fail(m)| at(self, m))
    }

    /// A computed value for a parameter of type `ty` (Go's `validateType`).
    fn validate(&self, v: Value, ty: Ty) -> Result<Value, Fail> {
        if matches!(v, Value::Invalid) {
            return if ty.can_be_nil() {
                Ok(Value::Nil)
            } else {
                Err(Fail(format!("invalid value; expected {}", ty.go_name())))
            };
        }
        if ty.accepts(&v) {
            return Ok(v);
        }
        Err(Fail(format!("wrong type for value; expected {}; got {}", ty.go_name(), v.type_name())))
    }
}

impl Call for State<'_> {
    /// Helm's `include`: the template `name` executed with `dot`, its text.
    fn include(&mut self, name: &str, dot: &Value) -> Result<String, HelmError> {
        if self.depth >= MAX_DEPTH {
            return Err(HelmError::from(format!(
                "rendering template has a nested reference name: {name}: unable to execute template"
            )));
        }
        self.templates.execute_at_depth(name, dot, self.depth + 1).map_err(|e| HelmError::from(e.to_string()))
    }

    /// Helm's `tpl`: `text` parsed beside the templates of the set (as `gotpl`) and executed with `dot`.
    fn tpl(&mut self, text: &str, dot: &Value) -> Result<String, HelmError> {
        if self.depth >= MAX_DEPTH {
            return Err(HelmError::from(
                "rendering template has a nested reference name: gotpl: unable to execute template",
            ));
        }
        let mut set = self.templates.clone();
        set.parse("gotpl", text).map_err(|e| HelmError::from(format!("cannot parse template {text:?}: {e}")))?;
        set.execute_at_depth("gotpl", dot, self.depth + 1)
            .map_err(|e| HelmError::from(format!("error during tpl function execution for {text:?}: {e}")))
    }
}

/// A number constant where any type goes: a float64 when written as one, else an int.
fn ideal_constant(arg: &Arg) -> Value {
    match arg {
        Arg::Number { is_float: true, float, .. } => Value::Float(*float),
        Arg::Number { int: Some(n), .. } => Value::Int(*n),
        Arg::Number { float, .. } => Value::Float(*float),
        _ => Value::Invalid,
    }
}

/// A constant for a parameter of type `ty`, with Go's checks (`evalArg` on constant nodes).
fn constant(arg: &Arg, ty: Ty) -> Result<Value, Fail> {
    match (ty, arg) {
        (Ty::Any, Arg::Bool(b)) | (Ty::Bool, Arg::Bool(b)) => Ok(Value::Bool(*b)),
        (Ty::Any, Arg::Str(s)) | (Ty::Str, Arg::Str(s)) => Ok(Value::from(s.as_str())),
        (Ty::Any, Arg::Number { .. }) => Ok(ideal_constant(arg)),
        (Ty::Int, Arg::Number { int: Some(n), .. }) => Ok(Value::Int(*n)),
        (Ty::Float, Arg::Number { float, .. }) => Ok(Value::Float(*float)),
        (Ty::Int, _) => Err(Fail(format!("expected integer; found {arg}"))),
        (Ty::Float, _) => Err(Fail(format!("expected float; found {arg}"))),
        (Ty::Bool, _) => Err(Fail(format!("expected bool; found {arg}"))),
        (Ty::Str, _) => Err(Fail(format!("expected string; found {arg}"))),
        (t, _) => Err(Fail(format!("can't handle {arg} for arg of type {}", t.go_name()))),
    }
}
