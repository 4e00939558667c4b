//! The agent's metrics registry: named gauges read when a snapshot is
//! taken (GET_METRICS, `/metrics/snapshot`, `/metrics`), plus the loaded
//! library's own metrics (`nestguard/authz/...`, `nestguard/isolation/...`,
//! read through `nestguard_metrics_snapshot`). Other parts register their
//! own gauges with [`Metrics::register`].
//!
//! `/metrics` is the same set in the Prometheus text format 0.0.4: the
//! library renders its part (it knows which of its metrics are counters),
//! the agent's gauges are appended. The format is three line shapes
//! (`# TYPE`, `name value`), written by `nestguard::metrics::to_prometheus`;
//! `prometheus-client` would need its own registry of metric objects
//! mirroring these values, and renders OpenMetrics rather than 0.0.4.

use std::collections::BTreeMap;
use std::sync::RwLock;

use nestguard::metrics::{Kind, Sample};

type Gauge = Box<dyn Fn() -> f64 + Send + Sync>;

/// Reads the library's metrics in one format; an error is logged and the
/// library's metrics are left out of that snapshot (as Mesos leaves out a
/// metric that did not answer in time).
pub trait LibraryMetrics: Send + Sync {
    /// The flat JSON object of name → number.
    fn json(&self) -> Result<String, String>;
    /// Prometheus text.
    fn prometheus(&self) -> Result<String, String>;
}

/// Named gauges, listed by name, and the library's metrics.
#[derive(Default)]
pub struct Metrics {
    gauges: RwLock<BTreeMap<String, Gauge>>,
    library: Option<Box<dyn LibraryMetrics>>,
}

impl Metrics {
    /// A registry that also reports `library`'s metrics.
    pub fn with_library(library: impl LibraryMetrics + 'static) -> Self {
        Metrics {
            gauges: RwLock::default(),
            library: Some(Box::new(library)),
        }
    }

    /// Adds (or replaces) the gauge `name`, e.g. `slave/uptime_secs`.
    pub fn register(&self, name: &str, gauge: impl Fn() -> f64 + Send + Sync + 'static) {
        self.gauges
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned(), Box::new(gauge));
    }

    fn gauges(&self) -> BTreeMap<String, f64> {
        self.gauges
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(name, gauge)| (name.clone(), gauge()))
            .collect()
    }

    /// Every metric's current value, by name: the gauges and the library's.
    pub fn snapshot(&self) -> BTreeMap<String, f64> {
        let mut all = self.gauges();
        if let Some(library) = &self.library {
            match library.json().and_then(|text| parse_flat(&text)) {
                Ok(values) => all.extend(values),
                Err(error) => tracing::warn!(%error, "the library's metrics are left out"),
            }
        }
        all
    }

    /// Every metric in the Prometheus text format 0.0.4 (the library's
    /// first, then the agent's gauges).
    pub fn prometheus(&self) -> String {
        let mut text = match self.library.as_ref().map(|l| l.prometheus()) {
            Some(Ok(text)) => text,
            Some(Err(error)) => {
                tracing::warn!(%error, "the library's metrics are left out");
                String::new()
            }
            None => String::new(),
        };
        let gauges: Vec<Sample> = self
            .gauges()
            .into_iter()
            .map(|(name, value)| Sample {
                name,
                value,
                kind: Kind::Gauge,
            })
            .collect();
        text.push_str(&nestguard::metrics::to_prometheus(&gauges));
        text
    }
}

/// The library's JSON snapshot: an object whose values are all numbers.
fn parse_flat(text: &str) -> Result<BTreeMap<String, f64>, String> {
    let map: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(text).map_err(|e| format!("metrics JSON: {e}"))?;
    map.into_iter()
        .map(|(name, value)| match value.as_f64() {
            Some(v) => Ok((name, v)),
            None => Err(format!("metric {name} is not a number: {value}")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauges_are_read_at_snapshot_time() {
        let metrics = Metrics::default();
        let n = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(1));
        let read = std::sync::Arc::clone(&n);
        metrics.register("b/count", move || {
            f64::from(read.load(std::sync::atomic::Ordering::SeqCst))
        });
        metrics.register("a/one", || 1.0);
        n.store(5, std::sync::atomic::Ordering::SeqCst);
        let snapshot: Vec<(String, f64)> = metrics.snapshot().into_iter().collect();
        assert_eq!(
            snapshot,
            [("a/one".to_owned(), 1.0), ("b/count".to_owned(), 5.0)]
        );
    }

    struct Fixed(Result<String, String>);

    impl LibraryMetrics for Fixed {
        fn json(&self) -> Result<String, String> {
            self.0.clone()
        }
        fn prometheus(&self) -> Result<String, String> {
            self.0
                .clone()
                .map(|_| "# TYPE nestguard_x counter\nnestguard_x 2\n".to_owned())
        }
    }

    #[test]
    fn the_library_metrics_are_merged_and_rendered_first() {
        let metrics = Metrics::with_library(Fixed(Ok(r#"{"nestguard/x": 2}"#.to_owned())));
        metrics.register("slave/uptime_secs", || 1.5);
        let snapshot: Vec<(String, f64)> = metrics.snapshot().into_iter().collect();
        assert_eq!(
            snapshot,
            [
                ("nestguard/x".to_owned(), 2.0),
                ("slave/uptime_secs".to_owned(), 1.5)
            ]
        );
        assert_eq!(
            metrics.prometheus(),
            "# TYPE nestguard_x counter\nnestguard_x 2\n\
             # TYPE slave_uptime_secs gauge\nslave_uptime_secs 1.5\n"
        );
    }

    #[test]
    fn a_failing_library_leaves_only_its_metrics_out() {
        let metrics = Metrics::with_library(Fixed(Err("gone".to_owned())));
        metrics.register("a", || 1.0);
        assert_eq!(metrics.snapshot().len(), 1);
        assert_eq!(metrics.prometheus(), "# TYPE a gauge\na 1\n");
        let metrics = Metrics::with_library(Fixed(Ok(r#"{"x": "text"}"#.to_owned())));
        assert!(metrics.snapshot().is_empty(), "a non-number is refused");
    }
}
