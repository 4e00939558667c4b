//! A pollable limitation watch: Mesos' `watch()` future as one file
//! descriptor plus a non-blocking check, so an event loop (or the C++
//! shim's `process::io::poll`) can wait on it without a thread.
//!
//! The composite's watch is an epoll descriptor over every isolator's
//! source; epoll itself is pollable, so a caller sees one fd.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use rustix::event::epoll;
use rustix::event::{PollFd, PollFlags, Timespec, poll};

use super::error::{IsolatorError, Result};
use crate::isolation::cgroups::OomWatcher;
use crate::proto::mesos::slave::ContainerLimitation;

/// One isolator's source of limitations.
pub trait LimitationSource: Send {
    /// Readable when [`LimitationSource::check`] may have news.
    fn fd(&self) -> BorrowedFd<'_>;
    /// Drains notifications without blocking; a limitation once.
    fn check(&mut self) -> Result<Option<ContainerLimitation>>;
}

impl LimitationSource for OomWatcher {
    fn fd(&self) -> BorrowedFd<'_> {
        self.as_fd()
    }

    fn check(&mut self) -> Result<Option<ContainerLimitation>> {
        Ok(OomWatcher::check(self)?)
    }
}

/// The limitations of one container over all isolators.
pub struct Watch {
    epoll: OwnedFd,
    sources: Vec<Box<dyn LimitationSource>>,
    fired: Option<ContainerLimitation>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("sources", &self.sources.len())
            .field("fired", &self.fired.is_some())
            .finish()
    }
}

impl Watch {
    /// A watch over `sources` (none: it never fires, as Mesos' default).
    pub fn new(sources: Vec<Box<dyn LimitationSource>>) -> Result<Self> {
        let sys = |op: &'static str| {
            move |e: rustix::io::Errno| IsolatorError::Io {
                op,
                path: "epoll".into(),
                source: e.into(),
            }
        };
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(sys("create"))?;
        for (i, source) in sources.iter().enumerate() {
            epoll::add(
                &epoll,
                source.fd(),
                epoll::EventData::new_u64(i as u64),
                epoll::EventFlags::IN,
            )
            .map_err(sys("add to"))?;
        }
        Ok(Self {
            epoll,
            sources,
            fired: None,
        })
    }

    /// The descriptor to poll for readability; then call [`Watch::check`].
    /// Valid as long as the watch.
    pub fn fd(&self) -> RawFd {
        use std::os::fd::AsRawFd;
        self.epoll.as_raw_fd()
    }

    /// Non-blocking: the first limitation any isolator reported (again on
    /// every later call, so a caller may check after the fact).
    pub fn check(&mut self) -> Result<Option<ContainerLimitation>> {
        if self.fired.is_none() {
            for source in &mut self.sources {
                if let Some(limitation) = source.check()? {
                    self.fired = Some(limitation);
                    break;
                }
            }
        }
        Ok(self.fired.clone())
    }

    /// Blocks up to `timeout` (`None`: forever) for a limitation.
    /// Wakes at least every 500 ms to re-check (an inotify event can be
    /// missed between a check and the poll).
    pub fn wait(&mut self, timeout: Option<Duration>) -> Result<Option<ContainerLimitation>> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            if let Some(l) = self.check()? {
                return Ok(Some(l));
            }
            let slice = match deadline {
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(r) if !r.is_zero() => r.min(Duration::from_millis(500)),
                    _ => return Ok(None),
                },
                None => Duration::from_millis(500),
            };
            let ts = Timespec::try_from(slice).unwrap_or(Timespec {
                tv_sec: 0,
                tv_nsec: 500_000_000,
            });
            let mut fds = [PollFd::new(&self.epoll, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    return Err(IsolatorError::Io {
                        op: "poll",
                        path: "epoll".into(),
                        source: e.into(),
                    });
                }
            }
        }
    }
}
