//! The jobs list's filters by error text, payload text and kind: a bounded scan.
//!
//! The stores keep no index of text, so a text filter reads the jobs the other filters
//! (status, reason, queue, id prefix, age) let through, the most recently enqueued first, in
//! chunks of [`CHUNK`] through `Backend::browse`, and keeps those whose last error or payload
//! holds the text (as written: case counts) and whose kind is the one asked for (byte for
//! byte; no index holds kinds either). It stops once it has a page of matches or has
//! read [`SCAN`] jobs, whichever comes first, and the page says how many it read and links
//! the next stretch. So a page costs at most [`SCAN`] jobs read (each walk of `browse` as its
//! own doc says), and holds at most one chunk's payloads at a time: matches keep no payload
//! (the list does not show it).

use retryq::{Backend, Browse, BrowsePage, Job};

/// The most jobs one page of a text search reads.
pub const SCAN: usize = 200;
/// How many it reads at a time.
pub const CHUNK: u32 = 50;

/// The texts searched for.
#[derive(Clone, Copy, Debug, Default)]
pub struct Texts<'a> {
    /// Text the job's last error holds.
    pub error: Option<&'a str>,
    /// Text the job's payload holds.
    pub payload: Option<&'a str>,
    /// The job's kind, exactly (`""`: jobs without one).
    pub kind: Option<&'a str>,
}

impl Texts<'_> {
    /// Whether a text is asked for at all.
    pub fn any(&self) -> bool {
        self.error.is_some() || self.payload.is_some() || self.kind.is_some()
    }

    fn matches(&self, job: &Job) -> bool {
        self.error.is_none_or(|text| job.last_error.as_deref().is_some_and(|e| e.contains(text)))
            && self.payload.is_none_or(|text| job.payload.contains(text))
            && self.kind.is_none_or(|kind| job.kind == kind)
    }
}

/// One page of a text search: the matches, where the next stretch starts, and how many jobs
/// were read.
#[derive(Clone, Debug, Default)]
pub struct Found {
    /// The matching jobs (payloads left out), the most recently enqueued first.
    pub page: BrowsePage,
    /// How many jobs this page read.
    pub scanned: usize,
}

/// Reads from `browse`'s start on, at most [`SCAN`] jobs, until `limit` match `texts`.
pub fn search(
    store: &dyn Backend,
    browse: &Browse<'_>,
    texts: Texts<'_>,
    limit: usize,
) -> retryq::Result<Found> {
    let mut found = Found::default();
    let mut after = browse.after;
    loop {
        let chunk = store.browse(&Browse { after, limit: CHUNK, ..*browse })?;
        found.scanned += chunk.jobs.len();
        for mut job in chunk.jobs {
            if texts.matches(&job) {
                job.payload = String::new();
                found.page.jobs.push(job);
            }
        }
        after = chunk.next;
        if after.is_none() || found.page.jobs.len() >= limit || found.scanned + CHUNK as usize > SCAN {
            break;
        }
    }
    found.page.next = after;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use retryq::{NewJob, Queue};

    #[test]
    fn a_search_reads_at_most_scan_jobs_and_resumes_where_it_stopped() {
        let mut store = Queue::open_in_memory().expect("open");
        let ids: Vec<String> = (0..450).map(|n| format!("j{n:03}")).collect();
        for (n, id) in ids.iter().enumerate() {
            let payload = if n % 100 == 7 { r#"{"order":"needle"}"# } else { "{}" };
            let job = NewJob { id, payload, max_attempts: 1, deadline: 1 << 40, now: 1, ..NewJob::default() };
            store.enqueue(&job).expect("enqueue");
        }
        let browse = Browse { limit: 1, ..Browse::default() };
        let texts = Texts { payload: Some("needle"), ..Texts::default() };
        let first = search(&store, &browse, texts, 50).expect("search");
        // The newest first: j407, j307, j207 lie in the first 200 (j449 down to j250).
        assert_eq!(first.scanned, SCAN);
        let found: Vec<&str> = first.page.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!(found, ["j407", "j307"]);
        assert!(first.page.jobs.iter().all(|j| j.payload.is_empty()), "a match kept its payload");
        let next = search(&store, &Browse { after: first.page.next, ..browse }, texts, 50).expect("search");
        let found: Vec<&str> = next.page.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!((found.as_slice(), next.scanned), (["j207", "j107"].as_slice(), SCAN));
        let last = search(&store, &Browse { after: next.page.next, ..browse }, texts, 50).expect("search");
        let found: Vec<&str> = last.page.jobs.iter().map(|j| j.id.as_str()).collect();
        assert_eq!((found.as_slice(), last.scanned, last.page.next), (["j007"].as_slice(), 50, None));
        // A page of matches ends the search early.
        let early =
            search(&store, &browse, Texts { payload: Some("{"), ..Texts::default() }, 50).expect("search");
        assert_eq!((early.scanned, early.page.jobs.len()), (50, 50));
    }

    #[test]
    fn a_kind_matches_byte_for_byte_and_with_the_texts() {
        let mut store = Queue::open_in_memory().expect("open");
        for (id, kind, payload) in [
            ("m1", "mail", "a"),
            ("m2", "Mail", "a"),
            ("c1", "charge", "a"),
            ("m3", "mail", "b"),
            ("n1", "", "a"),
        ] {
            let job =
                NewJob { id, payload, kind, max_attempts: 1, deadline: 1 << 40, now: 1, ..NewJob::default() };
            store.enqueue(&job).expect("enqueue");
        }
        let browse = Browse { limit: 10, ..Browse::default() };
        let ids = |texts: Texts<'_>| -> Vec<String> {
            search(&store, &browse, texts, 10).expect("search").page.jobs.into_iter().map(|j| j.id).collect()
        };
        assert_eq!(ids(Texts { kind: Some("mail"), ..Texts::default() }), ["m3", "m1"]);
        assert_eq!(ids(Texts { kind: Some("mail"), payload: Some("a"), ..Texts::default() }), ["m1"]);
        assert_eq!(ids(Texts { kind: Some(""), ..Texts::default() }), ["n1"]);
    }
}
