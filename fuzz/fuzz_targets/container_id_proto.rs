#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nestguard_fuzz::library::container_id_proto(data));
