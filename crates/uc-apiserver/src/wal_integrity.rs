//! What tells a damaged store from a torn tail, as etcd's WAL does: records are contiguous in revision
//! (each names its last revision and holds one change per revision), a damaged record followed by an
//! intact one is damage (a torn write is always the last), and a manifest lists every segment made and,
//! after a clean stop, the revision the store stopped at — so a missing, emptied or cut segment is found
//! even when what remains reads cleanly. Pure but for the manifest's file.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Why the store's manifest could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IntegrityError(pub String);

impl From<String> for IntegrityError {
    fn from(message: String) -> Self {
        IntegrityError(message)
    }
}

impl From<&str> for IntegrityError {
    fn from(message: &str) -> Self {
        IntegrityError(message.to_string())
    }
}

impl From<IntegrityError> for String {
    fn from(e: IntegrityError) -> String {
        e.0
    }
}

/// Where a store is damaged, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Damage {
    /// The file.
    pub file: PathBuf,
    /// The byte where the intact prefix of that file ends.
    pub offset: u64,
    /// What is wrong.
    pub what: String,
    /// The last revision of the intact prefix.
    pub intact_revision: u64,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let dir = self.file.parent().unwrap_or(Path::new(".")).display().to_string();
        write!(
            f,
            "the store is damaged: {} at byte {}: {}. Nothing was changed; `uc store check {dir}` describes the \
             damage, `uc store repair {dir}` keeps the intact prefix (through revision {}) and drops the rest, or \
             restore a snapshot (`uc snapshot restore`)",
            self.file.display(),
            self.offset,
            self.what,
            self.intact_revision
        )
    }
}

/// The first revision a log record holds (it names its last, and holds one change per revision).
pub fn first_revision(revision: u64, changes: usize) -> u64 {
    revision + 1 - (changes.max(1) as u64)
}

/// Where an intact record starts in `bytes` after `from` (a damaged record's start), if one does: it
/// frames a payload whose checksum holds and whose revision follows `after`. Then the damage is not a
/// torn tail, which is always the last thing written.
pub fn later_record(bytes: &[u8], from: usize, after: u64) -> Option<usize> {
    let u32_at = |at: usize| bytes.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    (from + 1..bytes.len().saturating_sub(19)).find(|&at| {
        let (Some(len), Some(crc)) = (u32_at(at), u32_at(at + 4)) else { return false };
        let len = len as usize;
        let Some(payload) = bytes.get(at + 8..at + 8 + len).filter(|_| len >= 12) else { return false };
        let revision = u64::from_le_bytes(payload[..8].try_into().unwrap_or_default());
        revision > after && revision <= after.saturating_add(1 << 24) && crc32fast::hash(payload) == crc
    })
}

/// The store's list of segments (by first revision) and, after a clean stop, the revision it reached.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    pub segments: Vec<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<u64>,
}

const MANIFEST: &str = "MANIFEST";

impl Manifest {
    /// The manifest in `dir`; None for a store made before manifests (or a new one).
    pub fn read(dir: &Path) -> Result<Option<Manifest>, IntegrityError> {
        let path = dir.join(MANIFEST);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes).map(Some).map_err(|e| IntegrityError(format!("{}: {e}", path.display())))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(IntegrityError::from(format!("{}: {e}", path.display()))),
        }
    }

    /// Writes it durably (a new file renamed over the old one).
    pub fn write(&self, dir: &Path) -> Result<(), IntegrityError> {
        let path = dir.join(MANIFEST);
        let tmp = dir.join("MANIFEST.tmp");
        let bytes = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        let file = std::fs::File::create(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::io::Write::write_all(&mut &file, &bytes).map_err(|e| format!("{}: {e}", tmp.display()))?;
        file.sync_all().map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| IntegrityError(format!("{}: {e}", dir.display())))
    }

    /// What the files found say against the manifest: a segment it lists (after the snapshot's
    /// revision `base`) that is gone, or a log that ends before the revision of a clean stop.
    pub fn missing(&self, base: u64, found: &[u64], reached: u64) -> Option<String> {
        if let Some(first) = self.segments.iter().find(|f| **f > base && !found.contains(f)) {
            return Some(format!("log segment wal-{first:020}.log is missing"));
        }
        match self.sealed {
            Some(sealed) if reached < sealed => Some(format!(
                "the log ends at revision {reached}, but the store stopped cleanly at revision {sealed}: records were emptied or cut"
            )),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(revision: u64) -> Vec<u8> {
        let mut payload = revision.to_le_bytes().to_vec();
        payload.extend_from_slice(&0u32.to_le_bytes());
        let mut out = (payload.len() as u32).to_le_bytes().to_vec();
        out.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    #[test]
    fn an_intact_record_after_a_damaged_one_is_found() {
        let mut bytes = [record(1), record(2), record(3)].concat();
        let second = record(1).len();
        bytes[second + 9] ^= 0xff; // the second record's payload
        assert_eq!(later_record(&bytes, second, 1), Some(second * 2), "the third is intact");
        let torn = [record(1), record(2)[..10].to_vec(), vec![0; 64]].concat();
        assert_eq!(later_record(&torn, second, 1), None, "a torn tail has nothing after it");
        assert_eq!(first_revision(10, 3), 8);
    }

    #[test]
    fn the_manifest_finds_missing_segments_and_a_cut_log() {
        let m = Manifest { segments: vec![1, 401], sealed: Some(800) };
        assert_eq!(m.missing(0, &[1, 401], 800), None);
        assert_eq!(m.missing(0, &[1], 400).unwrap(), "log segment wal-00000000000000000401.log is missing");
        assert!(m.missing(500, &[], 800).is_none(), "segments a snapshot replaced may go");
        assert!(m.missing(0, &[1, 401], 400).unwrap().contains("stopped cleanly at revision 800"));
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), None);
        m.write(dir.path()).unwrap();
        assert_eq!(Manifest::read(dir.path()).unwrap(), Some(m));
    }

    /// A log of 12 records; its segment's bytes (records only) and the revision after each record.
    fn written_log() -> (tempfile::TempDir, std::path::PathBuf, Vec<u8>, Vec<(usize, u64)>) {
        use crate::wal::{Change, Wal};
        let dir = tempfile::tempdir().unwrap();
        let (mut wal, _) = Wal::open(dir.path()).unwrap();
        let mut ends = Vec::new();
        let mut rev = 0;
        for i in 0..12u64 {
            let keys: Vec<String> = (0..=i % 3).map(|j| format!("/configmaps/default/k{i}-{j}")).collect();
            let changes: Vec<Change<'_>> = keys.iter().map(|k| Change { key: k, value: Some(b"{\"v\":1}") }).collect();
            rev += changes.len() as u64;
            wal.append(rev, &changes).unwrap();
            ends.push(rev);
        }
        drop(wal);
        let seg = dir.path().join("wal-00000000000000000001.log");
        let bytes = std::fs::read(&seg).unwrap();
        let end = bytes.len() - bytes.iter().rev().take_while(|b| **b == 0).count();
        let records = bytes[..end].to_vec();
        let (recs, _, _) = crate::wal::read_records(&seg).unwrap();
        let mut at = 0;
        let offsets = recs
            .iter()
            .zip(&ends)
            .map(|(r, rev)| {
                at += 8
                    + 12
                    + r.changes
                        .iter()
                        .map(|(k, v)| 4 + k.len() + 1 + v.as_ref().map_or(0, |v| 4 + v.len()))
                        .sum::<usize>();
                (at, *rev)
            })
            .collect();
        (dir, seg, records, offsets)
    }

    #[test]
    fn a_crash_at_any_byte_reopens_at_the_last_whole_record() {
        let (dir, seg, records, offsets) = written_log();
        assert_eq!(offsets.last().unwrap().0, records.len(), "the record sizes add up");
        for cut in 0..=records.len() {
            let _ = std::fs::remove_file(dir.path().join("MANIFEST"));
            for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
                if e.file_name().to_string_lossy().starts_with("wal-") {
                    std::fs::remove_file(e.path()).unwrap();
                }
            }
            std::fs::write(&seg, &records[..cut]).unwrap();
            let expected = offsets.iter().take_while(|(end, _)| *end <= cut).last().map_or(0, |(_, rev)| *rev);
            let (_, rec) = crate::wal::Wal::open(dir.path()).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            let got = rec.records.last().map_or(0, |r| r.revision);
            assert_eq!(got, expected, "cut at byte {cut}");
        }
    }

    #[test]
    fn a_flipped_byte_anywhere_is_refused_or_is_the_torn_last_record() {
        let (dir, seg, records, offsets) = written_log();
        let last_start = offsets[offsets.len() - 2].0;
        for at in 0..records.len() {
            let mut damaged = records.clone();
            damaged[at] ^= 0x5a;
            let _ = std::fs::remove_file(dir.path().join("MANIFEST"));
            for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
                if e.file_name().to_string_lossy().starts_with("wal-") {
                    std::fs::remove_file(e.path()).unwrap();
                }
            }
            std::fs::write(&seg, &damaged).unwrap();
            match crate::wal::Wal::open(dir.path()) {
                Err(e) => assert!(at < last_start && e.to_string().contains("the store is damaged"), "byte {at}: {e}"),
                Ok((_, rec)) => {
                    // Only damage to the last record reads as a torn write: everything before it is kept.
                    assert!(at >= last_start, "byte {at} was damaged and nothing noticed");
                    assert_eq!(rec.records.last().unwrap().revision, offsets[offsets.len() - 2].1, "byte {at}");
                }
            }
        }
    }
}
