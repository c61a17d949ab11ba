//! TLS to PostgreSQL, against a server of the test's own that requires it, with a throwaway
//! certificate authority: each `sslmode` encrypts (the server's `pg_stat_ssl` is the witness),
//! checks the certificate as libpq would, and refuses what it must refuse, by name.

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use retryq::PgQueue;
use retryq_pgtest::{Cluster, Unavailable};

/// A certificate authority, a server certificate it signs for `localhost` alone, and the
/// server's key, as PEM.
struct Pki {
    ca: String,
    server: String,
    key: String,
}

fn pki() -> Pki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().expect("ca key")).expect("ca");
    let key = KeyPair::generate().expect("server key");
    let server = CertificateParams::new(vec!["localhost".to_owned()])
        .expect("server params")
        .signed_by(&key, &ca)
        .expect("server certificate");
    Pki { ca: ca.pem(), server: server.pem(), key: key.serialize_pem() }
}

/// Whether the connection named `application` is encrypted, asked of the server.
fn encrypted(admin_url: &str, application: &str) -> bool {
    let mut admin = retryq::postgres::Client::connect(admin_url, retryq::postgres::NoTls).expect("admin");
    let row = admin
        .query_one(
            "SELECT coalesce(bool_and(s.ssl), false) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.application_name = $1",
            &[&application],
        )
        .expect("pg_stat_ssl");
    row.get(0)
}

#[test]
fn each_sslmode_encrypts_and_checks_the_certificate_as_libpq_does() {
    let ours = pki();
    let cluster = match Cluster::start_tls(&ours.server, &ours.key) {
        Ok(cluster) => cluster,
        Err(Unavailable::NotInstalled) => {
            let _ = retryq_pgtest::database("TLS to PostgreSQL");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    let url = cluster.create_database().expect("database");
    let admin = cluster.url("postgres");
    let dir = tempfile::tempdir().expect("tempdir");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &ours.ca).expect("ca.pem");
    let other_ca = dir.path().join("other.pem");
    std::fs::write(&other_ca, pki().ca).expect("other.pem");
    let by_name = url.replace("127.0.0.1", "localhost");
    let root = format!("sslrootcert={}", ca.display());
    for (mode, base) in [("prefer", &url), ("require", &url), ("verify-ca", &url), ("verify-full", &by_name)]
    {
        let application = format!("tls-{mode}");
        let db = format!("{base}?sslmode={mode}&{root}&application_name={application}");
        let queue = PgQueue::connect(&db).unwrap_or_else(|e| panic!("sslmode={mode}: {e}"));
        assert!(encrypted(&admin, &application), "sslmode={mode}: not encrypted");
        drop(queue);
    }
    // The server requires TLS: without it, the connection is refused.
    let err = PgQueue::connect(&format!("{url}?sslmode=disable")).err().expect("refused");
    assert!(err.to_string().contains("no encryption"), "{err}");
    // verify-full compares the host with the certificate's names; verify-ca does not.
    let err = PgQueue::connect(&format!("{url}?sslmode=verify-full&{root}")).err().expect("refused");
    assert!(err.to_string().contains("certificate"), "a name the certificate lacks: {err}");
    // Another authority's certificate is refused by both.
    for mode in ["verify-ca", "verify-full"] {
        let db = format!("{by_name}?sslmode={mode}&sslrootcert={}", other_ca.display());
        let err = PgQueue::connect(&db).err().unwrap_or_else(|| panic!("sslmode={mode}: another authority"));
        assert!(err.to_string().contains("certificate"), "sslmode={mode}: {err}");
    }
    // Bad settings are refused by name, before any connection.
    let err = PgQueue::connect(&format!("{url}?sslmode=verify")).err().expect("refused");
    assert!(err.to_string().contains("sslmode"), "{err}");
    let missing = dir.path().join("none.pem");
    let err = PgQueue::connect(&format!("{by_name}?sslmode=verify-full&sslrootcert={}", missing.display()))
        .err()
        .expect("refused");
    assert!(err.to_string().contains("sslrootcert"), "{err}");
}

#[test]
fn require_refuses_a_server_without_tls_and_prefer_falls_back() {
    let Some(url) = retryq_pgtest::database("TLS refused by a plain server") else { return };
    let err = PgQueue::connect(&format!("{url}?sslmode=require")).err().expect("refused");
    assert!(err.to_string().to_lowercase().contains("tls") || err.to_string().contains("ssl"), "{err}");
    let queue = PgQueue::connect(&format!("{url}?application_name=plain-prefer")).expect("prefer");
    assert!(!encrypted(&url, "plain-prefer"));
    drop(queue);
}
