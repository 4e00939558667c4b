//! Consistency of the Mesos module shim (`ffi/mesos/`) with the library,
//! checked without Mesos: the example `--modules` manifests parse as Mesos'
//! `Modules` message and name the three modules the C++ defines, with
//! parameters the modules accept; the ACL file of `acls/modules.json` loads
//! strictly; and the isolator declarations the shim carries until the header
//! is regenerated match functions the library exports.
//!
//! Compiling the C++ against real Mesos headers needs the Mesos sources and
//! is done by `ffi/mesos/check-compile.sh`, outside this suite.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nestguard::abi::authorizer::nestguard_authorizer_new_from_file;
use nestguard::abi::authorizer::{nestguard_authorizer, nestguard_authorizer_free};
use nestguard::abi::nestguard_result;
use nestguard::isolation::isolator::IsolatorParams;
use nestguard::proto::mesos::{Modules, Parameter, Parameters};

/// The module names and the C++ kind each is defined as.
const MODULES: [(&str, &str); 3] = [
    ("io_nestguard_Authorizer", "Authorizer"),
    ("io_nestguard_Isolator", "Isolator"),
    ("io_nestguard_CredentialHook", "Hook"),
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn manifest(relative: &str) -> Modules {
    let path = repo().join(relative);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    nestguard::json::from_json::<Modules>(&text)
        .unwrap_or_else(|e| panic!("{relative} is not a Mesos Modules manifest: {e}"))
}

/// Module name → its parameters, for the single library of a manifest.
fn modules_of(relative: &str) -> (String, BTreeMap<String, Vec<Parameter>>) {
    let modules = manifest(relative);
    assert_eq!(modules.libraries.len(), 1, "{relative}: one library");
    let library = &modules.libraries[0];
    let file = library
        .file
        .clone()
        .unwrap_or_else(|| panic!("{relative}: the library names a file"));
    let by_name: BTreeMap<String, Vec<Parameter>> = library
        .modules
        .iter()
        .map(|m| (m.name.clone().unwrap_or_default(), m.parameters.clone()))
        .collect();
    let expected: Vec<&str> = {
        let mut v: Vec<&str> = MODULES.iter().map(|(n, _)| *n).collect();
        v.sort_unstable();
        v
    };
    assert_eq!(
        by_name.keys().map(String::as_str).collect::<Vec<_>>(),
        expected,
        "{relative}: the three nestguard modules, once each"
    );
    (file, by_name)
}

fn keys(parameters: &[Parameter]) -> Vec<&str> {
    parameters.iter().map(|p| p.key.as_str()).collect()
}

fn value<'a>(parameters: &'a [Parameter], key: &str) -> &'a str {
    parameters
        .iter()
        .find(|p| p.key == key)
        .map(|p| p.value.as_str())
        .unwrap_or_else(|| panic!("parameter '{key}' missing"))
}

fn shim_sources() -> String {
    let dir = repo().join("ffi/mesos/src");
    let mut text = String::new();
    for entry in std::fs::read_dir(&dir).expect("read ffi/mesos/src") {
        let path = entry.expect("dir entry").path();
        if path.extension().is_some_and(|e| e == "cpp") {
            text.push_str(&std::fs::read_to_string(&path).expect("read source"));
        }
    }
    text
}

#[test]
fn the_shim_defines_each_module_with_its_kind() {
    let sources = shim_sources();
    for (name, kind) in MODULES {
        let definition = format!("mesos::modules::Module<{kind}> {name}(");
        assert!(
            sources.contains(&definition),
            "ffi/mesos/src defines `{definition}...`"
        );
    }
}

#[test]
fn mesos_manifest_names_the_shim_library_and_accepted_parameters() {
    let (file, modules) = modules_of("ffi/mesos/modules.json");
    assert!(
        file.ends_with("/libnestguard_mesos.so"),
        "the Mesos manifest loads the shim, got '{file}'"
    );
    assert_eq!(
        keys(&modules["io_nestguard_Authorizer"]),
        ["acls", "strict"]
    );
    assert_eq!(
        keys(&modules["io_nestguard_CredentialHook"]),
        ["http_credentials"]
    );
    // The isolator's parameters go to the library as they are: its parser
    // must accept them.
    let parameters = Parameters {
        parameter: modules["io_nestguard_Isolator"].clone(),
    };
    let parsed = IsolatorParams::from_proto(&parameters);
    assert!(
        parsed.is_ok(),
        "ffi/mesos/modules.json isolator parameters refused: {:?}",
        parsed.err()
    );
}

#[test]
fn agent_manifest_loads_its_acl_file_strictly() {
    let (file, modules) = modules_of("acls/modules.json");
    assert_eq!(file, "libnestguard.so");
    let authorizer = &modules["io_nestguard_Authorizer"];
    assert_eq!(keys(authorizer), ["acls", "strict"]);
    assert_eq!(value(authorizer, "strict"), "true");

    let acls: PathBuf = repo().join(value(authorizer, "acls"));
    let path = acls.to_str().expect("UTF-8 path");
    let mut handle: *mut nestguard_authorizer = std::ptr::null_mut();
    let rc =
        nestguard_authorizer_new_from_file(path.as_ptr().cast(), path.len(), true, &mut handle);
    assert_eq!(
        rc,
        nestguard_result::Ok,
        "{} loads strictly",
        acls.display()
    );
    assert!(!handle.is_null());
    nestguard_authorizer_free(handle);
}
