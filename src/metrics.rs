//! The library's metrics, process-wide, in Mesos' `/metrics/snapshot`
//! naming style: authorization decisions per action, decision latency,
//! launches and their latency, containers, OOM kills, recoveries and
//! orphans destroyed. Read with [`snapshot`] (the C ABI:
//! `nestguard_metrics_snapshot`).
//!
//! Everything is lock-free atomics. Decisions are counted per thread
//! ([`thread_counts`]), so that a decision on the authorizer's fast path
//! pays a thread-local load, a load and a store to be counted, with no
//! locked instruction. Timing a decision
//! would cost two clock reads, more than the decision itself, so decision
//! latency is **sampled**: the counter's previous value arms timing of the
//! next decision once in [`DECISION_SAMPLE_EVERY`] decisions (a relaxed
//! load on the fast path; the armed decision takes the slow path that
//! reads the clock). Decisions reported to an audit sink are timed anyway
//! and always recorded. Launches are timed every time (a launch costs
//! milliseconds).
//!
//! Percentiles come from a fixed log-linear bucket array (16 buckets per
//! power of two: a reported percentile is within 1/16 of the true value,
//! clamped to the observed min and max) over every sample since the
//! library was loaded, where Mesos' timers keep a window of recent values.
//! Hand-rolled rather than a crate: the `histogram` crate's atomic
//! histogram would fit, but a bucket index and an atomic add are a dozen
//! lines, and the library keeps its dependencies few (it is loaded into the
//! Mesos agent).
//!
//! The Prometheus text format (version 0.0.4) is rendered here too, by
//! hand: the library alone knows which of its metrics are counters, and
//! `prometheus-client` (the maintained crate) renders OpenMetrics from its
//! own registry of metric objects, which would mean a second set of
//! counters beside these atomics, for a format of three line shapes.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use crate::proto::mesos::authorization::Action;

mod thread_counts;
use thread_counts::ThreadCounts;

/// One decision in this many has its latency measured.
pub const DECISION_SAMPLE_EVERY: u64 = 64;

/// Slots for actions: `mesos.authorization.Action` numbers are below this.
const ACTION_SLOTS: usize = 64;

/// Whether a metric only goes up or may go down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Monotonic since the library was loaded.
    Counter,
    /// A current value (a count of things now, or a statistic).
    Gauge,
}

impl Kind {
    fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// One value of a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Mesos-style name, e.g. `nestguard/authz/allowed`.
    pub name: String,
    /// The value.
    pub value: f64,
    /// Counter or gauge (for the Prometheus `# TYPE` line).
    pub kind: Kind,
}

fn sample(name: impl Into<String>, value: f64, kind: Kind) -> Sample {
    Sample {
        name: name.into(),
        value,
        kind,
    }
}

/// Sub-buckets per power of two (4 bits of mantissa).
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
/// Values below `SUB` have a bucket each; above, 16 per power of two up to
/// `u64::MAX`.
const BUCKETS: usize = ((64 - SUB_BITS as usize) + 1) * SUB as usize;

fn bucket_of(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros();
    let sub = (v >> (exp - SUB_BITS)) & (SUB - 1);
    ((exp - SUB_BITS + 1) as usize) * SUB as usize + sub as usize
}

/// The largest value that falls in bucket `i`.
fn bucket_high(i: usize) -> u64 {
    let (tier, sub) = (i as u64 / SUB, i as u64 % SUB);
    if tier == 0 {
        return sub;
    }
    let exp = tier + u64::from(SUB_BITS) - 1;
    let low = (SUB + sub) << (exp - u64::from(SUB_BITS));
    low.saturating_add((1u64 << (exp - u64::from(SUB_BITS))) - 1)
}

/// A lock-free latency histogram in nanoseconds.
pub struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    count: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    last: AtomicU64,
}

impl std::fmt::Debug for Histogram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Histogram")
            .field("count", &self.count.load(Ordering::Relaxed))
            .finish()
    }
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

/// The percentiles Mesos' timers report, with their key suffixes.
const PERCENTILES: [(&str, f64); 6] = [
    ("p50", 0.5),
    ("p90", 0.9),
    ("p95", 0.95),
    ("p99", 0.99),
    ("p999", 0.999),
    ("p9999", 0.9999),
];

impl Histogram {
    /// An empty histogram.
    pub const fn new() -> Self {
        Histogram {
            buckets: [const { AtomicU64::new(0) }; BUCKETS],
            count: AtomicU64::new(0),
            min: AtomicU64::new(u64::MAX),
            max: AtomicU64::new(0),
            last: AtomicU64::new(0),
        }
    }

    /// Adds one value.
    pub fn record(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        if let Some(b) = self.buckets.get(bucket_of(ns)) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        self.min.fetch_min(ns, Ordering::Relaxed);
        self.max.fetch_max(ns, Ordering::Relaxed);
        self.last.store(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// The value at quantile `q` (0..=1) in nanoseconds, `None` when empty:
    /// the highest value of the bucket holding it, clamped to min and max.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        // The rank of the value, 1-based: at least the first.
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        let mut found = bucket_high(BUCKETS - 1);
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                found = bucket_high(i);
                break;
            }
        }
        let (min, max) = (
            self.min.load(Ordering::Relaxed),
            self.max.load(Ordering::Relaxed),
        );
        Some(found.clamp(min.min(max), max))
    }

    /// Mesos' timer keys under `key` (which ends in `_ms`): `key` (the last
    /// value), `key/count`, `/min`, `/max`, `/p50` ... `/p9999`, in ms.
    /// Only `key/count` while nothing was recorded (Mesos leaves a timer
    /// without values out).
    fn samples(&self, key: &str, out: &mut Vec<Sample>) {
        let ms = |ns: u64| ns as f64 / 1e6;
        let count = self.count();
        out.push(sample(format!("{key}/count"), count as f64, Kind::Counter));
        if count == 0 {
            return;
        }
        out.push(sample(
            key,
            ms(self.last.load(Ordering::Relaxed)),
            Kind::Gauge,
        ));
        out.push(sample(
            format!("{key}/min"),
            ms(self.min.load(Ordering::Relaxed)),
            Kind::Gauge,
        ));
        out.push(sample(
            format!("{key}/max"),
            ms(self.max.load(Ordering::Relaxed)),
            Kind::Gauge,
        ));
        for (suffix, q) in PERCENTILES {
            if let Some(v) = self.quantile(q) {
                out.push(sample(format!("{key}/{suffix}"), ms(v), Kind::Gauge));
            }
        }
    }
}

/// How a decision ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Allowed.
    Allowed,
    /// Denied by the policy.
    Denied,
    /// Could not be decided (an invalid request): the caller denies.
    Error,
}

/// Authorization counters per action and outcome, and decision latency.
pub struct AuthzMetrics {
    counts: ThreadCounts<ACTION_SLOTS>,
    time_next: AtomicBool,
    latency: Histogram,
}

impl std::fmt::Debug for AuthzMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthzMetrics").finish_non_exhaustive()
    }
}

impl Default for AuthzMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl AuthzMetrics {
    /// All zero.
    pub const fn new() -> Self {
        AuthzMetrics {
            counts: ThreadCounts::new(),
            time_next: AtomicBool::new(false),
            latency: Histogram::new(),
        }
    }

    /// Counts one decision of `action` (its `Action` number; a number that
    /// names no `Action`, in the slot range or not, is counted as UNKNOWN
    /// so that it still shows in the totals, which [`Self::samples`] sums
    /// over named actions only): an add to this thread's counter, and,
    /// once in [`DECISION_SAMPLE_EVERY`] of this thread's decisions of that
    /// action and outcome, arming the timing of a later decision.
    #[inline(always)]
    pub fn count(&self, action: i32, outcome: Outcome) {
        let slot = Action::try_from(action)
            .ok()
            .map(|a| a as usize)
            .filter(|&s| s < ACTION_SLOTS)
            .unwrap_or(0);
        let prev = self.counts.add(slot, outcome as usize);
        if prev % DECISION_SAMPLE_EVERY == DECISION_SAMPLE_EVERY - 1 {
            self.time_next.store(true, Ordering::Relaxed);
        }
    }

    /// Whether the next decision should be timed (a relaxed load).
    #[inline(always)]
    pub fn timing_due(&self) -> bool {
        self.time_next.load(Ordering::Relaxed)
    }

    /// Claims the armed timing: true for one caller per arming.
    pub fn take_timing(&self) -> bool {
        self.time_next.swap(false, Ordering::Relaxed)
    }

    /// Records one decision's latency.
    pub fn record_latency(&self, d: Duration) {
        self.latency.record(d);
    }

    /// Decisions of `action` with `outcome` so far.
    pub fn get(&self, action: Action, outcome: Outcome) -> u64 {
        self.counts
            .sum()
            .get(action as usize)
            .map_or(0, |s| s[outcome as usize])
    }

    /// Number of decisions timed.
    pub fn timed(&self) -> u64 {
        self.latency.count()
    }

    fn samples(&self, out: &mut Vec<Sample>) {
        let mut totals = [0u64; 3];
        let mut per_action = Vec::new();
        for (number, slot) in self.counts.sum().iter().enumerate() {
            let Some(action) = i32::try_from(number)
                .ok()
                .and_then(|n| Action::try_from(n).ok())
            else {
                continue;
            };
            let [a, d, e] = *slot;
            totals[0] += a;
            totals[1] += d;
            totals[2] += e;
            let name = action.as_str_name().to_ascii_lowercase();
            per_action.push(sample(
                format!("nestguard/authz/{name}/allowed"),
                a as f64,
                Kind::Counter,
            ));
            per_action.push(sample(
                format!("nestguard/authz/{name}/denied"),
                (d + e) as f64,
                Kind::Counter,
            ));
        }
        out.push(sample(
            "nestguard/authz/allowed",
            totals[0] as f64,
            Kind::Counter,
        ));
        out.push(sample(
            "nestguard/authz/denied",
            (totals[1] + totals[2]) as f64,
            Kind::Counter,
        ));
        out.push(sample(
            "nestguard/authz/errors",
            totals[2] as f64,
            Kind::Counter,
        ));
        out.extend(per_action);
        self.latency
            .samples("nestguard/authz/decision_latency_ms", out);
    }
}

/// Launcher and isolator counters.
#[derive(Debug, Default)]
pub struct IsolationMetrics {
    launches: AtomicU64,
    launch_errors: AtomicU64,
    launch_latency: Histogram,
    containers: AtomicI64,
    oom_kills: AtomicU64,
    recoveries: AtomicU64,
    orphans_destroyed: AtomicU64,
    unmanaged: AtomicI64,
}

impl IsolationMetrics {
    /// All zero.
    pub const fn new() -> Self {
        IsolationMetrics {
            launches: AtomicU64::new(0),
            launch_errors: AtomicU64::new(0),
            launch_latency: Histogram::new(),
            containers: AtomicI64::new(0),
            oom_kills: AtomicU64::new(0),
            recoveries: AtomicU64::new(0),
            orphans_destroyed: AtomicU64::new(0),
            unmanaged: AtomicI64::new(0),
        }
    }

    /// A launch that succeeded after `took`.
    pub fn launched(&self, took: Duration) {
        self.launches.fetch_add(1, Ordering::Relaxed);
        self.launch_latency.record(took);
    }

    /// A launch that failed.
    pub fn launch_failed(&self) {
        self.launch_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// An OOM kill reported for a container.
    pub fn oom_killed(&self) {
        self.oom_kills.fetch_add(1, Ordering::Relaxed);
    }

    /// A launcher recovery that finished.
    pub fn recovered(&self) {
        self.recoveries.fetch_add(1, Ordering::Relaxed);
    }

    /// An orphan destroyed.
    pub fn orphan_destroyed(&self) {
        self.orphans_destroyed.fetch_add(1, Ordering::Relaxed);
    }

    /// A container the cgroups isolator does not manage (recovered without
    /// complete cgroups of its own, or sharing such a parent's): it runs
    /// without limits or OOM watch of ours, which an operator should see
    /// rather than read from a log.
    pub fn unmanaged_added(&self) {
        self.unmanaged.fetch_add(1, Ordering::Relaxed);
    }

    /// An unmanaged container cleaned up.
    pub fn unmanaged_removed(&self) {
        self.unmanaged.fetch_sub(1, Ordering::Relaxed);
    }

    /// A container the launcher manages, counted while the token lives.
    pub fn container(&'static self) -> ContainerToken {
        self.containers.fetch_add(1, Ordering::Relaxed);
        ContainerToken { metrics: self }
    }

    fn samples(&self, out: &mut Vec<Sample>) {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64;
        out.push(sample(
            "nestguard/isolation/launches",
            n(&self.launches),
            Kind::Counter,
        ));
        out.push(sample(
            "nestguard/isolation/launch_errors",
            n(&self.launch_errors),
            Kind::Counter,
        ));
        self.launch_latency
            .samples("nestguard/isolation/launch_latency_ms", out);
        out.push(sample(
            "nestguard/isolation/containers_tracked",
            self.containers.load(Ordering::Relaxed).max(0) as f64,
            Kind::Gauge,
        ));
        out.push(sample(
            "nestguard/isolation/oom_kills",
            n(&self.oom_kills),
            Kind::Counter,
        ));
        out.push(sample(
            "nestguard/isolation/recoveries",
            n(&self.recoveries),
            Kind::Counter,
        ));
        out.push(sample(
            "nestguard/isolation/orphans_destroyed",
            n(&self.orphans_destroyed),
            Kind::Counter,
        ));
        out.push(sample(
            "nestguard/isolation/unmanaged_containers",
            self.unmanaged.load(Ordering::Relaxed).max(0) as f64,
            Kind::Gauge,
        ));
    }
}

/// Counts one container in `containers_tracked` until dropped (when the
/// launcher forgets the container: destroyed, or the launcher dropped).
/// A container whose processes exited but which is not destroyed yet is
/// still tracked, hence not "running".
#[derive(Debug)]
pub struct ContainerToken {
    metrics: &'static IsolationMetrics,
}

impl Drop for ContainerToken {
    fn drop(&mut self) {
        self.metrics.containers.fetch_sub(1, Ordering::Relaxed);
    }
}

static AUTHZ: AuthzMetrics = AuthzMetrics::new();
static ISOLATION: IsolationMetrics = IsolationMetrics::new();

/// The process-wide authorization metrics.
#[inline(always)]
pub fn authz() -> &'static AuthzMetrics {
    &AUTHZ
}

/// The process-wide isolation metrics.
pub fn isolation() -> &'static IsolationMetrics {
    &ISOLATION
}

/// Every metric now, in a fixed order (totals first).
pub fn snapshot() -> Vec<Sample> {
    let mut out = Vec::with_capacity(160);
    AUTHZ.samples(&mut out);
    ISOLATION.samples(&mut out);
    out
}

/// A snapshot as Mesos' `/metrics/snapshot` body: one flat JSON object of
/// name → number.
pub fn to_json(samples: &[Sample]) -> String {
    let map: serde_json::Map<String, serde_json::Value> = samples
        .iter()
        .map(|s| (s.name.clone(), serde_json::json!(s.value)))
        .collect();
    serde_json::Value::Object(map).to_string()
}

/// A Mesos metric name as a Prometheus one: every character outside
/// `[a-zA-Z0-9_:]` becomes `_` (`nestguard/authz/allowed` →
/// `nestguard_authz_allowed`), and a leading digit gets a `_` before it.
pub fn prometheus_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == ':' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.starts_with(|c: char| c.is_ascii_digit()) || out.is_empty() {
        out.insert(0, '_');
    }
    out
}

/// A snapshot in the Prometheus text format 0.0.4: a `# TYPE` line and a
/// value line per metric.
pub fn to_prometheus(samples: &[Sample]) -> String {
    let mut out = String::new();
    for s in samples {
        let name = prometheus_name(&s.name);
        let value = if s.value.is_finite() {
            s.value.to_string()
        } else if s.value.is_nan() {
            "NaN".to_owned()
        } else if s.value > 0.0 {
            "+Inf".to_owned()
        } else {
            "-Inf".to_owned()
        };
        // Writing to a String cannot fail.
        let _ = writeln!(out, "# TYPE {name} {}\n{name} {value}", s.kind.as_str());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(samples: &[Sample], name: &str) -> Option<f64> {
        samples.iter().find(|s| s.name == name).map(|s| s.value)
    }

    #[test]
    fn buckets_cover_every_value_in_order() {
        let mut last = 0;
        for v in (0..5000u64).chain([u64::MAX / 3, u64::MAX - 1, u64::MAX]) {
            let b = bucket_of(v);
            assert!(b < BUCKETS, "{v} -> {b}");
            assert!(b >= last || v > 5000);
            assert!(
                bucket_high(b) >= v,
                "{v} above its bucket's high {}",
                bucket_high(b)
            );
            if b > 0 {
                assert!(bucket_high(b - 1) < v, "{v} fits the bucket before {b}");
            }
            last = b;
        }
        assert_eq!(bucket_high(BUCKETS - 1), u64::MAX);
    }

    #[test]
    fn percentiles_are_within_one_sixteenth_and_clamped() {
        let h = Histogram::new();
        assert_eq!(h.quantile(0.5), None);
        for us in 1..=1000u64 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        assert!(
            (500_000.0..=500_000.0 * 17.0 / 16.0).contains(&p50),
            "{p50}"
        );
        let p99 = h.quantile(0.99).unwrap() as f64;
        assert!(
            (990_000.0..=990_000.0 * 17.0 / 16.0).contains(&p99),
            "{p99}"
        );
        assert_eq!(h.quantile(1.0), Some(1_000_000), "clamped to max");
        let p0 = h.quantile(0.0).unwrap();
        assert!(
            (1000..=1000 * 17 / 16).contains(&p0),
            "the first value's bucket: {p0}"
        );
        let mut out = Vec::new();
        h.samples("x_ms", &mut out);
        assert_eq!(value(&out, "x_ms/count"), Some(1000.0));
        assert_eq!(value(&out, "x_ms/min"), Some(0.001));
        assert_eq!(value(&out, "x_ms/max"), Some(1.0));
        assert_eq!(value(&out, "x_ms"), Some(1.0), "the last value");
        for suffix in ["p50", "p90", "p95", "p99", "p999", "p9999"] {
            assert!(value(&out, &format!("x_ms/{suffix}")).is_some(), "{suffix}");
        }
    }

    #[test]
    fn an_empty_timer_reports_only_its_count() {
        let mut out = Vec::new();
        Histogram::new().samples("x_ms", &mut out);
        assert_eq!(out, [sample("x_ms/count", 0.0, Kind::Counter)]);
    }

    #[test]
    fn decisions_are_counted_per_action_and_in_totals() {
        let m = AuthzMetrics::new();
        let kill = Action::KillNestedContainer as i32;
        m.count(kill, Outcome::Allowed);
        m.count(kill, Outcome::Denied);
        m.count(kill, Outcome::Error);
        m.count(Action::ViewFlags as i32, Outcome::Allowed);
        m.count(9999, Outcome::Denied);
        // In the slot range but no `Action`: still counted, as UNKNOWN.
        assert!(Action::try_from(60).is_err());
        m.count(60, Outcome::Denied);
        let mut out = Vec::new();
        m.samples(&mut out);
        assert_eq!(value(&out, "nestguard/authz/allowed"), Some(2.0));
        assert_eq!(value(&out, "nestguard/authz/denied"), Some(4.0));
        assert_eq!(value(&out, "nestguard/authz/errors"), Some(1.0));
        assert_eq!(
            value(&out, "nestguard/authz/kill_nested_container/allowed"),
            Some(1.0)
        );
        assert_eq!(
            value(&out, "nestguard/authz/kill_nested_container/denied"),
            Some(2.0),
            "an error is a denial"
        );
        assert_eq!(value(&out, "nestguard/authz/view_flags/allowed"), Some(1.0));
        assert_eq!(value(&out, "nestguard/authz/unknown/denied"), Some(2.0));
        assert_eq!(m.get(Action::KillNestedContainer, Outcome::Error), 1);
    }

    #[test]
    fn timing_is_armed_once_per_sample_period() {
        let m = AuthzMetrics::new();
        let kill = Action::KillNestedContainer as i32;
        for _ in 0..DECISION_SAMPLE_EVERY - 1 {
            m.count(kill, Outcome::Allowed);
            assert!(!m.timing_due());
        }
        m.count(kill, Outcome::Allowed);
        assert!(m.timing_due());
        assert!(m.take_timing());
        assert!(!m.take_timing(), "one timing per arming");
        assert!(!m.timing_due());
    }

    #[test]
    fn isolation_counters_and_the_container_gauge() {
        static M: IsolationMetrics = IsolationMetrics::new();
        M.launched(Duration::from_millis(3));
        M.launch_failed();
        M.oom_killed();
        M.recovered();
        M.orphan_destroyed();
        M.unmanaged_added();
        M.unmanaged_added();
        M.unmanaged_removed();
        let a = M.container();
        let b = M.container();
        drop(a);
        let mut out = Vec::new();
        M.samples(&mut out);
        for (name, v) in [
            ("nestguard/isolation/launches", 1.0),
            ("nestguard/isolation/launch_errors", 1.0),
            ("nestguard/isolation/launch_latency_ms/count", 1.0),
            ("nestguard/isolation/launch_latency_ms/p50", 3.0),
            ("nestguard/isolation/containers_tracked", 1.0),
            ("nestguard/isolation/oom_kills", 1.0),
            ("nestguard/isolation/recoveries", 1.0),
            ("nestguard/isolation/orphans_destroyed", 1.0),
            ("nestguard/isolation/unmanaged_containers", 1.0),
        ] {
            assert_eq!(value(&out, name), Some(v), "{name}");
        }
        drop(b);
    }

    #[test]
    fn prometheus_text_has_a_type_line_per_metric() {
        let text = to_prometheus(&[
            sample("nestguard/authz/allowed", 3.0, Kind::Counter),
            sample("nestguard/x_ms/p50", 0.25, Kind::Gauge),
        ]);
        assert_eq!(
            text,
            "# TYPE nestguard_authz_allowed counter\nnestguard_authz_allowed 3\n\
             # TYPE nestguard_x_ms_p50 gauge\nnestguard_x_ms_p50 0.25\n"
        );
        assert_eq!(prometheus_name("slave(1)/9x"), "slave_1__9x");
        assert_eq!(prometheus_name("9x"), "_9x");
    }

    #[test]
    fn json_is_one_flat_object() {
        let json = to_json(&[sample("a/b", 1.5, Kind::Gauge)]);
        assert_eq!(json, r#"{"a/b":1.5}"#);
    }
}
