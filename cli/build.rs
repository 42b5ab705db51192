//! Packs the `fleet` binary's relative relocations (DT_RELR): far fewer for the dynamic
//! loader to read at every start.

fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
}
