//! Whether the database file a worker opened is still the one its path names.
//!
//! SQLite keeps working on an open file after it is deleted: a worker whose file was
//! removed (or replaced, or renamed away) would go on polling a database nobody else can
//! reach, while a new file of that name collects the jobs. The loop checks before each
//! claim, and stops (exit 1) once the file is not the one it opened.
//!
//! On Linux the file is held by an `O_PATH` descriptor, opened right after the queue: its
//! link count says whether the file was deleted, and while it is open the inode cannot be
//! freed, so a new file at the path cannot get the same inode number. Closing an `O_PATH`
//! descriptor releases no lock (the kernel skips POSIX lock removal for them), which an
//! ordinary second descriptor would do to SQLite's locks. Elsewhere only the path is
//! checked: gone, or another inode.

use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The database file is no longer the one the worker opened.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbFileError {
    /// The file has no name left: the worker would work on a file no other process can open.
    #[error(
        "{path}: the database file was deleted while the worker ran (its link count is 0); \
         stopping rather than working on a file nobody else can reach"
    )]
    Deleted {
        /// The database path.
        path: PathBuf,
    },
    /// Nothing is at the path any more.
    #[error("{path}: the database file is gone (deleted or renamed) while the worker ran; stopping")]
    Gone {
        /// The database path.
        path: PathBuf,
    },
    /// Another file is at the path: the workers that open it now share no lock with this one.
    #[error(
        "{path}: the path now names another file (device {dev}, inode {ino}; the worker opened \
         device {opened_dev}, inode {opened_ino}): the database was deleted or replaced; stopping"
    )]
    Replaced {
        /// The database path.
        path: PathBuf,
        /// The device of the file now at the path.
        dev: u64,
        /// The inode of the file now at the path.
        ino: u64,
        /// The device of the file the worker opened.
        opened_dev: u64,
        /// The inode of the file the worker opened.
        opened_ino: u64,
    },
    /// The check itself failed: the state of the file is unknown.
    #[error("{path}: cannot check the database file: {source}")]
    Io {
        /// The database path.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
}

/// The file the worker opened, identified by device and inode.
pub struct DbFile {
    path: PathBuf,
    dev: u64,
    ino: u64,
    #[cfg(target_os = "linux")]
    held: std::os::fd::OwnedFd,
}

impl DbFile {
    /// Notes the file now at `path`: call it right after the queue opened it.
    pub fn watch(path: &Path) -> Result<DbFile, DbFileError> {
        let io = |source| DbFileError::Io { path: path.to_owned(), source };
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{Mode, OFlags};
            let held = rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| io(e.into()))?;
            let stat = rustix::fs::fstat(&held).map_err(|e| io(e.into()))?;
            // Stat's field types vary by platform; both fit in u64.
            #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
            let (dev, ino) = (stat.st_dev as u64, stat.st_ino as u64);
            Ok(DbFile { path: path.to_owned(), dev, ino, held })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let meta = std::fs::metadata(path).map_err(io)?;
            Ok(DbFile { path: path.to_owned(), dev: meta.dev(), ino: meta.ino() })
        }
    }

    /// Ok while the path still names the file the worker opened, and it has a name.
    pub fn check(&self) -> Result<(), DbFileError> {
        let path = || self.path.clone();
        #[cfg(target_os = "linux")]
        {
            let stat = rustix::fs::fstat(&self.held)
                .map_err(|e| DbFileError::Io { path: path(), source: e.into() })?;
            if stat.st_nlink == 0 {
                return Err(DbFileError::Deleted { path: path() });
            }
        }
        let meta = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(DbFileError::Gone { path: path() }),
            Err(source) => return Err(DbFileError::Io { path: path(), source }),
        };
        if (meta.dev(), meta.ino()) != (self.dev, self.ino) {
            return Err(DbFileError::Replaced {
                path: path(),
                dev: meta.dev(),
                ino: meta.ino(),
                opened_dev: self.dev,
                opened_ino: self.ino,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn deleted_replaced_and_renamed_files_are_told_apart() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        fs::write(&db, "a").expect("write");
        let watched = DbFile::watch(&db).expect("watch");
        assert!(watched.check().is_ok());
        // Rewritten in place: the same file.
        fs::write(&db, "b").expect("rewrite");
        assert!(watched.check().is_ok());
        // Renamed away: gone from the path (on Linux: still linked elsewhere, not deleted).
        let moved = dir.path().join("moved.db");
        fs::rename(&db, &moved).expect("rename");
        assert!(matches!(watched.check(), Err(DbFileError::Gone { .. })), "{:?}", watched.check());
        // Another file at the path.
        fs::write(&db, "new").expect("new file");
        let err = watched.check().unwrap_err();
        assert!(matches!(err, DbFileError::Replaced { .. }), "{err}");
        assert!(err.to_string().contains("deleted or replaced"), "{err}");
        // Deleted: on Linux the link count says so, whatever is at the path.
        fs::remove_file(&moved).expect("remove");
        let err = watched.check().unwrap_err();
        if cfg!(target_os = "linux") {
            assert!(matches!(err, DbFileError::Deleted { .. }), "{err}");
            assert!(err.to_string().contains("deleted"), "{err}");
        }
    }
}
