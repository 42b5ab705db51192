//! No code: this crate holds the tests that need the whole fleet (`tests/`), which sit
//! above every crate they start, and the test that keeps the crates' layering.
