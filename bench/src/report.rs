//! Writing a benchmark's section into docs/benchmarks.md between its begin/end markers.

use std::path::Path;

/// Replaces (or appends) the section named `name` of the report at `path`.
pub fn write_section(path: &Path, name: &str, section: &str) -> anyhow::Result<()> {
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let existing = std::fs::read_to_string(path).unwrap_or_else(|_| "# Benchmarks\n".to_string());
    let block = format!("{begin}\n{section}{end}");
    let updated = match (existing.find(&begin), existing.find(&end)) {
        (Some(b), Some(e)) if e > b => format!("{}{}{}", &existing[..b], block, &existing[e + end.len()..]),
        _ => format!("{}\n\n{}\n", existing.trim_end(), block),
    };
    std::fs::write(path, updated)?;
    Ok(())
}

/// Today's date (UTC, `YYYY-MM-DD`), for the "measured on" line of a section.
pub fn today() -> String {
    let out = std::process::Command::new("date").args(["-u", "+%Y-%m-%d"]).output();
    out.ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
}

/// The machine's cores, for the "measured on" line of a section.
pub fn cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
}

/// A target's verdict column.
pub fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}
