//! `nestguard command-executor`: a stand-in for Mesos' command executor
//! (`<launcher_dir>/mesos-executor`, `src/launcher/executor.cpp`), which the
//! PyPI libmesos binary used by `ffi/mesos/real-mesos/` does not contain.
//! It lets a real agent run command tasks, so that the checks there can show
//! the exec stage confining them.
//!
//! What it keeps of Mesos' command executor: its flags, and it exits on an
//! unknown one (so an isolator argument the `mesos-containerizer` wrapper
//! did not take out ends the launch, as with Mesos' binary); one task per
//! executor ("Attempted to run multiple tasks using a \"command\"
//! executor"); TASK_STARTING, TASK_RUNNING, then TASK_FINISHED, TASK_FAILED
//! or TASK_KILLED with Mesos' message ("Command exited with status 3",
//! "Command terminated with signal Killed"); the task's environment (the
//! executor's, then `--task_environment`, then the task's own); KILL as
//! SIGTERM, then SIGKILL after the grace period, to the task's process
//! group; re-subscription after an agent restart; exit once the terminal
//! update is acknowledged (60 s at most, Mesos' fail-safe).
//!
//! What it leaves out: the task starts as a child of this process, not
//! through `mesos-containerizer launch` (the executor already runs as the
//! task's user, and images are refused under Mesos' launcher anyway), and
//! there are no health or readiness checks.

use std::collections::BTreeMap;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nestguard::proto::mesos::v1;
use nestguard::proto::mesos::v1::executor::{Event, event};

use super::api::{ExecutorApi, ExecutorEnv};
use crate::cli::out::errln;

/// Mesos' command executor flags (`src/launcher/executor.cpp`, `Flags`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CommandExecutorFlags {
    #[arg(long = "launcher_dir")]
    launcher_dir: Option<String>,
    #[arg(long = "rootfs")]
    rootfs: Option<String>,
    #[arg(long = "sandbox_directory")]
    sandbox_directory: Option<String>,
    #[arg(long = "working_directory")]
    working_directory: Option<String>,
    #[arg(long = "user")]
    user: Option<String>,
    #[arg(long = "task_command")]
    task_command: Option<String>,
    /// JSON of an `Environment`.
    #[arg(long = "task_environment")]
    task_environment: Option<String>,
    #[arg(long = "effective_capabilities")]
    effective_capabilities: Option<String>,
    #[arg(long = "bounding_capabilities")]
    bounding_capabilities: Option<String>,
    #[arg(long = "task_launch_info")]
    task_launch_info: Option<String>,
    #[arg(long = "tty_slave_path")]
    tty_slave_path: Option<String>,
    #[arg(long = "task_supplementary_groups")]
    task_supplementary_groups: Option<String>,
}

#[derive(Default)]
struct State {
    task: Option<v1::TaskInfo>,
    /// The task's process (its process group has the same id).
    pid: Option<u32>,
    killed: bool,
    /// The terminal update was sent.
    terminal: Option<Instant>,
    unacknowledged: Vec<v1::TaskStatus>,
}

struct CommandExecutor {
    api: ExecutorApi,
    flags: CommandExecutorFlags,
    state: Mutex<State>,
}

/// Runs the executor (inside the command task's executor container).
pub fn run(flags: CommandExecutorFlags) -> anyhow::Result<ExitCode> {
    if flags.rootfs.is_some() {
        errln!("command executor: tasks with an image are not supported by this stand-in");
        return Ok(ExitCode::FAILURE);
    }
    let executor = Arc::new(CommandExecutor {
        api: ExecutorApi::new(ExecutorEnv::from_env()?),
        flags,
        state: Mutex::new(State::default()),
    });
    let mut disconnected_since: Option<Instant> = None;
    while !executor.done() {
        let (updates, tasks) = {
            let s = executor.lock();
            let acked = s.unacknowledged.is_empty();
            let tasks = s
                .task
                .iter()
                .filter(|_| !acked)
                .cloned()
                .collect::<Vec<_>>();
            (s.unacknowledged.clone(), tasks)
        };
        match executor.api.subscribe(&updates, &tasks) {
            Ok(mut reader) => {
                disconnected_since = None;
                while let Ok(Some(event)) = reader.next_event() {
                    executor.handle(event);
                    if executor.done() {
                        break;
                    }
                }
            }
            Err(e) => errln!("command executor: {e:#}"),
        }
        let since = *disconnected_since.get_or_insert_with(Instant::now);
        if since.elapsed() > executor.api.env().recovery_timeout {
            errln!("command executor: the agent stayed unreachable; shutting down");
            executor.kill(Duration::ZERO);
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(ExitCode::SUCCESS)
}

impl CommandExecutor {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The terminal update was acknowledged, or sent 60 s ago.
    fn done(&self) -> bool {
        let s = self.lock();
        s.terminal
            .is_some_and(|at| s.unacknowledged.is_empty() || at.elapsed() > Duration::from_secs(60))
    }

    fn handle(self: &Arc<Self>, event: Event) {
        match event.r#type() {
            event::Type::Launch => {
                if let Some(task) = event.launch.map(|l| l.task) {
                    self.launch(task);
                }
            }
            event::Type::Kill => {
                let grace = event
                    .kill
                    .and_then(|k| k.kill_policy)
                    .and_then(|p| p.grace_period)
                    .map(|d| Duration::from_nanos(u64::try_from(d.nanoseconds).unwrap_or(0)));
                self.kill(grace.unwrap_or(self.api.env().shutdown_grace));
            }
            event::Type::Shutdown => self.kill(self.api.env().shutdown_grace),
            event::Type::Acknowledged => {
                if let Some(ack) = event.acknowledged {
                    self.lock()
                        .unacknowledged
                        .retain(|s| s.uuid.as_deref() != Some(&ack.uuid[..]));
                }
            }
            event::Type::Error => {
                let message = event.error.map(|e| e.message).unwrap_or_default();
                errln!("command executor: the agent reported an error: {message:?}");
            }
            _ => {}
        }
    }

    fn launch(self: &Arc<Self>, task: v1::TaskInfo) {
        let id = task.task_id.value.clone();
        if self.lock().task.is_some() {
            let text = "Attempted to run multiple tasks using a \"command\" executor";
            self.update(&id, v1::TaskState::TaskFailed, Some(text.to_owned()));
            return;
        }
        self.lock().task = Some(task.clone());
        self.update(&id, v1::TaskState::TaskStarting, None);
        let child = self.command(&task).and_then(|mut c| Ok(c.spawn()?));
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                let text = format!("Failed to launch the task: {e:#}");
                self.update(&id, v1::TaskState::TaskFailed, Some(text));
                self.lock().terminal = Some(Instant::now());
                return;
            }
        };
        self.lock().pid = Some(child.id());
        self.update(&id, v1::TaskState::TaskRunning, None);
        let me = Arc::clone(self);
        std::thread::spawn(move || {
            let status = child.wait();
            let killed = me.lock().killed;
            let (state, message) = match status {
                Ok(status) => exit_state(status, killed),
                Err(e) => (
                    v1::TaskState::TaskFailed,
                    format!("Failed to get exit status for Command: {e}"),
                ),
            };
            me.lock().pid = None;
            me.update(&id, state, Some(message));
            me.lock().terminal = Some(Instant::now());
        });
    }

    /// The task's process, as Mesos' command executor sets it up.
    fn command(&self, task: &v1::TaskInfo) -> anyhow::Result<std::process::Command> {
        let info = match &self.flags.task_command {
            Some(json) => nestguard::json::from_json::<v1::CommandInfo>(json)?,
            None => task
                .command
                .clone()
                .ok_or_else(|| anyhow::anyhow!("the task has no command"))?,
        };
        let value = info
            .value
            .clone()
            .ok_or_else(|| anyhow::anyhow!("the task's command has no value"))?;
        let mut command = if info.shell() {
            let mut c = std::process::Command::new("/bin/sh");
            c.arg0("sh").arg("-c").arg(value);
            c
        } else {
            let mut c = std::process::Command::new(&value);
            if let Some((first, rest)) = info.arguments.split_first() {
                c.arg0(first).args(rest);
            }
            c
        };
        command.env_remove("MESOS_EXECUTOR_AUTHENTICATION_TOKEN");
        for (name, value) in self.task_environment(&info)? {
            command.env(name, value);
        }
        if let Some(dir) = &self.flags.working_directory {
            command.current_dir(dir);
        }
        command.process_group(0);
        Ok(command)
    }

    /// `--task_environment`, then the task's own (secrets skipped, as the
    /// agent resolves them elsewhere).
    fn task_environment(&self, info: &v1::CommandInfo) -> anyhow::Result<BTreeMap<String, String>> {
        let mut env = BTreeMap::new();
        let mut add = |e: &v1::Environment| {
            for v in &e.variables {
                if v.r#type() != v1::environment::variable::Type::Secret {
                    env.insert(v.name.clone(), v.value.clone().unwrap_or_default());
                }
            }
        };
        if let Some(json) = &self.flags.task_environment {
            add(&nestguard::json::from_json::<v1::Environment>(json)?);
        }
        if let Some(e) = &info.environment {
            add(e);
        }
        Ok(env)
    }

    /// SIGTERM to the task's process group, SIGKILL after `grace`.
    fn kill(&self, grace: Duration) {
        let pid = {
            let mut s = self.lock();
            s.killed = true;
            s.pid
        };
        let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) else {
            return;
        };
        let group = nix::unistd::Pid::from_raw(-pid);
        let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && self.lock().pid.is_some() {
            std::thread::sleep(Duration::from_millis(50));
        }
        if self.lock().pid.is_some() {
            let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
        }
    }

    fn update(&self, task: &str, state: v1::TaskState, message: Option<String>) {
        let status = self.api.status(task, state, message, None);
        self.lock().unacknowledged.push(status.clone());
        if let Err(e) = self.api.update(&status) {
            errln!("command executor: UPDATE kept for the next subscription: {e:#}");
        }
    }
}

/// Mesos' state and message for the task's end (`WSTRINGIFY`).
fn exit_state(status: std::process::ExitStatus, killed: bool) -> (v1::TaskState, String) {
    let how = match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(signal)) => format!("terminated with signal {}", signal_name(signal)),
        (None, None) => "ended".to_owned(),
    };
    let state = if killed {
        v1::TaskState::TaskKilled
    } else if status.success() {
        v1::TaskState::TaskFinished
    } else {
        v1::TaskState::TaskFailed
    };
    (state, format!("Command {how}"))
}

/// glibc's `strsignal(3)` text, as Mesos prints it (the harness has no
/// `unsafe`, and this text never changes).
fn signal_name(signal: i32) -> String {
    const NAMES: [&str; 31] = [
        "Hangup",
        "Interrupt",
        "Quit",
        "Illegal instruction",
        "Trace/breakpoint trap",
        "Aborted",
        "Bus error",
        "Floating point exception",
        "Killed",
        "User defined signal 1",
        "Segmentation fault",
        "User defined signal 2",
        "Broken pipe",
        "Alarm clock",
        "Terminated",
        "Stack fault",
        "Child exited",
        "Continued",
        "Stopped (signal)",
        "Stopped",
        "Stopped (tty input)",
        "Stopped (tty output)",
        "Urgent I/O condition",
        "CPU time limit exceeded",
        "File size limit exceeded",
        "Virtual timer expired",
        "Profiling timer expired",
        "Window changed",
        "I/O possible",
        "Power failure",
        "Bad system call",
    ];
    usize::try_from(signal)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| format!("Unknown signal {signal}"), |s| (*s).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        flags: CommandExecutorFlags,
    }

    #[test]
    fn ends_read_as_mesos_command_executor_words_them() {
        let exited = std::process::ExitStatus::from_raw(3 << 8);
        assert_eq!(
            exit_state(exited, false),
            (
                v1::TaskState::TaskFailed,
                "Command exited with status 3".into()
            )
        );
        let signaled = std::process::ExitStatus::from_raw(9);
        assert_eq!(
            exit_state(signaled, false),
            (
                v1::TaskState::TaskFailed,
                "Command terminated with signal Killed".into()
            )
        );
        assert_eq!(exit_state(signaled, true).0, v1::TaskState::TaskKilled);
        let ok = std::process::ExitStatus::from_raw(0);
        assert_eq!(exit_state(ok, false).0, v1::TaskState::TaskFinished);
    }

    #[test]
    fn unknown_flags_are_refused_as_mesos_refuses_them() {
        let ok = Cli::try_parse_from(["x", "--launcher_dir=/l", "--task_environment={}"]);
        assert_eq!(ok.unwrap().flags.launcher_dir.as_deref(), Some("/l"));
        assert!(
            Cli::try_parse_from(["x", "--launcher_dir=/l", "--nestguard_exec_plan=e30="]).is_err()
        );
    }
}
