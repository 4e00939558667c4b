//! The subject of `tests/isolation/posix_launcher.rs`: what nestguard's
//! `mesos-containerizer` wrapper does under Mesos' posix launcher, in a
//! single-threaded process as the wrapper is (namespaces are per thread,
//! and a relay must be the only thread to catch every signal), then
//! `sh -c <script>` where the wrapper `exec`s Mesos' helper.
//!
//! `posix_launcher_subject '<PosixLaunch JSON>' '<script>'`; exits 99 when
//! `enter` refuses, with its reason on stderr.

use std::os::unix::process::CommandExt;

use nestguard::isolation::exec_stage::PosixLaunch;
use nestguard::isolation::exec_stage::posix_launcher;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, launch, script] = args.as_slice() else {
        eprintln!("usage: posix_launcher_subject <launch JSON> <script>");
        std::process::exit(2);
    };
    let launch: PosixLaunch = match serde_json::from_str(launch) {
        Ok(launch) => launch,
        Err(e) => {
            eprintln!("launch JSON: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = posix_launcher::enter(&launch) {
        eprintln!("enter: {e}");
        std::process::exit(99);
    }
    let e = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .exec();
    eprintln!("exec sh: {e}");
    std::process::exit(98);
}
