//! OOM watch: a pollable fd that becomes readable when the kernel OOM-kills
//! in a container's memory cgroup, turned into Mesos' `ContainerLimitation`.
//!
//! v1 registers an eventfd on `memory.oom_control` through
//! `cgroup.event_control`; the kernel also signals it when the cgroup is
//! removed, so every wake-up is confirmed against the `oom_kill` counter.
//! v2 has no such registration: `memory.events.local` (or `memory.events`)
//! changes raise inotify `IN_MODIFY`. The counter read is `oom_kill` on v1
//! and `oom` on v2 (as upstream's cgroups2 isolator): a v2 container's
//! processes live in its `leaf`, where the kernel counts the kill, while the
//! limit, and so the `oom` event, belong to the container's directory.
//! Either way the counter is compared with zero, its value when the isolator made the cgroup, not
//! with its value when the watch started: an agent watches after the
//! launch returns (and after a restart), and a command that exhausts its
//! memory at once is OOM-killed before that; a baseline read then hid the
//! kill (found by CI under load: the container ended as a plain SIGKILL).
//! On v1 the counter
//! and the eventfd only concern the cgroup's own limit, so an OOM in a
//! nested container with its own limit is not reported for its parent.

use std::fs::File;
use std::io::ErrorKind;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec, eventfd, poll};
use rustix::fs::inotify;

use super::error::{CgroupError, Result};
use super::fsops::{self, lookup};
use crate::proto::mesos::slave::ContainerLimitation;
use crate::proto::mesos::task_status::Reason;
use crate::proto::mesos::{Resource, value};

const MEGABYTE: u64 = 1024 * 1024;

enum Kind {
    V1 {
        eventfd: OwnedFd,
        // Kept open for the lifetime of the registration.
        _oom_control: File,
    },
    V2 {
        inotify: OwnedFd,
    },
}

/// Watches one container's memory cgroup for OOM kills.
///
/// Poll [`AsRawFd::as_raw_fd`] for readability (from an event loop, or the
/// C++ isolator's `watch()` future), then call [`OomWatcher::check`]; or
/// block in [`OomWatcher::wait`].
pub struct OomWatcher {
    kind: Kind,
    memory_dir: PathBuf,
    v2: bool,
    baseline_kills: Option<u64>,
    fired: bool,
}

impl std::fmt::Debug for OomWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OomWatcher")
            .field("memory_dir", &self.memory_dir)
            .field("v2", &self.v2)
            .field("baseline_kills", &self.baseline_kills)
            .finish_non_exhaustive()
    }
}

/// The v2 events file: `memory.events.local` (5.2+) counts only OOMs of
/// this cgroup's own limit, where `memory.events` also counts those of
/// nested containers — which must not be blamed on the parent.
fn v2_events_file(memory_dir: &Path) -> PathBuf {
    let local = memory_dir.join("memory.events.local");
    if local.exists() {
        local
    } else {
        memory_dir.join("memory.events")
    }
}

/// The OOM-kill counter of a memory cgroup, if the kernel reports one.
fn oom_kills(memory_dir: &Path, v2: bool) -> Result<Option<u64>> {
    let path = if v2 {
        v2_events_file(memory_dir)
    } else {
        memory_dir.join("memory.oom_control")
    };
    // v2: `oom` counts the times this cgroup's own limit was reached and the
    // OOM killer ran; `oom_kill` is counted where the victim lived, the
    // container's `leaf`, so it stays 0 in the container's own `.local`.
    let key = if v2 { "oom" } else { "oom_kill" };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENODEV) => {
            return Ok(None);
        }
        Err(e) => return Err(CgroupError::io("read", path, e)),
    };
    Ok(lookup(&fsops::parse_flat_keyed(&path, &text)?, key))
}

impl OomWatcher {
    /// Starts watching a v1 memory cgroup directory.
    pub(crate) fn v1(memory_dir: &Path) -> Result<Self> {
        let control_path = memory_dir.join("memory.oom_control");
        let oom_control =
            File::open(&control_path).map_err(|e| CgroupError::io("open", &control_path, e))?;
        let efd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map_err(|e| CgroupError::sys("create eventfd for", &control_path, e))?;
        let registration = format!("{} {}", efd.as_raw_fd(), oom_control.as_raw_fd());
        fsops::write(&memory_dir.join("cgroup.event_control"), &registration)?;
        // Zero, not the current value: see the module doc. `None` (no
        // counter on this kernel) keeps trusting the eventfd.
        let baseline_kills = oom_kills(memory_dir, false)?.map(|_| 0);
        Ok(Self {
            kind: Kind::V1 {
                eventfd: efd,
                _oom_control: oom_control,
            },
            memory_dir: memory_dir.to_owned(),
            v2: false,
            baseline_kills,
            fired: false,
        })
    }

    /// Starts watching a v2 cgroup directory (its `memory.events`).
    pub(crate) fn v2(memory_dir: &Path) -> Result<Self> {
        let events = v2_events_file(memory_dir);
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)
            .map_err(|e| CgroupError::sys("create inotify for", &events, e))?;
        inotify::add_watch(&fd, &events, inotify::WatchFlags::MODIFY)
            .map_err(|e| CgroupError::sys("watch", &events, e))?;
        // Read once so that an unreadable file fails the watch now; the
        // baseline is zero (see the module doc).
        oom_kills(memory_dir, true)?;
        Ok(Self {
            kind: Kind::V2 { inotify: fd },
            memory_dir: memory_dir.to_owned(),
            v2: true,
            baseline_kills: Some(0),
            fired: false,
        })
    }

    /// The memory cgroup directory watched.
    pub fn memory_dir(&self) -> &Path {
        &self.memory_dir
    }

    /// Consumes pending notifications without blocking and reports an OOM
    /// kill once (later calls return `None`).
    pub fn check(&mut self) -> Result<Option<ContainerLimitation>> {
        if self.fired {
            return Ok(None);
        }
        let notified = self.drain()?;
        let kills = oom_kills(&self.memory_dir, self.v2)?;
        let oomed = match (self.baseline_kills, kills) {
            (Some(before), Some(now)) => now > before,
            // An old v1 kernel without the counter: trust the eventfd,
            // unless the cgroup itself is gone (removal also signals it).
            (None, _) => notified && self.memory_dir.exists(),
            (Some(_), None) => false,
        };
        if !oomed {
            return Ok(None);
        }
        self.fired = true;
        crate::metrics::isolation().oom_killed();
        let limitation = self.limitation()?;
        tracing::info!(cgroup = %self.memory_dir.display(), "OOM kill detected");
        Ok(Some(limitation))
    }

    /// Blocks until an OOM kill is reported or `timeout` passes (`None`:
    /// forever). `Ok(None)` on timeout, after a kill was already reported,
    /// or once the cgroup is removed.
    pub fn wait(&mut self, timeout: Option<Duration>) -> Result<Option<ContainerLimitation>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(limitation) = self.check()? {
                return Ok(Some(limitation));
            }
            if self.fired || !self.memory_dir.exists() {
                // Reported already, or the cgroup was removed: no OOM can
                // come any more.
                return Ok(None);
            }
            let remaining = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(r) if !r.is_zero() => Some(r),
                    _ => return Ok(None),
                },
                None => None,
            };
            // A v2 event can be missed between check() and poll(); wake up
            // periodically to re-read the counter.
            let slice = remaining.map_or(Duration::from_millis(500), |r| {
                r.min(Duration::from_millis(500))
            });
            let ts = Timespec::try_from(slice).unwrap_or(Timespec {
                tv_sec: 0,
                tv_nsec: 500_000_000,
            });
            let fd = self.as_fd();
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    return Err(CgroupError::sys(
                        "poll OOM notifications of",
                        &self.memory_dir,
                        e,
                    ));
                }
            }
        }
    }

    /// Reads and discards pending notifications; true if there were any.
    fn drain(&self) -> Result<bool> {
        let mut buf = [0u8; 4096];
        let mut any = false;
        loop {
            let read = match &self.kind {
                Kind::V1 { eventfd, .. } => rustix::io::read(eventfd, &mut buf[..8]),
                Kind::V2 { inotify } => rustix::io::read(inotify, &mut buf),
            };
            match read {
                Ok(0) => return Ok(any),
                Ok(_) => any = true,
                Err(rustix::io::Errno::AGAIN) => return Ok(any),
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    return Err(CgroupError::sys(
                        "read OOM notifications of",
                        &self.memory_dir,
                        e,
                    ));
                }
            }
        }
    }

    /// Mesos' limitation for an OOM: the limit and peak usage, the memory
    /// statistics for debugging, and the peak as the `mem` resource.
    fn limitation(&self) -> Result<ContainerLimitation> {
        let d = &self.memory_dir;
        let (limit, peak) = if self.v2 {
            let peak_file = d.join("memory.peak");
            let peak = if peak_file.exists() {
                fsops::read_u64(&peak_file).ok()
            } else {
                fsops::read_u64(&d.join("memory.current")).ok()
            };
            (
                fsops::read_u64_or_max(&d.join("memory.max")).ok().flatten(),
                peak,
            )
        } else {
            (
                fsops::read_u64_or_max(&d.join("memory.limit_in_bytes"))
                    .ok()
                    .flatten(),
                fsops::read_u64(&d.join("memory.max_usage_in_bytes")).ok(),
            )
        };
        let mut message = String::from("Memory limit exceeded: ");
        if let Some(limit) = limit {
            message.push_str(&format!("Requested: {} ", format_bytes(limit)));
        }
        if let Some(peak) = peak {
            message.push_str(&format!("Maximum Used: {}\n", format_bytes(peak)));
        }
        if let Ok(stat) = fsops::read(&d.join("memory.stat")) {
            message.push_str(&format!("\nMEMORY STATISTICS: \n{stat}\n"));
        }
        #[expect(
            clippy::cast_precision_loss,
            reason = "Mesos reports megabytes as a double"
        )]
        let mem_mb = peak.unwrap_or(0) as f64 / MEGABYTE as f64;
        Ok(ContainerLimitation {
            resources: vec![Resource {
                name: "mem".to_owned(),
                r#type: value::Type::Scalar as i32,
                scalar: Some(value::Scalar { value: mem_mb }),
                ..Resource::default()
            }],
            message: Some(message),
            reason: Some(Reason::ContainerLimitationMemory as i32),
        })
    }
}

impl AsFd for OomWatcher {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.kind {
            Kind::V1 { eventfd, .. } => eventfd.as_fd(),
            Kind::V2 { inotify } => inotify.as_fd(),
        }
    }
}

impl AsRawFd for OomWatcher {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

/// Byte counts as Mesos prints them: the largest unit without loss.
pub fn format_bytes(bytes: u64) -> String {
    const KB: u64 = 1024;
    const UNITS: [(u64, &str); 4] = [
        (KB * KB * KB * KB, "TB"),
        (KB * KB * KB, "GB"),
        (KB * KB, "MB"),
        (KB, "KB"),
    ];
    if bytes == 0 {
        return "0B".to_owned();
    }
    for (size, unit) in UNITS {
        if bytes.is_multiple_of(size) {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_print_like_mesos() {
        assert_eq!(format_bytes(0), "0B");
        assert_eq!(format_bytes(1000), "1000B");
        assert_eq!(format_bytes(2048), "2KB");
        assert_eq!(format_bytes(32 << 20), "32MB");
        assert_eq!(format_bytes(3 << 30), "3GB");
        assert_eq!(format_bytes(33_554_433), "33554433B");
    }

    #[test]
    fn a_v2_oom_kill_counter_change_is_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let events = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n";
        std::fs::write(d.join("memory.events"), events).unwrap();
        std::fs::write(d.join("memory.max"), "33554432\n").unwrap();
        std::fs::write(d.join("memory.peak"), "33554432\n").unwrap();
        std::fs::write(d.join("memory.stat"), "anon 33000000\n").unwrap();
        let mut watcher = OomWatcher::v2(d).unwrap();
        assert!(
            watcher
                .wait(Some(Duration::from_millis(50)))
                .unwrap()
                .is_none()
        );

        // A non-OOM event (the "max" counter) wakes the fd but is no OOM;
        // nor is a kill counted here (a v2 victim lives in the `leaf`).
        std::fs::write(d.join("memory.events"), events.replace("max 0", "max 3")).unwrap();
        assert!(watcher.check().unwrap().is_none());
        std::fs::write(
            d.join("memory.events"),
            events.replace("oom_kill 0", "oom_kill 1"),
        )
        .unwrap();
        assert!(watcher.check().unwrap().is_none());

        std::fs::write(d.join("memory.events"), events.replace("oom 0", "oom 1")).unwrap();
        let mut fds = [PollFd::new(&watcher, PollFlags::IN)];
        assert_eq!(
            poll(&mut fds, None).unwrap(),
            1,
            "the raw fd becomes readable"
        );
        let limitation = watcher.wait(Some(Duration::from_secs(5))).unwrap().unwrap();
        assert_eq!(
            limitation.reason,
            Some(Reason::ContainerLimitationMemory as i32)
        );
        let message = limitation.message.unwrap();
        assert!(
            message.starts_with("Memory limit exceeded: Requested: 32MB Maximum Used: 32MB\n"),
            "{message}"
        );
        assert!(message.contains("MEMORY STATISTICS"));
        assert_eq!(limitation.resources[0].name, "mem");
        assert_eq!(limitation.resources[0].scalar.unwrap().value, 32.0);
        assert!(watcher.check().unwrap().is_none(), "reported once");
    }
}
