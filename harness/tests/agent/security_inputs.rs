//! Hostile input files (issue 11, hole 7): ACL, credential, key and
//! manifest sources that are FIFOs, devices or huge files are refused at
//! once with a clear error and bounded memory, in the library, through the
//! C ABI and in the agent; credential files with duplicate principals or a
//! principal containing `:` are refused, naming the file and the place,
//! never the secret.

use crate::agent_support::{agent_command, refused_start};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nestguard::authz::{Authorizer, Source};
use nestguard::credentials::{LoadOptions, load_credential, load_credentials};
use nestguard::isolation::isolator::{Composite, IsolatorParams};

const HANG: Duration = Duration::from_secs(10);

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
}

/// Runs `f` on a thread; fails the test if it takes longer than [`HANG`].
/// A reader stuck opening `fifo` is released (a writer opens and closes
/// it) so no thread is left behind.
fn quickly<T: Send + 'static>(fifo: Option<&Path>, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG) {
        Ok(v) => {
            worker.join().unwrap();
            v
        }
        Err(_) => {
            if let Some(fifo) = fifo {
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .custom_flags_nonblock()
                    .open(fifo);
            }
            panic!("loading hung for more than {HANG:?}");
        }
    }
}

trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}

impl NonBlock for std::fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::custom_flags(self, libc::O_NONBLOCK)
    }
}

fn private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// A sparse file of `len` bytes (costs no disk).
fn sparse(path: &Path, len: u64) {
    let f = std::fs::File::create(path).unwrap();
    f.set_len(len).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn acl_error(value: String, extra: Option<&str>) -> String {
    let mut params = vec![("acls".to_owned(), value)];
    if let Some(limit) = extra {
        params.push(("max_file_size".to_owned(), limit.to_owned()));
    }
    match Authorizer::from_parameters(params.iter().map(|(k, v)| (k.as_str(), v.as_str())), true) {
        Ok(_) => panic!("ACLs loaded"),
        Err(e) => e.to_string(),
    }
}

fn acl_prefix(path: &Path) -> String {
    format!(
        "Contents of 'acls' parameter could not be parsed into a valid ACLs object: {}: cannot read ACLs: ",
        path.display()
    )
}

#[test]
fn acl_sources_that_never_end_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("acls.fifo");
    mkfifo(&fifo);
    let value = format!("file://{}", fifo.display());
    let err = quickly(Some(&fifo), move || acl_error(value, None));
    assert_eq!(
        err,
        format!(
            "{}'{}' is a FIFO, expected a regular file",
            acl_prefix(&fifo),
            fifo.display()
        )
    );
    let started = Instant::now();
    let err = quickly(None, || acl_error("/dev/zero".into(), None));
    assert_eq!(
        err,
        format!(
            "{}'/dev/zero' is a character device, expected a regular file",
            acl_prefix(Path::new("/dev/zero"))
        )
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    let err = acl_error(dir.path().display().to_string(), None);
    assert!(
        err.ends_with("is a directory, expected a regular file"),
        "{err}"
    );
}

#[test]
fn acl_files_over_the_limit_are_refused_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    // 17 MiB of holes: over the 16 MiB default.
    let huge = dir.path().join("huge.json");
    sparse(&huge, 17 * 1024 * 1024);
    let err = quickly(None, {
        let huge = huge.clone();
        move || acl_error(huge.display().to_string(), None)
    });
    assert_eq!(
        err,
        format!(
            "{}'{}' is larger than the limit of 16777216 bytes (module parameter 'max_file_size')",
            acl_prefix(&huge),
            huge.display()
        )
    );
    // The module parameter lowers (or raises) the limit; reloads keep it.
    let acls = dir.path().join("acls.json");
    let text = format!(
        "{{\"permissive\": false, \"run_tasks\": [{}]}}",
        vec![r#"{"principals": {"values": ["a"]}, "users": {"type": "ANY"}}"#; 40].join(",")
    );
    assert!(text.len() > 1024 && text.len() < 4096);
    std::fs::write(&acls, &text).unwrap();
    let err = acl_error(acls.display().to_string(), Some("1024"));
    assert!(
        err.ends_with("is larger than the limit of 1024 bytes (module parameter 'max_file_size')"),
        "{err}"
    );
    let params = [("acls", acls.to_str().unwrap()), ("max_file_size", "4096")];
    let auth = Authorizer::from_parameters(params, true).unwrap();
    sparse(&acls, 8192);
    let err = auth.reload().unwrap_err().to_string();
    assert!(err.contains("larger than the limit of 4096 bytes"), "{err}");
    let err = acl_error(acls.display().to_string(), Some("0"));
    assert_eq!(
        err,
        "'max_file_size' must be a positive number of bytes, not '0'"
    );
    // The plain constructor has the default limit too.
    let err = Authorizer::new(Source::File(huge), Default::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("larger than the limit of 16777216 bytes"),
        "{err}"
    );
}

#[test]
fn acl_fifo_through_the_c_abi() {
    use nestguard::abi::authorizer::{
        nestguard_authorizer, nestguard_authorizer_free, nestguard_authorizer_new_from_file,
        nestguard_authorizer_new_from_file_limited,
    };
    use nestguard::abi::nestguard_result;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("acls.fifo");
    mkfifo(&fifo);
    let path = fifo.display().to_string();
    let rc = quickly(Some(&fifo), move || {
        let mut handle: *mut nestguard_authorizer = std::ptr::null_mut();
        let rc =
            nestguard_authorizer_new_from_file(path.as_ptr().cast(), path.len(), true, &mut handle);
        nestguard_authorizer_free(handle);
        (rc, handle.is_null())
    });
    assert_eq!(rc, (nestguard_result::Io, true));
    let huge = dir.path().join("huge.json");
    sparse(&huge, 2048);
    let path = huge.display().to_string();
    let mut handle: *mut nestguard_authorizer = std::ptr::null_mut();
    let rc = nestguard_authorizer_new_from_file_limited(
        path.as_ptr().cast(),
        path.len(),
        true,
        1024,
        &mut handle,
    );
    assert_eq!(rc, nestguard_result::Io);
    assert!(handle.is_null());
}

#[test]
fn credential_and_key_sources_that_never_end_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("credentials.fifo");
    mkfifo(&fifo);
    let err = quickly(Some(&fifo), {
        let fifo = fifo.clone();
        move || {
            load_credentials(&fifo, &LoadOptions::default())
                .unwrap_err()
                .to_string()
        }
    });
    assert_eq!(
        err,
        format!(
            "failed to read credentials file: '{}' is a FIFO, expected a regular file",
            fifo.display()
        )
    );
    let err = quickly(None, || {
        load_credential(Path::new("/dev/zero"), &LoadOptions::default())
            .unwrap_err()
            .to_string()
    });
    assert_eq!(
        err,
        "failed to read credentials file: '/dev/zero' is a character device, expected a regular file"
    );
    let huge = dir.path().join("huge.json");
    sparse(&huge, 17 * 1024 * 1024);
    let err = load_credentials(&huge, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with(
            "is larger than the limit of 16777216 bytes (module parameter 'max_file_size')"
        ),
        "{err}"
    );
    // The isolator's key and credentials files, with its `max_file_size`.
    let key = dir.path().join("jwt.key");
    private(&key, &"k".repeat(100));
    let params = |key_path: &Path, limit: &str| {
        IsolatorParams::parse([
            ("isolation", "environment/credentials"),
            ("credentials_jwt_key", key_path.to_str().unwrap()),
            ("max_file_size", limit),
        ])
    };
    let err = Composite::from_parameters(&params(&key, "64").unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("is larger than the limit of 64 bytes"),
        "{err}"
    );
    assert!(Composite::from_parameters(&params(&key, "128").unwrap()).is_ok());
    let err = quickly(Some(&fifo), {
        let fifo = fifo.clone();
        move || {
            Composite::from_parameters(&params(&fifo, "128").unwrap())
                .unwrap_err()
                .to_string()
        }
    });
    assert!(err.contains("is a FIFO, expected a regular file"), "{err}");
    let err = params(&key, "lots").unwrap_err().to_string();
    assert!(err.contains("max_file_size"), "{err}");
}

#[test]
fn duplicate_principals_and_colons_are_refused_without_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        private(&path, text);
        path
    };
    let origin = |p: &PathBuf| p.display().to_string();

    let json = file(
        "dup.json",
        r#"{"credentials":[{"principal":"a","secret":"first-secret"},{"principal":"a","secret":"second-secret"}]}"#,
    );
    let err = load_credentials(&json, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "credentials file '{}': duplicate principal 'a' at $.credentials[1] (first at $.credentials[0])",
            origin(&json)
        )
    );
    let text = file("dup.txt", "a first-secret\nb other\na second-secret\n");
    let err = load_credentials(&text, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "credentials file '{}': duplicate principal 'a' at line 3 (first at line 1)",
            origin(&text)
        )
    );

    let expected = |path: &PathBuf, at: &str| {
        format!(
            "credentials file '{}': at {at}: expected a principal without ':' (HTTP Basic splits \
             on the first ':', so it could never log in)",
            origin(path)
        )
    };
    let json = file(
        "colon.json",
        r#"{"credentials":[{"principal":"ok","secret":"s1"},{"principal":"ops:admin","secret":"colon-secret"}]}"#,
    );
    let err = load_credentials(&json, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(err, expected(&json, "$.credentials[1].principal"));
    let text = file("colon.txt", "ok s1\nops:admin colon-secret\n");
    let err = load_credentials(&text, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(err, expected(&text, "line 2"));
    let single = file(
        "single.json",
        r#"{"principal":"a:b","secret":"colon-secret"}"#,
    );
    let err = load_credential(&single, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(err, expected(&single, "$.principal"));
    let single = file("single.txt", "a:b colon-secret\n");
    let err = load_credential(&single, &LoadOptions::default())
        .unwrap_err()
        .to_string();
    assert_eq!(err, expected(&single, "line 1"));
    for secret in ["first-secret", "second-secret", "colon-secret"] {
        assert!(!err.contains(secret));
    }
}

/// The agent's own readers: `--http_credentials`, `--modules` and the
/// authorizer's `acls` parameter naming FIFOs or `/dev/zero` stop the
/// agent at once with an error naming the file.
#[test]
fn the_agent_refuses_endless_inputs_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("input.fifo");
    mkfifo(&fifo);
    let library = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .join("libnestguard.so");
    let manifest = |acls: &Path| {
        let path = dir.path().join("modules.json");
        let m = serde_json::json!({"libraries": [{"file": library, "modules": [
            {"name": "io_nestguard_Authorizer", "parameters": [{"key": "acls", "value": acls}]}]}]});
        std::fs::write(&path, m.to_string()).unwrap();
        path
    };
    let run = |args: Vec<String>| -> String {
        refused_start(
            agent_command()
                .arg(format!("--work_dir={}", dir.path().join("work").display()))
                .arg("--port=0")
                .arg("--launcher=posix")
                .args(args),
            HANG,
            "the agent hung on its input",
        )
    };
    let fifo_text = format!("'{}' is a FIFO, expected a regular file", fifo.display());
    let err = run(vec![format!("--http_credentials={}", fifo.display())]);
    assert!(err.contains(&fifo_text), "{err}");
    let err = run(vec![format!("--modules={}", fifo.display())]);
    assert!(err.contains(&fifo_text), "{err}");
    let err = run(vec![
        format!("--modules={}", manifest(&fifo).display()),
        "--authorizer=io_nestguard_Authorizer".into(),
    ]);
    assert!(err.contains(&fifo_text), "{err}");
    let err = run(vec![
        format!("--modules={}", manifest(Path::new("/dev/zero")).display()),
        "--authorizer=io_nestguard_Authorizer".into(),
    ]);
    assert!(
        err.contains("'/dev/zero' is a character device, expected a regular file"),
        "{err}"
    );
}
