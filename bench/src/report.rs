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
