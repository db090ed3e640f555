#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::fuzz::channel_part(data));
