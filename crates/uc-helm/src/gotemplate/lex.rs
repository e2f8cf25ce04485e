//! The tokens of a Go template, as `text/template/parse`'s lexer cuts them: text between actions
//! (trimmed by `{{- ` and ` -}}`), and inside an action identifiers, fields, variables, constants,
//! pipes and parentheses, with spaces kept (they separate a command's arguments).

use crate::error::HelmError;

/// One token, at a byte offset of the source.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub kind: Kind,
    pub pos: usize,
}

/// What a token is.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Text(String),
    LeftDelim,
    RightDelim,
    Space,
    /// A function name (or, for the keywords, the keyword).
    Identifier(String),
    /// `.Name`, without the dot.
    Field(String),
    /// `$` or `$name`, with the dollar.
    Variable(String),
    /// A quoted string, unquoted.
    Str(String),
    Char(char),
    Number(String),
    Bool(bool),
    Nil,
    Dot,
    Pipe,
    LeftParen,
    RightParen,
    Comma,
    Declare,
    Assign,
    Keyword(Keyword),
    Eof,
}

/// The action keywords.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keyword {
    Block,
    Break,
    Continue,
    Define,
    Else,
    End,
    If,
    Range,
    Template,
    With,
}

/// A lexing error: where, and Go's words.
#[derive(Debug, Clone, PartialEq)]
pub struct LexError {
    pub pos: usize,
    pub message: String,
}

const LEFT: &str = "{{";
const RIGHT: &str = "}}";

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn is_alnum(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// Cuts `src` into tokens (ending with `Eof`), or the first error.
pub fn lex(src: &str) -> Result<Vec<Token>, LexError> {
    let mut lexer = Lexer { src, pos: 0, out: Vec::new(), paren_depth: 0 };
    lexer.run()?;
    Ok(lexer.out)
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    out: Vec<Token>,
    paren_depth: usize,
}

impl Lexer<'_> {
    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn emit(&mut self, kind: Kind, pos: usize) {
        self.out.push(Token { kind, pos });
    }

    fn error<T>(&self, message: impl Into<String>) -> Result<T, LexError> {
        Err(LexError { pos: self.pos, message: message.into() })
    }

    fn run(&mut self) -> Result<(), LexError> {
        let mut trim_next_text = false;
        loop {
            let start = self.pos;
            let found = self.rest().find(LEFT);
            let end = found.map(|i| self.pos + i).unwrap_or(self.src.len());
            let mut text = &self.src[start..end];
            if trim_next_text {
                text = text.trim_start_matches(is_space);
            }
            let after = &self.src[end..];
            let trim_left = found.is_some() && has_left_trim(&after[LEFT.len()..]);
            if trim_left {
                text = text.trim_end_matches(is_space);
            }
            if !text.is_empty() {
                self.emit(Kind::Text(text.to_string()), start);
            }
            if found.is_none() {
                self.emit(Kind::Eof, self.src.len());
                return Ok(());
            }
            self.pos = end + LEFT.len() + if trim_left { 2 } else { 0 };
            trim_next_text = self.action(end)?;
        }
    }

    /// One action, after its left delimiter; whether it ended with ` -}}`.
    fn action(&mut self, delim_pos: usize) -> Result<bool, LexError> {
        if self.rest().starts_with("/*") {
            return self.comment();
        }
        self.emit(Kind::LeftDelim, delim_pos);
        self.paren_depth = 0;
        loop {
            if let Some(trim) = self.at_right_delim() {
                if self.paren_depth > 0 {
                    return self.error("unclosed left paren");
                }
                let pos = self.pos;
                self.pos += if trim { 2 } else { 0 } + RIGHT.len();
                self.emit(Kind::RightDelim, pos);
                return Ok(trim);
            }
            let Some(c) = self.peek() else { return self.error("unclosed action") };
            self.token(c)?;
        }
    }

    /// ` -}}` (true) or `}}` (false) here.
    fn at_right_delim(&self) -> Option<bool> {
        let rest = self.rest();
        if has_right_trim(rest) && rest[2..].starts_with(RIGHT) {
            Some(true)
        } else if rest.starts_with(RIGHT) {
            Some(false)
        } else {
            None
        }
    }

    fn comment(&mut self) -> Result<bool, LexError> {
        let Some(close) = self.rest().find("*/") else { return self.error("unclosed comment") };
        self.pos += close + 2;
        match self.at_right_delim() {
            Some(trim) => {
                self.pos += if trim { 2 } else { 0 } + RIGHT.len();
                Ok(trim)
            }
            None => self.error("comment ends before closing delimiter"),
        }
    }

    fn token(&mut self, c: char) -> Result<(), LexError> {
        let start = self.pos;
        match c {
            c if is_space(c) => self.space(),
            '=' => {
                self.pos += 1;
                self.emit(Kind::Assign, start);
            }
            ':' => {
                if !self.rest().starts_with(":=") {
                    return self.error("expected :=");
                }
                self.pos += 2;
                self.emit(Kind::Declare, start);
            }
            '|' => {
                self.pos += 1;
                self.emit(Kind::Pipe, start);
            }
            ',' => {
                self.pos += 1;
                self.emit(Kind::Comma, start);
            }
            '"' => self.quoted()?,
            '`' => self.raw()?,
            '\'' => self.char_constant()?,
            '$' => self.field_or_variable(true)?,
            '.' => {
                if self.rest()[1..].starts_with(|c: char| c.is_ascii_digit()) {
                    self.number()?;
                } else {
                    self.field_or_variable(false)?;
                }
            }
            '+' | '-' | '0'..='9' => self.number()?,
            c if is_alnum(c) => self.identifier()?,
            '(' => {
                self.pos += 1;
                self.paren_depth += 1;
                self.emit(Kind::LeftParen, start);
            }
            ')' => {
                if self.paren_depth == 0 {
                    return self.error("unexpected right paren");
                }
                self.pos += 1;
                self.paren_depth -= 1;
                self.emit(Kind::RightParen, start);
            }
            c => return self.error(format!("unrecognized character in action: {}", go_rune(c))),
        }
        Ok(())
    }

    /// Spaces; the one before a ` -}}` belongs to the delimiter.
    fn space(&mut self) {
        let start = self.pos;
        let len = self.rest().find(|c: char| !is_space(c)).unwrap_or(self.rest().len());
        self.pos += len;
        let before_marker = &self.src[self.pos - 1..];
        if has_right_trim(before_marker) && before_marker[2..].starts_with(RIGHT) {
            self.pos -= 1;
            if len == 1 {
                return;
            }
        }
        self.emit(Kind::Space, start);
    }

    fn at_terminator(&self) -> bool {
        match self.peek() {
            None => true,
            Some(c) if is_space(c) || matches!(c, '.' | ',' | '|' | ':' | ')' | '(') => true,
            Some(_) => self.rest().starts_with(RIGHT),
        }
    }

    fn bad_terminator<T>(&self) -> Result<T, LexError> {
        let c = self.peek().unwrap_or(' ');
        self.error(format!("bad character {}", go_rune(c)))
    }

    fn identifier(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        let len = self.rest().find(|c: char| !is_alnum(c)).unwrap_or(self.rest().len());
        self.pos += len;
        if !self.at_terminator() {
            return self.bad_terminator();
        }
        let word = &self.src[start..self.pos];
        let kind = match word {
            "block" => Kind::Keyword(Keyword::Block),
            "break" => Kind::Keyword(Keyword::Break),
            "continue" => Kind::Keyword(Keyword::Continue),
            "define" => Kind::Keyword(Keyword::Define),
            "else" => Kind::Keyword(Keyword::Else),
            "end" => Kind::Keyword(Keyword::End),
            "if" => Kind::Keyword(Keyword::If),
            "range" => Kind::Keyword(Keyword::Range),
            "template" => Kind::Keyword(Keyword::Template),
            "with" => Kind::Keyword(Keyword::With),
            "true" => Kind::Bool(true),
            "false" => Kind::Bool(false),
            "nil" => Kind::Nil,
            _ => Kind::Identifier(word.to_string()),
        };
        self.emit(kind, start);
        Ok(())
    }

    fn field_or_variable(&mut self, variable: bool) -> Result<(), LexError> {
        let start = self.pos;
        self.pos += 1;
        if self.at_terminator() {
            self.emit(if variable { Kind::Variable("$".into()) } else { Kind::Dot }, start);
            return Ok(());
        }
        let len = self.rest().find(|c: char| !is_alnum(c)).unwrap_or(self.rest().len());
        self.pos += len;
        if !self.at_terminator() {
            return self.bad_terminator();
        }
        let name = &self.src[start..self.pos];
        self.emit(if variable { Kind::Variable(name.into()) } else { Kind::Field(name[1..].into()) }, start);
        Ok(())
    }

    fn number(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        let bytes = self.src.as_bytes();
        let mut i = self.pos;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let mut digits: &[u8] = b"0123456789_";
        let mut exponent: &[u8] = b"eE";
        if bytes.get(i) == Some(&b'0') && matches!(bytes.get(i + 1), Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B')) {
            i += 2;
            (digits, exponent) = match bytes[i - 1] {
                b'x' | b'X' => (b"0123456789abcdefABCDEF_".as_slice(), b"pP".as_slice()),
                b'o' | b'O' => (b"01234567_".as_slice(), b"".as_slice()),
                _ => (b"01_".as_slice(), b"".as_slice()),
            };
        }
        let run = |i: &mut usize, set: &[u8]| {
            while bytes.get(*i).is_some_and(|b| set.contains(b)) {
                *i += 1;
            }
        };
        run(&mut i, digits);
        if bytes.get(i) == Some(&b'.') {
            i += 1;
            run(&mut i, digits);
        }
        if !exponent.is_empty() && bytes.get(i).is_some_and(|b| exponent.contains(b)) {
            i += 1;
            if matches!(bytes.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            run(&mut i, b"0123456789_");
        }
        if bytes.get(i) == Some(&b'i') {
            i += 1;
        }
        self.pos = i;
        if self.peek().is_some_and(is_alnum) {
            self.pos += self.peek().map(char::len_utf8).unwrap_or(0);
            return self.error(format!("bad number syntax: {:?}", &self.src[start..self.pos]));
        }
        self.emit(Kind::Number(self.src[start..self.pos].to_string()), start);
        Ok(())
    }

    /// Where the literal opened here by `quote` closes (backslash escapes skipped, no newline inside).
    fn closing(&self, quote: u8, unterminated: &str) -> Result<usize, LexError> {
        let bytes = self.src.as_bytes();
        let mut i = self.pos + 1;
        loop {
            match bytes.get(i) {
                None | Some(b'\n') => return self.error(unterminated),
                Some(b'\\') => i += 2,
                Some(b) if *b == quote => return Ok(i),
                Some(_) => i += 1,
            }
        }
    }

    fn quoted(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        let i = self.closing(b'"', "unterminated quoted string")?;
        let raw = &self.src[start..=i];
        self.pos = i + 1;
        let text = unquote(raw).map_err(|m| LexError { pos: start, message: m.0 })?;
        self.emit(Kind::Str(text), start);
        Ok(())
    }

    fn raw(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        let Some(end) = self.rest()[1..].find('`') else { return self.error("unterminated raw quoted string") };
        let text = self.rest()[1..1 + end].replace('\r', "");
        self.pos += end + 2;
        self.emit(Kind::Str(text), start);
        Ok(())
    }

    fn char_constant(&mut self) -> Result<(), LexError> {
        let start = self.pos;
        let i = self.closing(b'\'', "unterminated character constant")?;
        let raw = &self.src[start + 1..i];
        self.pos = i + 1;
        let text =
            unquote(&format!("\"{}\"", raw.replace("\\'", "'"))).map_err(|m| LexError { pos: start, message: m.0 })?;
        let mut chars = text.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => {
                self.emit(Kind::Char(c), start);
                Ok(())
            }
            _ => Err(LexError { pos: start, message: format!("malformed character constant: '{raw}'") }),
        }
    }
}

/// `- ` after a left delimiter.
fn has_left_trim(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next() == Some('-') && chars.next().is_some_and(is_space)
}

/// ` -` before a right delimiter.
fn has_right_trim(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(is_space) && chars.next() == Some('-')
}

/// A rune as Go's `%#U` prints it.
fn go_rune(c: char) -> String {
    format!("U+{:04X} '{c}'", c as u32)
}

/// A Go double-quoted string literal's value.
pub fn unquote(raw: &str) -> Result<String, HelmError> {
    let body = raw
        .strip_prefix('"')
        .and_then(|s| s.strip_suffix('"'))
        .ok_or_else(|| HelmError::from(format!("invalid syntax: {raw}")))?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = chars.next().ok_or_else(|| HelmError::from(format!("invalid syntax: {raw}")))?;
        let hex = |chars: &mut std::str::Chars, n: usize| -> Result<u32, HelmError> {
            let digits: String = chars.take(n).collect();
            u32::from_str_radix(&digits, 16).map_err(|_| HelmError::from(format!("invalid syntax: {raw}")))
        };
        let ch =
            match escaped {
                'a' => '\x07',
                'b' => '\x08',
                'f' => '\x0c',
                'n' => '\n',
                'r' => '\r',
                't' => '\t',
                'v' => '\x0b',
                '\\' => '\\',
                '"' => '"',
                'x' => char::from_u32(hex(&mut chars, 2)?).unwrap_or('\u{fffd}'),
                'u' => char::from_u32(hex(&mut chars, 4)?)
                    .ok_or_else(|| HelmError::from(format!("invalid syntax: {raw}")))?,
                'U' => char::from_u32(hex(&mut chars, 8)?)
                    .ok_or_else(|| HelmError::from(format!("invalid syntax: {raw}")))?,
                '0'..='7' => {
                    let rest: String = chars.by_ref().take(2).collect();
                    let n = u32::from_str_radix(&format!("{escaped}{rest}"), 8)
                        .map_err(|_| format!("invalid syntax: {raw}"))?;
                    char::from_u32(n).unwrap_or('\u{fffd}')
                }
                _ => return Err(HelmError::from(format!("invalid syntax: {raw}"))),
            };
        out.push(ch);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Kind> {
        lex(src).unwrap().into_iter().map(|t| t.kind).collect()
    }

    #[test]
    fn text_and_actions_with_trim_markers() {
        use Kind::*;
        assert_eq!(
            kinds("a  {{- .X -}}  b"),
            [Text("a".into()), LeftDelim, Field("X".into()), RightDelim, Text("b".into()), Eof]
        );
        assert_eq!(kinds("a {{/* c */}} b"), [Text("a ".into()), Text(" b".into()), Eof]);
        assert_eq!(kinds("a {{- /* c */ -}} b"), [Text("a".into()), Text("b".into()), Eof]);
        assert_eq!(
            kinds("{{ $x := .a.b | f 1 \"s\" }}"),
            [
                LeftDelim,
                Space,
                Variable("$x".into()),
                Space,
                Declare,
                Space,
                Field("a".into()),
                Field("b".into()),
                Space,
                Pipe,
                Space,
                Identifier("f".into()),
                Space,
                Number("1".into()),
                Space,
                Str("s".into()),
                Space,
                RightDelim,
                Eof
            ]
        );
    }

    #[test]
    fn constants_and_keywords() {
        use Kind::*;
        assert_eq!(
            kinds("{{if true}}{{else}}{{end}}"),
            [
                LeftDelim,
                Keyword(self::Keyword::If),
                Space,
                Bool(true),
                RightDelim,
                LeftDelim,
                Keyword(self::Keyword::Else),
                RightDelim,
                LeftDelim,
                Keyword(self::Keyword::End),
                RightDelim,
                Eof
            ]
        );
        assert_eq!(
            kinds("{{'a' `r\\n` -1.5e3 0x1F}}")[1..8],
            [Char('a'), Space, Str("r\\n".into()), Space, Number("-1.5e3".into()), Space, Number("0x1F".into())]
        );
        assert_eq!(unquote(r#""a\tb\u00e9\x41""#).unwrap(), "a\tbéA");
    }

    #[test]
    fn errors_in_gos_words() {
        assert_eq!(lex("{{ .x ").unwrap_err().message, "unclosed action");
        assert_eq!(lex("{{ \"abc }}").unwrap_err().message, "unterminated quoted string");
        assert_eq!(lex("{{/* x }}").unwrap_err().message, "unclosed comment");
        assert_eq!(lex("{{ ( .x }}").unwrap_err().message, "unclosed left paren");
        assert!(lex("{{ 3x }}").unwrap_err().message.starts_with("bad number syntax"));
    }
}
