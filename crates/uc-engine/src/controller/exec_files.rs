//! Exec hooks' files followed: when a program or a script an exec hook runs changes on disk (an edit of
//! `sync.py`, a `cargo build` of the hook), every parent is queued behind news, as a resync, so the
//! edit shows within seconds instead of at the next change of a parent.
//!
//! The files are the command's arguments read as paths (relative ones from the hook's working
//! directory), compared by modification time and length every [`EVERY`]; one that does not exist yet
//! (a program still to be built) counts as changed once it appears.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::task::JoinHandle;
use uc_api::controller::Exec;

use super::shared::Shared;

/// How often the files are looked at.
const EVERY: Duration = Duration::from_secs(2);

/// At most this many of a command's arguments are followed.
const MOST: usize = 16;

/// What a file looked like: its modification time and length, or nothing when it is not a file.
type Look = Option<(SystemTime, u64)>;

/// The paths an exec hook's command may run or read: its arguments that are not flags, from `cwd`.
/// The program itself only when it is a path (a program found on `PATH` is the machine's, not the
/// hook author's).
pub(super) fn paths_of(command: &[String], cwd: &Path) -> Vec<PathBuf> {
    let program = command.first().filter(|p| p.contains('/'));
    let args = command.iter().skip(1).filter(|a| !a.is_empty() && !a.starts_with('-') && !a.contains('\n'));
    program.into_iter().chain(args).take(MOST).map(|p| cwd.join(p)).collect()
}

fn look(path: &Path) -> Look {
    let m = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    Some((m.modified().ok()?, m.len()))
}

/// A task following the files of the controller's exec hooks, if it has any.
pub(super) fn watch(shared: &Arc<Shared>) -> Option<JoinHandle<()>> {
    let hooks = &shared.spec.hooks;
    let execs: Vec<&Exec> = [&hooks.sync, &hooks.finalize, &hooks.customize]
        .into_iter()
        .flatten()
        .filter_map(|h| h.exec.as_ref())
        .collect();
    let engine_cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let mut paths: Vec<PathBuf> = execs
        .iter()
        .flat_map(|e| paths_of(&e.command, &e.working_dir.as_ref().map(PathBuf::from).unwrap_or(engine_cwd.clone())))
        .collect();
    paths.sort();
    paths.dedup();
    if paths.is_empty() {
        return None;
    }
    let s = shared.clone();
    Some(tokio::spawn(async move {
        let mut before: Vec<Look> = paths.iter().map(|p| look(p)).collect();
        loop {
            tokio::time::sleep(EVERY).await;
            let now: Vec<Look> = paths.iter().map(|p| look(p)).collect();
            if now != before {
                tracing::info!(controller = %s.name, "an exec hook's files changed; resyncing");
                s.resync();
                before = now;
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_scripts_and_a_program_given_as_a_path_are_followed_flags_and_path_programs_are_not() {
        let cwd = Path::new("/op");
        assert_eq!(paths_of(&cmd(&["python3", "sync.py"]), cwd), vec![PathBuf::from("/op/sync.py")]);
        assert_eq!(paths_of(&cmd(&["target/release/x-hook"]), cwd), vec![PathBuf::from("/op/target/release/x-hook")]);
        assert_eq!(paths_of(&cmd(&["sh", "-e", "/abs/sync.sh"]), cwd), vec![PathBuf::from("/abs/sync.sh")]);
        assert_eq!(paths_of(&cmd(&["jq", "-f", "s.jq", "--arg", ""]), cwd), vec![PathBuf::from("/op/s.jq")]);
        let many: Vec<String> = (0..40).map(|i| format!("f{i}")).collect();
        assert_eq!(paths_of(&[vec!["sh".to_string()], many].concat(), cwd).len(), MOST);
    }

    #[test]
    fn a_file_is_looked_at_by_time_and_length_and_a_directory_is_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("sync.py");
        assert_eq!(look(&f), None);
        std::fs::write(&f, "print(1)").unwrap();
        let first = look(&f);
        assert_eq!(first.map(|l| l.1), Some(8));
        std::fs::write(&f, "print(22)").unwrap();
        assert_ne!(look(&f), first, "an edit is seen (its length changed)");
        assert_eq!(look(dir.path()), None);
    }
}
