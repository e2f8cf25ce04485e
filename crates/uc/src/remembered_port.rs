//! A data directory remembers the port its API server had, so `uc up` run again with the same command
//! — `--port 0` included — serves where its kubeconfig, and the clusters that joined it, say it is.
//!
//! The port is kept in `<data-dir>/port` once the server serves. `--port N` always wins; `--port 0`
//! (or `UC_PORT=0`) means "a free port, kept for this directory"; no `--port` means the remembered
//! port, else 6443.

use std::path::{Path, PathBuf};

/// The API server's port when neither `--port` nor a remembered port says otherwise.
pub const DEFAULT_PORT: u16 = 6443;

/// The port to serve on (0: a free one): what was asked, unless it was "any" or nothing and the
/// directory remembers one.
pub fn choose(asked: Option<u16>, remembered: Option<u16>) -> u16 {
    match (asked, remembered) {
        (Some(n), _) if n != 0 => n,
        (_, Some(r)) => r,
        (Some(_), None) => 0,
        (None, None) => DEFAULT_PORT,
    }
}

fn file(data_dir: &Path) -> PathBuf {
    data_dir.join("port")
}

/// The port the directory's last `uc up` served on, if it kept one that reads as a port.
pub fn read(data_dir: &Path) -> Option<u16> {
    std::fs::read_to_string(file(data_dir)).ok()?.trim().parse().ok().filter(|p| *p != 0)
}

/// Keeps `port` for the next `uc up` on the directory.
pub fn write(data_dir: &Path, port: u16) -> std::io::Result<()> {
    std::fs::write(file(data_dir), format!("{port}\n"))
}

/// The port to serve on, read from the directory and checked: a remembered port another program holds
/// now is given up for a free one when any port was asked for (the kubeconfig then names the new one),
/// and kept otherwise (the server then says the address is in use).
pub fn resolve(data_dir: &Path, asked: Option<u16>) -> u16 {
    let remembered = read(data_dir);
    let port = choose(asked, remembered);
    let any = asked.is_none_or(|n| n == 0);
    if any && remembered == Some(port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
        tracing::warn!(port, "the port this data directory had is taken; serving on a free one");
        return if asked == Some(0) { 0 } else { DEFAULT_PORT };
    }
    port
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_asked_port_wins_and_any_or_none_reuse_the_remembered_one() {
        assert_eq!(choose(Some(7000), Some(41000)), 7000);
        assert_eq!(choose(Some(0), Some(41000)), 41000, "--port 0 again: the port it had");
        assert_eq!(choose(None, Some(41000)), 41000, "no --port: the port it had");
        assert_eq!(choose(Some(0), None), 0, "a new directory with --port 0: any free port");
        assert_eq!(choose(None, None), DEFAULT_PORT);
    }

    #[test]
    fn the_port_is_kept_in_the_directory_and_rubbish_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path()), None);
        write(dir.path(), 41234).unwrap();
        assert_eq!(read(dir.path()), Some(41234));
        for rubbish in ["", "0", "port", "70000"] {
            std::fs::write(dir.path().join("port"), rubbish).unwrap();
            assert_eq!(read(dir.path()), None, "{rubbish:?}");
        }
    }

    #[test]
    fn a_remembered_port_held_by_another_program_gives_way_only_when_any_port_was_asked() {
        let dir = tempfile::tempdir().unwrap();
        let held = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = held.local_addr().unwrap().port();
        write(dir.path(), port).unwrap();
        assert_eq!(resolve(dir.path(), Some(0)), 0);
        assert_eq!(resolve(dir.path(), Some(port)), port, "an asked port is kept: the server then says it is in use");
        drop(held);
        assert_eq!(resolve(dir.path(), Some(0)), port);
    }
}
