//! Container logs in the CRI format the kubelet's runtimes write (`<RFC 3339 nano time> <stream>
//! <F|P> <content>`, one line per line of output, `P` for the pieces of a line longer than a read), and
//! how `kubectl logs` options read them back: `--timestamps`, `--since`/`--since-time`, `--tail`,
//! `--limit-bytes`. Writing happens in the container's shim; reading in the node's log endpoint.

use crate::invalid::Invalid;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::time::Duration;

use bytes::Bytes;
use chrono::{DateTime, SecondsFormat, Utc};
use tokio::sync::mpsc;

/// Which output a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Stream {
    fn tag(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// The longest piece of a line written as one log line; longer lines are split into partial lines.
pub const MAX_LINE: usize = 16 * 1024;

/// One log line: `content` without its newline; `partial` when the line goes on in the next entry.
pub fn format_line(at: DateTime<Utc>, stream: Stream, partial: bool, content: &[u8]) -> Vec<u8> {
    let ts = at.to_rfc3339_opts(SecondsFormat::Nanos, true);
    let mut out = Vec::with_capacity(ts.len() + content.len() + 12);
    out.extend_from_slice(ts.as_bytes());
    out.push(b' ');
    out.extend_from_slice(stream.tag().as_bytes());
    out.extend_from_slice(if partial { b" P " } else { b" F " });
    out.extend_from_slice(content);
    out.push(b'\n');
    out
}

/// A parsed log line.
#[derive(Debug, PartialEq)]
pub struct Entry<'a> {
    /// When it was written, as written.
    pub time: &'a str,
    /// Which output.
    pub stream: Stream,
    /// The line continues in the next entry.
    pub partial: bool,
    /// The output, without its newline.
    pub content: &'a [u8],
}

/// Parses one line (without its trailing newline). Lines that are not in the format are taken as
/// whole stdout lines with no time (so a hand-written file still reads).
pub fn parse_line(line: &[u8]) -> Entry<'_> {
    let plain = Entry { time: "", stream: Stream::Stdout, partial: false, content: line };
    let mut parts = line.splitn(4, |b| *b == b' ');
    let (Some(time), Some(stream), Some(tag)) = (parts.next(), parts.next(), parts.next()) else { return plain };
    let stream = match stream {
        b"stdout" => Stream::Stdout,
        b"stderr" => Stream::Stderr,
        _ => return plain,
    };
    let partial = match tag {
        b"P" => true,
        b"F" => false,
        _ => return plain,
    };
    let Ok(time) = std::str::from_utf8(time) else { return plain };
    if DateTime::parse_from_rfc3339(time).is_err() {
        return plain;
    }
    Entry { time, stream, partial, content: parts.next().unwrap_or_default() }
}

/// What `kubectl logs` asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadOptions {
    /// Prefix each line with its time.
    pub timestamps: bool,
    /// Only lines written at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Only the last lines.
    pub tail: Option<usize>,
    /// Stop after this many bytes.
    pub limit_bytes: Option<usize>,
}

impl ReadOptions {
    /// From the query of a log request (`timestamps`, `sinceSeconds`, `sinceTime`, `tailLines`,
    /// `limitBytes`), as of `now`.
    pub fn from_query(query: &[(String, String)], now: DateTime<Utc>) -> Result<ReadOptions, Invalid> {
        let get = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        let number = |k: &str| -> Result<Option<i64>, Invalid> {
            get(k).map(|v| v.parse::<i64>().map_err(|_| Invalid::new(k, format!("{v:?} is not a number")))).transpose()
        };
        let mut o = ReadOptions {
            timestamps: get("timestamps").is_some_and(|v| v == "true" || v == "1"),
            ..Default::default()
        };
        if let Some(s) = number("sinceSeconds")? {
            if s < 1 {
                return Err(Invalid::new("sinceSeconds", "must be greater than 0"));
            }
            o.since = Some(now - chrono::Duration::seconds(s));
        }
        if let Some(t) = get("sinceTime") {
            let t = DateTime::parse_from_rfc3339(t).map_err(|e| Invalid::new("sinceTime", format!("{t:?}: {e}")))?;
            o.since = Some(t.with_timezone(&Utc));
        }
        if let Some(n) = number("tailLines")? {
            o.tail = usize::try_from(n).ok();
        }
        if let Some(n) = number("limitBytes")? {
            if n < 1 {
                return Err(Invalid::new("limitBytes", "must be greater than 0"));
            }
            o.limit_bytes = usize::try_from(n).ok();
        }
        Ok(o)
    }
}

/// Turns log lines into what `kubectl logs` prints, keeping state across calls so a followed log can
/// be rendered piece by piece.
#[derive(Debug, Default)]
pub struct Renderer {
    options: ReadOptions,
    written: usize,
    /// The previous entry was partial: the next one continues its line (no timestamp again).
    in_line: bool,
    /// The line being continued was filtered out (`since`): so are its other pieces.
    skip_rest: bool,
}

impl Renderer {
    /// A renderer for these options.
    pub fn new(options: ReadOptions) -> Renderer {
        Renderer { options, written: 0, in_line: false, skip_rest: false }
    }

    /// Whether `limitBytes` has been reached.
    pub fn full(&self) -> bool {
        self.options.limit_bytes.is_some_and(|l| self.written >= l)
    }

    /// The start of what to show of `data` (whole lines) for `tailLines`: the offset of the first
    /// of the last `n` logical lines.
    pub fn tail_start(&self, data: &[u8]) -> usize {
        let Some(n) = self.options.tail else { return 0 };
        if n == 0 {
            return data.len();
        }
        // Walk back over complete lines; a partial entry belongs to the line it starts.
        let mut starts = Vec::new();
        let mut pos = 0;
        let mut line_start = true;
        for line in data.split_inclusive(|b| *b == b'\n') {
            if line_start {
                starts.push(pos);
            }
            line_start = !parse_line(line.strip_suffix(b"\n").unwrap_or(line)).partial;
            pos += line.len();
        }
        if starts.len() <= n { 0 } else { starts[starts.len() - n] }
    }

    /// Renders complete lines of `data` (each ending in a newline; a trailing piece without one is
    /// left for later and its length not counted). Returns the output and how many bytes of `data`
    /// were consumed.
    pub fn render(&mut self, data: &[u8]) -> (Vec<u8>, usize) {
        let mut out = Vec::new();
        let mut consumed = 0;
        for line in data.split_inclusive(|b| *b == b'\n') {
            if !line.ends_with(b"\n") || self.full() {
                break;
            }
            consumed += line.len();
            let e = parse_line(&line[..line.len() - 1]);
            let continuing = self.in_line;
            self.in_line = e.partial;
            if !continuing {
                self.skip_rest = self.options.since.is_some_and(|since| {
                    DateTime::parse_from_rfc3339(e.time).is_ok_and(|t| t.with_timezone(&Utc) < since)
                });
            }
            if self.skip_rest {
                continue;
            }
            let mut piece = Vec::with_capacity(e.content.len() + 40);
            if self.options.timestamps && !continuing {
                piece.extend_from_slice(e.time.as_bytes());
                piece.push(b' ');
            }
            piece.extend_from_slice(e.content);
            if !e.partial {
                piece.push(b'\n');
            }
            if let Some(limit) = self.options.limit_bytes {
                piece.truncate(limit - self.written);
            }
            self.written += piece.len();
            out.extend_from_slice(&piece);
        }
        (out, consumed)
    }
}

/// Follows a log: renders what is appended to `file` after `offset` and sends it, until `done()` says
/// its writer has finished (checked before each read, so what it wrote before the end is still sent),
/// `limitBytes` is reached, or the receiver goes. Used by `kubectl logs -f` and `kubectl attach`.
pub async fn follow(
    file: PathBuf,
    mut offset: u64,
    mut renderer: Renderer,
    tx: mpsc::Sender<Bytes>,
    done: impl Fn() -> bool,
) {
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let over = done();
        let mut appended = Vec::new();
        if let Ok(mut f) = std::fs::File::open(&file)
            && f.seek(SeekFrom::Start(offset)).is_ok()
        {
            let _ = f.read_to_end(&mut appended);
        }
        if !appended.is_empty() {
            offset += appended.len() as u64;
            pending.extend_from_slice(&appended);
            let (out, used) = renderer.render(&pending);
            pending.drain(..used);
            if !out.is_empty() && tx.send(Bytes::from(out)).await.is_err() {
                return;
            }
        }
        if over || renderer.full() || tx.is_closed() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn log() -> Vec<u8> {
        let mut data = Vec::new();
        data.extend(format_line(at("2026-01-01T00:00:01Z"), Stream::Stdout, false, b"one"));
        data.extend(format_line(at("2026-01-01T00:00:02Z"), Stream::Stderr, true, b"tw"));
        data.extend(format_line(at("2026-01-01T00:00:02.5Z"), Stream::Stderr, false, b"o"));
        data.extend(format_line(at("2026-01-01T00:00:03Z"), Stream::Stdout, false, b"three"));
        data
    }

    fn read(options: ReadOptions, data: &[u8]) -> String {
        let mut r = Renderer::new(options);
        let start = r.tail_start(data);
        String::from_utf8(r.render(&data[start..]).0).unwrap()
    }

    #[test]
    fn lines_round_trip_through_the_cri_format() {
        let line = format_line(at("2026-01-01T00:00:01.000000002Z"), Stream::Stderr, true, b"a b c");
        assert_eq!(line, b"2026-01-01T00:00:01.000000002Z stderr P a b c\n");
        let e = parse_line(&line[..line.len() - 1]);
        assert_eq!(
            e,
            Entry { time: "2026-01-01T00:00:01.000000002Z", stream: Stream::Stderr, partial: true, content: b"a b c" }
        );
        assert_eq!(parse_line(b"not a log line").content, b"not a log line");
    }

    #[test]
    fn kubectl_logs_options() {
        let data = log();
        assert_eq!(read(ReadOptions::default(), &data), "one\ntwo\nthree\n");
        let ts = ReadOptions { timestamps: true, ..Default::default() };
        assert_eq!(
            read(ts, &data),
            "2026-01-01T00:00:01.000000000Z one\n2026-01-01T00:00:02.000000000Z two\n2026-01-01T00:00:03.000000000Z three\n"
        );
        let tail = ReadOptions { tail: Some(2), ..Default::default() };
        assert_eq!(read(tail, &data), "two\nthree\n", "a line split in pieces counts once");
        assert_eq!(read(ReadOptions { tail: Some(0), ..Default::default() }, &data), "");
        let since = ReadOptions { since: Some(at("2026-01-01T00:00:02.1Z")), ..Default::default() };
        assert_eq!(read(since, &data), "three\n", "a line is kept or dropped whole, by its first piece");
        let limit = ReadOptions { limit_bytes: Some(6), ..Default::default() };
        assert_eq!(read(limit, &data), "one\ntw");
    }

    #[test]
    fn a_followed_log_renders_piece_by_piece() {
        let data = log();
        let mut r = Renderer::new(ReadOptions::default());
        let cut = 20; // inside the first line
        let (out, used) = r.render(&data[..cut]);
        assert_eq!((out.len(), used), (0, 0), "an incomplete line waits");
        let (out, used) = r.render(&data);
        assert_eq!(String::from_utf8(out).unwrap(), "one\ntwo\nthree\n");
        assert_eq!(used, data.len());
    }

    #[tokio::test]
    async fn following_sends_what_is_appended_until_the_writer_is_done() {
        let file = std::env::temp_dir().join(format!("uc-follow-test-{}.log", std::process::id()));
        std::fs::write(&file, format_line(at("2026-01-01T00:00:01Z"), Stream::Stdout, false, b"old")).unwrap();
        let start = std::fs::metadata(&file).unwrap().len();
        let (tx, mut rx) = mpsc::channel(8);
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d = done.clone();
        let task = tokio::spawn(follow(file.clone(), start, Renderer::default(), tx, move || {
            d.load(std::sync::atomic::Ordering::SeqCst)
        }));
        let mut f = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
        std::io::Write::write_all(&mut f, &format_line(at("2026-01-01T00:00:02Z"), Stream::Stdout, false, b"new"))
            .unwrap();
        assert_eq!(rx.recv().await.unwrap(), Bytes::from_static(b"new\n"), "only what came after the offset");
        std::io::Write::write_all(&mut f, &format_line(at("2026-01-01T00:00:03Z"), Stream::Stderr, false, b"last"))
            .unwrap();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        let mut rest = Vec::new();
        while let Some(b) = rx.recv().await {
            rest.extend_from_slice(&b);
        }
        assert_eq!(rest, b"last\n", "what was written before the end is sent, then the stream ends");
        task.await.unwrap();
        let _ = std::fs::remove_file(file);
    }

    #[test]
    fn query_parameters() {
        let q = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
        };
        let now = at("2026-01-01T00:01:00Z");
        let o = ReadOptions::from_query(&q(&[("sinceSeconds", "30"), ("timestamps", "true"), ("tailLines", "5")]), now)
            .unwrap();
        assert_eq!(
            o,
            ReadOptions { timestamps: true, since: Some(at("2026-01-01T00:00:30Z")), tail: Some(5), limit_bytes: None }
        );
        assert!(ReadOptions::from_query(&q(&[("limitBytes", "0")]), now).unwrap_err().field == "limitBytes");
        assert!(ReadOptions::from_query(&q(&[("sinceTime", "yesterday")]), now).unwrap_err().field == "sinceTime");
    }
}
