//! The agent's metrics registry: named gauges read when a snapshot is
//! taken (GET_METRICS, `/metrics/snapshot`). Other parts register their own
//! (e.g. authorization counters) with [`Metrics::register`].

use std::collections::BTreeMap;
use std::sync::RwLock;

type Gauge = Box<dyn Fn() -> f64 + Send + Sync>;

/// Named gauges, listed by name.
#[derive(Default)]
pub struct Metrics {
    gauges: RwLock<BTreeMap<String, Gauge>>,
}

impl Metrics {
    /// Adds (or replaces) the gauge `name`, e.g. `slave/uptime_secs`.
    pub fn register(&self, name: &str, gauge: impl Fn() -> f64 + Send + Sync + 'static) {
        self.gauges
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(name.to_owned(), Box::new(gauge));
    }

    /// Every gauge's current value, by name.
    pub fn snapshot(&self) -> BTreeMap<String, f64> {
        self.gauges
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(name, gauge)| (name.clone(), gauge()))
            .collect()
    }
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
}
