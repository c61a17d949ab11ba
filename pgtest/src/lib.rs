//! A real PostgreSQL for tests, started by the tests themselves.
//!
//! The first test of a process that asks for a database starts a throwaway cluster: `initdb`
//! into a temporary directory (as the `postgres` user when the tests run as root, since
//! `initdb` refuses root), a server on 127.0.0.1 on a free port with its socket in that
//! directory, and a watchdog that stops the server (`pg_ctl stop -m immediate`) and removes the
//! directory once the test process is gone — Rust runs no destructor for a `static`, and a
//! test binary may be killed. Each test then gets a database of its own on that cluster.
//!
//! `RETRYQ_PG_URL` points the tests at an existing server instead (a URL whose user may
//! create databases); each test still gets a fresh database on it.
//!
//! Where PostgreSQL is not installed the tests that need it say so loudly on stderr and skip
//! — except under CI (`CI` set), where a skipped PostgreSQL test is a failure: CI installs the
//! package (see `.ci/run`), so a skip there would hide that nothing was tested.
//!
//! The throwaway cluster runs with `fsync=off`: these tests check semantics and crash
//! consistency against a killed *process* (server or client), which the operating system's page
//! cache survives; `synchronous_commit` stays `on`, so every commit still waits for its WAL
//! write. Measuring durability costs is `retryq bench`'s business, on a cluster with fsync on
//! ([`Cluster::start`] with `fsync: true`).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::fmt;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

/// Why no cluster could be had.
#[derive(Debug)]
pub enum Unavailable {
    /// No `initdb`/`pg_ctl` on this machine: the tests skip (or fail under CI).
    NotInstalled,
    /// PostgreSQL is installed but the cluster would not start, or a database could not be
    /// created: always a failure.
    Failed(String),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::NotInstalled => write!(
                f,
                "PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH) \
                 and RETRYQ_PG_URL is not set"
            ),
            Unavailable::Failed(why) => f.write_str(why),
        }
    }
}

/// A running PostgreSQL server the tests may create databases on.
pub struct Cluster {
    /// `postgres://user@host:port` with no database: append `/NAME`.
    base: String,
    /// The cluster's files, when this process started it (none for `RETRYQ_PG_URL`).
    own: Option<Own>,
}

/// A cluster this process started: where it lives and how to drive it.
struct Own {
    _dir: tempfile::TempDir,
    data: PathBuf,
    bin: PathBuf,
    port: u16,
    socket_dir: PathBuf,
    fsync: bool,
    /// Set in the server's environment (a test's `LD_PRELOAD` of libfaketime, say).
    env: Vec<(String, String)>,
    /// More `-c name=value` settings of the server (TLS's, say).
    settings: Vec<String>,
}

/// The cluster every test of this process shares.
static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();
/// Numbers the databases of this process.
static NEXT_DB: AtomicU32 = AtomicU32::new(0);

/// A fresh database on the shared cluster, as a URL, or `None` (after a loud line on stderr)
/// when PostgreSQL is not installed and this is not CI. `test` names it in that line.
///
/// Panics when the cluster cannot start, under CI when PostgreSQL is missing, and when the
/// database cannot be created: each is a failed test, never a silent skip.
pub fn database(test: &str) -> Option<String> {
    let shared = SHARED.get_or_init(|| match Cluster::from_env() {
        Some(cluster) => cluster,
        None => Cluster::start(false).map_err(|e| match e {
            Unavailable::NotInstalled => String::new(),
            Unavailable::Failed(why) => why,
        }),
    });
    match shared {
        Ok(cluster) => match cluster.create_database() {
            Ok(url) => Some(url),
            Err(why) => panic!("{test}: {why}"),
        },
        Err(why) if why.is_empty() => skip(test),
        Err(why) => panic!("{test}: PostgreSQL did not start: {why}"),
    }
}

/// The skip: loud, and a failure under CI.
fn skip(test: &str) -> Option<String> {
    let why = Unavailable::NotInstalled;
    if std::env::var_os("CI").is_some() {
        panic!("{test}: {why}; under CI a PostgreSQL test must not skip (.ci/run installs it)");
    }
    eprintln!("SKIPPED {test}: {why}. Install PostgreSQL (Debian: apt-get install postgresql) to run it.");
    None
}

impl Cluster {
    /// The server `RETRYQ_PG_URL` names, if set.
    fn from_env() -> Option<Result<Cluster, String>> {
        let url = std::env::var("RETRYQ_PG_URL").ok()?;
        Some(Ok(Cluster::existing(&url)))
    }

    /// A server someone else runs, by the URL of any database on it (its user must be allowed
    /// to create databases); new databases go beside that one. It is never stopped.
    pub fn existing(url: &str) -> Cluster {
        let after_scheme = url.find("://").map_or(0, |i| i + 3);
        let base = match url[after_scheme..].find('/') {
            Some(slash) => url[..after_scheme + slash].to_owned(),
            None => url.to_owned(),
        };
        Cluster { base, own: None }
    }

    /// Removes a database made by [`Cluster::create_database`], by its URL.
    pub fn drop_database(&self, url: &str) -> Result<(), String> {
        let name = url.rsplit('/').next().unwrap_or_default();
        let mut admin = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .map_err(|e| format!("connecting to {}: {e}", self.url("postgres")))?;
        admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .map_err(|e| format!("DROP DATABASE {name}: {e}"))
    }

    /// Starts a cluster of this process's own: `initdb`, then a server on a free port. With
    /// `fsync` false the server does not flush to the disk (see the module's doc).
    pub fn start(fsync: bool) -> Result<Cluster, Unavailable> {
        Cluster::start_with_env(fsync, &[])
    }

    /// [`Cluster::start`] with `env` set in the server's environment: the server and every
    /// backend it starts see it (a test starts one under libfaketime this way, to step the
    /// server's clock while the test's own runs on).
    pub fn start_with_env(fsync: bool, env: &[(&str, &str)]) -> Result<Cluster, Unavailable> {
        Cluster::start_with(fsync, env, None)
    }

    /// [`Cluster::start`] with TLS on (`ssl = on`) for the certificate chain `cert_pem` and its
    /// key `key_pem` (PEM), written to the cluster's directory as the server's user, the key
    /// readable by it alone, and required: `pg_hba.conf` refuses a connection without TLS to
    /// every database but `postgres`, where the admin connections of [`Cluster`] go.
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> Result<Cluster, Unavailable> {
        Cluster::start_with(false, &[], Some((cert_pem, key_pem)))
    }

    fn start_with(
        fsync: bool,
        env: &[(&str, &str)],
        tls: Option<(&str, &str)>,
    ) -> Result<Cluster, Unavailable> {
        let bin = find_bin().ok_or(Unavailable::NotInstalled)?;
        let failed = |what: &str, e: &dyn fmt::Display| Unavailable::Failed(format!("{what}: {e}"));
        let dir = tempfile::Builder::new()
            .prefix("retryq-pg-")
            .tempdir()
            .map_err(|e| failed("temporary directory", &e))?;
        let data = dir.path().join("data");
        let socket_dir = dir.path().to_path_buf();
        as_server_user_owned(dir.path()).map_err(|e| failed("chown to postgres", &e))?;
        run(
            server_command(&bin.join("initdb"))
                .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--locale=C", "-D"])
                .arg(&data),
            "initdb",
        )?;
        let env = env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let mut settings = Vec::new();
        if let Some((cert, key)) = tls {
            std::fs::write(
                data.join("pg_hba.conf"),
                "local all all trust\nhost postgres all 127.0.0.1/32 trust\nhostssl all all 127.0.0.1/32 trust\n",
            )
            .map_err(|e| failed("pg_hba.conf", &e))?;
            let cert_file = socket_dir.join("server.crt");
            let key_file = socket_dir.join("server.key");
            write_private(&cert_file, cert).map_err(|e| failed("server.crt", &e))?;
            write_private(&key_file, key).map_err(|e| failed("server.key", &e))?;
            settings.push("ssl=on".to_owned());
            settings.push(format!("ssl_cert_file={}", cert_file.display()));
            settings.push(format!("ssl_key_file={}", key_file.display()));
        }
        let mut own = Own { _dir: dir, data, bin, port: 0, socket_dir, fsync, env, settings };
        own.start_on_free_port()?;
        own.watch(std::process::id())?;
        Ok(Cluster { base: format!("postgres://postgres@127.0.0.1:{}", own.port), own: Some(own) })
    }

    /// The URL of database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    /// A new, empty database: its URL. On `RETRYQ_PG_URL`'s server a name may be taken
    /// already, left by an earlier process that had this one's id: the next number is tried.
    pub fn create_database(&self) -> Result<String, String> {
        let mut admin = postgres::Client::connect(&self.url("postgres"), postgres::NoTls)
            .map_err(|e| format!("connecting to {}: {e}", self.url("postgres")))?;
        let mut tries = 0;
        loop {
            let name = format!("retryq_t{}_{}", std::process::id(), NEXT_DB.fetch_add(1, Ordering::Relaxed));
            match admin.batch_execute(&format!("CREATE DATABASE {name}")) {
                Ok(()) => return Ok(self.url(&name)),
                Err(e)
                    if tries < 1000 && e.code() == Some(&postgres::error::SqlState::DUPLICATE_DATABASE) =>
                {
                    tries += 1;
                }
                Err(e) => {
                    let why = e.as_db_error().map_or_else(|| e.to_string(), |db| db.message().to_owned());
                    return Err(format!("CREATE DATABASE {name}: {why}"));
                }
            }
        }
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`): committed
    /// transactions are in the WAL, nothing else is kept.
    pub fn stop_immediate(&self) -> Result<(), String> {
        let own = self.own.as_ref().ok_or("RETRYQ_PG_URL's server is not ours to stop")?;
        own.pg_ctl(&["stop", "-m", "immediate", "-w"]).map_err(|e| e.to_string())
    }

    /// Starts the server again on the same port after a stop; it recovers from its WAL.
    pub fn restart(&self) -> Result<(), String> {
        let own = self.own.as_ref().ok_or("RETRYQ_PG_URL's server is not ours to start")?;
        own.start().map_err(|e| e.to_string())
    }

    /// Whether this process started the server (and so may stop and restart it).
    pub fn is_own(&self) -> bool {
        self.own.is_some()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(own) = &self.own {
            // Best effort: the watchdog stops it anyway once this process ends.
            let _ = own.pg_ctl(&["stop", "-m", "immediate", "-w"]);
        }
    }
}

impl Own {
    /// Picks a free port and starts the server on it; another process may take a port
    /// between the pick and the start, so a failed start tries another, a few times.
    fn start_on_free_port(&mut self) -> Result<(), Unavailable> {
        let mut last = String::new();
        for _ in 0..5 {
            self.port = free_port().map_err(|e| Unavailable::Failed(format!("free port: {e}")))?;
            match self.start() {
                Ok(()) => return Ok(()),
                Err(Unavailable::Failed(why)) => last = why,
                Err(other) => return Err(other),
            }
        }
        Err(Unavailable::Failed(format!("the server would not start: {last}")))
    }

    fn start(&self) -> Result<(), Unavailable> {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync={} -c max_connections=200",
            self.port,
            self.socket_dir.display(),
            if self.fsync { "on" } else { "off" },
        );
        for setting in &self.settings {
            options.push_str(" -c ");
            options.push_str(setting);
        }
        let log = self.socket_dir.join("server.log");
        let log = log.to_string_lossy();
        let mut start = self.pg_ctl_command();
        start.args(["start", "-w", "-t", "60", "-l", &log, "-o", &options]);
        run(&mut start, "pg_ctl").map_err(|e| {
            let tail = std::fs::read_to_string(self.socket_dir.join("server.log")).unwrap_or_default();
            Unavailable::Failed(format!("{e}\n{tail}"))
        })
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), Unavailable> {
        run(self.pg_ctl_command().args(args), "pg_ctl")
    }

    /// `pg_ctl -D DATA`, as the server's user, with the cluster's environment: through
    /// `env`, since the switch of user may not pass a variable such as `LD_PRELOAD` on.
    fn pg_ctl_command(&self) -> Command {
        if self.env.is_empty() {
            let mut command = server_command(&self.bin.join("pg_ctl"));
            command.arg("-D").arg(&self.data);
            return command;
        }
        let mut command = server_command(Path::new("env"));
        command.args(self.env.iter().map(|(k, v)| format!("{k}={v}"))).arg(self.bin.join("pg_ctl"));
        command.arg("-D").arg(&self.data);
        command
    }

    /// A detached shell that waits for `pid` to end, then stops the server and removes its
    /// files.
    fn watch(&self, pid: u32) -> Result<(), Unavailable> {
        let stop = format!(
            "{} {} -D '{}' stop -m immediate",
            if is_root() { "runuser -u postgres --" } else { "" },
            self.bin.join("pg_ctl").display(),
            self.data.display()
        );
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop}; rm -rf '{}'",
            self.socket_dir.display()
        );
        Command::new("setsid")
            .args(["sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map(drop)
            .map_err(|e| Unavailable::Failed(format!("watchdog: {e}")))
    }
}

/// The directory of `initdb` and `pg_ctl`: Debian's newest `/usr/lib/postgresql/N/bin`, else
/// the one on `PATH`.
fn find_bin() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path).find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
    })
}

fn is_root() -> bool {
    rustix::process::getuid().is_root()
}

/// A command for a server program: as the `postgres` user when running as root (the server
/// refuses root), as ourselves otherwise.
fn server_command(program: &Path) -> Command {
    let mut command = if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    };
    command.stdin(Stdio::null());
    command
}

/// Makes `dir` (or a file) the `postgres` user's when running as root, so that `initdb` may
/// write it (or the server read it).
fn as_server_user_owned(dir: &Path) -> std::io::Result<()> {
    if !is_root() {
        return Ok(());
    }
    let status = Command::new("chown").arg("postgres:").arg(dir).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!("chown postgres: {} failed ({status})", dir.display())))
    }
}

/// Writes `text` to `path`, readable and writable by the server's user alone (the server
/// refuses a key file others may read).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    as_server_user_owned(path)
}

fn run(command: &mut Command, what: &str) -> Result<(), Unavailable> {
    let out = command.output().map_err(|e| Unavailable::Failed(format!("{what}: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(Unavailable::Failed(format!(
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )))
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Held by the tests that read or squat this process's next names on the shared cluster:
    /// a squat racing another test's `CREATE DATABASE` of the same name fails one of them.
    static NAMES: Mutex<()> = Mutex::new(());

    #[test]
    fn each_test_gets_an_empty_database_of_its_own() {
        let _names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (Some(a), Some(b)) = (database("pgtest a"), database("pgtest b")) else { return };
        assert_ne!(a, b);
        for url in [a, b] {
            let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
            let tables: i64 = client
                .query_one("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", &[])
                .expect("count")
                .get(0);
            assert_eq!(tables, 0, "{url} is empty");
        }
    }

    /// On a server shared across runs, a process may get the id of an earlier one whose
    /// databases are still there: their names are passed over, never a failed test.
    #[test]
    fn a_name_an_earlier_process_left_is_passed_over() {
        let _names = NAMES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(first) = database("pgtest left names") else { return };
        let Some(Ok(cluster)) = SHARED.get() else { panic!("the shared cluster") };
        let mut admin = postgres::Client::connect(&cluster.url("postgres"), postgres::NoTls).expect("admin");
        // The next few names this process would give, taken first.
        let next = NEXT_DB.load(Ordering::Relaxed);
        let taken: Vec<String> =
            (next..next + 3).map(|n| format!("retryq_t{}_{n}", std::process::id())).collect();
        for name in &taken {
            admin.batch_execute(&format!("CREATE DATABASE {name}")).expect("left behind");
        }
        let Some(url) = database("pgtest left names") else { return };
        assert_ne!(url, first);
        assert!(taken.iter().all(|name| !url.ends_with(&format!("/{name}"))), "{url} was taken");
        postgres::Client::connect(&url, postgres::NoTls).expect("the new database");
    }

    #[test]
    fn an_own_cluster_survives_an_immediate_stop() {
        let cluster = match Cluster::start(false) {
            Ok(cluster) => cluster,
            Err(Unavailable::NotInstalled) => {
                skip("pgtest immediate stop");
                return;
            }
            Err(e) => panic!("{e}"),
        };
        let url = cluster.create_database().expect("database");
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
        client.batch_execute("CREATE TABLE t (x int); INSERT INTO t VALUES (1)").expect("write");
        drop(client);
        cluster.stop_immediate().expect("stop");
        assert!(postgres::Client::connect(&url, postgres::NoTls).is_err(), "the server is down");
        cluster.restart().expect("restart");
        let mut client = postgres::Client::connect(&url, postgres::NoTls).expect("reconnect");
        let x: i32 = client.query_one("SELECT x FROM t", &[]).expect("read").get(0);
        assert_eq!(x, 1, "a committed row survives the crash");
    }
}
