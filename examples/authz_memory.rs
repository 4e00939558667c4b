//! The authorizer's memory per ACL entry (issue 17 item 5): bytes a loaded
//! authorizer keeps, counted by a global allocator, at 1,000, 10,000 and
//! 100,000 entries. The authorizer is made as the agent and the Mesos shim
//! make it, through the C ABI from an ACL file (`nestguard_authorizer_new_from_file`).
//!
//! Entry i is `{"principals": {"values": ["p<i>"]}, "users": {"values":
//! ["u<i>"]}}` in `kill_nested_containers` (the shape of `benches/authz.rs`).
//! "Kept" is the live heap after the load minus before it (the file's text
//! is read and dropped inside the load); "peak" is the most the load had
//! live at once above the start.
//!
//! What "kept" holds: the parsed document (kept for explanations, lint and
//! roles; its values as boxed strings) and the compiled lists (every
//! distinct value stored once, buckets of 4-byte offsets into them). At
//! 100,000 entries it was 508.7 bytes per entry before issue 29 and is 138.7
//! now (target: at most 200).
//!
//! Run: `cargo run --release --example authz_memory` (or `scripts/soak.sh memory`).
//!
//! The counting allocator is hand-rolled: a `GlobalAlloc` wrapper over
//! `System` with three atomics is less than a crate's worth of code, and a
//! measuring program should add nothing it does not need.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use nestguard::abi::authorizer::{
    nestguard_authorizer, nestguard_authorizer_free, nestguard_authorizer_new_from_file,
};
use nestguard::abi::result::nestguard_result;

/// `System` with a count of live bytes and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded to `System` with the same arguments; the
// counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is System's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract is System's.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract is System's.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(live, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn acls(n: usize) -> String {
    let entries: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"principals":{{"values":["p{i}"]}},"users":{{"values":["u{i}"]}}}}"#))
        .collect();
    format!(
        r#"{{"permissive":false,"kill_nested_containers":[{}]}}"#,
        entries.join(",")
    )
}

fn main() -> std::process::ExitCode {
    let dir = match tempfile::Builder::new()
        .prefix("nestguard-authz-memory-")
        .tempdir()
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("authz_memory: a temporary directory: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    println!("entries | file bytes | kept bytes | kept bytes per entry | peak during load");
    for n in [1_000, 10_000, 100_000] {
        let path = dir.path().join(format!("acls-{n}.json"));
        let text = acls(n);
        if let Err(e) = std::fs::write(&path, &text) {
            eprintln!("authz_memory: {}: {e}", path.display());
            return std::process::ExitCode::from(2);
        }
        let file_bytes = text.len();
        drop(text);
        let path = path.to_string_lossy().into_owned();
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let mut auth: *mut nestguard_authorizer = std::ptr::null_mut();
        let rc =
            nestguard_authorizer_new_from_file(path.as_ptr().cast(), path.len(), true, &mut auth);
        if rc != nestguard_result::Ok {
            eprintln!("authz_memory: loading {path}: {rc:?}");
            return std::process::ExitCode::from(2);
        }
        let kept = LIVE.load(Ordering::Relaxed).saturating_sub(before);
        let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
        nestguard_authorizer_free(auth);
        println!(
            "{n:>7} | {file_bytes:>10} | {kept:>10} | {:>20.1} | {peak:>16}",
            kept as f64 / n as f64
        );
    }
    std::process::ExitCode::SUCCESS
}
