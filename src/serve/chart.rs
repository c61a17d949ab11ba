//! The activity charts as server-rendered SVG: no script and no file from elsewhere, so the
//! content security policy (`http.rs`) holds as it is. Colours are `style.css`'s classes, as
//! that policy allows no inline style.
//!
//! Each slot has three bars — processed, retried, dead — each carrying its count in
//! `data-value` and in its `<title>` (what a pointer over it shows), and its slot's start in
//! `data-at` (Unix ms).

use maud::{Markup, html};

use super::activity::{Counts, Slots, Window};
use crate::cmd::view::utc;

/// The plot's height in pixels; bars scale to the window's largest count.
const HEIGHT: u64 = 120;
/// Room above and below the plot for the scale and the times.
const MARGIN: u64 = 16;

/// How a series is read off a slot's counts.
type Of = fn(&Counts) -> u64;

/// The series, as named in `data-series` and the legend, with how each is read.
pub const SERIES: [(&str, Of); 3] =
    [("processed", |c| c.processed), ("retried", |c| c.retried), ("dead", |c| c.dead)];

/// A slot's label: the hour's chart names minutes, the day's hours (UTC).
fn label(window: Window, at: u64) -> String {
    let text = utc(at);
    // `2026-12-04T10:15:00.000Z`: keep `10:15`.
    let time = text.get(11..16).unwrap_or(&text);
    match window {
        Window::Hour => format!("{time} UTC"),
        Window::Day => format!("{time}–{}:59 UTC", time.get(..2).unwrap_or(time)),
    }
}

/// The chart of `slots` (oldest first) as an `<svg>`.
pub fn svg(window: Window, slots: &Slots) -> Markup {
    let (slot_width, bar) = match window {
        Window::Hour => (15u64, 4u64),
        Window::Day => (36, 10),
    };
    let most = slots.iter().flat_map(|(_, c)| SERIES.iter().map(|(_, of)| of(c))).max().unwrap_or(0).max(1);
    let width = slot_width * slots.len() as u64;
    let base = MARGIN + HEIGHT;
    let name = match window {
        Window::Hour => "hour",
        Window::Day => "day",
    };
    html! {
        svg.chart data-window=(name) xmlns="http://www.w3.org/2000/svg" role="img"
            width=(width + 2 * MARGIN) height=(base + MARGIN + 4)
            viewBox={ "0 0 " (width + 2 * MARGIN) " " (base + MARGIN + 4) } {
            title { @match window { Window::Hour => "Per minute, the last hour", Window::Day => "Per hour, the last day" } }
            line.axis x1=(MARGIN) y1=(base) x2=(MARGIN + width) y2=(base) {}
            text.scale x=(MARGIN) y="11" { (most) " at the top" }
            @for (n, (at, counts)) in slots.iter().enumerate() {
                @let x0 = MARGIN + n as u64 * slot_width + 1;
                @for (k, (series, of)) in SERIES.iter().enumerate() {
                    @let value = of(counts);
                    // A count above 0 shows as a bar of at least a pixel.
                    @let height = (value * HEIGHT).div_ceil(most);
                    rect class={ "bar " (series) } data-series=(series) data-at=(at) data-value=(value)
                        x=(x0 + k as u64 * bar) y=(base - height) width=(bar) height=(height) {
                        title { (label(window, *at)) ": " (value) " " (series) }
                    }
                }
            }
            @if let (Some((first, _)), Some((last, _))) = (slots.first(), slots.last()) {
                text.time x=(MARGIN) y=(base + MARGIN) { (label(window, *first)) }
                text.time x=(MARGIN + width) y=(base + MARGIN) text-anchor="end" { (label(window, *last)) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bar_carries_its_count_and_the_largest_fills_the_plot() {
        let slots = vec![
            (0, Counts { processed: 4, retried: 1, dead: 0 }),
            (60_000, Counts { processed: 2, retried: 0, dead: 3 }),
        ];
        let svg = svg(Window::Hour, &slots).into_string();
        for (series, at, value, height) in
            [("processed", 0, 4, 120), ("retried", 0, 1, 30), ("dead", 0, 0, 0), ("dead", 60000, 3, 90)]
        {
            let found = svg.split("<rect").any(|rect| {
                rect.contains(&format!("data-series=\"{series}\" data-at=\"{at}\" data-value=\"{value}\""))
                    && rect.contains(&format!("height=\"{height}\""))
            });
            assert!(found, "no {series} bar at {at} of {value}, {height} px high, in {svg}");
        }
        assert_eq!(svg.matches("<rect").count(), 6);
        assert!(svg.contains("00:01 UTC: 3 dead"), "{svg}");
        assert!(svg.contains("4 at the top"), "{svg}");
    }
}
