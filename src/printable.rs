//! Stored text made safe to print on an operator's terminal.
//!
//! Ids, worker names, a job's `last_error` and `last_node` come from outside: from whoever
//! enqueued, from a command's standard error, from a receiver's answer. Printed raw, an
//! `ESC ]0;…BEL` retitles the operator's terminal, `ESC [2J` clears it, a carriage return
//! overwrites what a line said, a newline forges a line of its own, and a right-to-left
//! override reverses what follows. Text output (not JSON, whose encoder escapes control
//! characters itself) shows such characters as escapes instead: `\x1b`, `\x0a`, `\u{202e}`.

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every character a terminal could act on replaced by its escape; borrowed
/// when there is none.
pub fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts_on_terminal) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 8);
    for ch in text.chars() {
        if !acts_on_terminal(ch) {
            safe.push(ch);
        } else if ch.is_ascii() {
            let _ = write!(safe, "\\x{:02x}", u32::from(ch));
        } else {
            let _ = write!(safe, "\\u{{{:x}}}", u32::from(ch));
        }
    }
    Cow::Owned(safe)
}

/// Control characters (C0, DEL, C1), the line and paragraph separators, and the
/// bidirectional controls that reorder what is displayed after them.
fn acts_on_terminal(ch: char) -> bool {
    ch.is_control()
        || matches!(ch, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
        || ('\u{202a}'..='\u{202e}').contains(&ch)
        || ('\u{2066}'..='\u{2069}').contains(&ch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_escapes_and_the_rest_stays() {
        assert!(matches!(printable("plain héllo ✓"), Cow::Borrowed("plain héllo ✓")));
        assert_eq!(printable("a\x1b]0;x\x07\x1b[2Jb"), "a\\x1b]0;x\\x07\\x1b[2Jb");
        assert_eq!(printable("line\r\nforged\t\x7f\0"), "line\\x0d\\x0aforged\\x09\\x7f\\x00");
        assert_eq!(printable("\u{9b}31m \u{202e}txt.exe \u{2028}"), "\\u{9b}31m \\u{202e}txt.exe \\u{2028}");
    }
}
