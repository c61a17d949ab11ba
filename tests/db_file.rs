//! What retryq opens as a database, through the real binary: a regular file with one name,
//! reached by a plain path. Anything else — a second name for the file (a hard link, a
//! single file bind-mounted), a FIFO, a device, a directory — is refused by every command
//! with an error naming the path, before SQLite touches it; and `--db` is never read as a
//! SQLite URI or as `:memory:`.

mod common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{BIN, Ran, db_commands, files, fresh, ran};

/// Runs retryq on `db` (as `RETRYQ_DB`) in `dir`; a run that takes over 20 s is killed and
/// fails the test (a FIFO used to block a reader for ever).
fn retryq_in(dir: &Path, db: &Path, args: &[&str]) -> Ran {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .env("RETRYQ_DB", db)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn retryq");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            child.kill().expect("kill");
            let _ = child.wait();
            panic!("retryq {args:?} on {} hung", db.display());
        }
        thread::sleep(Duration::from_millis(10));
    }
    ran(child.wait_with_output().expect("output"))
}

fn enqueue(dir: &Path, db: &Path, id: &str) -> Ran {
    retryq_in(dir, db, &["enqueue", "--id", id, "--payload", "p", "--max-attempts", "1", "--ttl", "10m"])
}

fn every_command_refuses(dir: &Path, db: &Path, what: &str) {
    let named = format!("{}: {what}", db.display());
    for args in db_commands() {
        let r = retryq_in(dir, db, &args);
        assert_eq!(r.code, Some(1), "{args:?} on {}: {}{}", db.display(), r.stdout, r.stderr);
        assert!(r.stderr.contains(&named), "{args:?} should say {named:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
}

/// Two names for one file give each name its own `-wal` and `-shm`, so two workers each
/// held "the" lock and ran every job twice. Both names are refused; with one name again,
/// the file works as before.
#[test]
fn a_database_file_with_two_hard_links_is_refused_by_db_commands() {
    let (dir, db) = fresh("retryq-file-");
    assert_eq!(enqueue(dir.path(), &db, "a").code, Some(0));
    let other = dir.path().join("b.db");
    fs::hard_link(&db, &other).expect("ln");
    let before = fs::read(&db).expect("read");
    for path in [&db, &other] {
        every_command_refuses(dir.path(), path, "has 2 hard links");
    }
    let r = retryq_in(dir.path(), &db, &["stats"]);
    assert!(r.stderr.contains("mount the directory, not the file"), "{}", r.stderr);
    assert!(fs::read(&db).expect("read") == before, "the refused file changed");
    assert_eq!(files(dir.path()), ["b.db", "q.db"], "nothing was created beside the names");

    fs::remove_file(&other).expect("rm the second name");
    let r = retryq_in(dir.path(), &db, &["get", "a"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

/// `docker -v q.db:/data/q.db` mounts one file on another path: the container's `-wal`
/// and `-shm` are not the host's. Simulated with a bind mount in a mount namespace of the
/// test's own (needs `unshare` and the right to use it, as root in CI; skipped otherwise).
#[test]
fn a_single_file_bind_mount_is_refused() {
    let (dir, db) = fresh("retryq-file-");
    assert_eq!(enqueue(dir.path(), &db, "a").code, Some(0));
    let mounted = dir.path().join("mnt").join("q.db");
    fs::create_dir(dir.path().join("mnt")).expect("mkdir");
    fs::write(&mounted, "").expect("mount point");
    let probe = Command::new("unshare").args(["-m", "true"]).output();
    if !probe.is_ok_and(|out| out.status.success()) {
        eprintln!("skipped: cannot create a mount namespace here (unshare -m)");
        return;
    }
    let script = format!(
        "mount --bind '{}' '{}' && RETRYQ_DB='{}' exec '{BIN}' \"$@\"",
        db.display(),
        mounted.display(),
        mounted.display()
    );
    for args in [vec!["stats"], vec!["work", "--worker", "w", "--exec", "true", "--until-idle"]] {
        let out = Command::new("unshare")
            .args(["-m", "sh", "-c", &script, "sh"])
            .args(&args)
            .output()
            .expect("unshare");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("{}: is a mount point of its own", mounted.display()))
                && stderr.contains("mount the directory, not the file"),
            "{args:?}: {stderr}"
        );
    }
    // The file under its own name is fine.
    assert_eq!(retryq_in(dir.path(), &db, &["get", "a"]).code, Some(0));
}

/// SQLite resolves a symbolic link and keeps the companions beside its target: one lock
/// table whatever the path, so a link is not refused.
#[test]
fn a_symbolic_link_to_the_database_is_accepted() {
    let (dir, db) = fresh("retryq-file-");
    assert_eq!(enqueue(dir.path(), &db, "a").code, Some(0));
    let link = dir.path().join("link.db");
    std::os::unix::fs::symlink(&db, &link).expect("symlink");
    assert_eq!(enqueue(dir.path(), &link, "b").code, Some(0));
    let r = retryq_in(dir.path(), &db, &["stats", "--json"]);
    assert!(r.stdout.contains("\"pending\":2,"), "{}{}", r.stdout, r.stderr);
}

/// `mkfifo f.db; RETRYQ_DB=f.db retryq stats` blocked for ever: SQLite opened the FIFO
/// and waited for a writer.
#[test]
fn a_fifo_is_refused_at_once_by_db_commands() {
    let (dir, _) = fresh("retryq-file-");
    let fifo = dir.path().join("f.db");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    every_command_refuses(dir.path(), &fifo, "is a FIFO (a named pipe), not a regular file");
    let trace = dir.path().join("t.jsonl");
    fs::write(&trace, "{\"op\":\"stats\",\"now\":0}\n").expect("trace");
    let r = retryq_in(dir.path(), Path::new("unused"), &["replay", "--db", "f.db", "t.jsonl"]);
    assert!(r.code == Some(1) && r.stderr.contains("is a FIFO"), "{}{}", r.stdout, r.stderr);
    assert_eq!(files(dir.path()), ["f.db", "t.jsonl"], "nothing was created beside the FIFO");
}

/// `RETRYQ_DB=/dev/null retryq enqueue` created `/dev/null-journal`.
#[test]
fn a_device_is_refused_and_nothing_is_created_beside_it() {
    let (dir, _) = fresh("retryq-file-");
    let journal = Path::new("/dev/null-journal");
    let was_there = journal.exists();
    every_command_refuses(dir.path(), Path::new("/dev/null"), "is a character device, not a regular file");
    if !was_there {
        assert!(!journal.exists(), "retryq created /dev/null-journal");
    }
}

/// A directory said "no such directory, or no permission" to writers.
#[test]
fn a_directory_is_reported_as_one_by_db_commands() {
    let (dir, db) = fresh("retryq-file-");
    fs::create_dir(&db).expect("mkdir");
    every_command_refuses(dir.path(), &db, "is a directory");
    assert!(files(&db).is_empty(), "nothing was created in the directory");
}

/// `--db file:uri.db` was a SQLite URI for writers (the job went to `uri.db`) but a
/// missing file for readers; `:memory:` and `file:…?nolock=1` stored nothing and said
/// "journal_mode stayed …". A path is a path.
#[test]
fn db_is_always_a_plain_path_never_a_uri_or_memory() {
    let (dir, _) = fresh("retryq-file-");
    for name in ["file:uri.db", ":memory:", "file:y.db?nolock=1", "q.db?mode=ro"] {
        let path = Path::new(name);
        let r = enqueue(dir.path(), path, "a");
        assert_eq!((r.code, r.stdout.trim()), (Some(0), r#"{"ok":"enqueued"}"#), "{name}: {}", r.stderr);
        let r = retryq_in(dir.path(), path, &["get", "a"]);
        assert_eq!(r.code, Some(0), "{name}: a reader finds the writer's job: {}", r.stderr);
        assert!(dir.path().join(name).is_file(), "{name} is a file of that name: {:?}", files(dir.path()));
    }
    let names = files(dir.path());
    assert!(!names.iter().any(|n| n == "uri.db" || n == "y.db" || n == "q.db"), "{names:?}");
    // The same through --db, and as an absolute path.
    let absolute = dir.path().join("file:abs.db");
    let db = absolute.to_str().expect("utf-8");
    let r = retryq_in(
        dir.path(),
        Path::new("unused"),
        &["enqueue", "--db", db, "--id", "a", "--payload", "p", "--max-attempts", "1", "--ttl", "9s"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let r = retryq_in(dir.path(), Path::new("unused"), &["get", "--db", "file:abs.db", "a"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

/// A FIFO (or any file that is not a regular one) where SQLite keeps a companion of the
/// database — `NAME-wal`, `NAME-journal`, `NAME-shm` — is refused by its name, by every
/// command, before SQLite opens anything: `enqueue` blamed a full or failing disk.
#[test]
fn a_fifo_as_a_companion_is_refused_by_name() {
    for suffix in ["-wal", "-journal", "-shm"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().join("q.db");
        let made = enqueue(dir.path(), &db, "a");
        assert_eq!(made.code, Some(0), "{}", made.stderr);
        let companion = dir.path().join(format!("q.db{suffix}"));
        let _ = fs::remove_file(&companion);
        let status = Command::new("mkfifo").arg(&companion).status().expect("mkfifo");
        assert!(status.success());
        every_command_refuses(
            dir.path(),
            &db,
            &format!("its companion {} is a FIFO (a named pipe), not a regular file", companion.display()),
        );
        let r = enqueue(dir.path(), &db, "b");
        assert!(!r.stderr.contains("disk"), "{}", r.stderr);
        // A directory is refused the same way.
        fs::remove_file(&companion).expect("rm fifo");
        fs::create_dir(&companion).expect("mkdir");
        let r = enqueue(dir.path(), &db, "c");
        assert!(
            r.stderr.contains(&format!("its companion {} is a directory", companion.display())),
            "{}",
            r.stderr
        );
    }
}
