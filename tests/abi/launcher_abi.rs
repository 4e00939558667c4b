//! The launcher's C ABI driven as C would (root, real processes).

use crate::launcher_support;

use launcher_support::*;
use nestguard::abi::bytes::nestguard_bytes;
use nestguard::abi::launcher::nestguard_launcher;
use nestguard::abi::result::nestguard_result as R;
use nestguard::container_id::parse_dotted;
use nestguard::proto::mesos::slave::ContainerRecoverInfo;
use prost::Message;

pub(crate) fn new(dir: &str, flags: u32) -> *mut nestguard_launcher {
    let mut l = std::ptr::null_mut();
    let r = nestguard_launcher::nestguard_launcher_new(
        dir.as_ptr().cast(),
        dir.len(),
        HELPER.as_ptr().cast(),
        HELPER.len(),
        flags,
        &mut l,
    );
    assert_eq!(r, R::Ok);
    l
}

fn launch(
    l: *const nestguard_launcher,
    dotted: &str,
    script: &str,
    sandbox: &str,
) -> (R, Vec<u8>, i32) {
    let id = parse_dotted(dotted).unwrap().encode_to_vec();
    let info = shell(script).encode_to_vec();
    let mut pid = 0;
    let r = nestguard_launcher::nestguard_launcher_launch(
        l,
        id.as_ptr().cast(),
        id.len(),
        info.as_ptr().cast(),
        info.len(),
        std::ptr::null(),
        0,
        sandbox.as_ptr().cast(),
        sandbox.len(),
        &mut pid,
    );
    (r, id, pid)
}

/// `nestguard_launcher_container_config` of `id` (encoded), decoded.
fn container_config(
    l: *const nestguard_launcher,
    id: &[u8],
) -> Result<nestguard::proto::mesos::slave::ContainerConfig, R> {
    let mut out: *mut nestguard_bytes = std::ptr::null_mut();
    let r = nestguard_launcher::nestguard_launcher_container_config(
        l,
        id.as_ptr().cast(),
        id.len(),
        &mut out,
    );
    if r != R::Ok {
        return Err(r);
    }
    Ok(nestguard::proto::mesos::slave::ContainerConfig::decode(&take_bytes(out)[..]).unwrap())
}

/// The contents of a bytes handle a call returned, which is freed.
fn take_bytes(out: *mut nestguard_bytes) -> Vec<u8> {
    // SAFETY: `out` is a live bytes handle the call returned.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            nestguard_bytes::nestguard_bytes_data(out),
            nestguard_bytes::nestguard_bytes_len(out),
        )
    }
    .to_vec();
    nestguard_bytes::nestguard_bytes_free(out);
    bytes
}

#[test]
fn launch_wait_kill_destroy_recover_over_the_abi() {
    if !root_or_skip() {
        return;
    }
    let tmp = tempfile::Builder::new()
        .prefix("nestguard-abi-")
        .tempdir()
        .unwrap();
    let rt = tmp.path().join("runtime");
    let rt = rt.to_str().unwrap();
    let sb = tmp.path().join("runs/exec");
    let l = new(rt, 0);

    let (r, exec, pid) = launch(l, "nestguard-abi", "sleep 100", sb.to_str().unwrap());
    assert_eq!(r, R::Ok);
    assert!(pid > 0);
    // Nested with an empty sandbox: <parent sandbox>/containers/<id>.
    let (r, child, _) = launch(l, "nestguard-abi.c", "echo hi; exit 4", "");
    assert_eq!(r, R::Ok);
    let mut status = 0;
    assert_eq!(
        nestguard_launcher::nestguard_launcher_wait(
            l,
            child.as_ptr().cast(),
            child.len(),
            10_000,
            &mut status
        ),
        R::Ok
    );
    assert_eq!(status, 4 << 8);
    assert_eq!(read(sb.join("containers/c/stdout")), "hi\n");
    // The launcher's checkpointed config, through the ABI (the agent never
    // opens the launcher's files): the sandbox it gave the nested one.
    let config = container_config(l, &child).expect("the child's config");
    assert_eq!(
        std::path::Path::new(&config.directory),
        sb.join("containers/c")
    );
    let unknown = parse_dotted("nestguard-abi.nobody")
        .unwrap()
        .encode_to_vec();
    assert_eq!(
        container_config(l, &unknown).unwrap_err(),
        R::LauncherUnknownContainer
    );
    assert_eq!(
        nestguard_launcher::nestguard_launcher_container_config(
            l,
            child.as_ptr().cast(),
            child.len(),
            std::ptr::null_mut()
        ),
        R::NullParameter
    );

    let mut fd = 0;
    assert_eq!(
        nestguard_launcher::nestguard_launcher_wait_fd(
            l,
            exec.as_ptr().cast(),
            exec.len(),
            &mut fd
        ),
        R::Ok
    );
    assert!(fd >= 0);
    assert_eq!(
        nestguard_launcher::nestguard_launcher_wait(
            l,
            exec.as_ptr().cast(),
            exec.len(),
            0,
            &mut status
        ),
        R::LauncherTimeout
    );
    // Errors have codes and texts.
    let (r, _, _) = launch(l, "nestguard-abi", "true", sb.to_str().unwrap());
    assert_eq!(r, R::LauncherContainerExists);
    let (r, _, _) = launch(l, "nestguard-none.c", "true", "");
    assert_eq!(r, R::LauncherParentNotRunning);
    let bad = b"\xff\xff";
    assert_eq!(
        nestguard_launcher::nestguard_launcher_destroy(
            l,
            bad.as_ptr().cast(),
            bad.len(),
            std::ptr::null_mut()
        ),
        R::ProtobufDecode
    );
    assert_eq!(
        nestguard_launcher::nestguard_launcher_kill(
            std::ptr::null(),
            exec.as_ptr().cast(),
            exec.len(),
            15,
            std::ptr::null_mut()
        ),
        R::NullParameter
    );

    // Restart: free, new, recover with nothing known → the pod is an orphan.
    nestguard_launcher::nestguard_launcher_free(l);
    let l = new(rt, 0);
    let known = ContainerRecoverInfo::default().encode_to_vec();
    let mut out: *mut nestguard_bytes = std::ptr::null_mut();
    assert_eq!(
        nestguard_launcher::nestguard_launcher_recover(
            l,
            known.as_ptr().cast(),
            known.len(),
            &mut out
        ),
        R::Ok
    );
    let reply = ContainerRecoverInfo::decode(&take_bytes(out)[..]).unwrap();
    let orphans: Vec<String> = reply
        .orphan_container_ids
        .iter()
        .map(nestguard::container_id::to_dotted)
        .collect();
    assert_eq!(orphans, ["nestguard-abi", "nestguard-abi.c"]);

    let mut sent = false;
    assert_eq!(
        nestguard_launcher::nestguard_launcher_kill(
            l,
            exec.as_ptr().cast(),
            exec.len(),
            libc::SIGUSR1,
            &mut sent
        ),
        R::Ok
    );
    assert!(sent);
    assert_eq!(
        nestguard_launcher::nestguard_launcher_wait(
            l,
            exec.as_ptr().cast(),
            exec.len(),
            10_000,
            &mut status
        ),
        R::Ok
    );
    assert_eq!(status, libc::SIGUSR1);
    assert_eq!(
        nestguard_launcher::nestguard_launcher_destroy(
            l,
            exec.as_ptr().cast(),
            exec.len(),
            &mut status
        ),
        R::Ok
    );
    assert_eq!(status, libc::SIGUSR1);
    assert_eq!(
        nestguard_launcher::nestguard_launcher_destroy(
            l,
            exec.as_ptr().cast(),
            exec.len(),
            &mut status
        ),
        R::Ok
    );
    assert_eq!(status, -1, "idempotent; unknown now");
    assert!(!tmp.path().join("runtime/containers/nestguard-abi").exists());
    nestguard_launcher::nestguard_launcher_free(l);
    nestguard_launcher::nestguard_launcher_free(std::ptr::null_mut());
}
