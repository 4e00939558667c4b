//! `nestguard_launcher_launch_with_io` driven as C would (root, real
//! processes): the command gets the caller's pipes, or a pty's slave as its
//! controlling terminal, as fds 0/1/2 and nothing else; the supervisor
//! keeps no copy; the reader sees EOF (the master a hang-up) once the
//! command is gone.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::launcher_support::{root_or_skip, shell};
use nestguard::abi::launcher::{
    NESTGUARD_CONTAINER_IO_DEBUG, NESTGUARD_CONTAINER_IO_TTY, nestguard_container_io,
    nestguard_launcher,
};
use nestguard::abi::result::nestguard_result as R;
use nestguard::container_id::parse_dotted;
use prost::Message;

/// A launcher on a runtime directory of its own, freed on drop.
struct Launcher {
    handle: *mut nestguard_launcher,
    /// The runtime directory and the sandboxes.
    dir: tempfile::TempDir,
}

impl Launcher {
    fn new() -> Launcher {
        let dir = tempfile::Builder::new()
            .prefix("nestguard-io-")
            .tempdir()
            .unwrap();
        let handle = crate::launcher_abi::new(dir.path().join("runtime").to_str().unwrap(), 0);
        Launcher { handle, dir }
    }

    /// The sandbox of top-level container `id`.
    fn sandbox(&self, id: &str) -> String {
        self.dir
            .path()
            .join("runs")
            .join(id)
            .to_str()
            .unwrap()
            .to_owned()
    }

    /// Launches `script` as top-level container `id` with `io`; the
    /// result and the supervisor's pid.
    fn launch(&self, id: &str, script: &str, io: &nestguard_container_io) -> (R, i32) {
        let sandbox = self.sandbox(id);
        let id = parse_dotted(id).unwrap().encode_to_vec();
        let info = shell(script).encode_to_vec();
        let mut pid = 0;
        let r = nestguard_launcher::nestguard_launcher_launch_with_io(
            self.handle,
            id.as_ptr().cast(),
            id.len(),
            info.as_ptr().cast(),
            info.len(),
            std::ptr::null(),
            0,
            sandbox.as_ptr().cast(),
            sandbox.len(),
            io,
            &mut pid,
        );
        (r, pid)
    }

    fn destroy(&self, id: &str) {
        let id = parse_dotted(id).unwrap().encode_to_vec();
        let r = nestguard_launcher::nestguard_launcher_destroy(
            self.handle,
            id.as_ptr().cast(),
            id.len(),
            std::ptr::null_mut(),
        );
        assert_eq!(r, R::Ok);
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        nestguard_launcher::nestguard_launcher_free(self.handle);
    }
}

/// Three close-on-exec pipes for a container's stdio.
struct Pipes {
    /// The caller's ends: stdin's write end, stdout's and stderr's read ends.
    ours: [OwnedFd; 3],
    /// The container's ends, in the order of fds 0/1/2.
    theirs: [OwnedFd; 3],
}

impl Pipes {
    fn new() -> Pipes {
        let pipe = || rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let (stdin_r, stdin_w) = pipe();
        let (stdout_r, stdout_w) = pipe();
        let (stderr_r, stderr_w) = pipe();
        Pipes {
            ours: [stdin_w, stdout_r, stderr_r],
            theirs: [stdin_r, stdout_w, stderr_w],
        }
    }

    fn io(&self, flags: u32) -> nestguard_container_io {
        nestguard_container_io {
            stdin_fd: self.theirs[0].as_raw_fd(),
            stdout_fd: self.theirs[1].as_raw_fd(),
            stderr_fd: self.theirs[2].as_raw_fd(),
            flags,
        }
    }

    /// After the launch: the caller's copies of the container's ends go.
    fn into_ours(self) -> [OwnedFd; 3] {
        self.ours
    }
}

/// Reads `from` to its end on a thread, failing after 60 s instead of
/// hanging the run (a copy of the container's end left open somewhere).
fn read_to_end(from: OwnedFd) -> Vec<u8> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut file = std::fs::File::from(from);
        let mut out = Vec::new();
        // A pty master ends with EIO once no slave is open.
        let _ = file.read_to_end(&mut out);
        let _ = tx.send(out);
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("no EOF: a copy of the container's stdio stayed open")
}

/// What `/proc/<pid>/fd` holds: descriptor number and link.
fn fds_of(pid: i32) -> Vec<(i32, String)> {
    let mut fds: Vec<(i32, String)> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| {
            let e = e.ok()?;
            let link = std::fs::read_link(e.path()).ok()?;
            Some((
                e.file_name().to_str()?.parse().ok()?,
                link.to_string_lossy().into_owned(),
            ))
        })
        .collect();
    fds.sort();
    fds
}

/// The `pipe:[inode]` link naming `fd`'s pipe.
fn pipe_link(fd: &OwnedFd) -> String {
    format!("pipe:[{}]", rustix::fs::fstat(fd).unwrap().st_ino)
}

#[test]
fn pipes_become_the_commands_stdio_and_reach_eof() {
    if !root_or_skip() {
        return;
    }
    let l = Launcher::new();
    let pipes = Pipes::new();
    let script = "cat; echo err >&2; ls /proc/self/fd | tr '\\n' ' '";
    assert_eq!(l.launch("io-pipes", script, &pipes.io(0)).0, R::Ok);
    let [stdin_w, stdout_r, stderr_r] = pipes.into_ours();
    let mut input = std::fs::File::from(stdin_w);
    input.write_all(b"hello\n").unwrap();
    drop(input);
    let out = read_to_end(stdout_r);
    let err = read_to_end(stderr_r);
    assert_eq!(String::from_utf8_lossy(&out), "hello\n0 1 2 3 ");
    assert_eq!(String::from_utf8_lossy(&err), "err\n");
    // Nothing went to the sandbox's logs.
    let log = format!("{}/stdout", l.sandbox("io-pipes"));
    assert_eq!(std::fs::read(log).unwrap(), b"");
    l.destroy("io-pipes");
}

/// While the command runs, it holds the three pipes as 0/1/2 and nothing
/// else, and its supervisor (the pid the launch returns) holds none of
/// them: only the command's processes keep the reader from its EOF.
#[test]
fn the_supervisor_keeps_no_copy_and_the_command_only_its_stdio() {
    if !root_or_skip() {
        return;
    }
    let l = Launcher::new();
    let pipes = Pipes::new();
    let (r, supervisor) = l.launch("io-held", "exec sleep 100", &pipes.io(0));
    assert_eq!(r, R::Ok);
    let [stdin_w, stdout_r, stderr_r] = pipes.into_ours();
    let links = [stdin_w, stdout_r, stderr_r].map(|fd| (pipe_link(&fd), fd));
    // The command, once the supervisor has started it and it exec'd sleep.
    let children = format!("/proc/{supervisor}/task/{supervisor}/children");
    let deadline = Instant::now() + Duration::from_secs(30);
    let command: i32 = loop {
        let text = std::fs::read_to_string(&children).unwrap_or_default();
        let pid = text.split_whitespace().next().and_then(|p| p.parse().ok());
        let comm = pid.and_then(|p: i32| std::fs::read_to_string(format!("/proc/{p}/comm")).ok());
        if let (Some(pid), Some("sleep\n")) = (pid, comm.as_deref()) {
            break pid;
        }
        assert!(Instant::now() < deadline, "no sleep under the supervisor");
        std::thread::sleep(Duration::from_millis(20));
    };
    let expected: Vec<(i32, String)> = (0..).zip(links.iter().map(|(l, _)| l.clone())).collect();
    // Right after its exec the loader may still hold a library open (seen
    // under emulation: fd 3 on libc.so.6): what counts is what stays.
    let mut fds = fds_of(command);
    while fds != expected && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        fds = fds_of(command);
    }
    assert_eq!(fds, expected, "the command's descriptors");
    let kept: Vec<_> = fds_of(supervisor)
        .into_iter()
        .filter(|(_, link)| links.iter().any(|(l, _)| l == link))
        .collect();
    assert!(kept.is_empty(), "the supervisor keeps {kept:?}");
    l.destroy("io-held");
    // Destroyed: every copy is gone, the reader sees EOF.
    let [_, (_, stdout_r), _] = links;
    assert!(read_to_end(stdout_r).is_empty());
}

/// A pseudo-terminal's master and slave (opened through the master).
fn open_pty() -> (OwnedFd, OwnedFd) {
    // SAFETY: plain libc calls; each descriptor is owned once.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        assert!(m >= 0);
        assert_eq!(libc::unlockpt(m), 0);
        let s = libc::ioctl(
            m,
            libc::TIOCGPTPEER,
            libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC,
        );
        assert!(s >= 0);
        (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s))
    }
}

#[test]
fn a_pty_slave_becomes_the_controlling_terminal() {
    if !root_or_skip() {
        return;
    }
    let l = Launcher::new();
    let (master, slave) = open_pty();
    let io = nestguard_container_io {
        stdin_fd: slave.as_raw_fd(),
        stdout_fd: slave.as_raw_fd(),
        stderr_fd: slave.as_raw_fd(),
        flags: NESTGUARD_CONTAINER_IO_TTY,
    };
    // /dev/tty opens only for a process with a controlling terminal; the
    // command's process group is the terminal's foreground group.
    let script = "[ -t 0 ] && echo tty; exec 3</dev/tty && echo ctty; \
                  read -r _ _ _ _ pgrp _ _ tpgid _ < /proc/self/stat; \
                  [ \"$pgrp\" = \"$tpgid\" ] && echo fg";
    assert_eq!(l.launch("io-tty", script, &io).0, R::Ok);
    drop(slave);
    let out = String::from_utf8_lossy(&read_to_end(master)).replace('\r', "");
    assert_eq!(out, "tty\nctty\nfg\n");
    l.destroy("io-tty");
}

#[test]
fn bad_container_io_is_refused() {
    if !root_or_skip() {
        return;
    }
    let l = Launcher::new();
    let pipes = Pipes::new();
    // A TTY asked for on pipes; an unknown flag; a negative descriptor.
    let tty = pipes.io(NESTGUARD_CONTAINER_IO_TTY);
    assert_eq!(l.launch("bad-io", "true", &tty).0, R::InvalidArgument);
    assert_eq!(
        l.launch("bad-io", "true", &pipes.io(4)).0,
        R::InvalidArgument
    );
    let negative = nestguard_container_io {
        stdout_fd: -1,
        ..pipes.io(0)
    };
    assert_eq!(l.launch("bad-io", "true", &negative).0, R::InvalidArgument);
}

/// Only descriptors a command can use as its stdio pass: a closed number,
/// an `O_PATH` descriptor and a directory are refused, and so is a TTY
/// launch on a pty's master or on two different slaves. Nothing runs.
#[test]
fn unusable_descriptors_are_refused() {
    if !root_or_skip() {
        return;
    }
    let l = Launcher::new();
    let pipes = Pipes::new();
    let with_stdin = |fd: i32| nestguard_container_io {
        stdin_fd: fd,
        ..pipes.io(0)
    };
    // A number nothing of this process has open.
    let closed = 999;
    // SAFETY: F_GETFD only reads a descriptor's flags.
    assert_eq!(unsafe { libc::fcntl(closed, libc::F_GETFD) }, -1);
    assert_eq!(
        l.launch("io-closed", "true", &with_stdin(closed)).0,
        R::InvalidArgument
    );
    let path = rustix::fs::open(
        l.dir.path(),
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let o_path = with_stdin(path.as_raw_fd());
    assert_eq!(l.launch("io-o-path", "true", &o_path).0, R::InvalidArgument);
    let dir = std::fs::File::open(l.dir.path()).unwrap();
    let directory = with_stdin(dir.as_raw_fd());
    assert_eq!(l.launch("io-dir", "true", &directory).0, R::InvalidArgument);

    let (master, slave) = open_pty();
    let (_other_master, other_slave) = open_pty();
    let tty = |fds: [&OwnedFd; 3]| nestguard_container_io {
        stdin_fd: fds[0].as_raw_fd(),
        stdout_fd: fds[1].as_raw_fd(),
        stderr_fd: fds[2].as_raw_fd(),
        flags: NESTGUARD_CONTAINER_IO_TTY,
    };
    let on_master = tty([&master, &master, &master]);
    assert_eq!(
        l.launch("io-master", "true", &on_master).0,
        R::InvalidArgument
    );
    let two = tty([&slave, &other_slave, &slave]);
    assert_eq!(l.launch("io-two-ptys", "true", &two).0, R::InvalidArgument);
    // The check is not a blanket refusal: the same slave thrice passes.
    let one = tty([&slave, &slave, &slave]);
    assert_eq!(l.launch("io-one-pty", "true", &one).0, R::Ok);
    l.destroy("io-one-pty");
}

/// A debug session's launch (`NESTGUARD_CONTAINER_IO_DEBUG`) is
/// checkpointed as class DEBUG in its `ContainerConfig` (what a restarted
/// agent reads to destroy it); another launch with descriptors has no class.
#[test]
fn a_debug_sessions_class_is_checkpointed() {
    use nestguard::proto::mesos::slave::{ContainerClass, ContainerConfig};
    if !root_or_skip() {
        return;
    }
    let l = Launcher::new();
    for (id, flags, class) in [
        (
            "io-debug",
            NESTGUARD_CONTAINER_IO_DEBUG,
            Some(ContainerClass::Debug as i32),
        ),
        ("io-plain", 0, None),
    ] {
        let pipes = Pipes::new();
        assert_eq!(l.launch(id, "true", &pipes.io(flags)).0, R::Ok);
        let path = l
            .dir
            .path()
            .join("runtime/containers")
            .join(id)
            .join("config");
        let config: ContainerConfig = nestguard::checkpoint::read_message(&path).unwrap();
        assert_eq!(config.container_class, class, "{id}");
        l.destroy(id);
    }
}
