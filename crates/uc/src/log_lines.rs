//! One log record per line: a field value with line breaks in it (a hook's stderr, an error quoting a
//! manifest) is written with `\n` escaped, so every line of uc's log starts with a timestamp and a
//! level, and `grep`/`journalctl` see whole records.

use std::borrow::Cow;
use std::io::{self, Write};

use tracing_subscriber::fmt::MakeWriter;

/// A record as one line: breaks inside it escaped, its own final newline kept.
pub fn one_line(record: &[u8]) -> Cow<'_, [u8]> {
    let body = record.strip_suffix(b"\n").unwrap_or(record);
    if !body.iter().any(|b| *b == b'\n' || *b == b'\r') {
        return Cow::Borrowed(record);
    }
    let mut out = Vec::with_capacity(record.len() + 16);
    for b in body {
        match b {
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b => out.push(*b),
        }
    }
    if body.len() < record.len() {
        out.push(b'\n');
    }
    Cow::Owned(out)
}

/// Standard error, a record at a time (tracing's formatter writes each record with one `write_all`).
pub struct Stderr;

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = OneLine;

    fn make_writer(&'a self) -> OneLine {
        OneLine
    }
}

/// The writer of one record.
pub struct OneLine;

impl Write for OneLine {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_all(buf)?;
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        io::stderr().lock().write_all(&one_line(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breaks_inside_a_record_are_escaped_and_its_end_kept() {
        let record = b"2026-11-28T00:00:00Z  INFO uc: hook said stderr=\"line one\nline two\r\n\"\n";
        assert_eq!(
            one_line(record).as_ref(),
            b"2026-11-28T00:00:00Z  INFO uc: hook said stderr=\"line one\\nline two\\r\\n\"\n"
        );
        assert!(matches!(one_line(b"plain record\n"), Cow::Borrowed(_)));
        assert_eq!(one_line(b"no end\nat all").as_ref(), b"no end\\nat all");
    }
}
