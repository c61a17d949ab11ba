//! What a figure was measured on: when, which commit's code, which machine. Every command
//! that prints figures as JSON (`bench`, `verify`, `check`) carries it as `"measured"`, so a
//! figure copied into the docs can say where it came from, and a stale one shows its age.

use serde::Serialize;

/// The date, the commit and the machine of one run.
#[derive(Debug, Serialize)]
pub struct Measured {
    /// When the run ended, UTC, RFC 3339 to the second.
    pub date: String,
    /// The commit the binary was built from (`unknown` outside a git checkout).
    pub commit: &'static str,
    /// What it ran on.
    pub machine: Machine,
}

/// The machine, as far as a figure depends on it.
#[derive(Debug, Serialize)]
pub struct Machine {
    /// The CPUs this process may use.
    pub cpus: usize,
    /// The CPU's model name (`/proc/cpuinfo`), when the system says.
    pub cpu: Option<String>,
    /// Total memory in MiB (`/proc/meminfo`), when the system says.
    pub memory_mib: Option<u64>,
    /// The operating system and architecture.
    pub os: String,
    /// The SQLite library's version (bundled by rusqlite).
    pub sqlite: &'static str,
    /// The load average over the last minute when the run ended (`/proc/loadavg`): how
    /// shared the machine was.
    pub load: Option<f64>,
}

impl Measured {
    /// This machine, now.
    pub fn now() -> Measured {
        let date = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        Measured { date, commit: env!("RETRYQ_COMMIT"), machine: Machine::this() }
    }
}

impl Measured {
    /// One line for the end of a table: `measured 2026-12-02T16:00:00Z, commit …, 2 CPUs …`.
    pub fn line(&self) -> String {
        let m = &self.machine;
        let mut line = format!("measured {}, commit {}, {} CPUs", self.date, self.commit, m.cpus);
        if let Some(cpu) = &m.cpu {
            line.push_str(&format!(" ({cpu})"));
        }
        if let Some(mib) = m.memory_mib {
            line.push_str(&format!(", {:.0} GiB", mib as f64 / 1024.0));
        }
        line.push_str(&format!(", {}, SQLite {}", m.os, m.sqlite));
        if let Some(load) = m.load {
            line.push_str(&format!(", load {load:.2}"));
        }
        line
    }
}

impl Machine {
    fn this() -> Machine {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        Machine {
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu: read("/proc/cpuinfo").as_deref().and_then(cpu_model),
            memory_mib: read("/proc/meminfo").as_deref().and_then(memory_mib),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            sqlite: rusqlite::version(),
            load: read("/proc/loadavg")
                .as_deref()
                .and_then(|text| text.split_whitespace().next()?.parse().ok()),
        }
    }
}

/// The first `model name` of `/proc/cpuinfo`.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

/// `MemTotal` of `/proc/meminfo`, in MiB.
fn memory_mib(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_and_the_memory_are_read_from_the_kernels_words() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpu_model(cpuinfo).as_deref(), Some("Intel(R) Xeon(R) Processor"));
        assert_eq!(cpu_model("processor\t: 0\n"), None);
        assert_eq!(memory_mib("MemTotal:       24576000 kB\nMemFree: 1 kB\n"), Some(24_000));
        assert_eq!(memory_mib("MemFree: 1 kB\n"), None);
        assert_eq!(memory_mib("MemTotal: lots kB\n"), None);
    }

    #[test]
    fn a_run_names_its_commit_and_date() {
        let measured = Measured::now();
        assert!(!measured.commit.is_empty());
        assert!(
            measured.date.ends_with('Z') && measured.date.len() == "2026-12-02T16:00:00Z".len(),
            "{}",
            measured.date
        );
        assert!(measured.machine.cpus >= 1);
        assert!(measured.machine.sqlite.starts_with("3."), "{}", measured.machine.sqlite);
    }
}
