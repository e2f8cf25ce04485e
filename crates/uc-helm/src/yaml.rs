//! YAML as Helm's `toYaml` writes it: sigs.k8s.io/yaml's `Marshal` — the value to JSON, the JSON read
//! back by go-yaml v2 (integral numbers become ints), then written by go-yaml v2's emitter (libyaml's):
//! keys in its "natural" order, two-space block style with sequences not indented under their key,
//! strings plain when they would read back as strings, else quoted, multi-line strings as literal
//! blocks, and long scalars folded at spaces past column 80.

use crate::gotemplate::Value;
use crate::gotemplate::value::format_float_v;

/// The longest line libyaml aims for before folding a scalar at a space.
const BEST_WIDTH: usize = 80;

/// A node as go-yaml v2 holds the JSON it read.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    Map(Vec<(String, Node)>),
}

/// `toYaml`: the value as YAML, without the final newline (Helm trims it).
pub fn to_yaml(v: &Value) -> String {
    let mut out = Emitter::default();
    out.document(&node(v));
    out.text.trim_end_matches('\n').to_string()
}

/// The value after its JSON round trip.
fn node(v: &Value) -> Node {
    match v {
        Value::Invalid | Value::Nil => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Int(n) => Node::Int(*n),
        Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 && !(*f == 0.0 && f.is_sign_negative()) => {
            Node::Int(*f as i64)
        }
        Value::Float(f) => Node::Float(*f),
        Value::Str(s) => Node::Str(s.to_string()),
        Value::List(items) => Node::Seq(items.iter().map(node).collect()),
        Value::Map(m) => {
            let mut entries: Vec<(String, Node)> = m.borrow().iter().map(|(k, v)| (k.clone(), node(v))).collect();
            entries.sort_by(|a, b| natural_order(&a.0, &b.0));
            Node::Map(entries)
        }
        Value::Object(o) => Node::Str(o.print()),
    }
}

/// go-yaml v2's order of string keys: letters after other characters, runs of digits by their value.
pub fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl { Ordering::Less } else { Ordering::Greater };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an.wrapping_mul(10).wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn.wrapping_mul(10).wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

/// How a string is written.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// Whether go-yaml v2 would read the plain text back as something other than a string.
fn resolves_to_non_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True",
        "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", ".nan", ".NaN", ".NAN", ".inf",
        ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", "<<",
    ];
    if SPECIAL.contains(&s) {
        return true;
    }
    let first = s.as_bytes()[0];
    match first {
        b'.' => s.parse::<f64>().is_ok() && !s.eq_ignore_ascii_case(".inf") && !s[1..].starts_with(char::is_alphabetic),
        b'+' | b'-' | b'0'..=b'9' => {
            let plain = s.replace('_', "");
            is_timestamp(s) || go_int(&plain) || yaml_float(&plain) || binary_int(&plain)
        }
        _ => false,
    }
}

/// strconv.ParseInt/ParseUint with base 0.
fn go_int(s: &str) -> bool {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        (16, h)
    } else if let Some(o) = digits.strip_prefix("0o").or_else(|| digits.strip_prefix("0O")) {
        (8, o)
    } else if let Some(b) = digits.strip_prefix("0b").or_else(|| digits.strip_prefix("0B")) {
        (2, b)
    } else if digits.len() > 1 && digits.starts_with('0') {
        (8, &digits[1..])
    } else {
        (10, digits)
    };
    !body.is_empty() && u64::from_str_radix(body, radix).is_ok()
}

fn binary_int(s: &str) -> bool {
    let body = s.strip_prefix("0b").or_else(|| s.strip_prefix("-0b"));
    body.is_some_and(|b| !b.is_empty() && b.bytes().all(|c| c == b'0' || c == b'1'))
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`
fn yaml_float(s: &str) -> bool {
    let b = s.strip_prefix(['+', '-']).unwrap_or(s).as_bytes();
    let digits = |b: &[u8], i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i > start
    };
    let mut i = 0;
    if b.first() == Some(&b'.') {
        i += 1;
        if !digits(b, &mut i) {
            return false;
        }
    } else {
        if !digits(b, &mut i) {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(b, &mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if !digits(b, &mut i) {
            return false;
        }
    }
    i == b.len()
}

/// A YAML timestamp go-yaml v2 reads unquoted (`2006-1-2`, with an optional time).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let date_end = s.find(['T', 't', ' ']).unwrap_or(s.len());
    let parts: Vec<&str> = s[..date_end].split('-').collect();
    parts.len() == 3 && parts.iter().all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
}

/// `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`: quoted for parsers of YAML 1.1.
fn is_base60_float(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (main, frac) = match body.split_once('.') {
        Some((m, f)) => (m, Some(f)),
        None => (body, None),
    };
    let mut parts = main.split(':');
    let head = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    !rest.is_empty()
        && head.starts_with(|c: char| c.is_ascii_digit())
        && head.bytes().all(|c| c.is_ascii_digit() || c == b'_')
        && rest.iter().all(|p| {
            (1..=2).contains(&p.len())
                && p.bytes().all(|c| c.is_ascii_digit())
                && (p.len() == 1 || p.as_bytes()[0] <= b'5')
        })
        && frac.is_none_or(|f| f.bytes().all(|c| c.is_ascii_digit() || c == b'_'))
}

/// libyaml's "printable".
fn printable(c: char) -> bool {
    let v = c as u32;
    v == 0x0A
        || (0x20..=0x7E).contains(&v)
        || v == 0x85
        || (0xA0..=0xD7FF).contains(&v)
        || ((0xE000..=0xFFFD).contains(&v) && v != 0xFEFF)
        || (0x10000..=0x10FFFF).contains(&v)
}

/// The style libyaml picks for a string go-yaml asked to write in `wanted` (yaml_emitter_analyze_scalar
/// and select_scalar_style, block context).
fn style_of(s: &str, simple_key: bool) -> Style {
    let wanted = if s.contains('\n') {
        Style::Literal
    } else if !resolves_to_non_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::Double
    };
    let a = analyze(s);
    let mut style = wanted;
    if style == Style::Plain && (!a.block_plain || (s.is_empty() && simple_key) || (simple_key && a.multiline)) {
        style = Style::Single;
    }
    if style == Style::Single && (!a.single || (simple_key && a.multiline)) {
        style = Style::Double;
    }
    if style == Style::Literal && (!a.block || simple_key) {
        style = Style::Double;
    }
    style
}

struct Analysis {
    multiline: bool,
    block_plain: bool,
    single: bool,
    block: bool,
}

fn is_break(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: Option<&char>) -> bool {
    c.is_none_or(|&c| c == ' ' || c == '\t' || is_break(c))
}

/// Whether a character makes the scalar an indicator in block context (libyaml's `block_indicators`).
fn block_indicator(chars: &[char], starts_document_marker: bool) -> bool {
    if starts_document_marker {
        return true;
    }
    let mut preceded_by_ws = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_ws = is_blank(chars.get(i + 1));
        let indicator = if i == 0 {
            matches!(c, '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"' | '%' | '@' | '`')
                || (matches!(c, '?' | ':' | '-') && followed_by_ws)
        } else {
            (c == ':' && followed_by_ws) || (c == '#' && preceded_by_ws)
        };
        if indicator {
            return true;
        }
        preceded_by_ws = is_blank(Some(&c));
    }
    false
}

/// Where a scalar has spaces and breaks (libyaml's analysis of them).
#[derive(Default)]
struct Spacing {
    line_breaks: bool,
    special: bool,
    leading_space: bool,
    leading_break: bool,
    trailing_space: bool,
    trailing_break: bool,
    break_space: bool,
    space_break: bool,
}

fn spacing(chars: &[char]) -> Spacing {
    let mut sp = Spacing::default();
    let (mut prev_space, mut prev_break) = (false, false);
    let last = chars.len().saturating_sub(1);
    for (i, &c) in chars.iter().enumerate() {
        sp.special |= !printable(c) || c == '\u{FEFF}';
        if c == ' ' {
            sp.leading_space |= i == 0;
            sp.trailing_space |= i == last;
            sp.break_space |= prev_break;
            (prev_space, prev_break) = (true, false);
        } else if is_break(c) {
            sp.line_breaks = true;
            sp.leading_break |= i == 0;
            sp.trailing_break |= i == last;
            sp.space_break |= prev_space;
            (prev_space, prev_break) = (false, true);
        } else {
            (prev_space, prev_break) = (false, false);
        }
    }
    sp
}

fn analyze(s: &str) -> Analysis {
    if s.is_empty() {
        return Analysis { multiline: false, block_plain: true, single: true, block: false };
    }
    let chars: Vec<char> = s.chars().collect();
    let block_ind = block_indicator(&chars, s.starts_with("---") || s.starts_with("..."));
    let sp = spacing(&chars);
    let mut a = Analysis { multiline: sp.line_breaks, block_plain: true, single: true, block: true };
    if sp.leading_space || sp.leading_break || sp.trailing_space || sp.trailing_break {
        a.block_plain = false;
    }
    if sp.trailing_space {
        a.block = false;
    }
    if sp.break_space {
        a.block_plain = false;
        a.single = false;
    }
    if sp.space_break || sp.special {
        a.block_plain = false;
        a.single = false;
        a.block = false;
    }
    if sp.line_breaks || block_ind {
        a.block_plain = false;
    }
    a
}

/// libyaml's emitter, for block documents.
#[derive(Default)]
struct Emitter {
    text: String,
    column: usize,
}

impl Emitter {
    fn put(&mut self, s: &str) {
        self.text.push_str(s);
        self.column += s.chars().count();
    }

    fn newline_indent(&mut self, indent: usize) {
        self.text.push('\n');
        self.text.push_str(&" ".repeat(indent));
        self.column = indent;
    }

    fn document(&mut self, n: &Node) {
        match n {
            Node::Map(entries) if !entries.is_empty() => self.map(entries, 0, true),
            Node::Seq(items) if !items.is_empty() => self.seq(items, 0, true),
            other => self.scalar_or_empty(other, 0, false),
        }
        self.text.push('\n');
    }

    fn map(&mut self, entries: &[(String, Node)], indent: usize, inline_first: bool) {
        for (i, (k, v)) in entries.iter().enumerate() {
            if i > 0 || !inline_first {
                self.newline_indent(indent);
            }
            self.string(k, indent + 2, true);
            self.put(":");
            match v {
                Node::Map(m) if !m.is_empty() => self.map(m, indent + 2, false),
                Node::Seq(s) if !s.is_empty() => self.seq(s, indent, false),
                other => {
                    self.put(" ");
                    self.scalar_or_empty(other, indent + 2, false);
                }
            }
        }
    }

    fn seq(&mut self, items: &[Node], indent: usize, inline_first: bool) {
        for (i, item) in items.iter().enumerate() {
            if i > 0 || !inline_first {
                self.newline_indent(indent);
            }
            self.put("- ");
            match item {
                Node::Map(m) if !m.is_empty() => self.map(m, indent + 2, true),
                Node::Seq(s) if !s.is_empty() => self.seq(s, indent + 2, true),
                other => self.scalar_or_empty(other, indent + 2, false),
            }
        }
    }

    fn scalar_or_empty(&mut self, n: &Node, indent: usize, key: bool) {
        match n {
            Node::Null => self.put("null"),
            Node::Bool(b) => self.put(if *b { "true" } else { "false" }),
            Node::Int(i) => self.put(&i.to_string()),
            Node::Float(f) => {
                let s = match format_float_v(*f).as_str() {
                    "+Inf" => ".inf".to_string(),
                    "-Inf" => "-.inf".to_string(),
                    "NaN" => ".nan".to_string(),
                    other => other.to_string(),
                };
                self.put(&s);
            }
            Node::Str(s) => self.string(s, indent, key),
            Node::Map(_) => self.put("{}"),
            Node::Seq(_) => self.put("[]"),
        }
    }

    fn string(&mut self, s: &str, indent: usize, key: bool) {
        match style_of(s, key) {
            Style::Plain => self.folded(s, indent, !key, Style::Plain),
            Style::Single => {
                self.put("'");
                self.folded(s, indent, !key, Style::Single);
                self.put("'");
            }
            Style::Double => {
                self.put("\"");
                self.folded(s, indent, !key, Style::Double);
                self.put("\"");
            }
            Style::Literal => self.literal(s, indent),
        }
    }

    /// A plain, single- or double-quoted scalar, broken at a space once past the best width.
    fn folded(&mut self, s: &str, indent: usize, allow_breaks: bool, style: Style) {
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == ' ' {
                let next_space = chars.get(i + 1) == Some(&' ');
                let inner = style == Style::Plain || (i != 0 && i != chars.len() - 1);
                let may_break = match style {
                    Style::Double => inner,
                    _ => inner && !next_space,
                };
                if allow_breaks && !spaces && self.column > BEST_WIDTH && may_break {
                    self.newline_indent(indent);
                    if style == Style::Double && next_space {
                        self.put("\\");
                    }
                } else {
                    self.put(" ");
                }
                spaces = true;
            } else {
                match style {
                    Style::Double if !printable(c) || c == '"' || c == '\\' || c == '\u{FEFF}' || c == '\n' => {
                        self.put(&escape(c));
                    }
                    Style::Single if c == '\'' => self.put("''"),
                    _ => self.put(&c.to_string()),
                }
                spaces = false;
            }
            i += 1;
        }
    }

    fn literal(&mut self, s: &str, indent: usize) {
        self.put("|");
        if s.starts_with([' ', '\n']) {
            self.put("2");
        }
        let chomp = if !s.ends_with('\n') {
            "-"
        } else if s.len() == 1 || s[..s.len() - 1].ends_with('\n') {
            "+"
        } else {
            ""
        };
        self.put(chomp);
        let mut at_line_start = true;
        self.text.push('\n');
        self.column = 0;
        for c in s.chars() {
            if c == '\n' {
                self.text.push('\n');
                self.column = 0;
                at_line_start = true;
            } else {
                if at_line_start {
                    self.put(&" ".repeat(indent));
                    at_line_start = false;
                }
                self.put(&c.to_string());
            }
        }
        if self.text.ends_with('\n') {
            self.text.pop();
        }
    }
}

/// A character in a double-quoted scalar that must be escaped, as libyaml escapes it.
fn escape(c: char) -> String {
    match c {
        '\0' => "\\0".into(),
        '\x07' => "\\a".into(),
        '\x08' => "\\b".into(),
        '\t' => "\\t".into(),
        '\n' => "\\n".into(),
        '\x0b' => "\\v".into(),
        '\x0c' => "\\f".into(),
        '\r' => "\\r".into(),
        '\x1b' => "\\e".into(),
        '"' => "\\\"".into(),
        '\\' => "\\\\".into(),
        '\u{85}' => "\\N".into(),
        '\u{a0}' => "\\_".into(),
        '\u{2028}' => "\\L".into(),
        '\u{2029}' => "\\P".into(),
        c if (c as u32) <= 0xFF => format!("\\x{:02X}", c as u32),
        c if (c as u32) <= 0xFFFF => format!("\\u{:04X}", c as u32),
        c => format!("\\U{:08X}", c as u32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(j: serde_json::Value) -> String {
        to_yaml(&Value::from_json(&j, false))
    }

    #[test]
    fn block_style_with_indentless_sequences_and_sorted_keys() {
        let got = yaml(serde_json::json!({
            "b": {"y": 1, "x": [1, 2]}, "a": [{"k": "v", "j": true}, []], "c": {}, "d": null
        }));
        assert_eq!(got, "a:\n- j: true\n  k: v\n- []\nb:\n  x:\n  - 1\n  - 2\n  \"y\": 1\nc: {}\nd: null");
    }

    #[test]
    fn strings_quoted_when_they_would_read_back_as_something_else() {
        let got = yaml(serde_json::json!({"a": "", "b": "true", "c": "1.5", "d": "on", "e": "*x", "f": "a: b",
            "g": "it's", "h": "2024-01-02", "i": "1:20", "j": "tab\there", "k": "0x1F", "l": "plain text"}));
        assert_eq!(
            got,
            "a: \"\"\nb: \"true\"\nc: \"1.5\"\nd: \"on\"\ne: '*x'\nf: 'a: b'\ng: it's\nh: \"2024-01-02\"\ni: \"1:20\"\nj: \"tab\\there\"\nk: \"0x1F\"\nl: plain text"
        );
    }

    #[test]
    fn numbers_after_the_json_round_trip() {
        assert_eq!(
            yaml(serde_json::json!({"a": 1.0, "b": 1.5, "c": 1000000, "d": 0.000001})),
            "a: 1\nb: 1.5\nc: 1000000\nd: 1e-06"
        );
    }

    #[test]
    fn multi_line_strings_are_literal_blocks() {
        assert_eq!(yaml(serde_json::json!({"s": "a\nb"})), "s: |-\n  a\n  b");
        assert_eq!(yaml(serde_json::json!({"s": "a\n\nb\n"})), "s: |\n  a\n\n  b");
        assert_eq!(yaml(serde_json::json!(["x\n", "y"])), "- |\n  x\n- \"y\"");
    }

    #[test]
    fn long_scalars_fold_past_column_80() {
        let long = "word ".repeat(20).trim_end().to_string();
        let got = yaml(serde_json::json!({"description": long}));
        assert_eq!(
            got,
            "description: word word word word word word word word word word word word word word\n  word word word word word word"
        );
    }

    #[test]
    fn natural_key_order() {
        let mut keys = vec!["b10", "b9", "a_b", "aZ", "a-b", "A"];
        keys.sort_by(|a, b| natural_order(a, b));
        assert_eq!(keys, ["A", "a-b", "a_b", "aZ", "b9", "b10"]);
    }
}
