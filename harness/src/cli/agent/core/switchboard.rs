//! The agent's stand-in for Mesos' IO switchboard
//! (src/slave/containerizer/mesos/io/switchboard.cpp): the stdio of a
//! container launched with class DEBUG or with `ContainerInfo.tty_info`
//! goes through the agent, which fans the output out to every attached
//! reader, tees it to the sandbox's `stdout`/`stderr` files, and takes input
//! from one writer at a time.
//!
//! Mesos hands the switchboard's descriptors to the launcher. nestguard's
//! launcher always wires the sandbox's log files (its launch protocol has no
//! `ContainerIO` yet), so the agent redirects the command itself: the
//! command is run by a shell that first points its stdio at FIFOs in the
//! sandbox (`.nestguard-io/`, relative to the working directory, so that a
//! container with its own root filesystem sees them through its sandbox
//! mount) or, with a TTY, at the slave side of a pseudo-terminal the agent
//! opened. The TTY path needs the host's `/dev/pts` inside the container.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::Duration;

use nestguard::proto::mesos::slave::ContainerClass;
use nestguard::proto::mesos::{CommandInfo, ContainerInfo};
use tokio::sync::mpsc;

use super::registry::{Agent, ApiError};

/// Whether the agent serves debug sessions, attach and TTYs (its
/// `--debug_sessions` flag; one agent per process). Off by default: the
/// switchboard still creates and opens its FIFOs and log files by path in
/// the tenant-writable sandbox, as root, where a tenant can swap a path for
/// a link between the check and the use.
pub static DEBUG_SESSIONS: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// The FIFOs' directory, relative to the sandbox.
const IO_DIR: &str = ".nestguard-io";

/// How often the watcher looks whether the container terminated.
const WATCH_PERIOD: Duration = Duration::from_millis(100);

/// One piece of the container's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// From stdout (or the TTY, which merges both).
    Stdout(Vec<u8>),
    /// From stderr.
    Stderr(Vec<u8>),
}

/// The switchboards of the agent's containers, by dotted container ID.
#[derive(Default)]
pub struct Boards(Mutex<HashMap<String, Arc<Switchboard>>>);

impl Boards {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Arc<Switchboard>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Default)]
struct Fanout {
    subscribers: Vec<mpsc::UnboundedSender<Chunk>>,
    /// Output streams still read (2 with pipes, 1 with a TTY).
    open_streams: usize,
    ended: bool,
    /// An output client attached once (DEBUG containers wait for it).
    connected: bool,
}

/// One container's switchboard.
pub struct Switchboard {
    tty: bool,
    /// Mesos' `wait_for_connection`: output is read only once a client attached.
    debug: bool,
    sandbox: PathBuf,
    stdin: Mutex<Option<File>>,
    /// The pty master (reads, window size); None with pipes.
    master: Option<OwnedFd>,
    /// Held until the container ends, so that the master does not hang up
    /// before the container opened the slave.
    slave: Mutex<Option<OwnedFd>>,
    fanout: Mutex<Fanout>,
    changed: Condvar,
    input_taken: AtomicBool,
    terminated: AtomicBool,
}

/// The single input connection; dropping it frees the slot.
pub struct InputSlot(Arc<Switchboard>);

impl Drop for InputSlot {
    fn drop(&mut self) {
        self.0.input_taken.store(false, Ordering::SeqCst);
    }
}

impl std::ops::Deref for InputSlot {
    type Target = Switchboard;
    fn deref(&self) -> &Switchboard {
        &self.0
    }
}

fn internal(what: &str, e: impl std::fmt::Display) -> ApiError {
    ApiError::Internal(format!("Failed to create the I/O switchboard: {what}: {e}"))
}

/// Single-quotes a word for `/bin/sh`.
fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

fn user_ids(user: Option<&str>) -> Result<Option<(nix::unistd::Uid, nix::unistd::Gid)>, ApiError> {
    let Some(name) = user else { return Ok(None) };
    match nix::unistd::User::from_name(name) {
        Ok(Some(u)) => Ok(Some((u.uid, u.gid))),
        Ok(None) => Err(ApiError::BadRequest(format!(
            "Failed to find user '{name}'"
        ))),
        Err(e) => Err(internal("look up the user", e)),
    }
}

impl Switchboard {
    /// Whether a container gets a switchboard (Mesos' `requiresServer`).
    pub fn required(class: ContainerClass, container: Option<&ContainerInfo>) -> bool {
        class == ContainerClass::Debug || container.is_some_and(|c| c.tty_info.is_some())
    }

    /// Creates the FIFOs (or the pty) for a container whose sandbox exists,
    /// owned by the user the command runs as, and returns the command
    /// rewritten to use them.
    fn create(
        sandbox: &Path,
        user: Option<&str>,
        class: ContainerClass,
        container: Option<&ContainerInfo>,
        command: CommandInfo,
    ) -> Result<(Arc<Switchboard>, CommandInfo), ApiError> {
        let ids = user_ids(user)?;
        let chown = |fd: std::os::fd::BorrowedFd<'_>| -> Result<(), ApiError> {
            if let Some((uid, gid)) = ids {
                nix::unistd::fchown(fd, Some(uid), Some(gid)).map_err(|e| internal("chown", e))?;
            }
            Ok(())
        };
        let window = container.and_then(|c| c.tty_info.as_ref()).map(|t| {
            let size = t.window_size.unwrap_or_default();
            nix::pty::Winsize {
                ws_row: u16::try_from(size.rows).unwrap_or(u16::MAX),
                ws_col: u16::try_from(size.columns).unwrap_or(u16::MAX),
                ws_xpixel: 0,
                ws_ypixel: 0,
            }
        });
        let tty = container.is_some_and(|c| c.tty_info.is_some());
        let (stdin, master, slave, redirect) = if tty {
            let pty =
                nix::pty::openpty(window.as_ref(), None).map_err(|e| internal("openpty", e))?;
            chown(pty.slave.as_fd())?;
            let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd()))
                .map_err(|e| internal("find the pty", e))?;
            let path = quote(&path.to_string_lossy());
            let writer = File::from(pty.master.try_clone().map_err(|e| internal("dup", e))?);
            (
                writer,
                Some(pty.master),
                Some(pty.slave),
                format!("exec <{path} >{path} 2>&1\n"),
            )
        } else {
            let dir = sandbox.join(IO_DIR);
            std::fs::create_dir(&dir).map_err(|e| internal("create the FIFO directory", e))?;
            if let Some((uid, gid)) = ids {
                nix::unistd::chown(&dir, Some(uid), Some(gid)).map_err(|e| internal("chown", e))?;
            }
            for name in ["stdin", "stdout", "stderr"] {
                let path = dir.join(name);
                nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600))
                    .map_err(|e| internal("mkfifo", e))?;
                if let Some((uid, gid)) = ids {
                    nix::unistd::chown(&path, Some(uid), Some(gid))
                        .map_err(|e| internal("chown", e))?;
                }
            }
            // Read-write: opening does not wait for the container, and the
            // container sees EOF once this end is dropped.
            let writer = OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(dir.join("stdin"))
                .map_err(|e| internal("open the stdin FIFO", e))?;
            (
                writer,
                None,
                None,
                format!("exec <{IO_DIR}/stdin >{IO_DIR}/stdout 2>{IO_DIR}/stderr\n"),
            )
        };
        let body = if command.shell.unwrap_or(true) {
            command.value.clone().unwrap_or_default()
        } else {
            // argv[0] cannot be set by a POSIX shell's `exec`.
            let mut words = vec![quote(command.value.as_deref().unwrap_or_default())];
            words.extend(command.arguments.iter().skip(1).map(|a| quote(a)));
            format!("exec {}", words.join(" "))
        };
        let command = CommandInfo {
            shell: Some(true),
            value: Some(format!("{redirect}{body}")),
            arguments: Vec::new(),
            ..command
        };
        let board = Switchboard {
            tty,
            debug: class == ContainerClass::Debug,
            sandbox: sandbox.to_path_buf(),
            stdin: Mutex::new(Some(stdin)),
            master,
            slave: Mutex::new(slave),
            fanout: Mutex::new(Fanout {
                open_streams: if tty { 1 } else { 2 },
                ..Default::default()
            }),
            changed: Condvar::new(),
            input_taken: AtomicBool::new(false),
            terminated: AtomicBool::new(false),
        };
        Ok((Arc::new(board), command))
    }

    fn fanout(&self) -> MutexGuard<'_, Fanout> {
        self.fanout
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Attaches an output client: it gets every chunk from now on, and its
    /// stream ends when the container's output ends.
    pub fn subscribe(&self) -> mpsc::UnboundedReceiver<Chunk> {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut fanout = self.fanout();
        if !fanout.ended {
            fanout.subscribers.push(tx);
            fanout.connected = true;
            self.changed.notify_all();
        }
        rx
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

    /// Writes to the container's stdin. Without a TTY, empty data is EOF
    /// and closes stdin; with one the client sends ^D.
    pub fn write_stdin(&self, data: &[u8]) -> std::io::Result<()> {
        let mut stdin = self
            .stdin
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if data.is_empty() && !self.tty {
            *stdin = None;
            return Ok(());
        }
        match stdin.as_mut() {
            Some(f) => f.write_all(data),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "stdin is closed",
            )),
        }
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

    /// Sends a chunk to every client and to the sandbox's log file.
    fn emit(&self, chunk: Chunk, log: &mut Option<File>, name: &str) {
        let data = match &chunk {
            Chunk::Stdout(d) | Chunk::Stderr(d) => d,
        };
        if log.is_none() {
            // The sandbox's own file, never through a link.
            *log = OpenOptions::new()
                .append(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NOCTTY)
                .open(self.sandbox.join(name))
                .ok()
                .filter(|f| f.metadata().is_ok_and(|m| m.is_file()));
        }
        if let Some(f) = log.as_mut() {
            let _ = f.write_all(data);
        }
        self.fanout()
            .subscribers
            .retain(|s| s.send(chunk.clone()).is_ok());
    }

    /// Waits for the first client (DEBUG containers) or the end.
    fn wait_for_connection(&self) -> bool {
        let mut fanout = self.fanout();
        while self.debug && !fanout.connected && !self.terminated.load(Ordering::SeqCst) {
            fanout = self
                .changed
                .wait(fanout)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        !self.terminated.load(Ordering::SeqCst) || !self.debug || fanout.connected
    }

    fn stream_done(&self) {
        let mut fanout = self.fanout();
        fanout.open_streams = fanout.open_streams.saturating_sub(1);
        if fanout.open_streams == 0 {
            fanout.ended = true;
            fanout.subscribers.clear();
        }
    }

    fn read_fifo(&self, name: &'static str) {
        let mut log = None;
        if self.wait_for_connection()
            && let Ok(mut fifo) = File::open(self.sandbox.join(IO_DIR).join(name))
        {
            let mut buf = vec![0u8; 16 * 1024];
            while let Ok(n) = fifo.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let data = buf[..n].to_vec();
                let chunk = if name == "stdout" {
                    Chunk::Stdout(data)
                } else {
                    Chunk::Stderr(data)
                };
                self.emit(chunk, &mut log, name);
            }
        }
        self.stream_done();
    }

    fn read_pty(&self) {
        let mut log = None;
        if let (true, Some(master)) = (self.wait_for_connection(), &self.master) {
            let mut buf = vec![0u8; 16 * 1024];
            loop {
                let mut fds = [rustix::event::PollFd::new(
                    master,
                    rustix::event::PollFlags::IN,
                )];
                let timeout = rustix::event::Timespec {
                    tv_sec: 0,
                    tv_nsec: 100_000_000,
                };
                let ready = rustix::event::poll(&mut fds, Some(&timeout)).unwrap_or(0);
                if ready == 0 {
                    if self.terminated.load(Ordering::SeqCst) {
                        break;
                    }
                    continue;
                }
                match nix::unistd::read(master, &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => self.emit(Chunk::Stdout(buf[..n].to_vec()), &mut log, "stdout"),
                }
            }
        }
        self.stream_done();
    }

    /// Unblocks readers still waiting in `open` of a FIFO the container
    /// never opened.
    fn poke_fifos(&self) {
        for name in ["stdout", "stderr"] {
            let _ = OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
                .open(self.sandbox.join(IO_DIR).join(name));
        }
    }

    fn remove_files(&self) {
        if !self.tty {
            let _ = std::fs::remove_dir_all(self.sandbox.join(IO_DIR));
        }
    }
}

impl Agent {
    /// Creates the switchboard of a container about to launch, if it needs
    /// one; returns the command to launch.
    pub(super) fn prepare_switchboard(
        &self,
        sandbox: &Path,
        user: Option<&str>,
        class: ContainerClass,
        container: Option<&ContainerInfo>,
        command: CommandInfo,
    ) -> Result<(Option<Arc<Switchboard>>, CommandInfo), ApiError> {
        if !Switchboard::required(class, container) {
            return Ok((None, command));
        }
        if !DEBUG_SESSIONS.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(ApiError::BadRequest(
                "Debug sessions and TTYs are off on this agent (--debug_sessions)".into(),
            ));
        }
        let (board, command) = Switchboard::create(sandbox, user, class, container, command)?;
        Ok((Some(board), command))
    }

    /// Serves a launched container's switchboard until the container ends.
    pub(super) fn start_switchboard(self: &Arc<Self>, key: String, board: Arc<Switchboard>) {
        self.switchboards
            .map()
            .insert(key.clone(), Arc::clone(&board));
        if board.tty {
            let b = Arc::clone(&board);
            std::thread::spawn(move || b.read_pty());
        } else {
            for name in ["stdout", "stderr"] {
                let b = Arc::clone(&board);
                std::thread::spawn(move || b.read_fifo(name));
            }
        }
        let agent: Weak<Agent> = Arc::downgrade(self);
        std::thread::spawn(move || {
            loop {
                std::thread::sleep(WATCH_PERIOD);
                let ended = agent
                    .upgrade()
                    .is_none_or(|a| a.terminated(&key) != Some(false));
                if ended && !board.terminated.swap(true, Ordering::SeqCst) {
                    let _guard = board.fanout();
                    board.changed.notify_all();
                }
                if ended {
                    if board.output_ended() {
                        break;
                    }
                    if !board.tty {
                        board.poke_fifos();
                    }
                }
            }
            *board
                .slave
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            *board
                .stdin
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
            board.remove_files();
            if let Some(agent) = agent.upgrade() {
                agent.switchboards.map().remove(&key);
            }
            tracing::debug!(container_id = %key, "switchboard closed");
        });
    }

    /// Drops the switchboard of a container whose launch failed.
    pub(super) fn abandon_switchboard(board: &Switchboard) {
        board.remove_files();
    }

    /// The switchboard of a running container, if it has one.
    pub fn switchboard(&self, key: &str) -> Option<Arc<Switchboard>> {
        self.switchboards.map().get(key).cloned()
    }

    /// Whether the agent runs this container (for the switchboard's
    /// "disabled" answer versus "cannot be found").
    pub fn runs(&self, key: &str) -> bool {
        self.terminated(key) == Some(false)
    }
}

impl Agent {
    /// LAUNCH_NESTED_CONTAINER_SESSION's launch (already authorized): a
    /// DEBUG container, which has a switchboard.
    pub fn launch_session(
        self: &Arc<Self>,
        id: &nestguard::proto::mesos::ContainerId,
        command: Option<CommandInfo>,
        container: Option<ContainerInfo>,
    ) -> Result<super::Launched, ApiError> {
        self.launch_as(
            id,
            command,
            container,
            Vec::new(),
            Default::default(),
            ContainerClass::Debug,
        )
    }
}
