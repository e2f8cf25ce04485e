//! The parse tree of a Go template, built as `text/template/parse` builds it: a template's body and
//! the templates it defines, variables checked where they are used, functions checked by name.

use std::fmt;

use super::lex::{self, Keyword, Kind, Token};
use crate::error::HelmError;

/// A node of a template's body.
#[derive(Clone, Debug)]
pub enum Node {
    Text(String),
    /// `{{ pipeline }}`: printed unless it declares variables.
    Action(Pipe),
    If(Branch),
    Range(Branch),
    With(Branch),
    /// `{{ template "name" pipeline }}` (and what `{{ block }}` leaves in place).
    Template {
        pos: usize,
        name: String,
        pipe: Option<Pipe>,
    },
    Break(usize),
    Continue(usize),
}

/// `if`, `range` and `with`: the pipeline, the body, the `else` body.
#[derive(Clone, Debug)]
pub struct Branch {
    pub pos: usize,
    pub pipe: Pipe,
    pub list: Vec<Node>,
    pub else_list: Option<Vec<Node>>,
}

/// Commands joined by `|`, optionally declaring (`:=`) or assigning (`=`) variables.
#[derive(Clone, Debug)]
pub struct Pipe {
    pub pos: usize,
    pub is_assign: bool,
    pub decl: Vec<String>,
    pub cmds: Vec<Command>,
}

/// One command: a function and its arguments, or one operand.
#[derive(Clone, Debug)]
pub struct Command {
    pub pos: usize,
    pub args: Vec<Arg>,
}

/// An operand.
#[derive(Clone, Debug)]
pub enum Arg {
    /// `.a.b`.
    Field {
        pos: usize,
        names: Vec<String>,
    },
    /// `$x.a.b`: the variable first.
    Variable {
        pos: usize,
        names: Vec<String>,
    },
    Dot(usize),
    Nil(usize),
    Bool(bool),
    /// A number; `float` when its text makes it a float64 (a `.`, an exponent) and not a hex integer.
    Number {
        text: String,
        int: Option<i64>,
        float: f64,
        is_float: bool,
    },
    Str(String),
    /// A function's name.
    Identifier {
        pos: usize,
        name: String,
    },
    /// `(pipeline).a.b` or `f.a`.
    Chain {
        pos: usize,
        node: Box<Arg>,
        fields: Vec<String>,
    },
    /// `(pipeline)`.
    Pipe(Box<Pipe>),
}

impl Arg {
    pub fn pos(&self) -> usize {
        match self {
            Arg::Field { pos, .. }
            | Arg::Variable { pos, .. }
            | Arg::Dot(pos)
            | Arg::Nil(pos)
            | Arg::Identifier { pos, .. }
            | Arg::Chain { pos, .. } => *pos,
            Arg::Pipe(p) => p.pos,
            _ => 0,
        }
    }
}

impl fmt::Display for Arg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arg::Field { names, .. } => names.iter().try_for_each(|n| write!(f, ".{n}")),
            Arg::Variable { names, .. } => write!(f, "{}", names.join(".")),
            Arg::Dot(_) => f.write_str("."),
            Arg::Nil(_) => f.write_str("nil"),
            Arg::Bool(b) => write!(f, "{b}"),
            Arg::Number { text, .. } => f.write_str(text),
            Arg::Str(s) => write!(f, "{s:?}"),
            Arg::Identifier { name, .. } => f.write_str(name),
            Arg::Chain { node, fields, .. } => {
                if matches!(**node, Arg::Pipe(_)) {
                    write!(f, "({node})")?;
                } else {
                    write!(f, "{node}")?;
                }
                fields.iter().try_for_each(|n| write!(f, ".{n}"))
            }
            Arg::Pipe(p) => write!(f, "{p}"),
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, arg) in self.args.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            match arg {
                Arg::Pipe(p) => write!(f, "({p})")?,
                other => write!(f, "{other}")?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.decl.is_empty() {
            write!(f, "{} {} ", self.decl.join(", "), if self.is_assign { "=" } else { ":=" })?;
        }
        for (i, c) in self.cmds.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// A parse error: where, and Go's words.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseError {
    pub pos: usize,
    pub message: String,
}

/// A parsed source: its body and the templates it defines (`define`, `block`), in order.
#[derive(Debug, Default)]
pub struct Parsed {
    pub body: Vec<Node>,
    pub defines: Vec<(String, Vec<Node>)>,
}

/// Whether a body is empty as Go sees it (only spaces and comments): it then does not replace a
/// template of the same name.
pub fn is_empty(list: &[Node]) -> bool {
    list.iter().all(|n| matches!(n, Node::Text(t) if t.trim().is_empty()))
}

/// Parses `src`; `has_func` says which function names exist.
pub fn parse(src: &str, has_func: &dyn Fn(&str) -> bool) -> Result<Parsed, ParseError> {
    let tokens = lex::lex(src).map_err(|e| ParseError { pos: e.pos, message: e.message })?;
    let mut p = Parser { tokens, at: 0, vars: vec!["$".into()], range_depth: 0, has_func, defines: Vec::new() };
    let mut body = Vec::new();
    loop {
        match p.peek().kind.clone() {
            Kind::Eof => break,
            Kind::LeftDelim if p.is_define() => p.define()?,
            _ => match p.text_or_action()? {
                Item::Node(n) => body.push(n),
                Item::End(pos) | Item::Else(pos) => {
                    return Err(ParseError { pos, message: "unexpected {{end}}".into() });
                }
            },
        }
    }
    Ok(Parsed { body, defines: p.defines })
}

struct Parser<'a> {
    tokens: Vec<Token>,
    at: usize,
    vars: Vec<String>,
    range_depth: usize,
    has_func: &'a dyn Fn(&str) -> bool,
    defines: Vec<(String, Vec<Node>)>,
}

/// What one step of a list yields.
enum Item {
    Node(Node),
    End(usize),
    Else(usize),
}

type Res<T> = Result<T, ParseError>;

impl Parser<'_> {
    fn peek(&self) -> &Token {
        &self.tokens[self.at.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        self.at += 1;
        t
    }

    fn backup(&mut self) {
        self.at -= 1;
    }

    fn skip_space(&mut self) {
        while self.peek().kind == Kind::Space {
            self.at += 1;
        }
    }

    fn next_non_space(&mut self) -> Token {
        self.skip_space();
        self.next()
    }

    fn peek_non_space(&mut self) -> Token {
        self.skip_space();
        self.peek().clone()
    }

    fn error<T>(&self, pos: usize, message: impl Into<String>) -> Res<T> {
        Err(ParseError { pos, message: message.into() })
    }

    fn unexpected<T>(&self, t: &Token, context: &str) -> Res<T> {
        self.error(t.pos, format!("unexpected {} in {context}", describe(&t.kind)))
    }

    fn expect(&mut self, want: Kind, context: &str) -> Res<Token> {
        let t = self.next_non_space();
        if t.kind != want {
            return self.unexpected(&t, context);
        }
        Ok(t)
    }

    fn is_define(&mut self) -> bool {
        let save = self.at;
        self.at += 1;
        let is = self.peek_non_space().kind == Kind::Keyword(Keyword::Define);
        self.at = save;
        is
    }

    fn define(&mut self) -> Res<()> {
        self.next();
        self.next_non_space();
        let t = self.next_non_space();
        let Kind::Str(name) = t.kind else { return self.unexpected(&t, "define clause") };
        self.expect(Kind::RightDelim, "define clause")?;
        let saved = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let (list, end) = self.item_list()?;
        self.vars = saved;
        if let Item::Else(pos) = end {
            return self.error(pos, "unexpected {{else}}");
        }
        self.add_define(t.pos, name, list)
    }

    fn add_define(&mut self, pos: usize, name: String, list: Vec<Node>) -> Res<()> {
        if let Some(i) = self.defines.iter().position(|(n, _)| *n == name) {
            if is_empty(&list) {
                return Ok(());
            }
            if !is_empty(&self.defines[i].1) {
                return self.error(pos, format!("template: multiple definition of template {name:?}"));
            }
            self.defines[i].1 = list;
            return Ok(());
        }
        self.defines.push((name, list));
        Ok(())
    }

    /// Nodes up to `{{end}}` or `{{else}}`, which it returns.
    fn item_list(&mut self) -> Res<(Vec<Node>, Item)> {
        let mut list = Vec::new();
        loop {
            if self.peek().kind == Kind::Eof {
                let pos = self.peek().pos;
                return self.error(pos, "unexpected EOF");
            }
            match self.text_or_action()? {
                Item::Node(n) => list.push(n),
                end => return Ok((list, end)),
            }
        }
    }

    fn text_or_action(&mut self) -> Res<Item> {
        let t = self.next();
        match t.kind {
            Kind::Text(s) => Ok(Item::Node(Node::Text(s))),
            Kind::LeftDelim => self.action(),
            _ => self.unexpected(&t, "input"),
        }
    }

    fn action(&mut self) -> Res<Item> {
        let t = self.next_non_space();
        match t.kind {
            Kind::Keyword(Keyword::Block) => self.block(t.pos).map(Item::Node),
            Kind::Keyword(Keyword::Break) | Kind::Keyword(Keyword::Continue) => {
                let is_break = t.kind == Kind::Keyword(Keyword::Break);
                let word = if is_break { "break" } else { "continue" };
                if self.range_depth == 0 {
                    return self.error(t.pos, format!("{{{{{word}}}}} outside {{{{range}}}}"));
                }
                self.expect(Kind::RightDelim, word)?;
                Ok(Item::Node(if is_break { Node::Break(t.pos) } else { Node::Continue(t.pos) }))
            }
            Kind::Keyword(Keyword::Else) => {
                // `{{else if …}}` / `{{else with …}}`: the `if` is left for the branch to parse.
                let next = self.peek_non_space();
                if !matches!(next.kind, Kind::Keyword(Keyword::If | Keyword::With)) {
                    self.expect(Kind::RightDelim, "else")?;
                }
                Ok(Item::Else(t.pos))
            }
            Kind::Keyword(Keyword::End) => {
                self.expect(Kind::RightDelim, "end")?;
                Ok(Item::End(t.pos))
            }
            Kind::Keyword(Keyword::If) => self.control(t.pos, "if").map(|b| Item::Node(Node::If(b))),
            Kind::Keyword(Keyword::Range) => self.control(t.pos, "range").map(|b| Item::Node(Node::Range(b))),
            Kind::Keyword(Keyword::With) => self.control(t.pos, "with").map(|b| Item::Node(Node::With(b))),
            Kind::Keyword(Keyword::Template) => self.template(t.pos, "template").map(Item::Node),
            _ => {
                self.backup();
                Ok(Item::Node(Node::Action(self.pipeline("command", Kind::RightDelim)?)))
            }
        }
    }

    fn control(&mut self, pos: usize, context: &str) -> Res<Branch> {
        let vars = self.vars.len();
        let pipe = self.pipeline(context, Kind::RightDelim)?;
        if context == "range" {
            self.range_depth += 1;
        }
        let (list, end) = self.item_list()?;
        if context == "range" {
            self.range_depth -= 1;
        }
        let else_list = match end {
            Item::End(_) => None,
            Item::Else(else_pos) => {
                let chained = match self.peek().kind {
                    Kind::Keyword(Keyword::If) if context == "if" => Some("if"),
                    Kind::Keyword(Keyword::With) if context == "with" => Some("with"),
                    _ => None,
                };
                match chained {
                    Some(kind) => {
                        let t = self.next();
                        let branch = self.control(t.pos, kind)?;
                        Some(vec![if kind == "if" { Node::If(branch) } else { Node::With(branch) }])
                    }
                    None => {
                        let (list, end) = self.item_list()?;
                        if !matches!(end, Item::End(_)) {
                            return self.error(else_pos, "expected end; found {{else}}");
                        }
                        Some(list)
                    }
                }
            }
            Item::Node(_) => None,
        };
        self.vars.truncate(vars);
        Ok(Branch { pos, pipe, list, else_list })
    }

    fn template(&mut self, pos: usize, context: &str) -> Res<Node> {
        let t = self.next_non_space();
        let Kind::Str(name) = t.kind else { return self.unexpected(&t, &format!("{context} clause")) };
        let pipe = if self.peek_non_space().kind == Kind::RightDelim {
            self.next();
            None
        } else {
            Some(self.pipeline(context, Kind::RightDelim)?)
        };
        Ok(Node::Template { pos, name, pipe })
    }

    fn block(&mut self, pos: usize) -> Res<Node> {
        let Node::Template { name, pipe, .. } = self.template(pos, "block")? else { unreachable!() };
        let saved = std::mem::replace(&mut self.vars, vec!["$".into()]);
        let (list, end) = self.item_list()?;
        self.vars = saved;
        if let Item::Else(p) = end {
            return self.error(p, "unexpected {{else}}");
        }
        self.add_define(pos, name.clone(), list)?;
        Ok(Node::Template { pos, name, pipe })
    }

    fn pipeline(&mut self, context: &str, end: Kind) -> Res<Pipe> {
        let start = self.peek_non_space();
        let mut pipe = Pipe { pos: start.pos, is_assign: false, decl: Vec::new(), cmds: Vec::new() };
        self.declarations(context, &mut pipe)?;
        loop {
            let t = self.next_non_space();
            if t.kind == end {
                if pipe.cmds.is_empty() {
                    return self.error(t.pos, format!("missing value for {context}"));
                }
                return Ok(pipe);
            }
            match t.kind {
                Kind::Bool(_)
                | Kind::Char(_)
                | Kind::Dot
                | Kind::Field(_)
                | Kind::Identifier(_)
                | Kind::Number(_)
                | Kind::Nil
                | Kind::Str(_)
                | Kind::Variable(_)
                | Kind::LeftParen => {
                    self.backup();
                    let cmd = self.command()?;
                    pipe.cmds.push(cmd);
                }
                _ => return self.unexpected(&t, context),
            }
        }
    }

    /// `$x :=`, `$x =`, `$i, $v :=` (in `range`) at the start of a pipeline.
    fn declarations(&mut self, context: &str, pipe: &mut Pipe) -> Res<()> {
        loop {
            let save = self.at;
            let v = self.peek_non_space();
            let Kind::Variable(name) = v.kind else { return Ok(()) };
            self.next();
            let t = self.peek_non_space();
            match t.kind {
                Kind::Assign | Kind::Declare => {
                    self.next();
                    pipe.is_assign = t.kind == Kind::Assign;
                    pipe.decl.push(name.clone());
                    self.vars.push(name);
                    return Ok(());
                }
                Kind::Comma if context == "range" && pipe.decl.is_empty() => {
                    self.next();
                    pipe.decl.push(name.clone());
                    self.vars.push(name);
                }
                Kind::Comma => return self.error(t.pos, format!("too many declarations in {context}")),
                _ => {
                    self.at = save;
                    if !pipe.decl.is_empty() {
                        return self.error(t.pos, "missing := in range declaration");
                    }
                    return Ok(());
                }
            }
        }
    }

    fn command(&mut self) -> Res<Command> {
        let pos = self.peek_non_space().pos;
        let mut cmd = Command { pos, args: Vec::new() };
        loop {
            self.skip_space();
            if let Some(arg) = self.operand()? {
                cmd.args.push(arg);
            }
            let t = self.next();
            match t.kind {
                Kind::Space => continue,
                Kind::RightDelim | Kind::RightParen => self.backup(),
                Kind::Pipe => {}
                _ => return self.unexpected(&t, "operand"),
            }
            break;
        }
        if cmd.args.is_empty() {
            return self.error(pos, "empty command");
        }
        Ok(cmd)
    }

    fn operand(&mut self) -> Res<Option<Arg>> {
        let Some(node) = self.term()? else { return Ok(None) };
        // Go places a chain at its first chained field.
        let chain_pos = self.peek().pos;
        let mut fields = Vec::new();
        while let Kind::Field(f) = &self.peek().kind {
            fields.push(f.clone());
            self.at += 1;
        }
        if fields.is_empty() {
            return Ok(Some(node));
        }
        Ok(Some(match node {
            Arg::Field { mut names, .. } => {
                names.extend(fields);
                Arg::Field { pos: chain_pos, names }
            }
            Arg::Variable { mut names, .. } => {
                names.extend(fields);
                Arg::Variable { pos: chain_pos, names }
            }
            Arg::Bool(_) | Arg::Str(_) | Arg::Number { .. } | Arg::Nil(_) | Arg::Dot(_) => {
                return self.error(node.pos(), format!("unexpected . after term {:?}", node.to_string()));
            }
            other => Arg::Chain { pos: chain_pos, node: Box::new(other), fields },
        }))
    }

    fn term(&mut self) -> Res<Option<Arg>> {
        let t = self.next_non_space();
        Ok(Some(match t.kind {
            Kind::Identifier(name) => {
                if !(self.has_func)(&name) {
                    return self.error(t.pos, format!("function {name:?} not defined"));
                }
                Arg::Identifier { pos: t.pos, name }
            }
            Kind::Dot => Arg::Dot(t.pos),
            Kind::Nil => Arg::Nil(t.pos),
            Kind::Variable(name) => {
                if !self.vars.contains(&name) {
                    return self.error(t.pos, format!("undefined variable {name:?}"));
                }
                Arg::Variable { pos: t.pos, names: vec![name] }
            }
            Kind::Field(name) => Arg::Field { pos: t.pos, names: vec![name] },
            Kind::Bool(b) => Arg::Bool(b),
            Kind::Char(c) => {
                Arg::Number { text: format!("{c:?}"), int: Some(c as i64), float: c as u32 as f64, is_float: false }
            }
            Kind::Number(text) => number(&text).map_err(|m| ParseError { pos: t.pos, message: m.0 })?,
            Kind::LeftParen => Arg::Pipe(Box::new(self.pipeline("parenthesized pipeline", Kind::RightParen)?)),
            Kind::Str(s) => Arg::Str(s),
            _ => {
                self.backup();
                return Ok(None);
            }
        }))
    }
}

/// A number constant as Go's parser reads it.
fn number(text: &str) -> Result<Arg, HelmError> {
    let clean = text.replace('_', "");
    let (neg, digits) = match clean.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, clean.strip_prefix('+').unwrap_or(&clean)),
    };
    let radix = |p: &str| digits.strip_prefix(p).or_else(|| digits.strip_prefix(&p.to_uppercase()));
    let int = if let Some(h) = radix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = radix("0o") {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(b) = radix("0b") {
        i64::from_str_radix(b, 2).ok()
    } else if digits.len() > 1 && digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit()) {
        i64::from_str_radix(&digits[1..], 8).ok()
    } else {
        digits.parse::<i64>().ok()
    }
    .map(|n| if neg { -n } else { n });
    let is_hex = radix("0x").is_some();
    let looks_float = !is_hex && text.contains(['.', 'e', 'E', 'p', 'P']);
    match int {
        Some(n) => Ok(Arg::Number { text: text.into(), int: Some(n), float: n as f64, is_float: looks_float }),
        None => {
            let f: f64 = clean.parse().map_err(|_| format!("illegal number syntax: {text:?}"))?;
            if !looks_float {
                return Err(HelmError::from(format!("integer overflow: {text:?}")));
            }
            let int = (f.fract() == 0.0 && f.abs() < 9.2e18).then_some(f as i64);
            Ok(Arg::Number { text: text.into(), int, float: f, is_float: true })
        }
    }
}

/// A token as Go's "unexpected …" errors name it.
fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Text(t) => format!("{t:?}"),
        Kind::LeftDelim => "\"{{\"".into(),
        Kind::RightDelim => "\"}}\"".into(),
        Kind::Space => "space".into(),
        Kind::Identifier(s) => format!("<{s}>"),
        Kind::Field(s) => format!("<.{s}>"),
        Kind::Variable(s) => format!("<{s}>"),
        Kind::Str(s) => format!("{s:?}"),
        Kind::Char(c) => format!("{c:?}"),
        Kind::Number(n) => n.clone(),
        Kind::Bool(b) => b.to_string(),
        Kind::Nil => "nil".into(),
        Kind::Dot => "<.>".into(),
        Kind::Pipe => "\"|\"".into(),
        Kind::LeftParen => "\"(\"".into(),
        Kind::RightParen => "\")\"".into(),
        Kind::Comma => "\",\"".into(),
        Kind::Declare => "\":=\"".into(),
        Kind::Assign => "\"=\"".into(),
        Kind::Keyword(k) => format!("<{}>", format!("{k:?}").to_lowercase()),
        Kind::Eof => "EOF".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(src: &str) -> Parsed {
        parse(src, &|f| matches!(f, "printf" | "eq" | "include" | "default")).unwrap()
    }

    fn parse_err(src: &str) -> String {
        parse(src, &|f| f == "printf").unwrap_err().message
    }

    #[test]
    fn actions_print_back_as_written() {
        let p = parse_ok(r#"{{ $x := .a.b | printf "%s" (default 1 $.c).d }}"#);
        let Node::Action(pipe) = &p.body[0] else { panic!("{:?}", p.body) };
        assert_eq!(pipe.to_string(), r#"$x := .a.b | printf "%s" (default 1 $.c).d"#);
    }

    #[test]
    fn else_if_chains_and_defines() {
        let p =
            parse_ok(r#"{{define "x"}}X{{end}}{{if eq 1 2}}a{{else if .b}}b{{else}}c{{end}}{{block "y" .}}Y{{end}}"#);
        assert_eq!(p.defines.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["x", "y"]);
        let Node::If(b) = &p.body[0] else { panic!() };
        let Some(else_list) = &b.else_list else { panic!() };
        assert!(matches!(&else_list[0], Node::If(inner) if inner.else_list.is_some()));
        assert!(matches!(&p.body[1], Node::Template { name, .. } if name == "y"));
    }

    #[test]
    fn numbers_are_ints_or_floats_as_go_reads_them() {
        for (text, int, is_float) in [
            ("10", Some(10), false),
            ("1.0", Some(1), true),
            ("0x1F", Some(31), false),
            ("1e3", Some(1000), true),
            ("-0.5", None, true),
            ("017", Some(15), false),
        ] {
            let Arg::Number { int: i, is_float: f, .. } = number(text).unwrap() else { panic!() };
            assert_eq!((i, f), (int, is_float), "{text}");
        }
    }

    #[test]
    fn errors_in_gos_words() {
        assert_eq!(parse_err("{{ nope 1 }}"), r#"function "nope" not defined"#);
        assert_eq!(parse_err("{{ $x }}"), r#"undefined variable "$x""#);
        assert_eq!(parse_err("{{ if .a }}x"), "unexpected EOF");
        assert_eq!(parse_err("{{ end }}"), "unexpected {{end}}");
        assert_eq!(parse_err("{{ break }}"), "{{break}} outside {{range}}");
        assert_eq!(parse_err("{{ if }}{{end}}"), "missing value for if");
        let p = parse(r#"{{ range $i, $v := .x }}{{ $i }}{{ $v }}{{ end }}{{ $v }}"#, &|_| true).unwrap_err();
        assert_eq!(p.message, r#"undefined variable "$v""#, "range variables end with the range");
    }
}
