//! Credential files: formats, located errors, duplicates, permissions.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nestguard::credentials::file::{self, FileError, Format, LoadOptions};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/credentials");

/// Copies a fixture into a private temp dir with the given mode (git does
/// not keep 0600).
fn fixture(name: &str, mode: u32) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-creds-")
        .tempdir()
        .unwrap();
    let path = dir.path().join(name);
    std::fs::copy(Path::new(FIXTURES).join(name), &path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    (dir, path)
}

fn write(text: &str, mode: u32) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("nestguard-creds-")
        .tempdir()
        .unwrap();
    let path = dir.path().join("creds");
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    (dir, path)
}

fn strict() -> LoadOptions {
    LoadOptions::default()
}

#[test]
fn json_list_loads() {
    let (_d, p) = fixture("credentials.json", 0o600);
    let store = file::load_credentials(&p, &strict()).unwrap();
    assert_eq!(
        store.principals().collect::<Vec<_>>(),
        ["nestguard-agent", "nestguard-framework"]
    );
    assert!(
        store
            .secret("nestguard-agent")
            .unwrap()
            .ct_eq(b"fixture-secret-agent")
    );
    assert!(!format!("{store:?}").contains("fixture-secret"));
}

#[test]
fn single_json_loads() {
    let (_d, p) = fixture("credential.json", 0o400);
    let c = file::load_credential(&p, &strict()).unwrap();
    assert_eq!(c.principal, "nestguard-agent");
    assert!(c.secret.ct_eq(b"fixture-secret-agent"));
    assert!(!format!("{c:?}").contains("fixture-secret"));
}

#[test]
fn legacy_text_loads_with_mesos_tokenization() {
    let (_d, p) = fixture("legacy.txt", 0o600);
    let store = file::load_credentials(&p, &strict()).unwrap();
    assert_eq!(store.len(), 2);
    assert!(
        store
            .secret("nestguard-framework")
            .unwrap()
            .ct_eq(b"fixture-secret-framework")
    );
    let (list, format) = file::parse_credentials("x y\n", "inline").unwrap();
    assert_eq!((list.len(), format), (1, Format::LegacyText));
}

#[test]
fn legacy_bad_line_names_file_and_line() {
    let (_d, p) = fixture("legacy-bad-line.txt", 0o600);
    let err = file::load_credentials(&p, &strict()).unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(
            err,
            FileError::LegacyFormat {
                line: 2,
                fields: 3,
                ..
            }
        ),
        "{text}"
    );
    assert!(
        text.contains(&p.display().to_string()) && text.contains("line 2"),
        "{text}"
    );
    assert!(!text.contains("fixture-secret"), "{text}");
}

#[test]
fn tab_is_not_a_separator() {
    let err = file::parse_credentials("a\tb\n", "inline").unwrap_err();
    assert!(
        matches!(
            err,
            FileError::LegacyFormat {
                line: 1,
                fields: 1,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn single_legacy_with_two_lines_is_refused() {
    let err = file::parse_credential("a s1\n\nb s2\n", "inline").unwrap_err();
    assert!(
        matches!(err, FileError::MoreThanOne { line: 3, .. }),
        "{err}"
    );
    let (c, f) = file::parse_credential("\na s1\n", "inline").unwrap();
    assert_eq!((c.principal.as_str(), f), ("a", Format::LegacyText));
}

#[test]
fn duplicate_principal_is_an_error_with_both_places() {
    let (_d, p) = fixture("duplicate.json", 0o600);
    let err = file::load_credentials(&p, &strict()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, FileError::Duplicate { .. }), "{text}");
    assert!(
        text.contains("'p'")
            && text.contains("$.credentials[2]")
            && text.contains("$.credentials[0]"),
        "{text}"
    );
    assert!(!text.contains("fixture-secret"), "{text}");
    let err = file::parse_credentials("a x\nb y\na z\n", "inline").unwrap_err();
    assert!(
        err.to_string().contains("line 3") && err.to_string().contains("line 1"),
        "{err}"
    );
}

#[test]
fn json_shape_errors_name_the_path_without_values() {
    let (_d, p) = fixture("bad-secret-type.json", 0o600);
    let err = file::load_credentials(&p, &strict())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("$.credentials[1].secret") && err.contains("a string"),
        "{err}"
    );
    assert!(!err.contains("42"), "{err}");

    for (text, path) in [
        (r#"{"credentials": "fixture-secret-x"}"#, "$.credentials"),
        (r#"{"credential": []}"#, "$.credential"),
        (
            r#"{"credentials": [{"principal": "a"}]}"#,
            "$.credentials[0].secret",
        ),
        (
            r#"{"credentials": [{"principal": "a", "secret": "fixture-secret-y", "role": "r"}]}"#,
            "$.credentials[0].role",
        ),
        (
            r#"{"credentials": [{"principal": "", "secret": "fixture-secret-z"}]}"#,
            "$.credentials[0].principal",
        ),
        (r#"["fixture-secret-w"]"#, "$"),
        (
            r#"{"credentials": [{"principal": "a", "secret": ""}]}"#,
            "$.credentials[0].secret",
        ),
    ] {
        let err = file::parse_credentials(text, "inline")
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("at {path}:")), "{text} -> {err}");
        assert!(!err.contains("fixture-secret"), "{err}");
    }
}

#[test]
fn empty_secret_is_refused() {
    let err = file::parse_credential(r#"{"principal": "a", "secret": ""}"#, "inline").unwrap_err();
    assert!(
        err.to_string()
            .contains("at $.secret: expected a non-empty string"),
        "{err}"
    );
}

#[test]
fn json_syntax_error_has_position_not_content() {
    let err = file::parse_credentials(
        "{\"credentials\": [\n {\"principal\": \"a\", \"secret\": \"fixture-secret-q\" \n",
        "inline",
    )
    .unwrap_err();
    let text = err.to_string();
    assert!(
        matches!(err, FileError::JsonSyntax { line: 3, .. }),
        "{text}"
    );
    assert!(!text.contains("fixture-secret"), "{text}");
}

#[test]
fn empty_file_is_refused() {
    let (_d, p) = write("", 0o600);
    let err = file::load_credentials(&p, &strict()).unwrap_err();
    assert!(matches!(err, FileError::Empty { .. }), "{err}");
    assert!(err.to_string().contains("at least one credential"));
    let (_d2, p2) = write(r#"{"credentials": []}"#, 0o600);
    assert!(matches!(
        file::load_credentials(&p2, &strict()),
        Err(FileError::Empty { .. })
    ));
}

#[test]
fn open_permissions_are_refused_unless_allowed() {
    for mode in [0o644, 0o640, 0o620, 0o602, 0o660] {
        let (_d, p) = fixture("credentials.json", mode);
        let err = file::load_credentials(&p, &strict()).unwrap_err();
        assert!(
            matches!(err, FileError::TooOpen { .. }),
            "mode {mode:o}: {err}"
        );
        assert!(err.to_string().contains(&format!("{mode:04o}")));
        let ok = file::load_credentials(
            &p,
            &LoadOptions {
                allow_open_permissions: true,
                ..LoadOptions::default()
            },
        );
        assert_eq!(ok.unwrap().len(), 2);
    }
    // Execute bits alone are not a disclosure.
    let (_d, p) = fixture("credentials.json", 0o711);
    assert!(file::load_credentials(&p, &strict()).is_ok());
}

#[test]
fn missing_file_names_the_file() {
    let err =
        file::load_credentials(Path::new("/nonexistent/nestguard-creds"), &strict()).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/nestguard-creds"));
}
