#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nestguard_fuzz::library::acl_json(data));
