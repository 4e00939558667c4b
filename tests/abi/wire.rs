//! Wire compatibility with Mesos: field numbers, package names, tolerance of
//! absent required fields, v1 ↔ unversioned conversion, checkpoint framing.

use nestguard::proto::mesos::{self, authorization, slave};
use prost::Message;
use prost_reflect::ReflectMessage;

/// Decodes hand-written bytes (field numbers from Mesos' protos) and checks
/// the fields land where Mesos puts them.
#[test]
fn field_numbers_match_mesos() {
    // authorization.Request { subject(1) { value(1) "ops" }, action(2) = 19, object(3) { container_id(10) { value(1) "c" } } }
    let bytes = [
        0x0a, 0x05, 0x0a, 0x03, b'o', b'p', b's', // subject
        0x10, 19, // action LAUNCH_NESTED_CONTAINER
        0x1a, 0x05, 0x52, 0x03, 0x0a, 0x01, b'c', // object.container_id
    ];
    let req = authorization::Request::decode(&bytes[..]).expect("decodes");
    assert_eq!(req.subject.unwrap().value.as_deref(), Some("ops"));
    assert_eq!(
        req.action,
        Some(authorization::Action::LaunchNestedContainer as i32)
    );
    assert_eq!(req.object.unwrap().container_id.unwrap().value, "c");

    // ContainerLaunchInfo: enter_namespaces = 9, clone_namespaces = 4, no_new_privileges = 23.
    let info = slave::ContainerLaunchInfo {
        enter_namespaces: vec![0x4000_0000],
        clone_namespaces: vec![0x2000_0000],
        no_new_privileges: Some(true),
        ..Default::default()
    };
    let enc = info.encode_to_vec();
    assert_eq!(enc[0], 0x20, "clone_namespaces is field 4 (varint)");
    assert!(
        enc.windows(2).any(|w| w == [0x48, 0x80]),
        "enter_namespaces is field 9"
    );
    assert!(
        enc.ends_with(&[0xb8, 0x01, 0x01]),
        "no_new_privileges is field 23"
    );

    // ACLs: launch_nested_containers_as_user = 23, remove_nested_containers = 33.
    let acls = mesos::AcLs {
        launch_nested_containers_as_user: vec![Default::default()],
        remove_nested_containers: vec![Default::default()],
        ..Default::default()
    };
    let enc = acls.encode_to_vec();
    assert!(
        enc.starts_with(&[0xba, 0x01]),
        "field 23, length-delimited: {enc:02x?}"
    );
    assert!(
        enc.windows(2).any(|w| w == [0x8a, 0x02]),
        "field 33: {enc:02x?}"
    );
}

#[test]
fn package_names_match_mesos() {
    assert_eq!(
        authorization::Request::default().descriptor().full_name(),
        "mesos.authorization.Request"
    );
    assert_eq!(
        slave::ContainerConfig::default().descriptor().full_name(),
        "mesos.slave.ContainerConfig"
    );
    assert_eq!(
        mesos::internal::AuthenticateMessage::default()
            .descriptor()
            .full_name(),
        "mesos.internal.AuthenticateMessage"
    );
    assert_eq!(
        mesos::v1::agent::Call::default().descriptor().full_name(),
        "mesos.v1.agent.Call"
    );
    assert_eq!(
        mesos::v1::ContainerId::default().descriptor().full_name(),
        "mesos.v1.ContainerID"
    );
    assert_eq!(
        mesos::AcLs::default().descriptor().full_name(),
        "mesos.ACLs"
    );
}

#[test]
fn absent_required_fields_decode() {
    // FrameworkInfo with only `user` (Mesos' authorization tests omit `name`).
    let bytes = [0x0a, 0x03, b'b', b'a', b'r'];
    let fw =
        mesos::FrameworkInfo::decode(&bytes[..]).expect("missing required `name` is tolerated");
    assert_eq!(fw.user, "bar");
    assert_eq!(fw.name, "");
    // ExecutorInfo with no executor_id at all.
    let ex = mesos::ExecutorInfo::decode(&[][..]).expect("empty ExecutorInfo decodes");
    assert!(ex.command.is_none());
}

#[test]
fn v1_and_unversioned_convert_losslessly() {
    let call = mesos::v1::agent::Call {
        r#type: Some(mesos::v1::agent::call::Type::LaunchContainer as i32),
        launch_container: Some(mesos::v1::agent::call::LaunchContainer {
            container_id: mesos::v1::ContainerId {
                value: "child".into(),
                parent: Some(Box::new(mesos::v1::ContainerId {
                    value: "root".into(),
                    parent: None,
                })),
            },
            command: Some(mesos::v1::CommandInfo {
                value: Some("exit 0".into()),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let lc = call.launch_container.as_ref().unwrap();
    let id: mesos::ContainerId = nestguard::proto::convert(&lc.container_id).unwrap();
    assert_eq!(nestguard::container_id::to_dotted(&id), "root.child");
    let back: mesos::v1::ContainerId = nestguard::proto::convert(&id).unwrap();
    assert_eq!(back, lc.container_id);
}

#[test]
fn agent_api_json_in_mesos_convention() {
    // The example from Mesos' operator API docs.
    let text = r#"{"type":"LAUNCH_NESTED_CONTAINER","launch_nested_container":{"container_id":{"parent":{"value":"p"},"value":"c"},"command":{"environment":{"variables":[{"name":"ENV_VAR_KEY","type":"VALUE","value":"env_var_value"}]},"shell":true,"value":"exit 0"}}}"#;
    let call: mesos::v1::agent::Call = nestguard::json::from_json(text).expect("parses");
    let launch = call
        .launch_nested_container
        .expect("launch_nested_container");
    assert_eq!(launch.container_id.parent.unwrap().value, "p");
    let resp = mesos::v1::agent::Response {
        r#type: Some(mesos::v1::agent::response::Type::WaitNestedContainer as i32),
        wait_nested_container: Some(mesos::v1::agent::response::WaitNestedContainer {
            exit_status: Some(0),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        nestguard::json::to_json(&resp),
        r#"{"type":"WAIT_NESTED_CONTAINER","wait_nested_container":{"exit_status":0}}"#
    );
}

#[test]
fn checkpoint_is_length_prefixed_native_endian() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("launch_info");
    let info = slave::ContainerLaunchInfo {
        working_directory: Some("/sandbox".into()),
        ..Default::default()
    };
    nestguard::checkpoint::write_message(&path, &info, nestguard::checkpoint::Outlives::HostCrash)
        .unwrap();
    let raw = std::fs::read(&path).unwrap();
    let len = u32::from_ne_bytes(raw[..4].try_into().unwrap()) as usize;
    assert_eq!(len, raw.len() - 4);
    assert_eq!(slave::ContainerLaunchInfo::decode(&raw[4..]).unwrap(), info);
    let back: slave::ContainerLaunchInfo = nestguard::checkpoint::read_message(&path).unwrap();
    assert_eq!(back, info);
}
