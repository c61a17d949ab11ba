//! The name a worker process holds its leases under.
//!
//! A lease is fenced by (worker, attempt): the store lets a completion through only if the
//! job is leased to that worker name on that attempt. Two live processes started with the
//! same `--worker` name would share that identity, so neither could tell its own lease from
//! the other's in the store's rows and history, and an operator could not tell which
//! process holds what. So a process holds its leases under `NAME.PID-XXXXXXXX`: the name it
//! was given, its process id, and 32 random bits (a process id is reused after a restart,
//! and by another machine's process on a shared file). The name is logged at start; `retryq
//! stats --workers` lists the holders by it.

use rand::RngExt;

use crate::config::ConfigError;

/// The store's limit on a worker name, in bytes.
const MAX_NAME_BYTES: usize = retryq_core::MAX_ID_BYTES;

/// `name` with this process's suffix: `NAME.PID-XXXXXXXX`, unique to the process. Refused
/// if the result would pass 256 bytes, or `name` is empty.
pub fn process_name(name: &str) -> Result<String, ConfigError> {
    let random: u32 = rand::rng().random();
    let suffix = format!(".{}-{random:08x}", std::process::id());
    if name.is_empty() {
        return Err(ConfigError::Worker { bytes: 0 });
    }
    let most = MAX_NAME_BYTES.saturating_sub(suffix.len());
    if name.len() > most {
        return Err(ConfigError::WorkerTooLong { bytes: name.len(), suffix: suffix.len(), most });
    }
    Ok(format!("{name}{suffix}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_call_names_a_different_holder_under_the_given_name() {
        let a = process_name("w1").expect("name");
        let b = process_name("w1").expect("name");
        let pid = std::process::id().to_string();
        assert!(a.starts_with(&format!("w1.{pid}-")), "{a}");
        assert_eq!(a.len(), "w1.".len() + pid.len() + 9, "{a}");
        assert_ne!(a, b, "32 random bits tell two holders of one pid apart");
    }

    #[test]
    fn the_suffixed_name_must_fit_the_store() {
        let suffix = process_name("w").expect("name").len() - 1;
        let longest = "n".repeat(MAX_NAME_BYTES - suffix);
        assert_eq!(process_name(&longest).expect("fits").len(), MAX_NAME_BYTES);
        let err = process_name(&format!("{longest}n")).unwrap_err();
        assert!(matches!(err, ConfigError::WorkerTooLong { most, .. } if most == longest.len()), "{err}");
        assert!(err.to_string().contains("at most"), "{err}");
        assert!(matches!(process_name(""), Err(ConfigError::Worker { bytes: 0 })));
    }
}
