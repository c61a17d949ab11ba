//! The simulation's picture: calls to the server against the number of clients, and below
//! it the share of clients that succeeded, one line per strategy, dashed where a budget was
//! in force.
//!
//! Both panels are needed: a budget cuts calls and success together (at 100 clients the
//! budgeted strategies make a tenth of the calls and about 4 % of the clients succeed), and
//! a plot of calls alone shows only the gain. Series that coincide are told apart by marker
//! and dash pattern ([`look`]).
//!
//! Drawn with plotters' SVG backend alone: text is written as SVG `<text>` with a generic
//! font family for the viewer to render, so nothing here looks for fonts on this machine.

mod look;

use plotters::chart::SeriesAnno;
use plotters::coord::types::{RangedCoordf64, RangedCoordu32};
use plotters::prelude::*;

use self::look::look;
use super::row::Row;
use super::strategy::Strategy;

/// The drawing failed (plotters' error, as text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot draw the plot: {0}")]
pub struct PlotError(String);

/// The picture's size, and the heights of the calls panel and of the note under the panels.
const SIZE: (u32, u32) = (960, 1000);
const CALLS_HEIGHT: u32 = 560;
const NOTE_HEIGHT: u32 = 40;

/// What the note under the panels says.
const NOTE: &str = "Lines that coincide (budgeted calls, success without a budget) are told apart by \
                        marker and dash.";

type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordu32, RangedCoordf64>>;

/// An SVG document plotting `rows`: calls against clients above, the success rate below,
/// titled with the layers.
pub fn svg(rows: &[Row]) -> Result<String, PlotError> {
    let mut out = String::new();
    draw(rows, &mut out).map_err(|e| PlotError(e.to_string()))?;
    Ok(out)
}

/// One line: a strategy, with or without a budget, its points ordered by clients.
struct Series {
    strategy: Strategy,
    budget: bool,
    points: Vec<(u32, f64)>,
}

/// Each series present in `rows`, of `value` against clients.
fn series(rows: &[Row], value: fn(&Row) -> f64) -> Vec<Series> {
    let mut all = Vec::new();
    for strategy in Strategy::ALL {
        for budget in [false, true] {
            let mut points: Vec<(u32, f64)> = rows
                .iter()
                .filter(|r| r.strategy == strategy && r.budget == budget)
                .map(|r| (r.clients, value(r)))
                .collect();
            if !points.is_empty() {
                points.sort_by_key(|p| p.0);
                all.push(Series { strategy, budget, points });
            }
        }
    }
    all
}

fn draw(rows: &[Row], out: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let max_clients = rows.iter().map(|r| r.clients).max().unwrap_or(1);
    let x_range = 0u32..max_clients.saturating_add(max_clients / 20 + 1);
    let max_calls = rows.iter().map(|r| r.calls).fold(1.0, f64::max);
    let layers: Vec<u32> = rows.iter().map(|r| r.layers).collect();
    let title = match (layers.iter().min(), layers.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("Calls to the server, {lo} layers"),
        _ => "Calls to the server".to_owned(),
    };

    let root = SVGBackend::with_string(out, SIZE).into_drawing_area();
    root.fill(&WHITE)?;
    let (calls_area, rest) = root.split_vertically(CALLS_HEIGHT);
    let (success_area, note_area) = rest.split_vertically(SIZE.1 - CALLS_HEIGHT - NOTE_HEIGHT);

    let mut calls = panel(&calls_area, title, x_range.clone(), 0f64..max_calls * 1.05)?;
    calls
        .configure_mesh()
        .x_desc("clients")
        .y_desc("calls (writes reaching the server)")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()?;
    for Series { strategy, budget, points } in series(rows, |r| r.calls) {
        let look = look(strategy, budget);
        let label = if budget { format!("{} + budget", strategy.name()) } else { strategy.name().to_owned() };
        line(&mut calls, &points, look)?.label(label).legend(move |at| look.legend(at));
        markers(&mut calls, &points, look)?;
    }
    calls
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 16))
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()?;

    // A little room past 0 % and 100 %, so that lines there are not drawn over the axes.
    let mut success = panel(
        &success_area,
        "Success rate (clients whose request succeeded)".to_owned(),
        x_range,
        -0.03..1.05,
    )?;
    success
        .configure_mesh()
        .x_desc("clients")
        .y_desc("success rate")
        .y_label_formatter(&|v| format!("{:.0} %", v * 100.0))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()?;
    for Series { strategy, budget, points } in series(rows, |r| r.success_rate) {
        let look = look(strategy, budget);
        line(&mut success, &points, look)?;
        markers(&mut success, &points, look)?;
    }

    note_area.draw(&Text::new(NOTE, (80, 8), ("sans-serif", 15).into_font().color(&BLACK)))?;
    root.present()?;
    Ok(())
}

/// A chart with `title` over `area`.
fn panel<'a, 'b>(
    area: &'a DrawingArea<SVGBackend<'b>, plotters::coord::Shift>,
    title: String,
    x: std::ops::Range<u32>,
    y: std::ops::Range<f64>,
) -> Result<Chart<'a, 'b>, Box<dyn std::error::Error>> {
    let chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 22))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(x, y)?;
    Ok(chart)
}

/// The series' line, solid or in its dash pattern.
fn line<'a, 'b, 'c>(
    chart: &'c mut Chart<'a, 'b>,
    points: &[(u32, f64)],
    look: look::Look,
) -> Result<&'c mut SeriesAnno<'a, SVGBackend<'b>>, Box<dyn std::error::Error>> {
    let points = points.to_vec();
    Ok(match look.dash {
        Some((dash, gap)) => chart.draw_series(DashedLineSeries::new(points, dash, gap, look.style()))?,
        None => chart.draw_series(LineSeries::new(points, look.style()))?,
    })
}

/// The series' marker at each point.
fn markers(
    chart: &mut Chart<'_, '_>,
    points: &[(u32, f64)],
    look: look::Look,
) -> Result<(), Box<dyn std::error::Error>> {
    let style = look.style();
    let outline = look.marker.outline();
    chart.draw_series(
        points.iter().map(|&p| EmptyElement::at(p) + PathElement::new(outline.clone(), style)),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(strategy: Strategy, budget: bool, clients: u32, calls: f64) -> Row {
        let amplification = calls / f64::from(clients);
        Row {
            strategy,
            budget,
            clients,
            layers: 2,
            calls,
            amplification,
            completion_ms: 1.0,
            success_rate: 1.0,
        }
    }

    #[test]
    fn the_plot_is_an_svg_with_every_series_in_its_legend() {
        let rows = [
            row(Strategy::Exponential, false, 10, 50.0),
            row(Strategy::Exponential, false, 100, 2000.0),
            row(Strategy::FullJitter, true, 10, 30.0),
            row(Strategy::FullJitter, true, 100, 900.0),
        ];
        let svg = svg(&rows).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        assert!(svg.contains("Calls to the server, 2 layers"));
        assert!(svg.contains("\nexponential\n"));
        assert!(svg.contains("\nfull-jitter + budget\n"));
        assert!(svg.contains("\nSuccess rate (clients whose request succeeded)\n"));
        assert!(svg.contains(&format!("\n{NOTE}\n")));
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn no_rows_still_draw_an_empty_chart() {
        assert!(svg(&[]).unwrap().contains("</svg>"));
    }
}
