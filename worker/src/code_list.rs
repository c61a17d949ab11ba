//! Lists of numeric codes as an operator writes them (`1,2,64-78`, or `none`) and as a table
//! shows them back: the exec transport's exit statuses and the HTTP transport's statuses are
//! read and printed alike, by this one reading.

use std::collections::BTreeSet;

/// Parses codes and inclusive ranges, commas between, white space allowed, or `none` for no
/// code at all — the word [`ranges`] prints. An empty text is refused like an empty item: a
/// flag given as `""` is more likely an unset variable than a wish to list nothing. `what`
/// names the codes in that refusal; `code` reads and checks one code.
pub(crate) fn parse(
    text: &str,
    what: &str,
    code: impl Fn(&str) -> Result<u16, String>,
) -> Result<Vec<u16>, String> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    if text.trim().is_empty() {
        return Err(format!("{text:?} is empty: list {what}, or write `none` for none"));
    }
    let mut codes = Vec::new();
    for item in text.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(format!("{text:?} has an empty item"));
        }
        let (lo, hi) = match item.split_once('-') {
            Some((lo, hi)) => (code(lo.trim())?, code(hi.trim())?),
            None => {
                let c = code(item)?;
                (c, c)
            }
        };
        if lo > hi {
            return Err(format!("{item:?} is an empty range"));
        }
        codes.extend(lo..=hi);
    }
    Ok(codes)
}

/// `408,429,500,502-504`, or `none`: consecutive codes as one range.
pub(crate) fn ranges(codes: impl IntoIterator<Item = u16>) -> String {
    let codes: BTreeSet<u16> = codes.into_iter().collect();
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u16, u16)> = None;
    for c in codes {
        run = match run {
            Some((lo, hi)) if u32::from(c) == u32::from(hi) + 1 => Some((lo, c)),
            Some(done) => {
                out.push(range(done));
                Some((c, c))
            }
            None => Some((c, c)),
        };
    }
    out.extend(run.map(range));
    if out.is_empty() { "none".into() } else { out.join(",") }
}

fn range((lo, hi): (u16, u16)) -> String {
    if lo == hi { lo.to_string() } else { format!("{lo}-{hi}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any(text: &str) -> Result<u16, String> {
        text.parse::<u16>().map_err(|_| format!("{text:?} is not a code"))
    }

    #[test]
    fn lists_read_back_as_they_print() {
        assert_eq!(parse("1, 2,5-7", "codes", any), Ok(vec![1, 2, 5, 6, 7]));
        assert_eq!(parse(" none ", "codes", any), Ok(vec![]));
        for bad in ["", " ", "1,,2", "7-5", "x"] {
            assert!(parse(bad, "codes", any).is_err(), "{bad:?}");
        }
        assert_eq!(ranges([7, 1, 2, 5, 6, 9]), "1-2,5-7,9");
        assert_eq!(ranges([]), "none");
        assert_eq!(ranges([65535, 65534]), "65534-65535");
    }
}
