//! The database file: which paths retryq opens as a database, and which it refuses.
//!
//! SQLite coordinates the processes that share a WAL database through two companions of
//! the file, `NAME-wal` (the log) and `NAME-shm` (the lock table), named after the path the
//! file was opened by. Two paths to one file therefore give each path its own log and its
//! own locks on the same pages: two workers both hold "the" write lock and both claim the
//! same attempt. That happens with a hard link, and with a single file bind-mounted into a
//! container (`docker -v q.db:/data/q.db`): the container's companions live in its
//! `/data`, the host's beside the host's file. So a file with more than one link, or one
//! that is a mount point of its own, is refused. (A symbolic link is safe: SQLite resolves
//! it and names the companions after its target.)
//!
//! SQLite also opens whatever the path names: on a FIFO a reader blocks forever, and a
//! device such as `/dev/null` is "written" with a `-journal` created beside it. So anything
//! but a regular file is refused, before SQLite sees it.
//!
//! And a path is only ever a path: the bundled SQLite reads file names that start with
//! `file:` as URIs (`?nolock=1`, `?mode=memory`, …) and `:memory:` as no file at all, so a
//! relative path is handed to SQLite as `./PATH`, which is neither.
//!
//! The checks run on the path before SQLite opens it and again after, on the file it opened:
//! a file swapped in between is refused too.

use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::refusal::{FileKind, Refusal};

/// A path that passed the checks before opening.
#[derive(Debug)]
pub(crate) struct Checked {
    /// What to hand SQLite: never a URI, never `:memory:`.
    sqlite_path: PathBuf,
    /// The file that was there, if any.
    before: Option<Identity>,
}

impl Checked {
    /// The path to give SQLite.
    pub(crate) fn sqlite_path(&self) -> &Path {
        &self.sqlite_path
    }
}

/// Checks `path` before SQLite opens it: it names a regular file with one link that is not
/// a mount point, or nothing (SQLite then creates it, or says it cannot open it).
pub(crate) fn before_open(path: &Path) -> Result<Checked> {
    if path.as_os_str().is_empty() {
        return Err(refused(path, Refusal::EmptyPath));
    }
    let sqlite_path = if path.is_relative() { Path::new(".").join(path) } else { path.to_path_buf() };
    let before = match fs::metadata(path) {
        Ok(meta) => {
            usable(path, &meta)?;
            if is_mount_point(path) {
                return Err(refused(path, Refusal::MountPoint));
            }
            Some(Identity::of(&meta))
        }
        // Missing, or unreachable: SQLite creates it, or reports why it cannot open it.
        Err(_) => None,
    };
    companions(path)?;
    Ok(Checked { sqlite_path, before })
}

/// Checks, once SQLite has opened `path`, that the file is still the one checked before
/// (or, if there was none, a file retryq would have accepted).
pub(crate) fn after_open(path: &Path, checked: &Checked) -> Result<()> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(refused(path, Refusal::Replaced)),
        // Unreadable metadata of a file SQLite did open: SQLite's own errors will say more.
        Err(_) => return Ok(()),
    };
    usable(path, &meta)?;
    match checked.before {
        Some(before) if before != Identity::of(&meta) => Err(refused(path, Refusal::Replaced)),
        Some(_) => Ok(()),
        None if is_mount_point(path) => Err(refused(path, Refusal::MountPoint)),
        None => Ok(()),
    }
}

/// The companions SQLite keeps beside a database, by their suffix.
const COMPANIONS: [&str; 3] = ["-wal", "-shm", "-journal"];

/// Each companion of `path` that exists is a regular file (a symbolic link is followed, as
/// SQLite follows it).
fn companions(path: &Path) -> Result<()> {
    for suffix in COMPANIONS {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let companion = PathBuf::from(name);
        if let Ok(meta) = fs::metadata(&companion)
            && !meta.is_file()
        {
            let name = companion.display().to_string();
            return Err(refused(path, Refusal::Companion { name, kind: FileKind::of(&meta) }));
        }
    }
    Ok(())
}

fn refused(path: &Path, why: Refusal) -> Error {
    Error::Refused { path: path.to_path_buf(), why }
}

/// A regular file with one link.
fn usable(path: &Path, meta: &Metadata) -> Result<()> {
    if !meta.is_file() {
        return Err(refused(path, Refusal::NotRegular { kind: FileKind::of(meta) }));
    }
    match links(meta) {
        1 => Ok(()),
        links => Err(refused(path, Refusal::Links { links })),
    }
}

/// How many names the file has.
#[cfg(unix)]
fn links(meta: &Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

#[cfg(not(unix))]
fn links(_: &Metadata) -> u64 {
    1
}

/// Which file a path reached: device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    device: u64,
    inode: u64,
}

impl Identity {
    #[cfg(unix)]
    fn of(meta: &Metadata) -> Identity {
        use std::os::unix::fs::MetadataExt;
        Identity { device: meta.dev(), inode: meta.ino() }
    }

    /// Without inodes, every file looks the same: only the checks on the path remain.
    #[cfg(not(unix))]
    fn of(_: &Metadata) -> Identity {
        Identity { device: 0, inode: 0 }
    }
}

/// Whether the file at `path` is a mount point of its own: on Linux, whether
/// `/proc/self/mountinfo` lists it. (Comparing the file's device with its directory's would
/// miss a bind mount from the same file system, and would refuse ordinary files on
/// overlayfs, which may report a lower layer's device for them.)
fn is_mount_point(path: &Path) -> bool {
    fs::canonicalize(path).is_ok_and(|real| listed_as_mount_point(&real))
}

#[cfg(target_os = "linux")]
fn listed_as_mount_point(real: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(table) = fs::read("/proc/self/mountinfo") else { return false };
    let real = real.as_os_str().as_bytes();
    table.split(|&b| b == b'\n').any(|line| mount_point(line).is_some_and(|point| point == real))
}

#[cfg(not(target_os = "linux"))]
fn listed_as_mount_point(_: &Path) -> bool {
    false
}

/// The mount point of one line of `/proc/self/mountinfo` (its fifth field), with the
/// kernel's octal escapes (`\040` for a space, …) undone.
#[cfg(any(target_os = "linux", test))]
fn mount_point(line: &[u8]) -> Option<Vec<u8>> {
    let field = line.split(|&b| b == b' ').nth(4)?;
    let mut point = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field.get(i + 1..i + 4).filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (field[i], octal) {
            (b'\\', Some(d)) => {
                let value = d.iter().fold(0u32, |n, b| n * 8 + u32::from(b - b'0'));
                point.push(u8::try_from(value).ok()?);
                i += 4;
            }
            (b, _) => {
                point.push(b);
                i += 1;
            }
        }
    }
    Some(point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_their_mount_point_unescaped() {
        let line = b"63 43 254:0 /tmp/a/q.db /data/my\\040q.db rw,relatime - ext4 /dev/vda rw";
        assert_eq!(mount_point(line).as_deref(), Some(&b"/data/my q.db"[..]));
        assert_eq!(mount_point(b"22 27 0:21 / /proc rw - proc proc rw").as_deref(), Some(&b"/proc"[..]));
        assert_eq!(mount_point(b"short line"), None);
        assert_eq!(mount_point(b"1 2 3 4 /a\\9xy").as_deref(), Some(&b"/a\\9xy"[..]));
    }

    #[test]
    fn relative_paths_reach_sqlite_as_plain_paths() {
        let checked = before_open(Path::new("file:q.db?mode=memory")).expect("a missing file is fine");
        assert_eq!(checked.sqlite_path(), Path::new("./file:q.db?mode=memory"));
        let checked = before_open(Path::new(":memory:")).expect("a missing file is fine");
        assert_eq!(checked.sqlite_path(), Path::new("./:memory:"));
        let checked = before_open(Path::new("/nowhere/q.db")).expect("a missing file is fine");
        assert_eq!(checked.sqlite_path(), Path::new("/nowhere/q.db"));
        assert!(matches!(before_open(Path::new("")), Err(Error::Refused { why: Refusal::EmptyPath, .. })));
    }
}
