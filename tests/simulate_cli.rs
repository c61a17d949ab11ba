//! `retryq simulate` from the outside: its JSON rows, its determinism, its plot, and a
//! message naming the flag for every bad value.

mod common;

use std::process::{Command, Output};

use common::{BIN, stderr};

fn simulate(args: &[&str]) -> Output {
    Command::new(BIN).arg("simulate").args(args).output().expect("run retryq")
}

#[test]
fn json_prints_one_object_per_row_with_the_documented_fields() {
    let out = simulate(&["--json", "--clients", "10,20", "--runs", "2", "--layers", "3", "--attempts", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(rows.len(), 4 * 2 * 2);
    let mut keys: Vec<&str> = rows[0].as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "amplification",
            "budget",
            "calls",
            "clients",
            "completion_ms",
            "layers",
            "strategy",
            "success_rate"
        ]
    );
    for row in &rows {
        let strategy = row["strategy"].as_str().unwrap();
        assert!(["immediate", "exponential", "full-jitter", "decorrelated"].contains(&strategy));
        assert!(row["budget"].is_boolean());
        assert_eq!(row["layers"], 3);
        let calls = row["calls"].as_f64().unwrap();
        let clients = row["clients"].as_f64().unwrap();
        assert_eq!(row["amplification"].as_f64().unwrap(), calls / clients);
        assert!(calls <= clients * 9.0, "at most n·r^(m−1) with r = 3, m = 3");
    }
}

#[test]
fn the_same_flags_print_the_same_output() {
    let args = ["--json", "--clients", "30", "--runs", "3", "--seed", "5"];
    let (a, b) = (simulate(&args), simulate(&args));
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn the_table_has_a_header_and_a_line_per_row() {
    let out = simulate(&["--clients", "5", "--runs", "1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("strategy"), "{}", lines[0]);
    assert_eq!(lines.len(), 1 + 8);
}

#[test]
fn svg_writes_a_plot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("calls.svg");
    let out = simulate(&["--clients", "5,10", "--runs", "1", "--svg", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}

#[test]
fn every_bad_value_is_refused_naming_its_flag() {
    let cases: [(&[&str], &str); 7] = [
        (&["--clients", "0"], "--clients"),
        (&["--clients", "ten"], "--clients"),
        (&["--layers", "1"], "--layers"),
        (&["--layers", "9"], "--layers"),
        (&["--runs", "0"], "--runs"),
        (&["--attempts", "0"], "--attempts"),
        (&["--server", "failing"], "--attempts"),
    ];
    for (args, flag) in cases {
        let out = simulate(args);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(stderr(&out).contains(flag), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn an_unwritable_svg_path_names_the_flag() {
    let out = simulate(&["--clients", "5", "--runs", "1", "--svg", "/nonexistent-dir/x.svg"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--svg"), "{}", stderr(&out));
}

/// One `<polyline>` of an SVG: its stroke colour and points, in pixels.
struct Polyline {
    stroke: String,
    points: Vec<(f64, f64)>,
}

impl Polyline {
    /// The bounding box: (min x, min y, max x, max y).
    fn bounds(&self) -> (f64, f64, f64, f64) {
        self.points.iter().fold((f64::MAX, f64::MAX, f64::MIN, f64::MIN), |(x0, y0, x1, y1), &(x, y)| {
            (x0.min(x), y0.min(y), x1.max(x), y1.max(y))
        })
    }

    fn centre(&self) -> (f64, f64) {
        let (x0, y0, x1, y1) = self.bounds();
        ((x0 + x1) / 2.0, (y0 + y1) / 2.0)
    }

    /// A marker is a small outline of several points (a line's dash has two).
    fn is_marker(&self) -> bool {
        let (x0, y0, x1, y1) = self.bounds();
        self.points.len() >= 4 && x1 - x0 <= 20.0 && y1 - y0 <= 20.0
    }

    /// What tells markers apart when they sit on the same point: points and size.
    fn shape(&self) -> (usize, i64, i64) {
        let (x0, y0, x1, y1) = self.bounds();
        (self.points.len(), (x1 - x0).round() as i64, (y1 - y0).round() as i64)
    }
}

/// The value of `name="…"` in one element's text.
fn attribute<'a>(element: &'a str, name: &str) -> Option<&'a str> {
    let start = element.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = element[start..].find('"')?;
    Some(&element[start..start + len])
}

fn polylines(svg: &str) -> Vec<Polyline> {
    svg.split('<')
        .filter(|e| e.starts_with("polyline "))
        .map(|e| Polyline {
            stroke: attribute(e, "stroke").unwrap_or_default().to_owned(),
            points: attribute(e, "points")
                .unwrap_or_default()
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').expect("x,y");
                    (x.parse().expect("x"), y.parse().expect("y"))
                })
                .collect(),
        })
        .collect()
}

/// The `y` of the `<text>` element holding `text`: where that panel's caption is.
fn caption_y(svg: &str, text: &str) -> f64 {
    let element = svg.split('<').find(|e| e.starts_with("text ") && e.contains(text)).expect(text);
    attribute(element, "y").expect("y").parse().expect("a number")
}

/// The plot's colour per strategy (`retryq_control::simulate`'s plot).
const COLOURS: [(&str, &str); 4] = [
    ("immediate", "#D62728"),
    ("exponential", "#FF7F0E"),
    ("full-jitter", "#2CA02C"),
    ("decorrelated", "#1F77B4"),
];

/// The SVG and the JSON rows of one run of `simulate`.
fn plot(args: &[&str]) -> (String, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plot.svg");
    let out = simulate(&[args, &["--json", "--svg", path.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let rows =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (std::fs::read_to_string(&path).unwrap(), rows)
}

#[test]
fn the_plot_shows_each_strategys_success_rate_beside_its_calls() {
    let (svg, rows) = plot(&["--clients", "10,50,100", "--runs", "2"]);
    let below = caption_y(&svg, "Success rate");
    assert!(below > caption_y(&svg, "Calls to the server"), "the success panel is under the calls");
    let lines = polylines(&svg);
    for (strategy, colour) in COLOURS {
        // A marker per row of the strategy, in the success panel, placed by its success rate.
        let mut markers: Vec<(f64, f64)> = lines
            .iter()
            .filter(|p| p.stroke == colour && p.is_marker() && p.centre().1 > below)
            .map(Polyline::centre)
            .collect();
        let mut rates: Vec<(u64, f64)> = rows
            .iter()
            .filter(|r| r["strategy"] == strategy)
            .map(|r| (r["clients"].as_u64().unwrap(), r["success_rate"].as_f64().unwrap()))
            .collect();
        assert_eq!(markers.len(), rates.len(), "{strategy}: a marker per row");
        assert!(rates.iter().any(|r| r.1 < 0.5), "{strategy}: the budget cuts success: {rates:?}");
        // By clients, then from the highest success to the lowest: the same order as x, then y.
        markers.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
        rates.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let placed: Vec<(f64, f64)> = markers.iter().zip(&rates).map(|(m, r)| (m.1, r.1)).collect();
        for &(y_a, rate_a) in &placed {
            for &(y_b, rate_b) in &placed {
                if rate_a > rate_b + 0.01 {
                    assert!(y_a < y_b, "{strategy}: {rate_a} drawn at {y_a}, {rate_b} at {y_b}");
                }
            }
        }
        // And the line through them.
        assert!(
            lines
                .iter()
                .any(|p| p.stroke == colour && !p.is_marker() && p.points.iter().all(|q| q.1 > below)),
            "{strategy}: no line in the success panel"
        );
    }
}

#[test]
fn coinciding_lines_are_drawn_distinguishably() {
    let (svg, rows) = plot(&["--clients", "50,100", "--runs", "1"]);
    // With a budget every strategy makes the same calls here: the lines coincide.
    let budgeted: Vec<f64> =
        rows.iter().filter(|r| r["budget"] == true).map(|r| r["calls"].as_f64().unwrap()).collect();
    assert_eq!(budgeted.len(), 8);
    assert!(budgeted.chunks(2).all(|c| c == &budgeted[..2]), "{budgeted:?}");
    let lines = polylines(&svg);
    let below = caption_y(&svg, "Success rate");

    // Markers on the same point have different shapes whatever their colour.
    let markers: Vec<&Polyline> = lines.iter().filter(|p| p.is_marker()).collect();
    let mut shared = 0;
    for (i, a) in markers.iter().enumerate() {
        for b in &markers[i + 1..] {
            let (ca, cb) = (a.centre(), b.centre());
            if a.stroke != b.stroke && (ca.0 - cb.0).abs() < 1.0 && (ca.1 - cb.1).abs() < 1.0 {
                shared += 1;
                assert_ne!(a.shape(), b.shape(), "{} and {} at {ca:?}", a.stroke, b.stroke);
            }
        }
    }
    // Four budgeted lines at two points (6 pairs each) in calls, and as many in success for
    // the rates that are 100 % without a budget.
    assert!(shared >= 12, "{shared} coinciding markers");

    // The budgeted lines are dashed, each strategy with its own dash length.
    let dashes: Vec<i64> = COLOURS
        .iter()
        .map(|(_, colour)| {
            lines
                .iter()
                .filter(|p| p.stroke == *colour && p.points.len() == 2 && p.centre().1 < below)
                .map(|p| {
                    let ((x0, y0), (x1, y1)) = (p.points[0], p.points[1]);
                    (x1 - x0).hypot(y1 - y0).round() as i64
                })
                // A dash is short; a solid line between two points is not.
                .filter(|length| *length <= 20)
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (i, a) in dashes.iter().enumerate() {
        assert!(*a > 0, "{}: no dashed line", COLOURS[i].0);
        for b in &dashes[i + 1..] {
            assert_ne!(a, b, "dash lengths {dashes:?}");
        }
    }
}
