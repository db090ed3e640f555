//! The fuzz targets' seed corpora (`common/fuzz/corpus/<target>/`: real requests, golden
//! fixtures, edge cases and the regression inputs fuzzing found) run as a normal test
//! through the same entry points the `cargo fuzz` targets call (`common::fuzz`). Each
//! entry point panics on any input that breaks what it checks; see tests/README.md, "Fuzzing".

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} holds no inputs", dir.display());
    files
}

/// Runs every input, naming the one that panics.
fn run(target: &str, entry: fn(&[u8])) {
    for file in corpus(target) {
        let data = std::fs::read(&file).expect("a readable corpus file");
        if std::panic::catch_unwind(|| entry(&data)).is_err() {
            panic!("{target}: {} fails", file.display());
        }
    }
}

#[test]
fn jsonrpc_request_corpus() {
    run("jsonrpc_request", common::fuzz::jsonrpc_request);
}

#[test]
fn rest_route_corpus() {
    run("rest_route", common::fuzz::rest_route);
}

#[test]
fn channel_part_corpus() {
    run("channel_part", common::fuzz::channel_part);
}

#[test]
fn sse_frame_corpus() {
    run("sse_frame", common::fuzz::sse_frame);
}
