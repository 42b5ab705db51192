//! `fleet bench`: runs the `fleet-bench` binary built beside `fleet`. The benchmarks live in
//! their own crate so that their fixtures (Git repositories, `git daemon`) never enter the
//! `fleet` binary.

use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Args;

/// Arguments of `fleet bench`: everything is passed to `fleet-bench`.
#[derive(Args, Debug)]
#[command(disable_help_flag = true)]
pub(super) struct BenchArgs {
    /// The benchmark and its arguments (`fleet bench --help` lists them).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
}

/// Runs `fleet-bench` with the arguments, exiting as it exits.
pub(super) fn run(args: BenchArgs) -> Result<()> {
    let me = std::env::current_exe().context("finding the fleet binary")?;
    let bench = me.with_file_name("fleet-bench");
    if !bench.is_file() {
        bail!(
            "{} is missing: the benchmarks are a binary of their own; build it with \
             `cargo build --release -p fleet-bench` (or run `cargo run --release -p fleet-bench -- ...`)",
            bench.display()
        );
    }
    let status = Command::new(&bench)
        .args(&args.args)
        .status()
        .with_context(|| format!("running {}", bench.display()))?;
    if !status.success() {
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}
