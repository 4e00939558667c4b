//! Resource limits and how they map onto v1 and v2 control files, with
//! Mesos' constants (`isolators/cgroups/constants.hpp`,
//! `isolators/cgroups2/constants.hpp`).

use std::path::Path;
use std::time::Duration;

use super::error::{CgroupError, Result};
use super::fsops;

/// v1 `cpu.shares` per requested CPU.
pub const CPU_SHARES_PER_CPU: f64 = 1024.0;
/// The smallest `cpu.shares` Linux accepts.
pub const MIN_CPU_SHARES: u64 = 2;
/// v2 `cpu.weight` per requested CPU (Mesos' choice).
pub const CPU_WEIGHT_PER_CPU: f64 = 100.0;
/// The range of v2 `cpu.weight`.
pub const CPU_WEIGHT_RANGE: (u64, u64) = (1, 10_000);
/// The CFS period used with a quota (the Linux default).
pub const CPU_CFS_PERIOD: Duration = Duration::from_millis(100);
/// The smallest quota we set (Mesos' `MIN_CPU_CFS_QUOTA`).
pub const MIN_CPU_CFS_QUOTA: Duration = Duration::from_millis(1);
/// The smallest memory limit (Mesos' `MIN_MEMORY`): less would let a
/// container be OOM-killed before its executor is even up.
pub const MIN_MEMORY: u64 = 32 * 1024 * 1024;

/// Limits of one container. `None` leaves a setting as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Limits {
    /// CPU request in CPUs (Mesos' `cpus`): the relative weight under
    /// contention (v1 `cpu.shares` = 1024·cpus, v2 `cpu.weight` = 100·cpus).
    pub cpu_request: Option<f64>,
    /// Hard CPU cap in CPUs: a CFS quota of cap·100 ms per 100 ms period
    /// (v1 `cpu.cfs_quota_us`, v2 `cpu.max`).
    pub cpu_limit: Option<f64>,
    /// Memory limit in bytes (v1 `memory.limit_in_bytes` and
    /// `memory.memsw.limit_in_bytes`, v2 `memory.max` with `memory.swap.max`
    /// 0), raised to [`MIN_MEMORY`] as Mesos does. Swap is capped too, so
    /// the OOM killer really acts instead of the container swapping.
    pub memory_bytes: Option<u64>,
    /// Maximum number of tasks (processes and threads): `pids.max`.
    pub pids_max: Option<u64>,
}

impl Limits {
    /// True if no setting is given.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Rejects values that cannot be written (negative, NaN, zero).
    pub fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("cpu_request", self.cpu_request),
            ("cpu_limit", self.cpu_limit),
        ] {
            if let Some(v) = value
                && !(v.is_finite() && v > 0.0)
            {
                return Err(CgroupError::Invalid(format!(
                    "{name} must be a positive number of CPUs, got {v}"
                )));
            }
        }
        if self.memory_bytes == Some(0) {
            return Err(CgroupError::Invalid(
                "memory_bytes must be positive".to_owned(),
            ));
        }
        if self.pids_max == Some(0) {
            return Err(CgroupError::Invalid("pids_max must be positive".to_owned()));
        }
        Ok(())
    }

    /// v1 `cpu.shares` for the request.
    pub fn v1_shares(cpus: f64) -> u64 {
        to_u64(CPU_SHARES_PER_CPU * cpus).max(MIN_CPU_SHARES)
    }

    /// v2 `cpu.weight` for the request.
    pub fn v2_weight(cpus: f64) -> u64 {
        to_u64(CPU_WEIGHT_PER_CPU * cpus).clamp(CPU_WEIGHT_RANGE.0, CPU_WEIGHT_RANGE.1)
    }

    /// The CFS quota in microseconds for a cap in CPUs.
    pub fn quota_us(cpus: f64) -> u64 {
        let period = micros(CPU_CFS_PERIOD);
        to_u64(cpus * period as f64).max(micros(MIN_CPU_CFS_QUOTA))
    }

    /// The memory limit actually written.
    pub fn effective_memory(bytes: u64) -> u64 {
        bytes.max(MIN_MEMORY)
    }
}

#[expect(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "inputs are validated positive and finite; saturating is fine"
)]
fn to_u64(v: f64) -> u64 {
    v as u64
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Writes the CPU settings into a v1 `cpu` cgroup.
pub(crate) fn apply_v1_cpu(dir: &Path, limits: &Limits) -> Result<()> {
    if let Some(cpus) = limits.cpu_request {
        fsops::write(
            &dir.join("cpu.shares"),
            &Limits::v1_shares(cpus).to_string(),
        )?;
    }
    if let Some(cpus) = limits.cpu_limit {
        fsops::write(
            &dir.join("cpu.cfs_period_us"),
            &micros(CPU_CFS_PERIOD).to_string(),
        )?;
        fsops::write(
            &dir.join("cpu.cfs_quota_us"),
            &Limits::quota_us(cpus).to_string(),
        )?;
    }
    Ok(())
}

/// Writes the memory limit into a v1 `memory` cgroup. The kernel requires
/// `limit_in_bytes <= memsw.limit_in_bytes` at every moment, so a raise
/// writes memsw first and a cut writes it last.
pub(crate) fn apply_v1_memory(dir: &Path, limits: &Limits) -> Result<()> {
    let Some(bytes) = limits.memory_bytes else {
        return Ok(());
    };
    let bytes = Limits::effective_memory(bytes);
    let value = bytes.to_string();
    let limit = dir.join("memory.limit_in_bytes");
    let memsw = dir.join("memory.memsw.limit_in_bytes");
    let has_memsw = memsw.exists();
    let current = if limit.exists() {
        fsops::read_u64_or_max(&limit)?.unwrap_or(u64::MAX)
    } else {
        u64::MAX
    };
    if has_memsw && bytes > current {
        fsops::write(&memsw, &value)?;
        fsops::write(&limit, &value)?;
    } else {
        fsops::write(&limit, &value)?;
        if has_memsw {
            fsops::write(&memsw, &value)?;
        }
    }
    tracing::debug!(path = %dir.display(), bytes, swap_limited = has_memsw, "set memory limit");
    Ok(())
}

/// Writes `pids.max` (v1 and v2 share the file format).
pub(crate) fn apply_pids(dir: &Path, limits: &Limits) -> Result<()> {
    if let Some(max) = limits.pids_max {
        fsops::write(&dir.join("pids.max"), &max.to_string())?;
    }
    Ok(())
}

/// Writes the CPU settings into a v2 cgroup.
pub(crate) fn apply_v2_cpu(dir: &Path, limits: &Limits) -> Result<()> {
    if let Some(cpus) = limits.cpu_request {
        fsops::write(
            &dir.join("cpu.weight"),
            &Limits::v2_weight(cpus).to_string(),
        )?;
    }
    if let Some(cpus) = limits.cpu_limit {
        fsops::write(
            &dir.join("cpu.max"),
            &format!("{} {}", Limits::quota_us(cpus), micros(CPU_CFS_PERIOD)),
        )?;
    }
    Ok(())
}

/// Writes the memory limit into a v2 cgroup, and forbids swap where the
/// kernel has swap accounting.
pub(crate) fn apply_v2_memory(dir: &Path, limits: &Limits) -> Result<()> {
    if let Some(bytes) = limits.memory_bytes {
        let bytes = Limits::effective_memory(bytes);
        fsops::write(&dir.join("memory.max"), &bytes.to_string())?;
        let swap = dir.join("memory.swap.max");
        if swap.exists() {
            fsops::write(&swap, "0")?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(dir: &Path, file: &str) -> String {
        std::fs::read_to_string(dir.join(file)).unwrap()
    }

    #[test]
    fn conversions_follow_mesos() {
        assert_eq!(Limits::v1_shares(0.5), 512);
        assert_eq!(Limits::v1_shares(0.0001), MIN_CPU_SHARES);
        assert_eq!(Limits::v2_weight(1.5), 150);
        assert_eq!(Limits::v2_weight(0.001), 1);
        assert_eq!(Limits::v2_weight(500.0), 10_000);
        assert_eq!(Limits::quota_us(0.25), 25_000);
        assert_eq!(Limits::quota_us(0.0001), 1_000);
        assert_eq!(Limits::effective_memory(1), MIN_MEMORY);
    }

    #[test]
    fn invalid_limits_are_rejected_with_the_field_name() {
        let bad = Limits {
            cpu_limit: Some(f64::NAN),
            ..Limits::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("cpu_limit")
        );
        let bad = Limits {
            pids_max: Some(0),
            ..Limits::default()
        };
        assert!(bad.validate().unwrap_err().to_string().contains("pids_max"));
        assert!(Limits::default().is_empty());
    }

    #[test]
    fn v1_files_are_written_in_a_safe_order() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("memory.limit_in_bytes"), "9223372036854771712").unwrap();
        std::fs::write(d.join("memory.memsw.limit_in_bytes"), "9223372036854771712").unwrap();
        let limits = Limits {
            cpu_request: Some(2.0),
            cpu_limit: Some(0.5),
            memory_bytes: Some(64 << 20),
            pids_max: Some(7),
        };
        apply_v1_cpu(d, &limits).unwrap();
        apply_v1_memory(d, &limits).unwrap();
        apply_pids(d, &limits).unwrap();
        assert_eq!(read(d, "cpu.shares"), "2048");
        assert_eq!(read(d, "cpu.cfs_period_us"), "100000");
        assert_eq!(read(d, "cpu.cfs_quota_us"), "50000");
        assert_eq!(read(d, "memory.limit_in_bytes"), (64u64 << 20).to_string());
        assert_eq!(
            read(d, "memory.memsw.limit_in_bytes"),
            (64u64 << 20).to_string()
        );
        assert_eq!(read(d, "pids.max"), "7");
    }

    #[test]
    fn v2_files_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("memory.swap.max"), "max").unwrap();
        let limits = Limits {
            cpu_request: Some(1.0),
            cpu_limit: Some(1.5),
            memory_bytes: Some(1 << 20),
            pids_max: Some(3),
        };
        apply_v2_cpu(d, &limits).unwrap();
        apply_v2_memory(d, &limits).unwrap();
        apply_pids(d, &limits).unwrap();
        assert_eq!(read(d, "cpu.weight"), "100");
        assert_eq!(read(d, "cpu.max"), "150000 100000");
        assert_eq!(read(d, "memory.max"), MIN_MEMORY.to_string());
        assert_eq!(read(d, "memory.swap.max"), "0");
        assert_eq!(read(d, "pids.max"), "3");
    }
}
