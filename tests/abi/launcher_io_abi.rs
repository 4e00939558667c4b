//! `nestguard_launcher_launch_with_io` driven as C would (root, real
//! processes): the command gets the caller's pipes, or a pty's slave as its
//! controlling terminal, as fds 0/1/2 and nothing else; the reader sees
//! EOF (the master a hang-up) once the command is gone.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::launcher_support::{HELPER, root_or_skip, shell};
use nestguard::abi::launcher::{
    NESTGUARD_CONTAINER_IO_TTY, nestguard_container_io, nestguard_launcher,
};
use nestguard::abi::result::nestguard_result as R;
use nestguard::container_id::parse_dotted;
use prost::Message;

struct Launcher(*mut nestguard_launcher);

impl Launcher {
    fn new(dir: &str) -> Launcher {
        let mut l = std::ptr::null_mut();
        let r = nestguard_launcher::nestguard_launcher_new(
            dir.as_ptr().cast(),
            dir.len(),
            HELPER.as_ptr().cast(),
            HELPER.len(),
            0,
            &mut l,
        );
        assert_eq!(r, R::Ok);
        Launcher(l)
    }

    fn launch(&self, id: &str, script: &str, sandbox: &str, io: &nestguard_container_io) -> R {
        self.launch_pid(id, script, sandbox, io).0
    }

    /// The result and the supervisor's pid.
    fn launch_pid(
        &self,
        id: &str,
        script: &str,
        sandbox: &str,
        io: &nestguard_container_io,
    ) -> (R, i32) {
        let id = parse_dotted(id).unwrap().encode_to_vec();
        let info = shell(script).encode_to_vec();
        let mut pid = 0;
        let r = nestguard_launcher::nestguard_launcher_launch_with_io(
            self.0,
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
            self.0,
            id.as_ptr().cast(),
            id.len(),
            std::ptr::null_mut(),
        );
        assert_eq!(r, R::Ok);
    }
}

impl Drop for Launcher {
    fn drop(&mut self) {
        nestguard_launcher::nestguard_launcher_free(self.0);
    }
}

/// Reads `from` to its end on a thread, failing after 60 s instead of
/// hanging the run (a copy of the write end left open somewhere).
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

fn pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap()
}

#[test]
fn pipes_become_the_commands_stdio_and_reach_eof() {
    if !root_or_skip() {
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("nestguard-io-")
        .tempdir()
        .unwrap();
    let l = Launcher::new(tmp.path().join("runtime").to_str().unwrap());
    let sandbox = tmp.path().join("runs/io");
    let (stdin_r, stdin_w) = pipe();
    let (stdout_r, stdout_w) = pipe();
    let (stderr_r, stderr_w) = pipe();
    let io = nestguard_container_io {
        stdin_fd: stdin_r.as_raw_fd(),
        stdout_fd: stdout_w.as_raw_fd(),
        stderr_fd: stderr_w.as_raw_fd(),
        flags: 0,
    };
    let script = "cat; echo err >&2; ls /proc/self/fd | tr '\\n' ' '";
    assert_eq!(
        l.launch("io-pipes", script, sandbox.to_str().unwrap(), &io),
        R::Ok
    );
    // The caller's copies go; the container holds its own.
    drop((stdin_r, stdout_w, stderr_w));
    let mut input = std::fs::File::from(stdin_w);
    input.write_all(b"hello\n").unwrap();
    drop(input);
    let out = read_to_end(stdout_r);
    let err = read_to_end(stderr_r);
    assert_eq!(String::from_utf8_lossy(&out), "hello\n0 1 2 3 ");
    assert_eq!(String::from_utf8_lossy(&err), "err\n");
    // Nothing went to the sandbox's logs.
    assert_eq!(std::fs::read(sandbox.join("stdout")).unwrap(), b"");
    l.destroy("io-pipes");
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

/// While the command runs, it holds the three pipes as 0/1/2 and nothing
/// else, and its supervisor (the pid the launch returns) holds none of
/// them: only the command's processes keep the reader from its EOF.
#[test]
fn the_supervisor_keeps_no_copy_and_the_command_only_its_stdio() {
    if !root_or_skip() {
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("nestguard-io-")
        .tempdir()
        .unwrap();
    let l = Launcher::new(tmp.path().join("runtime").to_str().unwrap());
    let sandbox = tmp.path().join("runs/held");
    let (stdin_r, stdin_w) = pipe();
    let (stdout_r, stdout_w) = pipe();
    let (stderr_r, stderr_w) = pipe();
    let io = nestguard_container_io {
        stdin_fd: stdin_r.as_raw_fd(),
        stdout_fd: stdout_w.as_raw_fd(),
        stderr_fd: stderr_w.as_raw_fd(),
        flags: 0,
    };
    let (r, supervisor) = l.launch_pid("io-held", "exec sleep 100", sandbox.to_str().unwrap(), &io);
    assert_eq!(r, R::Ok);
    let links = [
        pipe_link(&stdin_r),
        pipe_link(&stdout_r),
        pipe_link(&stderr_r),
    ];
    drop((stdin_r, stdout_w, stderr_w));
    // The command, once the supervisor has started it.
    let children = format!("/proc/{supervisor}/task/{supervisor}/children");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let command: i32 = loop {
        let text = std::fs::read_to_string(&children).unwrap_or_default();
        if let Some(pid) = text.split_whitespace().next() {
            break pid.parse().unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no command under the supervisor"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    // `exec sleep`: the shell became sleep (its comm changes at exec).
    while std::fs::read_to_string(format!("/proc/{command}/comm")).unwrap_or_default() != "sleep\n"
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the command did not exec sleep"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let held = fds_of(command);
    assert_eq!(
        held,
        vec![
            (0, links[0].clone()),
            (1, links[1].clone()),
            (2, links[2].clone())
        ],
        "the command's descriptors"
    );
    let kept: Vec<_> = fds_of(supervisor)
        .into_iter()
        .filter(|(_, link)| links.contains(link))
        .collect();
    assert!(kept.is_empty(), "the supervisor keeps {kept:?}");
    l.destroy("io-held");
    // Destroyed: every copy is gone, the reader sees EOF.
    assert!(read_to_end(stdout_r).is_empty());
    drop((stdin_w, stderr_r));
}

#[test]
fn a_pty_slave_becomes_the_controlling_terminal() {
    if !root_or_skip() {
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("nestguard-io-")
        .tempdir()
        .unwrap();
    let l = Launcher::new(tmp.path().join("runtime").to_str().unwrap());
    let sandbox = tmp.path().join("runs/tty");
    // SAFETY: plain libc calls; each descriptor is owned once.
    let (master, slave) = unsafe {
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
    };
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
    assert_eq!(
        l.launch("io-tty", script, sandbox.to_str().unwrap(), &io),
        R::Ok
    );
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
    let tmp = tempfile::Builder::new()
        .prefix("nestguard-io-")
        .tempdir()
        .unwrap();
    let l = Launcher::new(tmp.path().join("runtime").to_str().unwrap());
    let sandbox = tmp.path().join("runs/bad");
    let (r, w) = pipe();
    let pipes = |flags| nestguard_container_io {
        stdin_fd: r.as_raw_fd(),
        stdout_fd: w.as_raw_fd(),
        stderr_fd: w.as_raw_fd(),
        flags,
    };
    let sb = sandbox.to_str().unwrap();
    // A TTY asked for on pipes; an unknown flag; a negative descriptor.
    assert_eq!(
        l.launch("bad-io", "true", sb, &pipes(NESTGUARD_CONTAINER_IO_TTY)),
        R::InvalidArgument
    );
    assert_eq!(
        l.launch("bad-io", "true", sb, &pipes(4)),
        R::InvalidArgument
    );
    let mut negative = pipes(0);
    negative.stdout_fd = -1;
    assert_eq!(
        l.launch("bad-io", "true", sb, &negative),
        R::InvalidArgument
    );
}
