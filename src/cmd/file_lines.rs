//! The lines of `enqueue --file`'s input, one at a time, in bounded memory: a line longer than
//! any job needs is refused by its number once that many bytes are read, never read whole, so
//! that `--file /dev/zero` (one endless line) is refused at line 1 rather than growing until
//! memory runs out.

use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read};
use std::path::Path;

use retryq::MAX_PAYLOAD_BYTES;

/// The longest line read: a payload of 1 MiB with every byte escaped (`\u0001` is six bytes),
/// and 64 KiB for the other fields (an id and a queue escaped the same way take 1,920 bytes)
/// and white space.
pub const MAX_LINE_BYTES: usize = 6 * MAX_PAYLOAD_BYTES + (64 << 10);

/// Why the input cannot be read further. Each is said after the input's name.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot be read: {0}")]
    Read(io::Error),
    #[error("standard input is a terminal, and is not read: pipe the lines in, or name a file")]
    Terminal,
    #[error("line {line}: is not UTF-8 text")]
    NotText { line: usize },
    #[error("line {line}: is longer than {MAX_LINE_BYTES} bytes, more than any job needs")]
    TooLong { line: usize },
}

/// A file or standard input, read line by line.
pub struct Lines {
    input: Box<dyn BufRead>,
    /// The number of the line read last (1 for the first).
    number: usize,
    buffer: Vec<u8>,
}

impl Lines {
    /// `file`, or standard input for `-` (never a terminal's).
    pub fn open(file: &Path) -> Result<Lines, ReadError> {
        let input: Box<dyn BufRead> = if file == Path::new("-") {
            let stdin = io::stdin();
            if stdin.is_terminal() {
                return Err(ReadError::Terminal);
            }
            Box::new(BufReader::new(stdin))
        } else {
            Box::new(BufReader::new(File::open(file).map_err(ReadError::Read)?))
        };
        Ok(Lines::over(input))
    }

    /// The lines of `input`.
    pub fn over(input: Box<dyn BufRead>) -> Lines {
        Lines { input, number: 0, buffer: Vec::new() }
    }

    /// The next line, with its number, without its line ending (`\n` or `\r\n`); `None` at
    /// the end.
    pub fn next_line(&mut self) -> Result<Option<(usize, &str)>, ReadError> {
        self.buffer.clear();
        // One byte more than a line may hold: a line that fills it has no end within reach.
        let limit = MAX_LINE_BYTES as u64 + 1;
        let read =
            (&mut self.input).take(limit).read_until(b'\n', &mut self.buffer).map_err(ReadError::Read)?;
        if read == 0 {
            return Ok(None);
        }
        self.number += 1;
        let line = self.number;
        if self.buffer.last() == Some(&b'\n') {
            self.buffer.pop();
            if self.buffer.last() == Some(&b'\r') {
                self.buffer.pop();
            }
        } else if self.buffer.len() > MAX_LINE_BYTES {
            return Err(ReadError::TooLong { line });
        }
        let text = std::str::from_utf8(&self.buffer).map_err(|_| ReadError::NotText { line })?;
        Ok(Some((line, text)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(bytes: &'static [u8]) -> Lines {
        Lines::over(Box::new(bytes))
    }

    fn all(mut lines: Lines) -> Result<Vec<(usize, String)>, ReadError> {
        let mut read = Vec::new();
        while let Some((n, text)) = lines.next_line()? {
            read.push((n, text.to_owned()));
        }
        Ok(read)
    }

    #[test]
    fn lines_are_numbered_and_lose_their_endings() {
        let read = all(lines(b"a\r\n\nb\nc")).expect("read");
        let expected = [(1, "a"), (2, ""), (3, "b"), (4, "c")].map(|(n, t)| (n, t.to_owned()));
        assert_eq!(read, expected);
        assert!(all(lines(b"")).expect("read").is_empty());
    }

    #[test]
    fn an_endless_line_is_refused_once_it_is_longer_than_any_job_needs() {
        // /dev/zero: read no further than the limit, however long the line.
        let zeros = Box::new(io::repeat(0).take(1 << 40));
        let mut endless = Lines::over(Box::new(BufReader::new(zeros)));
        assert!(matches!(endless.next_line(), Err(ReadError::TooLong { line: 1 })));
        // The longest line is read; one byte more is refused, by its number.
        let mut long = vec![b'x'; MAX_LINE_BYTES];
        long.push(b'\n');
        long.extend(vec![b'y'; MAX_LINE_BYTES + 1]);
        let mut read = Lines::over(Box::new(io::Cursor::new(long)));
        assert_eq!(read.next_line().expect("read").map(|(n, t)| (n, t.len())), Some((1, MAX_LINE_BYTES)));
        assert!(matches!(read.next_line(), Err(ReadError::TooLong { line: 2 })));
    }

    #[test]
    fn bytes_that_are_not_utf8_are_refused_by_line() {
        let mut read = lines(b"ok\n\xff\n");
        assert!(read.next_line().expect("line 1").is_some());
        assert!(matches!(read.next_line(), Err(ReadError::NotText { line: 2 })));
    }
}
