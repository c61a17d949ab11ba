//! What a running stage has done so far, on a terminal: one line on stderr — the stage, its
//! count (states explored, traces replayed, kills done…) and the time since it started —
//! redrawn in place a few times a second, and cleared when the stage ends, so that only the
//! start and end lines stay. Piped, nothing is drawn at all: a log gets those two lines per
//! stage and no control characters.

use std::time::Duration;

use indicatif::style::ProgressTracker;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// Redraws per second: enough to see it move, few enough to cost nothing.
const HZ: u8 = 4;

/// The running stage's count, drawn on stderr when it is a terminal.
pub struct Meter {
    bar: ProgressBar,
}

impl Meter {
    /// A meter for `stage` counting `unit`s: drawn on stderr when `terminal`, never otherwise
    /// (indicatif would not draw on a pipe either; this also spares the redraw's thread).
    pub fn new(stage: &'static str, unit: &'static str, terminal: bool) -> Meter {
        if !terminal {
            return Meter { bar: ProgressBar::hidden() };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(HZ));
        if let Ok(style) = ProgressStyle::with_template("{line}") {
            bar.set_style(style.with_key("line", Line { stage, unit }));
        }
        // Redrawn on a timer too: the elapsed time moves while the count does not (the model
        // checker reports once per level of its search, seconds apart).
        bar.enable_steady_tick(Duration::from_millis(1000 / u64::from(HZ)));
        Meter { bar }
    }

    /// One more unit done.
    pub fn tick(&self) {
        self.bar.inc(1);
    }

    /// `done` units so far.
    pub fn set(&self, done: u64) {
        self.bar.set_position(done);
    }
}

impl Drop for Meter {
    /// The line goes when its stage ends: the stage's end line takes its place.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// The meter's line: `verify: generated: 1,234 traces, 1m 05s`.
pub fn render(stage: &str, unit: &str, done: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    let time = if secs < 60 { format!("{secs} s") } else { format!("{}m {:02}s", secs / 60, secs % 60) };
    format!("verify: {stage}: {} {unit}, {time}", grouped(done))
}

/// `n` with a comma between each group of three digits, as the docs write counts.
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The `{line}` of the meter's template: [`render`] of its state.
#[derive(Clone)]
struct Line {
    stage: &'static str,
    unit: &'static str,
}

impl ProgressTracker for Line {
    fn clone_box(&self) -> Box<dyn ProgressTracker> {
        Box::new(self.clone())
    }

    fn tick(&mut self, _: &ProgressState, _: std::time::Instant) {}

    fn reset(&mut self, _: &ProgressState, _: std::time::Instant) {}

    fn write(&self, state: &ProgressState, w: &mut dyn std::fmt::Write) {
        // Best effort: a line that cannot be written is left out.
        let _ = w.write_str(&render(self.stage, self.unit, state.pos(), state.elapsed()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_stage_its_count_and_the_time_since_it_started() {
        let line = render("model check", "states", 3_103_125, Duration::from_millis(65_900));
        assert_eq!(line, "verify: model check: 3,103,125 states, 1m 05s");
        assert_eq!(render("crash", "kills", 7, Duration::from_millis(999)), "verify: crash: 7 kills, 0 s");
        assert_eq!(
            render("generated", "traces", 100, Duration::from_secs(59)),
            "verify: generated: 100 traces, 59 s"
        );
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(123_456_789), "123,456,789");
        assert!(!line.chars().any(char::is_control), "{line:?}");
    }
}
