//! `uc snapshot save FILE` and `uc snapshot restore FILE DIR`, as `etcdctl snapshot save` and
//! `etcdutl snapshot restore`: every object of a store at one revision, in the store's own snapshot
//! format (checksummed records), saved from a running or stopped cluster's files, and restored as the
//! store of a new data directory.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use crate::stored::StoreError;
use crate::wal::{Change, encode, io, read_records, scan};
use crate::wal_integrity::Manifest;

/// Writes every object of the store in `store_dir` (its durable, intact state: a torn tail left out)
/// to `file`; what it saved, in words. A damaged store is refused with its damage.
pub fn save(store_dir: &Path, file: &Path) -> Result<String, StoreError> {
    let found = scan(store_dir)?;
    if let Some(d) = found.damage {
        return Err(StoreError::Backend(d.to_string()));
    }
    let mut objects: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for record in found.records {
        for (key, value) in record.changes {
            match value {
                Some(v) => objects.insert(key, v),
                None => objects.remove(&key),
            };
        }
    }
    let tmp = file.with_extension("part");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&tmp).map_err(io(&tmp))?);
    let all: Vec<(&String, &Vec<u8>)> = objects.iter().collect();
    for chunk in all.chunks(512) {
        let changes: Vec<Change<'_>> = chunk.iter().map(|(k, v)| Change { key: k, value: Some(v) }).collect();
        out.write_all(&encode(0, &changes)).map_err(io(&tmp))?;
    }
    out.write_all(&encode(found.revision, &[])).map_err(io(&tmp))?;
    let written = out.into_inner().map_err(|e| StoreError::Backend(format!("{}: {e}", tmp.display())))?;
    written.sync_all().map_err(io(&tmp))?;
    std::fs::rename(&tmp, file).map_err(io(file))?;
    Ok(format!("saved {} objects at revision {} to {}", objects.len(), found.revision, file.display()))
}

/// Makes `file` (a saved snapshot) the store of the data directory `data_dir`, which must hold no store
/// yet; what it restored, in words. `uc up --data-dir DATA_DIR` then starts at that revision.
pub fn restore(file: &Path, data_dir: &Path) -> Result<String, StoreError> {
    let (records, _, clean) = read_records(file)?;
    let revision = records.last().map(|r| r.revision).unwrap_or(0);
    if !clean || records.last().is_none_or(|r| !r.changes.is_empty()) {
        return Err(StoreError::Backend(format!("{} is not a whole snapshot (damaged or cut short)", file.display())));
    }
    let store = data_dir.join("store");
    let taken = std::fs::read_dir(&store)
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("wal-") || e.file_name() == "snapshot")
        })
        .unwrap_or(false);
    if taken {
        return Err(StoreError::Backend(format!(
            "{} already holds a store; restore into a new data directory",
            store.display()
        )));
    }
    std::fs::create_dir_all(&store).map_err(io(&store))?;
    let target = store.join("snapshot");
    std::fs::copy(file, &target).map_err(io(&target))?;
    std::fs::File::open(&target).and_then(|f| f.sync_all()).map_err(io(&target))?;
    Manifest { segments: Vec::new(), sealed: Some(revision) }.write(&store).map_err(|e| StoreError::Backend(e.0))?;
    let objects: usize = records.iter().map(|r| r.changes.len()).sum();
    Ok(format!("restored {objects} objects at revision {revision} into {}", data_dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::Wal;

    #[test]
    fn a_saved_snapshot_restores_every_object_at_its_revision() {
        let from = tempfile::tempdir().unwrap();
        {
            let (mut wal, _) = Wal::open(from.path()).unwrap();
            wal.append(1, &[Change { key: "/configmaps/default/a", value: Some(b"{\"v\":1}") }]).unwrap();
            wal.append(2, &[Change { key: "/configmaps/default/b", value: Some(b"{\"v\":2}") }]).unwrap();
            wal.append(3, &[Change { key: "/configmaps/default/a", value: None }]).unwrap();
        }
        let file = from.path().join("saved.db");
        assert!(save(from.path(), &file).unwrap().starts_with("saved 1 objects at revision 3"));
        let to = tempfile::tempdir().unwrap();
        assert!(restore(&file, to.path()).unwrap().starts_with("restored 1 objects at revision 3"));
        let (_, rec) = Wal::open(&to.path().join("store")).unwrap();
        let keys: Vec<&str> = rec.records.iter().flat_map(|r| r.changes.iter().map(|(k, _)| k.as_str())).collect();
        assert_eq!((keys, rec.snapshot_revision), (vec!["/configmaps/default/b"], 3));
        assert!(restore(&file, to.path()).unwrap_err().to_string().contains("already holds a store"));
        let cut = from.path().join("cut.db");
        std::fs::write(&cut, &std::fs::read(&file).unwrap()[..20]).unwrap();
        assert!(restore(&cut, tempfile::tempdir().unwrap().path()).is_err(), "a cut snapshot is refused");
    }
}
