//! The simple calls and what this agent has none of.

use nestguard::proto::mesos::v1::agent::{call, response};

use super::{ACLS, Wire, api, ok, typed};
use crate::agent_support::{INTRUDER, OPS, TestAgent, require_root};

#[test]
fn simple_calls_in_json_and_protobuf() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    for wire in [Wire::Json, Wire::Protobuf] {
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetHealth));
        assert_eq!(r.r#type, Some(response::Type::GetHealth as i32));
        assert!(r.get_health.unwrap().healthy);

        let r = ok(&agent, OPS, wire, &typed(call::Type::GetVersion));
        assert_eq!(
            r.get_version.unwrap().version_info.version,
            env!("CARGO_PKG_VERSION")
        );

        let r = ok(&agent, OPS, wire, &typed(call::Type::GetFlags));
        let flags = r.get_flags.unwrap().flags;
        let work_dir = agent.dir.path().join("work");
        assert!(
            flags
                .iter()
                .any(|f| f.name == "work_dir"
                    && f.value.as_deref() == Some(work_dir.to_str().unwrap())),
            "{flags:?}"
        );
        // VIEW_FLAGS refused: Mesos' Forbidden().
        assert_eq!(
            api(&agent, INTRUDER, wire, &typed(call::Type::GetFlags)),
            (403, b"403 Forbidden.".to_vec())
        );

        let mut metrics = typed(call::Type::GetMetrics);
        metrics.get_metrics = Some(call::GetMetrics { timeout: None });
        let r = ok(&agent, OPS, wire, &metrics);
        let names: Vec<String> = r
            .get_metrics
            .unwrap()
            .metrics
            .into_iter()
            .map(|m| m.name)
            .collect();
        for name in [
            "slave/uptime_secs",
            "slave/executors_running",
            "slave/containers_running",
            "nestguard/authz/allowed",
            "nestguard/authz/denied",
            "nestguard/isolation/launches",
        ] {
            assert!(names.iter().any(|n| n == name), "{names:?}");
        }

        let r = ok(&agent, OPS, wire, &typed(call::Type::GetAgent));
        let info = r.get_agent.unwrap().agent_info.unwrap();
        assert!(!info.id.unwrap().value.is_empty());
        assert_eq!(
            format!("http://{}:{}", info.hostname, info.port.unwrap()),
            agent.address
        );

        // SET_LOGGING_LEVEL: SET_LOG_LEVEL, then the level holds.
        let mut set = typed(call::Type::SetLoggingLevel);
        set.set_logging_level = Some(call::SetLoggingLevel {
            level: 1,
            duration: nestguard::proto::mesos::v1::DurationInfo {
                nanoseconds: 60_000_000_000,
            },
        });
        assert_eq!(api(&agent, INTRUDER, wire, &set).0, 403);
        assert_eq!(api(&agent, OPS, wire, &set).0, 200);
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetLoggingLevel));
        assert_eq!(r.get_logging_level.unwrap().level, 1);
        set.set_logging_level.as_mut().unwrap().level = 0;
        assert_eq!(api(&agent, OPS, wire, &set).0, 200);
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetLoggingLevel));
        assert_eq!(r.get_logging_level.unwrap().level, 0);

        // What this agent has none of, answered as Mesos 1.11 does.
        assert_eq!(
            api(&agent, OPS, wire, &typed(call::Type::Unknown)),
            (501, b"501 Not Implemented.".to_vec())
        );
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetOperations));
        assert_eq!(r.r#type, Some(response::Type::GetOperations as i32));
        let r = ok(&agent, OPS, wire, &typed(call::Type::GetResourceProviders));
        assert_eq!(r.r#type, Some(response::Type::GetResourceProviders as i32));
        assert_eq!(
            api(&agent, OPS, wire, &typed(call::Type::PruneImages)).0,
            200
        );
        assert_eq!(
            api(&agent, INTRUDER, wire, &typed(call::Type::PruneImages)).0,
            403
        );
        let mut remove = typed(call::Type::RemoveResourceProviderConfig);
        remove.remove_resource_provider_config = Some(call::RemoveResourceProviderConfig {
            r#type: "org.apache.mesos.rp.local.storage".into(),
            name: "test".into(),
        });
        assert_eq!(
            api(&agent, OPS, wire, &remove),
            (
                500,
                b"Missing required flag --resource_provider_config_dir".to_vec()
            )
        );
        assert_eq!(api(&agent, INTRUDER, wire, &remove).0, 403);
        let info = nestguard::proto::mesos::v1::ResourceProviderInfo {
            id: None,
            r#type: "org.apache.mesos.rp.local.storage".into(),
            name: "test".into(),
        };
        let mut add = typed(call::Type::AddResourceProviderConfig);
        add.add_resource_provider_config =
            Some(call::AddResourceProviderConfig { info: info.clone() });
        let mut update = typed(call::Type::UpdateResourceProviderConfig);
        update.update_resource_provider_config = Some(call::UpdateResourceProviderConfig { info });
        for c in [&add, &update] {
            assert_eq!(
                api(&agent, OPS, wire, c),
                (
                    500,
                    b"Missing required flag --resource_provider_config_dir".to_vec()
                )
            );
            assert_eq!(api(&agent, INTRUDER, wire, c).0, 403);
        }
        let mut unknown = add.clone();
        unknown
            .add_resource_provider_config
            .as_mut()
            .unwrap()
            .info
            .r#type = "x".into();
        assert_eq!(
            api(&agent, OPS, wire, &unknown),
            (400, b"Failed to validate resource provider config with type 'x' and name 'test': Unknown local resource provider type 'x'".to_vec())
        );
        let mut gone = typed(call::Type::MarkResourceProviderGone);
        gone.mark_resource_provider_gone = Some(call::MarkResourceProviderGone {
            resource_provider_id: nestguard::proto::mesos::v1::ResourceProviderId {
                value: "rp".into(),
            },
        });
        assert_eq!(
            api(&agent, OPS, wire, &gone),
            (
                500,
                b"Could not mark resource provider 'rp' as gone: Agent has not registered yet"
                    .to_vec()
            )
        );
        assert_eq!(api(&agent, INTRUDER, wire, &gone).0, 403);
    }
}

/// SET_LOGGING_LEVEL's one timer: the level returns to 0 when its duration
/// ends, a later call replaces an earlier one's deadline, and a duration of
/// centuries is accepted (capped) without harming the agent.
#[test]
fn logging_level_timer_reverts_and_is_replaced() {
    if !require_root() {
        return;
    }
    let agent = TestAgent::start_with_acls(ACLS);
    let set = |level: u32, nanoseconds: i64| {
        let mut c = typed(call::Type::SetLoggingLevel);
        c.set_logging_level = Some(call::SetLoggingLevel {
            level,
            duration: nestguard::proto::mesos::v1::DurationInfo { nanoseconds },
        });
        assert_eq!(api(&agent, OPS, Wire::Json, &c).0, 200);
    };
    let level = || {
        ok(&agent, OPS, Wire::Json, &typed(call::Type::GetLoggingLevel))
            .get_logging_level
            .unwrap()
            .level
    };
    let second = 1_000_000_000;
    set(1, second);
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!(level(), 0, "the level outlived its duration");
    // The second call's deadline replaces the first's.
    set(1, second);
    set(2, 60 * second);
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert_eq!(level(), 2);
    set(1, i64::MAX);
    assert_eq!(level(), 1);
    set(0, second);
    assert_eq!(level(), 0);
}
