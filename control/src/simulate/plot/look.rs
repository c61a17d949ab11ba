//! How each series is drawn, so that series with the same data stay told apart.
//!
//! Lines coincide often: with a budget every strategy makes the same calls (the budget, not
//! the strategy, decides them), and without one every strategy succeeds for every client.
//! Colour alone cannot show four lines drawn on top of each other, so each strategy also has
//! a marker of its own shape and size, hollow, so that coinciding points nest (a cross
//! inside a triangle inside a square inside a circle) instead of hiding each other, and, with
//! a budget, a dash pattern of its own.

use plotters::element::{ComposedElement, DashedPathElement};
use plotters::prelude::*;

use crate::simulate::strategy::Strategy;

/// A point's marker; sizes in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Circle(u32),
    Square(i32),
    Triangle(u32),
    Cross(u32),
}

/// How one series (a strategy, with or without a budget) is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    pub color: RGBColor,
    pub marker: Marker,
    /// Dash and gap in pixels; `None` for a solid line (no budget).
    pub dash: Option<(u32, u32)>,
}

/// The line width, in pixels.
pub const WIDTH: u32 = 2;

/// The look of `strategy`'s series, dashed if `budget`.
pub fn look(strategy: Strategy, budget: bool) -> Look {
    let (color, marker, dash) = match strategy {
        Strategy::Immediate => (RGBColor(214, 39, 40), Marker::Circle(8), (14, 5)),
        Strategy::Exponential => (RGBColor(255, 127, 14), Marker::Square(5), (8, 5)),
        Strategy::FullJitter => (RGBColor(44, 160, 44), Marker::Triangle(5), (4, 4)),
        Strategy::Decorrelated => (RGBColor(31, 119, 180), Marker::Cross(3), (2, 6)),
    };
    Look { color, marker, dash: budget.then_some(dash) }
}

impl Marker {
    /// The marker's outline as one path, in pixels around its point: every marker is then
    /// the same kind of element (plotters draws a series of one element type).
    pub fn outline(self) -> Vec<(i32, i32)> {
        match self {
            Marker::Circle(r) => {
                let r = f64::from(r);
                (0..=16)
                    .map(|i| {
                        let angle = f64::from(i) * std::f64::consts::TAU / 16.0;
                        ((r * angle.cos()).round() as i32, (r * angle.sin()).round() as i32)
                    })
                    .collect()
            }
            Marker::Square(h) => vec![(-h, -h), (h, -h), (h, h), (-h, h), (-h, -h)],
            Marker::Triangle(s) => {
                let s = s as i32;
                vec![(0, -s - 2), (s + 1, s), (-s - 1, s), (0, -s - 2)]
            }
            // Both diagonals in one stroke, through the centre.
            Marker::Cross(s) => {
                let s = s as i32;
                vec![(-s, -s), (s, s), (0, 0), (s, -s), (-s, s)]
            }
        }
    }
}

impl Look {
    /// The stroke of the line and of the marker's outline.
    pub fn style(&self) -> ShapeStyle {
        self.color.stroke_width(WIDTH)
    }

    /// The legend's sample at pixel `(x, y)`: a stretch of the line with the marker on it.
    pub fn legend<DB: DrawingBackend>(&self, (x, y): (i32, i32)) -> Sample<DB> {
        const LENGTH: i32 = 28;
        // A solid line is one dash as long as the sample, which keeps one element type.
        let (dash, gap) = self.dash.unwrap_or((LENGTH as u32, LENGTH as u32));
        let line = vec![(0, 0), (LENGTH, 0)];
        let marker = self.marker.outline().into_iter().map(|(dx, dy)| (dx + LENGTH / 2, dy));
        EmptyElement::at((x, y))
            + DashedPathElement::new(line, dash, gap, self.style())
            + PathElement::new(marker.collect::<Vec<_>>(), self.style())
    }
}

/// A legend's sample: a line and a marker, in pixels around the legend entry's point.
pub type Sample<DB> = ComposedElement<
    (i32, i32),
    DB,
    DashedPathElement<std::vec::IntoIter<(i32, i32)>, u32>,
    PathElement<(i32, i32)>,
>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_looks_different_from_every_other() {
        let looks: Vec<Look> = Strategy::ALL.iter().flat_map(|s| [look(*s, false), look(*s, true)]).collect();
        for (i, a) in looks.iter().enumerate() {
            for b in &looks[i + 1..] {
                assert_ne!(a, b);
            }
        }
        // Coinciding series differ in more than colour: marker shape and size, and dashes.
        for budget in [false, true] {
            for (i, a) in Strategy::ALL.iter().enumerate() {
                for b in &Strategy::ALL[i + 1..] {
                    let (a, b) = (look(*a, budget), look(*b, budget));
                    assert_ne!(std::mem::discriminant(&a.marker), std::mem::discriminant(&b.marker));
                    assert!(a.dash.is_none() || a.dash != b.dash);
                }
            }
        }
    }
}
