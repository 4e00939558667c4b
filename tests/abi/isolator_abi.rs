//! The isolator C ABI, called as the C++ `mesos::slave::Isolator` shim
//! would call it.

use std::ptr::{null, null_mut};

use prost::Message as _;

use crate::abi_support::{last_error, take};

use nestguard::abi::isolator::*;
use nestguard::abi::result::nestguard_result;
use nestguard::container_id::parse_dotted;
use nestguard::proto::mesos::slave::{ContainerConfig, ContainerLaunchInfo, ContainerRecoverInfo};
use nestguard::proto::mesos::volume::source::sandbox_path::Type as SandboxPathType;
use nestguard::proto::mesos::volume::source::{SandboxPath, Type as SourceType};
use nestguard::proto::mesos::volume::{Mode as VolumeMode, Source};
use nestguard::proto::mesos::{
    CommandInfo, ContainerInfo, Parameter, Parameters, ResourceStatistics, Volume,
};

fn params(pairs: &[(&str, &str)]) -> Vec<u8> {
    Parameters {
        parameter: pairs
            .iter()
            .map(|(k, v)| Parameter {
                key: (*k).into(),
                value: (*v).into(),
            })
            .collect(),
    }
    .encode_to_vec()
}

fn new(pairs: &[(&str, &str)]) -> Result<*mut nestguard_isolator, nestguard_result> {
    let p = params(pairs);
    let mut out = null_mut();
    match nestguard_isolator_new(p.as_ptr(), p.len(), &mut out) {
        nestguard_result::Ok => Ok(out),
        e => Err(e),
    }
}

fn id_bytes(dotted: &str) -> Vec<u8> {
    parse_dotted(dotted).unwrap().encode_to_vec()
}

fn prepare(
    iso: *mut nestguard_isolator,
    dotted: &str,
    config: &ContainerConfig,
) -> Result<Option<ContainerLaunchInfo>, nestguard_result> {
    let id = id_bytes(dotted);
    let c = config.encode_to_vec();
    let mut out = null_mut();
    match nestguard_isolator_prepare(iso, id.as_ptr(), id.len(), c.as_ptr(), c.len(), &mut out) {
        nestguard_result::Ok if out.is_null() => Ok(None),
        nestguard_result::Ok => Ok(Some(
            ContainerLaunchInfo::decode(take(out).as_slice()).unwrap(),
        )),
        e => Err(e),
    }
}

fn config(dir: &std::path::Path) -> ContainerConfig {
    std::fs::create_dir_all(dir).unwrap();
    ContainerConfig {
        directory: dir.to_string_lossy().into_owned(),
        command_info: CommandInfo {
            value: Some("true".into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn prepare_watch_usage_cleanup_through_the_abi() {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-isolator-test-")
        .tempdir()
        .unwrap();
    let iso = new(&[(
        "isolation",
        "namespaces,filesystem/linux,volume/sandbox_path,hardening",
    )])
    .unwrap();

    let exec = dir.path().join("runs/exec");
    let info = prepare(iso, "exec", &config(&exec)).unwrap().unwrap();
    assert!(info.clone_namespaces.contains(&libc::CLONE_NEWNS));
    assert_eq!(info.no_new_privileges, Some(true));

    // An escaping volume: its own code and a message naming the problem.
    let mut bad = config(&exec.join("containers/task"));
    bad.container_info = Some(ContainerInfo {
        volumes: vec![Volume {
            container_path: "v".into(),
            mode: VolumeMode::Rw as i32,
            source: Some(Source {
                r#type: Some(SourceType::SandboxPath as i32),
                sandbox_path: Some(SandboxPath {
                    r#type: Some(SandboxPathType::Parent as i32),
                    path: "../../..".into(),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    });
    assert_eq!(
        prepare(iso, "exec.task", &bad),
        Err(nestguard_result::IsolatorVolumeEscape)
    );
    let text = last_error();
    assert!(
        text.contains("'..' is not allowed") && text.contains("volume/sandbox_path"),
        "{text}"
    );
    let id = id_bytes("exec.task");
    assert_eq!(
        nestguard_isolator_cleanup(iso, id.as_ptr(), id.len()),
        nestguard_result::Ok
    );

    // watch: no isolator here reports limitations; the fd is still pollable.
    let exec_id = id_bytes("exec");
    let mut watch = null_mut();
    assert_eq!(
        nestguard_isolator_watch_new(iso, exec_id.as_ptr(), exec_id.len(), &mut watch),
        nestguard_result::Ok
    );
    assert!(nestguard_isolator_watch_fd(watch) >= 0);
    let mut limitation = null_mut();
    assert_eq!(
        nestguard_isolator_watch_check(watch, &mut limitation),
        nestguard_result::Ok
    );
    assert!(limitation.is_null());
    nestguard_isolator_watch_free(watch);

    let mut stats = null_mut();
    assert_eq!(
        nestguard_isolator_usage(iso, exec_id.as_ptr(), exec_id.len(), &mut stats),
        nestguard_result::Ok
    );
    let stats = ResourceStatistics::decode(take(stats).as_slice()).unwrap();
    assert!(stats.timestamp > 0.0);

    let recover = ContainerRecoverInfo::default().encode_to_vec();
    assert_eq!(
        nestguard_isolator_recover(iso, recover.as_ptr(), recover.len()),
        nestguard_result::Ok
    );
    let unknown = id_bytes("never.seen");
    assert_eq!(
        nestguard_isolator_cleanup(iso, unknown.as_ptr(), unknown.len()),
        nestguard_result::Ok
    );
    assert_eq!(
        nestguard_isolator_cleanup(iso, exec_id.as_ptr(), exec_id.len()),
        nestguard_result::Ok
    );
    nestguard_isolator_free(iso);
}

#[test]
fn bad_arguments_give_codes_and_messages() {
    assert_eq!(
        new(&[("cgroups_pids_max", "-1")]).unwrap_err(),
        nestguard_result::IsolatorParameter
    );
    assert!(last_error().contains("cgroups_pids_max"));
    assert_eq!(
        new(&[("isolation", "gpu/nvidia")]).unwrap_err(),
        nestguard_result::IsolatorParameter
    );
    let mut out = null_mut();
    assert_eq!(
        nestguard_isolator_new(null(), 3, &mut out),
        nestguard_result::NullParameter
    );
    let garbage = [0xffu8, 0xff, 0xff];
    assert_eq!(
        nestguard_isolator_new(garbage.as_ptr(), garbage.len(), &mut out),
        nestguard_result::ProtobufDecode
    );
    let id = id_bytes("exec");
    assert_eq!(
        nestguard_isolator_cleanup(null(), id.as_ptr(), id.len()),
        nestguard_result::NullParameter
    );
    nestguard_isolator_free(null_mut());
    nestguard_isolator_watch_free(null_mut());
    assert_eq!(nestguard_isolator_watch_fd(null()), -1);
}

#[test]
fn cgroups_through_the_abi_as_root() {
    if !rustix::process::geteuid().is_root() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "needs root (CI=true)"
        );
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("nestguard-isolator-test-")
        .tempdir()
        .unwrap();
    let root = format!("nestguard-isolator-test-abi-{}", std::process::id());
    // Removes the test's cgroups (and kills what is in them) even on failure.
    struct Guard(nestguard::isolation::cgroups::Cgroups);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.0.destroy_all();
        }
    }
    let _guard = Guard(
        nestguard::isolation::cgroups::Cgroups::new(nestguard::isolation::cgroups::CgroupsConfig {
            cgroups_root: root.clone().into(),
            ..Default::default()
        })
        .unwrap(),
    );
    let iso = new(&[("isolation", "cgroups,disk/du"), ("cgroups_root", &root)]).unwrap();
    let mut c = config(&dir.path().join("runs/exec"));
    c.resources = vec![nestguard::proto::mesos::Resource {
        name: "mem".into(),
        r#type: nestguard::proto::mesos::value::Type::Scalar as i32,
        scalar: Some(nestguard::proto::mesos::value::Scalar { value: 64.0 }),
        ..Default::default()
    }];
    assert_eq!(prepare(iso, "exec", &c), Ok(None));
    let mut child = std::process::Command::new("sleep")
        .arg("60")
        .spawn()
        .unwrap();
    struct Kill(u32);
    impl Drop for Kill {
        fn drop(&mut self) {
            if let Some(pid) = rustix::process::Pid::from_raw(self.0 as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }
    let _kill = Kill(child.id());
    let id = id_bytes("exec");
    assert_eq!(
        nestguard_isolator_isolate(iso, id.as_ptr(), id.len(), child.id()),
        nestguard_result::Ok
    );
    let mut stats = null_mut();
    assert_eq!(
        nestguard_isolator_usage(iso, id.as_ptr(), id.len(), &mut stats),
        nestguard_result::Ok
    );
    let stats = ResourceStatistics::decode(take(stats).as_slice()).unwrap();
    assert_eq!(stats.processes, Some(1));
    assert_eq!(stats.mem_limit_bytes, Some(64 << 20));
    assert!(stats.disk_used_bytes.is_some());
    // cleanup kills what is left and removes the cgroup.
    assert_eq!(
        nestguard_isolator_cleanup(iso, id.as_ptr(), id.len()),
        nestguard_result::Ok
    );
    assert!(!child.wait().unwrap().success());
    std::mem::forget(_kill);
    assert!(
        !std::path::Path::new("/sys/fs/cgroup/freezer")
            .join(&root)
            .join("exec")
            .exists()
    );
    nestguard_isolator_free(iso);
}
