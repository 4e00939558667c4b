//! The agent's stand-in for Mesos' IO switchboard
//! (src/slave/containerizer/mesos/io/switchboard.cpp): the stdio of a
//! container launched with class DEBUG or with `ContainerInfo.tty_info`
//! goes through the agent, which fans the output out to every attached
//! reader, tees it to the sandbox's `stdout`/`stderr` files, and takes input
//! from one writer at a time.
//!
//! As Mesos hands the switchboard's descriptors to the launcher
//! (`ContainerIO`), the agent hands the container's side of its pipes, or
//! the slave of its pseudo-terminal, to the library's launcher as
//! descriptors ([`super::container_io`]): the command gets them as fds
//! 0/1/2, nothing is opened by path, and nothing in the tenant's sandbox
//! names them. The command runs unchanged (no shell wraps it).
//!
//! The sandbox belongs to the tenant, and the agent runs as root, so the
//! only sandbox files the agent touches, the `stdout`/`stderr` logs it tees
//! the output to, are opened relative to the sandbox's descriptor (opened
//! once, below the work directory, without following any link:
//! [`nestguard::beneath::open_dir`]), never through a link, never created,
//! and only written if they are regular files with one link owned by the
//! container's user.
//!
//! Input is written on the runtime's reactor to a non-blocking descriptor,
//! so a container that stops reading its stdin holds no worker and a write
//! gives up when the container ends. Output goes to each reader through a queue of at most
//! [`SUBSCRIBER_QUEUE`] chunks of at most [`READ_CHUNK`] bytes: a reader
//! whose queue is full holds the output back (the container blocks on its
//! full pipe) for up to [`SLOW_READER_GRACE`], then is disconnected (its
//! stream ends). A reader that stops reading thus costs at most
//! `SUBSCRIBER_QUEUE * READ_CHUNK` bytes (4 MiB), and at most
//! [`MAX_SUBSCRIBERS`] readers attach at once.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nestguard::proto::mesos::ContainerInfo;
use nestguard::proto::mesos::slave::ContainerClass;
use rustix::fs::{FileType, OFlags};
use tokio::sync::mpsc;

use super::container_io::{self, ChildIo, Wiring};
use super::records::ApiError;

/// Whether the agent serves debug sessions, attach and TTYs (its
/// `--debug_sessions` flag, on by default as in Mesos; one agent per
/// process).
pub static DEBUG_SESSIONS: AtomicBool = AtomicBool::new(true);

/// The 400 of a session, an attach or a `tty_info` launch on an agent
/// started with `--debug_sessions=false`.
pub const SESSIONS_OFF: &str =
    "Debug sessions and TTYs are off on this agent (it was started with --debug_sessions=false)";

/// 400 [`SESSIONS_OFF`] unless the agent serves debug sessions.
pub fn require_debug_sessions() -> Result<(), ApiError> {
    if DEBUG_SESSIONS.load(Ordering::Relaxed) {
        Ok(())
    } else {
        Err(ApiError::BadRequest(SESSIONS_OFF.into()))
    }
}

/// How often the watcher looks whether the container terminated (and the
/// readers whether they should stop waiting for a writer).
pub(super) const WATCH_PERIOD: Duration = Duration::from_millis(100);

/// The most the agent reads from the container in one go (one chunk).
pub const READ_CHUNK: usize = 16 * 1024;

/// Chunks queued for one output reader: one that falls this far behind is
/// disconnected.
pub const SUBSCRIBER_QUEUE: usize = 256;

/// How long a full reader's queue holds the output back before the reader
/// is disconnected.
pub const SLOW_READER_GRACE: Duration = Duration::from_secs(5);

/// How often a full queue is tried again.
pub(super) const BACKOFF: Duration = Duration::from_millis(10);

/// Output readers attached to one container at once.
pub const MAX_SUBSCRIBERS: usize = 8;

/// Containers with a switchboard (debug sessions and `tty_info` launches)
/// at most at once under one root container (503 beyond): each holds pipes
/// or a host pty, reader threads and a container.
pub const MAX_SESSIONS: usize = 16;

/// Containers with a switchboard at most at once on the whole agent (503
/// beyond), well below a host's `kernel.pty.max` (4096 by default, with
/// 1024 of them reserved for the host's own logins), so that tenants cannot
/// take the ptys the host's ssh needs nor the agent's threads.
pub const MAX_SWITCHBOARDS: usize = 256;

/// One piece of the container's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// From stdout (or the TTY, which merges both).
    Stdout(Vec<u8>),
    /// From stderr.
    Stderr(Vec<u8>),
}

/// Which output a reader pumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    /// The sandbox's log file of this stream.
    pub(super) fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }

    pub(super) fn chunk(self, data: Vec<u8>) -> Chunk {
        match self {
            Stream::Stdout => Chunk::Stdout(data),
            Stream::Stderr => Chunk::Stderr(data),
        }
    }
}

/// The switchboards of the agent's containers, by dotted container ID.
#[derive(Default)]
pub struct Boards(Mutex<HashMap<String, Arc<Switchboard>>>);

impl Boards {
    pub(super) fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Switchboard>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Default)]
pub(super) struct Fanout {
    pub(super) subscribers: Vec<mpsc::Sender<Chunk>>,
    /// Output streams still read (2 with pipes, 1 with a TTY).
    pub(super) open_streams: usize,
    pub(super) ended: bool,
    /// An output client attached once (DEBUG containers wait for it).
    pub(super) connected: bool,
}

/// One container's switchboard.
pub struct Switchboard {
    pub(super) tty: bool,
    /// Mesos' `wait_for_connection`: output is read only once a client attached.
    pub(super) debug: bool,
    /// The sandbox's path, for messages only.
    pub(super) sandbox_path: PathBuf,
    /// The sandbox, opened once.
    pub(super) sandbox: OwnedFd,
    /// The container's stdin (non-blocking); None once closed.
    pub(super) stdin: Mutex<Option<OwnedFd>>,
    /// Set when the container ended: a write waiting for room gives up.
    pub(super) closed: AtomicBool,
    /// The pty master (reads, window size); None with pipes.
    pub(super) master: Option<OwnedFd>,
    /// The container's side of its stdio, until the launch took it.
    pub(super) child: Mutex<Option<ChildIo>>,
    /// The output pipes' read ends, until their readers start.
    pub(super) outputs: Mutex<Vec<(Stream, OwnedFd)>>,
    pub(super) fanout: Mutex<Fanout>,
    pub(super) changed: Condvar,
    pub(super) input_taken: AtomicBool,
    pub(super) terminated: AtomicBool,
    /// Readers disconnected because their queue was full.
    pub(super) dropped_readers: AtomicU64,
    /// [`SLOW_READER_GRACE`] (shorter in tests).
    pub(super) slow_reader_grace: Duration,
    /// The uid the container runs as: the only owner of a sandbox log file
    /// the output is teed to (a root-owned file the tenant renamed to
    /// `stdout` is not its to fill).
    pub(super) log_owner: u32,
}

/// The single input connection; dropping it frees the slot.
pub struct InputSlot(Arc<Switchboard>);

impl Drop for InputSlot {
    fn drop(&mut self) {
        self.0.input_taken.store(false, Ordering::SeqCst);
    }
}

impl InputSlot {
    /// [`Switchboard::write_stdin`] of the slot's switchboard.
    pub async fn write_stdin(&self, data: Vec<u8>) -> std::io::Result<()> {
        self.0.write_stdin(data).await
    }
}

impl std::ops::Deref for InputSlot {
    type Target = Switchboard;
    fn deref(&self) -> &Switchboard {
        &self.0
    }
}

pub(super) fn internal(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::Internal(format!("Failed to create the I/O switchboard: {what}: {e}"))
}

pub(super) fn user_ids(
    user: Option<&str>,
) -> Result<Option<(rustix::fs::Uid, rustix::fs::Gid)>, ApiError> {
    let Some(name) = user else { return Ok(None) };
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(Some((
            rustix::fs::Uid::from_raw(u.uid.as_raw()),
            rustix::fs::Gid::from_raw(u.gid.as_raw()),
        ))),
        Ok(None) => Err(ApiError::BadRequest(format!(
            "Failed to find user '{name}'"
        ))),
        Err(e) => Err(internal("look up the user", e)),
    }
}

/// [`WATCH_PERIOD`] for `poll`.
pub(super) fn poll_timeout() -> rustix::event::Timespec {
    rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: i64::try_from(WATCH_PERIOD.as_nanos()).unwrap_or(100_000_000),
    }
}

impl Switchboard {
    /// Whether a container gets a switchboard (Mesos' `requiresServer`).
    pub fn required(class: ContainerClass, container: Option<&ContainerInfo>) -> bool {
        class == ContainerClass::Debug || container.is_some_and(|c| c.tty_info.is_some())
    }

    /// Creates the pipes (or the pty) for a container whose sandbox exists
    /// below `work_dir`, run as `user` (the owner its logs must have).
    pub(super) fn create(
        work_dir: &Path,
        sandbox_path: &Path,
        user: Option<&str>,
        class: ContainerClass,
        container: Option<&ContainerInfo>,
    ) -> Result<Arc<Switchboard>, ApiError> {
        let ids = user_ids(user)?;
        let sandbox = nestguard::beneath::open_dir(work_dir, sandbox_path)
            .map_err(|e| internal("open the sandbox", e))?;
        let tty = container.is_some_and(|c| c.tty_info.is_some());
        let wiring = if tty {
            container_io::pty(container)?
        } else {
            container_io::pipes()?
        };
        let log_owner =
            ids.map_or_else(|| nix::unistd::geteuid().as_raw(), |(uid, _)| uid.as_raw());
        Ok(Arc::new(Switchboard::new(
            tty,
            class == ContainerClass::Debug,
            sandbox_path,
            sandbox,
            wiring,
            log_owner,
        )))
    }

    pub(super) fn new(
        tty: bool,
        debug: bool,
        sandbox_path: &Path,
        sandbox: OwnedFd,
        wiring: Wiring,
        log_owner: u32,
    ) -> Switchboard {
        let outputs = [
            (Stream::Stdout, wiring.stdout),
            (Stream::Stderr, wiring.stderr),
        ]
        .into_iter()
        .filter_map(|(stream, fd)| Some((stream, fd?)))
        .collect();
        Switchboard {
            tty,
            debug,
            sandbox_path: sandbox_path.to_path_buf(),
            sandbox,
            stdin: Mutex::new(Some(wiring.stdin)),
            closed: AtomicBool::new(false),
            master: wiring.master,
            child: Mutex::new(Some(wiring.child)),
            outputs: Mutex::new(outputs),
            fanout: Mutex::new(Fanout {
                open_streams: if tty { 1 } else { 2 },
                ..Default::default()
            }),
            changed: Condvar::new(),
            input_taken: AtomicBool::new(false),
            terminated: AtomicBool::new(false),
            dropped_readers: AtomicU64::new(0),
            slow_reader_grace: SLOW_READER_GRACE,
            log_owner,
        }
    }

    /// The container's side of its stdio, for the launch (once); the
    /// caller drops it when the launch returned.
    pub(super) fn take_child_io(&self) -> Option<ChildIo> {
        self.child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    pub(super) fn fanout(&self) -> MutexGuard<'_, Fanout> {
        self.fanout
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Attaches an output client: it gets every chunk from now on, and its
    /// stream ends when the container's output ends, or when it falls
    /// [`SUBSCRIBER_QUEUE`] chunks behind. 503 beyond [`MAX_SUBSCRIBERS`].
    pub fn subscribe(&self) -> Result<mpsc::Receiver<Chunk>, ApiError> {
        let (tx, rx) = mpsc::channel(SUBSCRIBER_QUEUE);
        let mut fanout = self.fanout();
        if !fanout.ended {
            fanout.subscribers.retain(|s| !s.is_closed());
            if fanout.subscribers.len() >= MAX_SUBSCRIBERS {
                return Err(ApiError::Unavailable(format!(
                    "Too many output connections to this container (at most {MAX_SUBSCRIBERS})"
                )));
            }
            fanout.subscribers.push(tx);
            fanout.connected = true;
            self.changed.notify_all();
        }
        Ok(rx)
    }

    /// The input slot, unless another connection holds it.
    pub fn take_input(self: &Arc<Self>) -> Option<InputSlot> {
        self.input_taken
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .ok()
            .map(|_| InputSlot(Arc::clone(self)))
    }

    /// Whether the container's output has ended.
    pub fn output_ended(&self) -> bool {
        self.fanout().ended
    }

    /// Output readers disconnected so far because they fell behind.
    #[cfg(test)]
    pub(super) fn dropped_readers(&self) -> u64 {
        self.dropped_readers.load(Ordering::Relaxed)
    }

    /// Writes to the container's stdin without holding a thread while the
    /// container does not read: the descriptor is non-blocking and waited
    /// for with the runtime's reactor ([`tokio::io::unix::AsyncFd`] on a
    /// duplicate, dropped when the write is over), looking at whether the
    /// container ended every [`WATCH_PERIOD`]. Without a TTY, empty data is
    /// EOF and closes stdin; with one the client sends ^D.
    pub async fn write_stdin(self: &Arc<Self>, data: Vec<u8>) -> std::io::Result<()> {
        let broken = || std::io::Error::new(std::io::ErrorKind::BrokenPipe, "stdin is closed");
        if data.is_empty() && !self.tty {
            // EOF: what was written stays in the pipe for the container.
            *self.stdin_lock() = None;
            return Ok(());
        }
        let fd = {
            let mut stdin = self.stdin_lock();
            if self.closed.load(Ordering::SeqCst) {
                *stdin = None;
                return if data.is_empty() {
                    Ok(())
                } else {
                    Err(broken())
                };
            }
            let Some(fd) = stdin.as_ref() else {
                return Err(broken());
            };
            fd.try_clone()?
        };
        // Deprecated for types whose `as_raw_fd` could change or close
        // under the registration; an `OwnedFd` moved into the `AsyncFd` is
        // open and the same until it is dropped with it (the safe
        // constructor keeps `unsafe` out of the package).
        #[allow(deprecated)]
        let fd = tokio::io::unix::AsyncFd::with_interest(fd, tokio::io::Interest::WRITABLE)?;
        let mut rest = data.as_slice();
        while !rest.is_empty() {
            if self.closed.load(Ordering::SeqCst) {
                return Err(broken());
            }
            match rustix::io::write(fd.get_ref(), rest) {
                Ok(n) => rest = &rest[n..],
                Err(rustix::io::Errno::AGAIN) => {
                    // Full: wait for room, looking at `closed` now and then.
                    if let Ok(ready) = tokio::time::timeout(WATCH_PERIOD, fd.writable()).await {
                        ready?.clear_ready();
                    }
                }
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    pub(super) fn stdin_lock(&self) -> MutexGuard<'_, Option<OwnedFd>> {
        self.stdin
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// TIOCSWINSZ on the pty (`os::setWindowSize`).
    pub fn set_window_size(&self, rows: u32, columns: u32) -> Result<(), String> {
        let Some(master) = &self.master else {
            return Err(nix::errno::Errno::ENOTTY.desc().to_owned());
        };
        let size = rustix::termios::Winsize {
            ws_row: u16::try_from(rows).unwrap_or(u16::MAX),
            ws_col: u16::try_from(columns).unwrap_or(u16::MAX),
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        rustix::termios::tcsetwinsize(master, size).map_err(|e| e.to_string())?;
        Ok(())
    }

    /// The sandbox's log file `name`, opened relative to the sandbox's
    /// descriptor: never through a link, never created, and only a regular
    /// file with a single link (a hard link could name a file elsewhere)
    /// owned by the container's user (not one of root's renamed there).
    pub(super) fn open_log(&self, name: &str) -> Option<File> {
        let at = self.sandbox_path.join(name);
        let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::NOCTTY | OFlags::NONBLOCK;
        let fd = match nestguard::beneath::open_at(self.sandbox.as_fd(), name, flags, 0, &at) {
            Ok(fd) => fd,
            Err(e) => {
                tracing::warn!(error = %e, "not teeing the output to the sandbox's log");
                return None;
            }
        };
        let stat = rustix::fs::fstat(&fd).ok()?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || stat.st_nlink != 1 {
            tracing::warn!(path = %at.display(), "not a regular file with one link; not teeing the output to it");
            return None;
        }
        if stat.st_uid != self.log_owner {
            tracing::warn!(path = %at.display(), owner = stat.st_uid, "not owned by the container's user; not teeing the output to it");
            return None;
        }
        Some(File::from(fd))
    }

    /// Sends a chunk to the sandbox's log file and to every client. A
    /// client whose queue is full holds the output back (the container
    /// blocks on its full pipe, as with a slow terminal) for up to the
    /// grace; one still full then is disconnected.
    pub(super) fn emit(&self, chunk: Chunk, log: Option<&mut File>) {
        let data = match &chunk {
            Chunk::Stdout(d) | Chunk::Stderr(d) => d,
        };
        if let Some(f) = log {
            let _ = f.write_all(data);
        }
        // Not under the lock: a client may attach while another is waited for.
        let senders = self.fanout().subscribers.clone();
        let mut gone = Vec::new();
        for sender in senders {
            let deadline = Instant::now() + self.slow_reader_grace;
            let mut item = chunk.clone();
            loop {
                match sender.try_send(item) {
                    Ok(()) => break,
                    Err(mpsc::error::TrySendError::Closed(_)) => {
                        gone.push(sender);
                        break;
                    }
                    Err(mpsc::error::TrySendError::Full(back)) if Instant::now() < deadline => {
                        item = back;
                        std::thread::sleep(BACKOFF);
                    }
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        self.dropped_readers.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(sandbox = %self.sandbox_path.display(), queued = SUBSCRIBER_QUEUE,
                            "an output reader fell behind; disconnecting it");
                        gone.push(sender);
                        break;
                    }
                }
            }
        }
        if !gone.is_empty() {
            self.fanout()
                .subscribers
                .retain(|s| !gone.iter().any(|g| g.same_channel(s)));
        }
    }

    /// Waits for the first client (DEBUG containers) or the end.
    pub(super) fn wait_for_connection(&self) -> bool {
        let mut fanout = self.fanout();
        while self.debug && !fanout.connected && !self.terminated.load(Ordering::SeqCst) {
            fanout = self
                .changed
                .wait(fanout)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        !self.terminated.load(Ordering::SeqCst) || !self.debug || fanout.connected
    }

    pub(super) fn stream_done(&self) {
        let mut fanout = self.fanout();
        fanout.open_streams = fanout.open_streams.saturating_sub(1);
        if fanout.open_streams == 0 {
            fanout.ended = true;
            fanout.subscribers.clear();
        }
    }

    /// Reads `fd` (a pipe's read end or the pty master, non-blocking) until
    /// it ends: EOF (a pipe whose write ends are all closed), an error (the
    /// pty, once no slave is open), or the container terminated and nothing
    /// more is there.
    pub(super) fn pump(&self, stream: Stream, fd: &OwnedFd) {
        if self.wait_for_connection() {
            let mut log = self.open_log(stream.name());
            let mut buf = vec![0u8; READ_CHUNK];
            loop {
                let mut fds = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
                let ready = rustix::event::poll(&mut fds, Some(&poll_timeout())).unwrap_or(0);
                if ready == 0 {
                    if self.terminated.load(Ordering::SeqCst) {
                        break;
                    }
                    continue;
                }
                match rustix::io::read(fd, &mut buf) {
                    Ok(0) => break,
                    Ok(n) => self.emit(stream.chunk(buf[..n].to_vec()), log.as_mut()),
                    Err(rustix::io::Errno::AGAIN | rustix::io::Errno::INTR) => {}
                    Err(_) => break,
                }
            }
        }
        self.stream_done();
    }

    /// The container ended: a pending write gives up, stdin is closed.
    pub(super) fn close_input(&self) {
        self.closed.store(true, Ordering::SeqCst);
        // Writers hold the lock only to look or to duplicate the
        // descriptor; one waiting for room holds a duplicate, which it
        // drops within a WATCH_PERIOD.
        *self.stdin_lock() = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A work directory with a sandbox, and a directory outside it with a
    /// file a hostile tenant would like the agent to write.
    fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let sandbox = dir.path().join("work/sandbox");
        std::fs::create_dir_all(&sandbox).unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("victim"), b"keep").unwrap();
        (dir, sandbox, outside)
    }

    fn create(dir: &tempfile::TempDir, sandbox: &Path) -> Result<Arc<Switchboard>, ApiError> {
        Switchboard::create(
            &dir.path().join("work"),
            sandbox,
            None,
            ContainerClass::Debug,
            None,
        )
    }

    /// Nothing is made in the sandbox: the stdio is pipes the agent holds.
    #[test]
    fn a_switchboard_makes_nothing_in_the_sandbox() {
        let (dir, sandbox, _outside) = layout();
        let board = create(&dir, &sandbox).unwrap();
        assert!(board.take_child_io().is_some());
        assert!(
            board.take_child_io().is_none(),
            "the container's side is taken once"
        );
        assert_eq!(std::fs::read_dir(&sandbox).unwrap().count(), 0);
    }

    #[test]
    fn log_links_and_hard_links_are_never_written() {
        let (dir, sandbox, outside) = layout();
        let board = create(&dir, &sandbox).unwrap();
        std::os::unix::fs::symlink(outside.join("victim"), sandbox.join("stdout")).unwrap();
        std::fs::hard_link(outside.join("victim"), sandbox.join("stderr")).unwrap();
        assert!(board.open_log("stdout").is_none());
        assert!(board.open_log("stderr").is_none());
        assert_eq!(std::fs::read(outside.join("victim")).unwrap(), b"keep");
        // A regular file of the sandbox's own is teed to.
        std::fs::remove_file(sandbox.join("stdout")).unwrap();
        std::fs::write(sandbox.join("stdout"), b"").unwrap();
        let mut log = board.open_log("stdout");
        board.emit(Chunk::Stdout(b"out".to_vec()), log.as_mut());
        assert_eq!(std::fs::read(sandbox.join("stdout")).unwrap(), b"out");
    }

    /// A regular single-link file owned by someone else than the
    /// container's user (a root-owned file the tenant renamed into the
    /// sandbox) is not teed to.
    #[test]
    fn a_log_owned_by_another_user_is_never_written() {
        use std::os::unix::fs::MetadataExt;
        let (dir, sandbox, _outside) = layout();
        let mut board = create(&dir, &sandbox).unwrap();
        std::fs::write(sandbox.join("stdout"), b"keep").unwrap();
        let ours = std::fs::metadata(sandbox.join("stdout")).unwrap().uid();
        // The container runs as another user than the file's owner.
        Arc::get_mut(&mut board).unwrap().log_owner = ours.wrapping_add(1);
        assert!(board.open_log("stdout").is_none());
        assert_eq!(std::fs::read(sandbox.join("stdout")).unwrap(), b"keep");
        Arc::get_mut(&mut board).unwrap().log_owner = ours;
        assert!(board.open_log("stdout").is_some());
    }

    #[test]
    fn a_reader_that_falls_behind_is_dropped_at_the_queue_cap() {
        let (dir, sandbox, _outside) = layout();
        let mut board = create(&dir, &sandbox).unwrap();
        Arc::get_mut(&mut board).unwrap().slow_reader_grace = Duration::ZERO;
        let mut slow = board.subscribe().unwrap();
        let mut fast = board.subscribe().unwrap();
        let chunk = vec![b'x'; READ_CHUNK];
        let mut fast_got = 0;
        for _ in 0..SUBSCRIBER_QUEUE * 4 {
            board.emit(Chunk::Stdout(chunk.clone()), None);
            while fast.try_recv().is_ok() {
                fast_got += 1;
            }
            assert!(slow.len() <= SUBSCRIBER_QUEUE);
        }
        assert_eq!(fast_got, SUBSCRIBER_QUEUE * 4);
        assert_eq!(board.dropped_readers(), 1);
        assert_eq!(board.fanout().subscribers.len(), 1);
        // What the slow reader has is capped; then its stream ends.
        let mut queued = 0;
        while slow.try_recv().is_ok() {
            queued += 1;
        }
        assert_eq!(queued, SUBSCRIBER_QUEUE);
        assert!(matches!(
            slow.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }

    #[test]
    fn readers_beyond_the_cap_are_refused() {
        let (dir, sandbox, _outside) = layout();
        let board = create(&dir, &sandbox).unwrap();
        let readers: Vec<_> = (0..MAX_SUBSCRIBERS)
            .map(|_| board.subscribe().unwrap())
            .collect();
        assert!(matches!(board.subscribe(), Err(ApiError::Unavailable(_))));
        drop(readers);
        assert!(board.subscribe().is_ok());
    }

    /// On a single-threaded runtime: a write to a stdin nobody reads does
    /// not hold the runtime's thread (which goes on to close the input),
    /// and fails once the container ended instead of waiting forever.
    #[tokio::test(flavor = "current_thread")]
    async fn a_stalled_stdin_write_does_not_block_the_runtime() {
        let (dir, sandbox, _outside) = layout();
        let board = create(&dir, &sandbox).unwrap();
        let writer = Arc::clone(&board);
        let write = tokio::spawn(async move { writer.write_stdin(vec![b'x'; 1 << 20]).await });
        tokio::task::yield_now().await;
        board.close_input();
        // A regression fails here instead of hanging the test run.
        let err = tokio::time::timeout(Duration::from_secs(30), write)
            .await
            .expect("the stalled write did not give up")
            .unwrap()
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::BrokenPipe);
    }
}
