//! The command Mesos' `docker/runtime` isolator gives a container that runs
//! its image's own command, as the isolator must know it to seal it.
//!
//! # Why
//!
//! For a container whose `CommandInfo` has no `value` (and is not a shell
//! command), `docker/runtime` (Mesos 1.11,
//! `isolators/docker/runtime.cpp`, `getLaunchCommand`) makes the command the
//! image's `Entrypoint` and `Cmd`. Mesos merges the isolators' launch infos
//! with `MergeFrom`, built-in isolators first: nestguard's command `value`
//! wins, but the arguments are appended, so the final command's arguments
//! are `docker/runtime`'s followed by the stage's. The isolator computes
//! `docker/runtime`'s command the same way, runs it after the stage's `--`,
//! and seals the whole argument list ([`super::seal`]); the wrapper finds
//! the stage's three at the place the seal names and drops the arguments
//! before them. A harvested plan and seal placed anywhere else never
//! verify.
//!
//! The rule, for a container that is not a command task (`shell` false,
//! no `value`; `arguments` are the user's):
//! - an `Entrypoint`: it is the executable and `argv` begins with it; the
//!   user's arguments follow, or, when there are none, the `Cmd`;
//! - else a `Cmd`: `Cmd[0]` is the executable and `argv[0]`; the user's
//!   arguments follow, or, when there are none, the rest of the `Cmd`;
//! - else `docker/runtime` fails the launch itself.

use crate::proto::mesos::CommandInfo;
use crate::proto::mesos::slave::ContainerConfig;

/// `docker/runtime`'s command for `config`, or `None` when it leaves the
/// container's own command as it is (a shell command, a `value`, no docker
/// manifest, or a manifest without an executable, which Mesos refuses).
pub fn of(config: &ContainerConfig) -> Option<CommandInfo> {
    let command = &config.command_info;
    if command.shell() || command.value.is_some() {
        return None;
    }
    let image = config.docker.as_ref()?.manifest.as_ref()?.config.as_ref()?;
    let user_args = &command.arguments;
    let (value, mut arguments) = if let Some(first) = image.entrypoint.first() {
        let mut args = image.entrypoint.clone();
        args.extend(user_args.iter().cloned());
        if user_args.is_empty() {
            args.extend(image.cmd.iter().cloned());
        }
        (first.clone(), args)
    } else if let Some(first) = image.cmd.first() {
        let mut args = vec![first.clone()];
        args.extend(user_args.iter().cloned());
        (first.clone(), args)
    } else {
        return None;
    };
    if image.entrypoint.is_empty() && user_args.is_empty() {
        arguments.extend(image.cmd.iter().skip(1).cloned());
    }
    Some(CommandInfo {
        value: Some(value),
        shell: Some(false),
        arguments,
        ..command.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::mesos::slave::{
        DockerImageManifest, container_config, docker_image_manifest,
    };

    fn config(entrypoint: &[&str], cmd: &[&str], user: &[&str]) -> ContainerConfig {
        let s = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        ContainerConfig {
            command_info: CommandInfo {
                shell: Some(false),
                arguments: s(user),
                ..CommandInfo::default()
            },
            docker: Some(container_config::Docker {
                manifest: Some(DockerImageManifest {
                    config: Some(docker_image_manifest::Config {
                        entrypoint: s(entrypoint),
                        cmd: s(cmd),
                    }),
                }),
            }),
            ..ContainerConfig::default()
        }
    }

    fn run(c: &ContainerConfig) -> Option<(String, Vec<String>)> {
        of(c).map(|c| (c.value.unwrap(), c.arguments))
    }

    #[test]
    fn follows_docker_runtimes_table() {
        let v = |a: &[&str]| a.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        // Entrypoint and Cmd; user arguments replace the Cmd.
        assert_eq!(
            run(&config(&["/probe", "-v"], &["a", "b"], &[])),
            Some(("/probe".into(), v(&["/probe", "-v", "a", "b"])))
        );
        assert_eq!(
            run(&config(&["/probe"], &["a"], &["x"])),
            Some(("/probe".into(), v(&["/probe", "x"])))
        );
        // Cmd only: Cmd[0] runs; user arguments replace the rest.
        assert_eq!(
            run(&config(&[], &["/bin/sleep", "60"], &[])),
            Some(("/bin/sleep".into(), v(&["/bin/sleep", "60"])))
        );
        assert_eq!(
            run(&config(&[], &["/bin/sleep", "60"], &["5"])),
            Some(("/bin/sleep".into(), v(&["/bin/sleep", "5"])))
        );
        // Neither: Mesos fails the launch itself.
        assert_eq!(run(&config(&[], &[], &[])), None);
        // A value or a shell command: docker/runtime leaves it alone.
        let mut c = config(&["/probe"], &[], &[]);
        c.command_info.value = Some("/bin/true".into());
        assert_eq!(run(&c), None);
        c.command_info.shell = Some(true);
        assert_eq!(run(&c), None);
        // No manifest (no docker image): nothing to merge.
        let mut c = config(&["/probe"], &[], &[]);
        c.docker = None;
        assert_eq!(run(&c), None);
    }
}
