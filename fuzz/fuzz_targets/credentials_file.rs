#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nestguard_fuzz::library::credentials_file(data));
