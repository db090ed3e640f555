#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| common::fuzz::jsonrpc_request(data));
