//! The reasons a path is refused as a database, apart from the checks that find them
//! (`file.rs`), so that [`crate::Error`] can carry a refusal without depending on the code
//! that opens files.

use std::fs::Metadata;

/// Why a path is not opened as a database. Each leaves the file, and the directory around
/// it, as they were.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refusal {
    /// `--db ""`: SQLite would open a private temporary database, which nothing else can see.
    #[error("the path is empty")]
    EmptyPath,
    /// A directory, a FIFO, a device or a socket.
    #[error("is {kind}, not a regular file: {}", kind.why())]
    NotRegular {
        /// What the path names instead.
        kind: FileKind,
    },
    /// A file reached by more than one hard link.
    #[error(
        "has {links} hard links: SQLite keeps a database's lock table and log beside the name \
         it was opened by, so each name gets its own and two workers could run the same attempt; \
         keep one name (remove the other links) and mount the directory, not the file"
    )]
    Links {
        /// How many names the file has.
        links: u64,
    },
    /// A file that is a mount point of its own.
    #[error(
        "is a mount point of its own (a single file bind-mounted, as `docker -v q.db:/data/q.db` \
         does): SQLite keeps the database's lock table and log beside it, where processes that \
         reach the file by another path do not look, and two workers could run the same attempt; \
         mount the directory, not the file"
    )]
    MountPoint,
    /// A companion SQLite keeps beside the database (`NAME-wal`, `NAME-shm`, `NAME-journal`)
    /// is there and is not a regular file: SQLite would block on a FIFO, or fail on it and
    /// report a full or failing disk.
    #[error(
        "its companion {name} is {kind}, not a regular file: SQLite keeps the database's \
         write-ahead log, lock table or rollback journal in it; remove it"
    )]
    Companion {
        /// The companion's path.
        name: String,
        /// What it is instead.
        kind: FileKind,
    },
    /// The file was removed, or another took its place, while it was being opened.
    #[error("was removed or replaced by another file while it was being opened")]
    Replaced,
}

/// What a path that is not a regular file names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FileKind {
    /// A directory: the database goes in a file inside it.
    Directory,
    /// A named pipe.
    Fifo,
    /// A character device (`/dev/null`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A Unix domain socket.
    Socket,
    /// Anything else the platform has.
    Other,
}

impl FileKind {
    pub(crate) fn of(meta: &Metadata) -> FileKind {
        if meta.is_dir() {
            return FileKind::Directory;
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            let kind = meta.file_type();
            if kind.is_fifo() {
                return FileKind::Fifo;
            }
            if kind.is_char_device() {
                return FileKind::CharDevice;
            }
            if kind.is_block_device() {
                return FileKind::BlockDevice;
            }
            if kind.is_socket() {
                return FileKind::Socket;
            }
        }
        FileKind::Other
    }

    /// What SQLite would do with it.
    fn why(self) -> &'static str {
        match self {
            FileKind::Directory => "give the path of a file in it",
            FileKind::Fifo => "SQLite would wait on it for a writer, for ever",
            FileKind::CharDevice | FileKind::BlockDevice => {
                "SQLite would write to the device, and create its journal beside it"
            }
            FileKind::Socket | FileKind::Other => "SQLite cannot keep a database in it",
        }
    }
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO (a named pipe)",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Other => "neither a file nor a directory",
        })
    }
}
