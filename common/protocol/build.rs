//! With the `grpc` feature: the gRPC binding's Rust code, generated from the vendored
//! `proto/a2a.proto` (see `proto/README.md`) by protox, a protobuf compiler in Rust, so a
//! fresh machine needs nothing but crates.io. prost gives the messages and tonic the
//! service; pbjson gives every message the ProtoJSON serde that is the JSON binding's
//! wire form, with the well-known types (`Struct`, `Value`, `Timestamp`, `Empty`) from
//! pbjson-types.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    #[cfg(feature = "grpc")]
    grpc()?;
    Ok(())
}

#[cfg(feature = "grpc")]
fn grpc() -> Result<(), Box<dyn std::error::Error>> {
    use prost::Message as _;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let files = protox::compile(["a2a.proto"], ["proto"])?;
    tonic_prost_build::configure()
        .build_transport(false)
        .compile_well_known_types(true)
        .extern_path(".google.protobuf", "::pbjson_types")
        .out_dir(&out)
        .compile_fds(files.clone())?;
    let mut serde = pbjson_build::Builder::new();
    // Spec §5.7: unknown fields are ignored (unknown enum names are still refused).
    serde
        .register_descriptors(&files.encode_to_vec())?
        .ignore_unknown_fields()
        .out_dir(&out)
        .build(&[".lf.a2a.v1"])?;
    Ok(())
}
