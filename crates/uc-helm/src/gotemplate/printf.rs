//! Go's `fmt.Sprintf`, `Sprint` and `Sprintln` over template values: the verbs charts use, with flags,
//! width and precision, and Go's `%!verb(type=value)` for a verb that does not fit its operand.

use super::value::{Value, format_float_v};

/// One directive's flags, width and precision.
#[derive(Default, Clone, Copy)]
struct Spec {
    minus: bool,
    plus: bool,
    space: bool,
    zero: bool,
    sharp: bool,
    width: Option<usize>,
    precision: Option<usize>,
}

/// `fmt.Sprintf(format, args...)`.
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut next = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                '#' => spec.sharp = true,
                _ => break,
            }
            chars.next();
        }
        spec.width = number(&mut chars, args, &mut next);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.precision = Some(number(&mut chars, args, &mut next).unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        match args.get(next) {
            Some(arg) => {
                next += 1;
                out.push_str(&pad(&format_one(verb, spec, arg), spec, numeric_verb(verb) && is_number(arg)));
            }
            None => out.push_str(&format!("%!{verb}(MISSING)")),
        }
    }
    if next < args.len() {
        out.push_str("%!(EXTRA ");
        let extra: Vec<String> = args[next..].iter().map(|a| format!("{}={}", a.type_name(), a.print())).collect();
        out.push_str(&extra.join(", "));
        out.push(')');
    }
    out
}

fn number(chars: &mut std::iter::Peekable<std::str::Chars>, args: &[Value], next: &mut usize) -> Option<usize> {
    if chars.peek() == Some(&'*') {
        chars.next();
        let n = match args.get(*next) {
            Some(Value::Int(n)) => usize::try_from(*n).ok(),
            _ => None,
        };
        *next += 1;
        return n;
    }
    let mut n: Option<usize> = None;
    while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
        n = Some(n.unwrap_or(0) * 10 + d as usize);
        chars.next();
    }
    n
}

fn numeric_verb(verb: char) -> bool {
    matches!(verb, 'd' | 'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'x' | 'X' | 'o' | 'b' | 'v')
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Int(_) | Value::Float(_))
}

fn pad(s: &str, spec: Spec, numeric: bool) -> String {
    let Some(width) = spec.width else { return s.to_string() };
    let len = s.chars().count();
    if len >= width {
        return s.to_string();
    }
    let fill = width - len;
    if spec.minus {
        format!("{s}{}", " ".repeat(fill))
    } else if spec.zero && numeric {
        let (sign, digits) = match s.strip_prefix(['-', '+']) {
            Some(rest) => (&s[..1], rest),
            None => ("", s),
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{s}", " ".repeat(fill))
    }
}

fn bad(verb: char, arg: &Value) -> String {
    match arg {
        Value::Nil | Value::Invalid => format!("%!{verb}(<nil>)"),
        other => format!("%!{verb}({}={})", other.type_name(), other.print()),
    }
}

fn signed(n: String, negative: bool, spec: Spec) -> String {
    if negative {
        format!("-{n}")
    } else if spec.plus {
        format!("+{n}")
    } else if spec.space {
        format!(" {n}")
    } else {
        n
    }
}

fn format_one(verb: char, spec: Spec, arg: &Value) -> String {
    match (verb, arg) {
        ('v', Value::Float(f)) => signed(format_float_v(f.abs()), *f < 0.0, spec),
        ('v', Value::Int(n)) => signed(n.unsigned_abs().to_string(), *n < 0, spec),
        ('v', Value::Str(s)) if spec.sharp => quote(s),
        ('v', Value::Nil | Value::Invalid) => "<nil>".into(),
        ('v', other) => other.print(),
        ('s', Value::Str(s)) => truncate(s, spec.precision),
        ('s', Value::List(items)) => {
            let parts: Vec<String> = items.iter().map(|i| format_one('s', spec, i)).collect();
            format!("[{}]", parts.join(" "))
        }
        ('s', Value::Map(_) | Value::Object(_)) => arg.print(),
        ('q', Value::Str(s)) => quote(s),
        ('q', Value::Int(n)) => char::from_u32(*n as u32).map(|c| format!("{c:?}")).unwrap_or_else(|| bad(verb, arg)),
        ('t', Value::Bool(b)) => b.to_string(),
        ('d', Value::Int(n)) => signed(n.unsigned_abs().to_string(), *n < 0, spec),
        ('b', Value::Int(n)) => signed(format!("{:b}", n.unsigned_abs()), *n < 0, spec),
        ('o', Value::Int(n)) => {
            signed(format!("{}{:o}", if spec.sharp { "0" } else { "" }, n.unsigned_abs()), *n < 0, spec)
        }
        ('x', Value::Int(n)) => {
            signed(format!("{}{:x}", if spec.sharp { "0x" } else { "" }, n.unsigned_abs()), *n < 0, spec)
        }
        ('X', Value::Int(n)) => {
            signed(format!("{}{:X}", if spec.sharp { "0X" } else { "" }, n.unsigned_abs()), *n < 0, spec)
        }
        ('x', Value::Str(s)) => s.bytes().map(|b| format!("{b:02x}")).collect(),
        ('X', Value::Str(s)) => s.bytes().map(|b| format!("{b:02X}")).collect(),
        ('c', Value::Int(n)) => char::from_u32(*n as u32).map(String::from).unwrap_or_else(|| "\u{fffd}".into()),
        ('U', Value::Int(n)) => format!("U+{n:04X}"),
        ('f' | 'F', Value::Float(f)) => signed(format!("{:.*}", spec.precision.unwrap_or(6), f.abs()), *f < 0.0, spec),
        ('e' | 'E', Value::Float(f)) => {
            let s = go_exp(f.abs(), spec.precision.unwrap_or(6));
            signed(if verb == 'E' { s.to_uppercase() } else { s }, *f < 0.0, spec)
        }
        ('g' | 'G', Value::Float(f)) => match spec.precision {
            None => signed(format_float_v(f.abs()), *f < 0.0, spec),
            Some(p) => signed(format!("{:.*}", p.saturating_sub(1), f.abs()), *f < 0.0, spec),
        },
        _ => bad(verb, arg),
    }
}

/// `%e` as Go writes it: two exponent digits at least.
fn go_exp(f: f64, precision: usize) -> String {
    let s = format!("{f:.precision$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

fn truncate(s: &str, precision: Option<usize>) -> String {
    match precision {
        Some(p) => s.chars().take(p).collect(),
        None => s.to_string(),
    }
}

/// A string as Go's `strconv.Quote` writes it.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `fmt.Sprint(args...)`: a space between operands when neither is a string.
pub fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, Value::Str(_)) && !matches!(args[i - 1], Value::Str(_)) {
            out.push(' ');
        }
        out.push_str(&print_operand(a));
    }
    out
}

/// `fmt.Sprintln(args...)`: spaces between all operands, a newline at the end.
pub fn sprintln(args: &[Value]) -> String {
    let parts: Vec<String> = args.iter().map(print_operand).collect();
    format!("{}\n", parts.join(" "))
}

fn print_operand(v: &Value) -> String {
    match v {
        Value::Invalid | Value::Nil => "<nil>".into(),
        other => other.print(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_flags_and_mismatches_as_go_prints_them() {
        let s = |x: &str| Value::from(x);
        assert_eq!(sprintf("%s-%s", &[s("a"), s("b")]), "a-b");
        assert_eq!(sprintf("%d/%05d/%-4d|", &[Value::Int(7), Value::Int(-42), Value::Int(3)]), "7/-0042/3   |");
        assert_eq!(sprintf("%v %v", &[Value::Float(1e6), Value::Int(3)]), "1e+06 3");
        assert_eq!(sprintf("%s", &[Value::Float(80.0)]), "%!s(float64=80)");
        assert_eq!(sprintf("%d", &[s("x")]), "%!d(string=x)");
        assert_eq!(sprintf("%q", &[s("a\"b\n")]), r#""a\"b\n""#);
        assert_eq!(sprintf("%.2f %e", &[Value::Float(1.23456), Value::Float(1234.5)]), "1.23 1.234500e+03");
        assert_eq!(sprintf("%x %X", &[Value::Int(255), s("hi")]), "ff 6869");
        assert_eq!(sprintf("%s %s", &[s("a")]), "a %!s(MISSING)");
        assert_eq!(sprintf("%s", &[s("a"), Value::Int(1)]), "a%!(EXTRA int=1)");
        assert_eq!(sprintf("100%%", &[]), "100%");
        assert_eq!(sprintf("%v", &[Value::Nil]), "<nil>");
        assert_eq!(sprintf("%6.2f|%-6s|%6s", &[Value::Float(2.5), s("ab"), s("cd")]), "  2.50|ab    |    cd");
    }

    #[test]
    fn sprint_spaces_operands_that_are_not_strings() {
        assert_eq!(sprint(&[Value::Int(1), Value::Int(2), Value::from("a"), Value::Int(3)]), "1 2a3");
        assert_eq!(sprintln(&[Value::from("a"), Value::Int(1)]), "a 1\n");
    }
}
