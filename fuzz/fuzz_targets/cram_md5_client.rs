#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nestguard_fuzz::library::cram_md5_client(data));
