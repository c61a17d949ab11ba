//! The one error a caller can make before anything runs: a configuration out of range.
//!
//! Every constructor that takes numbers a user may have typed (a budget's ratio, a fault
//! table, a simulation's size) checks them and names the offending field, as the queue's
//! `invalid_input` does; nothing here panics on a bad value.

/// A configuration value out of its range. `field` is the parameter's name, so a command
/// line can map it to its flag.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ConfigError {
    /// The parameter that was out of range, e.g. `retry_ratio`.
    pub field: &'static str,
    /// What was wrong with it, e.g. `1200 is above 1000`.
    pub reason: String,
}

impl ConfigError {
    pub(crate) fn new(field: &'static str, reason: impl Into<String>) -> Self {
        ConfigError { field, reason: reason.into() }
    }
}

/// `value` as an `f64` in `[lo, hi]`, finite; otherwise a [`ConfigError`] naming `field`.
pub(crate) fn ratio_in(field: &'static str, value: f64, lo: f64, hi: f64) -> Result<f64, ConfigError> {
    if !value.is_finite() {
        return Err(ConfigError::new(field, format!("{value} is not a finite number")));
    }
    if value < lo || value > hi {
        return Err(ConfigError::new(field, format!("{value} is outside [{lo}, {hi}]")));
    }
    Ok(value)
}
