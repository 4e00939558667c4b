//! Our v1 protos against Mesos 1.11's: every message, field and enum value
//! we declare in `mesos/v1/` exists in Mesos' v1 protos under the same full
//! name, with the same number, label and type. The reference is
//! `tests/fixtures/mesos-1.11-v1-names.txt`, extracted from Mesos' own files by
//! `proto/tools/mesos-v1-names.sh`; the lines below are built the same way
//! from the descriptors compiled into the library.

use std::collections::{BTreeMap, BTreeSet};

use nestguard::proto::DESCRIPTOR_POOL;
use prost_reflect::{Cardinality, FieldDescriptor, Kind};

const MESOS: &str = include_str!("../fixtures/mesos-1.11-v1-names.txt");

/// The v1 files we compile; Mesos' fixture covers the same three.
const V1_FILES: [&str; 3] = [
    "mesos/v1/mesos.proto",
    "mesos/v1/agent/agent.proto",
    "mesos/v1/executor/executor.proto",
];

/// One declaration: its full name (the key) and the line the fixture has.
type Lines = BTreeMap<String, String>;

fn mesos_lines() -> Lines {
    MESOS
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| (key(l).to_owned(), l.to_owned()))
        .collect()
}

/// The full name a fixture line declares: `message X` / `enum X` → X,
/// `X.f = 1 ...` → X.f.
fn key(line: &str) -> &str {
    let line = line
        .strip_prefix("message ")
        .or_else(|| line.strip_prefix("enum "))
        .unwrap_or(line);
    line.split(" = ").next().unwrap_or(line)
}

fn field_type(field: &FieldDescriptor) -> String {
    match field.kind() {
        Kind::Message(m) => m.full_name().to_owned(),
        Kind::Enum(e) => e.full_name().to_owned(),
        scalar => format!("{scalar:?}").to_ascii_lowercase(),
    }
}

/// Our declarations in `files`, as fixture lines.
fn our_lines(files: &[&str]) -> Lines {
    let ours = |file: &str| files.contains(&file);
    let mut lines = Lines::new();
    let mut add = |key: String, line: String| {
        assert!(lines.insert(key.clone(), line).is_none(), "{key} twice");
    };
    for message in DESCRIPTOR_POOL.all_messages() {
        if !ours(message.parent_file().name()) {
            continue;
        }
        let name = message.full_name();
        add(name.to_owned(), format!("message {name}"));
        for field in message.fields() {
            let label = match field.cardinality() {
                Cardinality::Optional => "optional",
                Cardinality::Required => "required",
                Cardinality::Repeated => "repeated",
            };
            let key = format!("{name}.{}", field.name());
            let line = format!("{key} = {} {label} {}", field.number(), field_type(&field));
            add(key, line);
        }
    }
    for e in DESCRIPTOR_POOL.all_enums() {
        if !ours(e.parent_file().name()) {
            continue;
        }
        let name = e.full_name();
        add(name.to_owned(), format!("enum {name}"));
        for value in e.values() {
            let key = format!("{name}.{}", value.name());
            add(key.clone(), format!("{key} = {}", value.number()));
        }
    }
    lines
}

/// The container of a declaration: `a.b.C.f` → `a.b.C`.
fn parent(key: &str) -> &str {
    key.rsplit_once('.').map_or("", |(p, _)| p)
}

/// What Mesos declares under `parent` with the same number as `line` (a
/// field or enum value of another name), to say what a wrong name should be.
fn same_number<'a>(mesos: &'a Lines, key: &str, line: &str) -> Vec<&'a str> {
    let number = |l: &str| l.split(" = ").nth(1)?.split(' ').next().map(str::to_owned);
    let Some(ours) = number(line) else {
        return Vec::new();
    };
    mesos
        .iter()
        .filter(|(k, l)| parent(k) == parent(key) && number(l).as_deref() == Some(ours.as_str()))
        .map(|(_, l)| l.as_str())
        .collect()
}

#[test]
fn v1_protos_use_mesos_names_and_numbers() {
    let files: BTreeSet<String> = DESCRIPTOR_POOL
        .files()
        .map(|f| f.name().to_owned())
        .filter(|n| n.starts_with("mesos/v1/"))
        .collect();
    assert_eq!(
        files,
        V1_FILES.into_iter().map(str::to_owned).collect(),
        "a new v1 file needs Mesos' names in the fixture (proto/tools/mesos-v1-names.sh)"
    );
    let mesos = mesos_lines();
    assert!(
        mesos.len() > 1000,
        "the fixture is Mesos' full v1 set: {}",
        mesos.len()
    );
    let ours = our_lines(&V1_FILES);
    assert!(
        ours.contains_key("mesos.v1.ContainerID.value"),
        "the walk found our v1 descriptors"
    );

    let wrong: Vec<String> = ours
        .iter()
        .filter(|(key, line)| mesos.get(*key) != Some(*line))
        .map(|(key, line)| match mesos.get(key) {
            Some(theirs) => format!("{line}\n    Mesos: {theirs}"),
            None => format!(
                "{line}\n    Mesos has no {key}; same number there: {:?}",
                same_number(&mesos, key, line)
            ),
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} declarations differ from Mesos 1.11's v1 protos:\n{}",
        wrong.len(),
        wrong.join("\n")
    );

    // What we leave out, by the nearest container we do declare: whole
    // messages and enums Mesos has and we do not (their members are not
    // listed again), then fields and enum values of ones we declare.
    let left_out: Vec<&str> = mesos
        .keys()
        .filter(|k| !ours.contains_key(*k))
        .filter(|k| ours.contains_key(parent(k)) || !mesos.contains_key(parent(k)))
        .map(String::as_str)
        .collect();
    let (whole, members): (Vec<&str>, Vec<&str>) = left_out
        .iter()
        .partition(|k| mesos[**k].starts_with("message ") || mesos[**k].starts_with("enum "));
    println!(
        "Mesos 1.11 v1 declarations we do not transcribe ({} messages/enums, {} fields/values):",
        whole.len(),
        members.len()
    );
    for k in whole.iter().chain(&members) {
        println!("  {}", mesos[*k]);
    }
    // What the agent's JSON must spell as Mesos does: nothing renamed away.
    for name in [
        "mesos.v1.AgentID",
        "mesos.v1.AgentInfo",
        "mesos.v1.Task.agent_id",
        "mesos.v1.TaskInfo.agent_id",
        "mesos.v1.TaskStatus.agent_id",
        "mesos.v1.TaskStatus.Source.SOURCE_AGENT",
        "mesos.v1.TaskStatus.Reason.REASON_AGENT_RESTARTED",
        "mesos.v1.agent.Response.GetAgent.agent_info",
        "mesos.v1.executor.Event.Subscribed.agent_info",
    ] {
        assert!(ours.contains_key(name), "{name} is not declared");
    }
}

/// `mesos.v1` and `mesos` are two transcriptions of one set of messages
/// (`nestguard::proto::convert` re-encodes between them): the same messages,
/// fields, numbers, labels and types, under v1's names on one side and the
/// unversioned names on the other. The unversioned `CapabilityInfo` also has
/// the capabilities Mesos 1.11 does not know (the isolator grants them).
/// The unversioned names stay: the shim and the C ABI speak that package.
#[test]
fn v1_and_unversioned_mesos_proto_declare_the_same_fields() {
    let unversioned_names = |line: &str| {
        [
            ("mesos.v1.", "mesos."),
            ("AgentID", "SlaveID"),
            ("AgentInfo", "SlaveInfo"),
            (".agent_id =", ".slave_id ="),
            ("REASON_AGENT_", "REASON_SLAVE_"),
            ("SOURCE_AGENT", "SOURCE_SLAVE"),
        ]
        .into_iter()
        .fold(line.to_owned(), |l, (v1, old)| l.replace(v1, old))
    };
    let v1: BTreeSet<String> = our_lines(&["mesos/v1/mesos.proto"])
        .values()
        .map(|l| unversioned_names(l))
        .collect();
    let unversioned: BTreeSet<String> = our_lines(&["mesos/mesos.proto"]).into_values().collect();
    let only_v1: Vec<&String> = v1.difference(&unversioned).collect();
    let only_unversioned: Vec<&String> = unversioned.difference(&v1).collect();
    assert!(
        only_v1.is_empty(),
        "only in mesos/v1/mesos.proto: {only_v1:#?}"
    );
    assert_eq!(
        only_unversioned,
        [
            "mesos.CapabilityInfo.Capability.BPF = 1039",
            "mesos.CapabilityInfo.Capability.CHECKPOINT_RESTORE = 1040",
            "mesos.CapabilityInfo.Capability.PERFMON = 1038",
        ],
        "only in mesos/mesos.proto"
    );
}
