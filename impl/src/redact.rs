//! Credentials kept out of messages and logs: the one redaction of every form in which the
//! PostgreSQL client reads a password, used wherever a `--db` is shown.

/// The keywords of a libpq connection string the client reads (`postgres::Config`).
const CONNINFO_KEYS: [&str; 18] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "options",
    "application_name",
    "connect_timeout",
    "sslmode",
    "sslnegotiation",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_retries",
    "target_session_attrs",
    "channel_binding",
    "load_balance_hosts",
];

/// Whether `db` reads as a key=value connection string: its first word is `KEYWORD=…`.
pub fn is_conninfo(db: &str) -> bool {
    db.trim_start().split_once('=').is_some_and(|(key, _)| CONNINFO_KEYS.contains(&key.trim_end()))
}

/// `db` with every password the PostgreSQL client would read in it replaced by `***`, for
/// messages and logs: the one redaction for every form the client accepts — a URL's
/// `user:password@`, a URL's `?password=` (and `&password=`), and a key=value string's
/// `password=…` (bare or single-quoted, with its backslash escapes). Anything else is
/// returned as it is.
pub fn redacted(db: &str) -> String {
    match db.split_once("://") {
        Some((scheme, rest)) => {
            let (before_query, query) = match rest.split_once('?') {
                Some((path, query)) => (path, Some(query)),
                None => (rest, None),
            };
            let (authority, tail) = match before_query.find('/') {
                Some(slash) => before_query.split_at(slash),
                None => (before_query, ""),
            };
            let authority = match authority.rsplit_once('@') {
                Some((user, host)) => match user.split_once(':') {
                    Some((name, _password)) => format!("{name}:***@{host}"),
                    None => authority.to_owned(),
                },
                None => authority.to_owned(),
            };
            let query = query.map(|query| {
                let pairs: Vec<String> = query
                    .split('&')
                    .map(|pair| match pair.split_once('=') {
                        Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                        _ => pair.to_owned(),
                    })
                    .collect();
                format!("?{}", pairs.join("&"))
            });
            format!("{scheme}://{authority}{tail}{}", query.unwrap_or_default())
        }
        None if is_conninfo(db) => redact_conninfo(db),
        None => db.to_owned(),
    }
}

/// A key=value string with the value of every `password` replaced by `***`.
fn redact_conninfo(db: &str) -> String {
    let mut out = String::with_capacity(db.len());
    let mut rest = db;
    while !rest.is_empty() {
        // White space between pairs is kept as it is.
        let start = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let Some(eq) = rest.find('=') else {
            out.push_str(rest);
            break;
        };
        let key = rest[..eq].trim_end();
        out.push_str(&rest[..=eq]);
        rest = &rest[eq + 1..];
        let gap = rest.len() - rest.trim_start().len();
        out.push_str(&rest[..gap]);
        rest = &rest[gap..];
        // The value: quoted to the closing quote (a backslash escapes the next character),
        // or bare to the next white space.
        let end = if rest.starts_with('\'') {
            let mut escaped = false;
            rest.char_indices()
                .skip(1)
                .find(|&(_, c)| {
                    let close = c == '\'' && !escaped;
                    escaped = c == '\\' && !escaped;
                    close
                })
                .map_or(rest.len(), |(i, _)| i + 1)
        } else {
            rest.find(char::is_whitespace).unwrap_or(rest.len())
        };
        if key == "password" {
            out.push_str("***");
        } else {
            out.push_str(&rest[..end]);
        }
        rest = &rest[end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_a_message() {
        assert_eq!(redacted("postgres://u:s3cret@h:5432/d"), "postgres://u:***@h:5432/d");
        assert_eq!(redacted("postgres://u@h/d"), "postgres://u@h/d");
        assert_eq!(redacted("postgres://h/d?x=1"), "postgres://h/d?x=1");
        assert!(!redacted("postgresql://u:p@ss@h/d").contains("p@ss"));
        assert_eq!(
            redacted("postgres://u@h/d?sslmode=disable&password=s3cret&x=1"),
            "postgres://u@h/d?sslmode=disable&password=***&x=1"
        );
        assert_eq!(redacted("postgres://u@h?password=s3cret"), "postgres://u@h?password=***");
        assert_eq!(redacted("host=h user=u password=s3cret dbname=d"), "host=h user=u password=*** dbname=d");
        assert_eq!(redacted("host=h password = 'a \\' b' dbname=d"), "host=h password = *** dbname=d");
        assert_eq!(redacted("password=s3cret"), "password=***");
        assert_eq!(redacted("./q.db"), "./q.db");
    }
}
