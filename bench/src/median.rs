//! The median of a run's rounds: what every figure of `retryq bench` quotes, so that one slow
//! round on a shared machine moves no figure.

/// The median; 0 for no values. Sorts `values`.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 }
}
