//! Reading real statistics out of cgroup control files into Mesos'
//! `ResourceStatistics`, the way Mesos' cgroups isolators fill it.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::{CgroupError, Result};
use super::fsops::{self, lookup};
use crate::proto::mesos::ResourceStatistics;

/// Seconds since the epoch, as Mesos stamps statistics.
pub(crate) fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

#[expect(
    clippy::cast_precision_loss,
    reason = "statistics are reported as doubles by Mesos"
)]
fn f(v: u64) -> f64 {
    v as f64
}

fn u32_sat(v: usize) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

/// v1 `cpuacct.stat`: user and system time in clock ticks.
pub(crate) fn v1_cpuacct(dir: &Path, out: &mut ResourceStatistics) -> Result<()> {
    let pairs = fsops::read_flat_keyed(&dir.join("cpuacct.stat"))?;
    let ticks = f(rustix::param::clock_ticks_per_second());
    if ticks > 0.0 {
        out.cpus_user_time_secs = lookup(&pairs, "user").map(|v| f(v) / ticks);
        out.cpus_system_time_secs = lookup(&pairs, "system").map(|v| f(v) / ticks);
    }
    Ok(())
}

/// v1 `cpu.stat` (throttling) and the configured limit.
pub(crate) fn v1_cpu(dir: &Path, out: &mut ResourceStatistics) -> Result<()> {
    let pairs = fsops::read_flat_keyed(&dir.join("cpu.stat"))?;
    out.cpus_nr_periods =
        lookup(&pairs, "nr_periods").map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    out.cpus_nr_throttled =
        lookup(&pairs, "nr_throttled").map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    out.cpus_throttled_time_secs = lookup(&pairs, "throttled_time").map(|ns| f(ns) / 1e9);
    let quota_file = dir.join("cpu.cfs_quota_us");
    let text = fsops::read(&quota_file)?;
    // -1 means "no quota".
    let quota: i64 = text.trim().parse().map_err(|_| CgroupError::Parse {
        path: quota_file.clone(),
        expected: "an integer (-1 for no quota)",
        found: text.trim().to_owned(),
    })?;
    if quota > 0 {
        let period = fsops::read_u64(&dir.join("cpu.cfs_period_us"))?;
        if period > 0 {
            out.cpus_limit = Some(f(quota.unsigned_abs()) / f(period));
        }
    } else {
        let shares = fsops::read_u64(&dir.join("cpu.shares"))?;
        out.cpus_limit = Some(f(shares) / super::limits::CPU_SHARES_PER_CPU);
    }
    Ok(())
}

/// v1 memory statistics (`memory.stat` `total_*` counters are hierarchical).
pub(crate) fn v1_memory(dir: &Path, out: &mut ResourceStatistics) -> Result<()> {
    out.mem_total_bytes = Some(fsops::read_u64(&dir.join("memory.usage_in_bytes"))?);
    out.mem_limit_bytes = fsops::read_u64_or_max(&dir.join("memory.limit_in_bytes"))?;
    out.mem_soft_limit_bytes = fsops::read_u64_or_max(&dir.join("memory.soft_limit_in_bytes"))?;
    let memsw = dir.join("memory.memsw.usage_in_bytes");
    if memsw.exists() {
        out.mem_total_memsw_bytes = Some(fsops::read_u64(&memsw)?);
    }
    let pairs = fsops::read_flat_keyed(&dir.join("memory.stat"))?;
    out.mem_cache_bytes = lookup(&pairs, "total_cache");
    out.mem_rss_bytes = lookup(&pairs, "total_rss");
    out.mem_anon_bytes = lookup(&pairs, "total_rss");
    out.mem_file_bytes = lookup(&pairs, "total_cache");
    out.mem_mapped_file_bytes = lookup(&pairs, "total_mapped_file");
    out.mem_swap_bytes = lookup(&pairs, "total_swap");
    out.mem_unevictable_bytes = lookup(&pairs, "total_unevictable");
    Ok(())
}

/// Process and thread counts of one cgroup (`cgroup.procs`, and `tasks` on
/// v1 or `cgroup.threads` on v2).
pub(crate) fn processes(
    dir: &Path,
    threads_file: &str,
    out: &mut ResourceStatistics,
) -> Result<()> {
    out.processes = Some(u32_sat(fsops::read_pids(&dir.join("cgroup.procs"))?.len()));
    out.threads = Some(u32_sat(fsops::read_pids(&dir.join(threads_file))?.len()));
    Ok(())
}

/// v2 `cpu.stat` (always present: usage comes from the core) and `cpu.max`.
pub(crate) fn v2_cpu(dir: &Path, out: &mut ResourceStatistics) -> Result<()> {
    let pairs = fsops::read_flat_keyed(&dir.join("cpu.stat"))?;
    out.cpus_user_time_secs = lookup(&pairs, "user_usec").map(|us| f(us) / 1e6);
    out.cpus_system_time_secs = lookup(&pairs, "system_usec").map(|us| f(us) / 1e6);
    out.cpus_nr_periods =
        lookup(&pairs, "nr_periods").map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    out.cpus_nr_throttled =
        lookup(&pairs, "nr_throttled").map(|v| u32::try_from(v).unwrap_or(u32::MAX));
    out.cpus_throttled_time_secs = lookup(&pairs, "throttled_usec").map(|us| f(us) / 1e6);
    let max = dir.join("cpu.max");
    if max.exists() {
        let text = fsops::read(&max)?;
        let mut parts = text.split_whitespace();
        if let (Some(quota), Some(period)) = (parts.next(), parts.next())
            && let (Ok(quota), Ok(period)) = (quota.parse::<u64>(), period.parse::<u64>())
            && period > 0
        {
            out.cpus_limit = Some(f(quota) / f(period));
        }
    }
    Ok(())
}

/// v2 memory statistics, if the memory controller is enabled here.
pub(crate) fn v2_memory(dir: &Path, out: &mut ResourceStatistics) -> Result<()> {
    let current = dir.join("memory.current");
    if !current.exists() {
        return Ok(());
    }
    out.mem_total_bytes = Some(fsops::read_u64(&current)?);
    out.mem_limit_bytes = fsops::read_u64_or_max(&dir.join("memory.max"))?;
    let swap = dir.join("memory.swap.current");
    if swap.exists() {
        out.mem_swap_bytes = Some(fsops::read_u64(&swap)?);
    }
    let pairs = fsops::read_flat_keyed(&dir.join("memory.stat"))?;
    out.mem_anon_bytes = lookup(&pairs, "anon");
    out.mem_rss_bytes = lookup(&pairs, "anon");
    out.mem_file_bytes = lookup(&pairs, "file");
    out.mem_cache_bytes = lookup(&pairs, "file");
    out.mem_mapped_file_bytes = lookup(&pairs, "file_mapped");
    out.mem_unevictable_bytes = lookup(&pairs, "unevictable");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_fixture_files_become_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ticks = rustix::param::clock_ticks_per_second();
        std::fs::write(
            d.join("cpuacct.stat"),
            format!("user {}\nsystem {}\n", 3 * ticks, ticks),
        )
        .unwrap();
        std::fs::write(
            d.join("cpu.stat"),
            "nr_periods 10\nnr_throttled 4\nthrottled_time 2500000000\n",
        )
        .unwrap();
        std::fs::write(d.join("cpu.cfs_quota_us"), "20000\n").unwrap();
        std::fs::write(d.join("cpu.cfs_period_us"), "100000\n").unwrap();
        std::fs::write(d.join("memory.usage_in_bytes"), "4096\n").unwrap();
        std::fs::write(d.join("memory.limit_in_bytes"), "33554432\n").unwrap();
        std::fs::write(
            d.join("memory.soft_limit_in_bytes"),
            "9223372036854771712\n",
        )
        .unwrap();
        std::fs::write(
            d.join("memory.stat"),
            "cache 1\nrss 2\ntotal_cache 100\ntotal_rss 200\ntotal_mapped_file 50\ntotal_swap 0\ntotal_unevictable 7\n",
        )
        .unwrap();
        std::fs::write(d.join("cgroup.procs"), "1\n2\n").unwrap();
        std::fs::write(d.join("tasks"), "1\n2\n3\n").unwrap();
        let mut s = ResourceStatistics::default();
        v1_cpuacct(d, &mut s).unwrap();
        v1_cpu(d, &mut s).unwrap();
        v1_memory(d, &mut s).unwrap();
        processes(d, "tasks", &mut s).unwrap();
        assert_eq!(s.cpus_user_time_secs, Some(3.0));
        assert_eq!(s.cpus_system_time_secs, Some(1.0));
        assert_eq!(s.cpus_nr_periods, Some(10));
        assert_eq!(s.cpus_nr_throttled, Some(4));
        assert_eq!(s.cpus_throttled_time_secs, Some(2.5));
        assert_eq!(s.cpus_limit, Some(0.2));
        assert_eq!(s.mem_total_bytes, Some(4096));
        assert_eq!(s.mem_limit_bytes, Some(33_554_432));
        assert_eq!(s.mem_rss_bytes, Some(200));
        assert_eq!(s.mem_cache_bytes, Some(100));
        assert_eq!(s.mem_mapped_file_bytes, Some(50));
        assert_eq!(s.mem_unevictable_bytes, Some(7));
        assert_eq!((s.processes, s.threads), (Some(2), Some(3)));
    }

    #[test]
    fn v2_fixture_files_become_statistics() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(
            d.join("cpu.stat"),
            "usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\nnr_periods 5\nnr_throttled 2\nthrottled_usec 500000\n",
        )
        .unwrap();
        std::fs::write(d.join("cpu.max"), "50000 100000\n").unwrap();
        std::fs::write(d.join("memory.current"), "8192\n").unwrap();
        std::fs::write(d.join("memory.max"), "max\n").unwrap();
        std::fs::write(
            d.join("memory.stat"),
            "anon 4096\nfile 2048\nfile_mapped 1024\nunevictable 0\n",
        )
        .unwrap();
        let mut s = ResourceStatistics::default();
        v2_cpu(d, &mut s).unwrap();
        v2_memory(d, &mut s).unwrap();
        assert_eq!(s.cpus_user_time_secs, Some(2.0));
        assert_eq!(s.cpus_system_time_secs, Some(1.0));
        assert_eq!(s.cpus_throttled_time_secs, Some(0.5));
        assert_eq!(s.cpus_limit, Some(0.5));
        assert_eq!(s.mem_total_bytes, Some(8192));
        assert_eq!(s.mem_limit_bytes, None);
        assert_eq!(s.mem_rss_bytes, Some(4096));
        assert_eq!(s.mem_cache_bytes, Some(2048));
    }

    #[test]
    fn a_garbled_file_is_named_in_the_error() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cpu.stat"), "nr_periods lots\n").unwrap();
        let err = v1_cpu(dir.path(), &mut ResourceStatistics::default()).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("cpu.stat") && text.contains("nr_periods lots"),
            "{text}"
        );
    }
}
