//! The simulation's picture: calls to the server against the number of clients, one line per
//! strategy, dashed where a budget was in force.
//!
//! Drawn with plotters' SVG backend alone: text is written as SVG `<text>` with a generic
//! font family for the viewer to render, so nothing here looks for fonts on this machine.

use plotters::prelude::*;

use super::row::Row;
use super::strategy::Strategy;

/// The drawing failed (plotters' error, as text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot draw the plot: {0}")]
pub struct PlotError(String);

fn color(strategy: Strategy) -> RGBColor {
    match strategy {
        Strategy::Immediate => RGBColor(214, 39, 40),
        Strategy::Exponential => RGBColor(255, 127, 14),
        Strategy::FullJitter => RGBColor(44, 160, 44),
        Strategy::Decorrelated => RGBColor(31, 119, 180),
    }
}

/// An SVG document plotting `rows` (calls against clients), titled with the layers.
pub fn svg(rows: &[Row]) -> Result<String, PlotError> {
    let mut out = String::new();
    draw(rows, &mut out).map_err(|e| PlotError(e.to_string()))?;
    Ok(out)
}

fn draw(rows: &[Row], out: &mut String) -> Result<(), Box<dyn std::error::Error>> {
    let max_clients = rows.iter().map(|r| r.clients).max().unwrap_or(1);
    let max_calls = rows.iter().map(|r| r.calls).fold(1.0, f64::max);
    let layers: Vec<u32> = rows.iter().map(|r| r.layers).collect();
    let title = match (layers.iter().min(), layers.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => format!("Calls to the server, {lo} layers"),
        _ => "Calls to the server".to_owned(),
    };

    let root = SVGBackend::with_string(out, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(20)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(0u32..max_clients.saturating_add(max_clients / 20 + 1), 0f64..max_calls * 1.05)?;
    chart
        .configure_mesh()
        .x_desc("clients")
        .y_desc("calls (writes reaching the server)")
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 16))
        .axis_desc_style(("sans-serif", 18))
        .draw()?;

    for strategy in Strategy::ALL {
        for budget in [false, true] {
            let mut points: Vec<(u32, f64)> = rows
                .iter()
                .filter(|r| r.strategy == strategy && r.budget == budget)
                .map(|r| (r.clients, r.calls))
                .collect();
            if points.is_empty() {
                continue;
            }
            points.sort_by_key(|p| p.0);
            let style = color(strategy).stroke_width(2);
            let label =
                if budget { format!("{} + budget", strategy.name()) } else { strategy.name().to_owned() };
            let legend_style = style;
            if budget {
                chart.draw_series(DashedLineSeries::new(points, 8, 5, style))?.label(label).legend(
                    move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new(vec![(0, 0), (8, 0)], legend_style)
                            + PathElement::new(vec![(12, 0), (20, 0)], legend_style)
                    },
                );
            } else {
                chart
                    .draw_series(LineSeries::new(points, style))?
                    .label(label)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], legend_style));
            }
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 16))
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .draw()?;
    root.present()?;
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
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn no_rows_still_draw_an_empty_chart() {
        assert!(svg(&[]).unwrap().contains("</svg>"));
    }
}
