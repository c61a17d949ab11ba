//! Sending webhooks with retries: enqueue them, then call `run_once` in a loop with a
//! transport that POSTs each job and classifies the answer.
//!
//! The receiver is a small HTTP server the example starts on a local port: one endpoint
//! accepts, one fails twice before it accepts, one is gone for good. Only `std` is used for
//! the HTTP on both sides; a real sender would use an HTTP client library.
//!
//! `cargo run -p retryq --example webhook_sender`

use std::error::Error;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use retryq::{Claimed, NewJob, Outcome, Queue, Ran, Report, Settings};

fn main() -> Result<(), Box<dyn Error>> {
    run(&mut io::stdout())
}

/// The whole example, printing to `out`.
pub fn run(out: &mut impl Write) -> Result<(), Box<dyn Error>> {
    let receiver = Receiver::start()?;
    let dir = tempfile::tempdir()?;
    let mut queue = Queue::open(dir.path().join("webhooks.db"))?;
    // Short backoff windows, so that the example's retries take milliseconds.
    queue.set_settings(Settings { lease_ms: 5_000, base_ms: 20, cap_ms: 100, ..Settings::default() })?;

    // Each webhook is one job: its id is the delivery's idempotency key, its payload what
    // the transport needs (here: the endpoint's path, a newline, the body).
    let now = now_ms();
    for (id, path, body) in [
        ("invoice-paid-17", "/hooks/ok", r#"{"invoice":17,"event":"paid"}"#),
        ("invoice-paid-18", "/hooks/flaky", r#"{"invoice":18,"event":"paid"}"#),
        ("invoice-paid-19", "/hooks/gone", r#"{"invoice":19,"event":"paid"}"#),
    ] {
        let payload = format!("{path}\n{body}");
        queue.enqueue(&NewJob {
            id,
            payload: &payload,
            max_attempts: 5,
            deadline: now + 60_000,
            now,
            ..NewJob::default()
        })?;
    }

    // The worker loop: one claim, one send, one record per call; when nothing is due, sleep
    // until the next reservation instead of polling.
    let send = |job: &Claimed| post(receiver.addr, job);
    loop {
        match queue.run_once("sender-1", now_ms, send, jitter())? {
            Ran::Idle => match queue.next_due()? {
                None => break,
                Some(due) => std::thread::sleep(Duration::from_millis(due.saturating_sub(now_ms()).min(200))),
            },
            Ran::Done { id, attempt } => writeln!(out, "{id}: delivered on attempt {attempt}")?,
            Ran::Retry { id, attempt, .. } => writeln!(out, "{id}: attempt {attempt} failed, will retry")?,
            Ran::Dead { id, attempt, reason } => {
                writeln!(out, "{id}: dead after attempt {attempt} ({reason})")?
            }
            other => writeln!(out, "{other:?}")?,
        }
    }

    let stats = queue.stats(now_ms())?;
    writeln!(out, "done {}, dead {}", stats.done, stats.dead)?;
    for job in queue.dead_jobs(None)? {
        writeln!(out, "dead: {} last error: {}", job.id, job.last_error.as_deref().unwrap_or("-"))?;
    }
    Ok(())
}

/// The transport: POSTs the job's body to its endpoint with the job's id as the
/// idempotency key, and classifies the answer. 2xx is `ok`; 408, 429 and 5xx are
/// `retryable` (a `Retry-After` becomes the pushback); any other status is `permanent`.
/// A connection that failed before the request was written is `retryable` too: nothing was
/// delivered. Returning `Err` instead would leave the job leased until its lease expires.
fn post(addr: SocketAddr, job: &Claimed) -> Result<Report, io::Error> {
    let (path, body) = job.payload.split_once('\n').unwrap_or(("/", job.payload.as_str()));
    let mut stream = match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(stream) => stream,
        Err(e) => return Ok(Report::with_error(Outcome::Retryable, format!("connect: {e}"))),
    };
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nIdempotency-Key: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        job.id(),
        body.len()
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let status: u16 = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let retry_after = response
        .lines()
        .find_map(|line| line.strip_prefix("Retry-After: "))
        .and_then(|secs| secs.trim().parse::<u64>().ok());
    let line = response.lines().next().unwrap_or("").to_owned();
    Ok(match status {
        200..=299 => Report::from(Outcome::Ok),
        408 | 429 | 500..=599 => {
            let report = Report::with_error(Outcome::Retryable, line);
            match retry_after {
                Some(secs) => report.retry_after(secs * 1000),
                None => report,
            }
        }
        _ => Report::with_error(Outcome::Permanent, line),
    })
}

/// The receiving end: a local HTTP server on a port of its own, on a thread of its own.
struct Receiver {
    addr: SocketAddr,
}

impl Receiver {
    fn start() -> io::Result<Receiver> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        std::thread::spawn(move || {
            let mut flaky_calls = 0;
            for stream in listener.incoming().flatten() {
                // A broken request is the sender's problem: the receiver just goes on.
                let _ = answer(stream, &mut flaky_calls);
            }
        });
        Ok(Receiver { addr })
    }
}

/// Reads one request and answers it by its path.
fn answer(stream: TcpStream, flaky_calls: &mut u32) -> io::Result<()> {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        if header.trim().is_empty() {
            break;
        }
        if let Some(value) = header.strip_prefix("Content-Length: ") {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let path = request_line.split(' ').nth(1).unwrap_or("/");
    let status = match path {
        "/hooks/ok" => "200 OK",
        "/hooks/flaky" => {
            *flaky_calls += 1;
            if *flaky_calls <= 2 { "503 Service Unavailable" } else { "200 OK" }
        }
        "/hooks/gone" => "410 Gone",
        _ => "404 Not Found",
    };
    let mut stream = reader.into_inner();
    write!(stream, "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
}

/// Milliseconds since the Unix epoch: the queue's times are whatever base the caller
/// chooses, as long as every call uses the same one.
fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// A fresh random number in [0, 1), from the standard library's randomly keyed hasher: the
/// jitter spreads the retries of many senders over their backoff window.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    (random >> 11) as f64 / (1u64 << 53) as f64
}
