//! `fleet-agent`: the agent alone, as a member cluster runs it (the same as `fleet agent`).

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than the system allocator: applying and reporting makes and frees many
/// small JSON values across threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Applies one cluster's BundleDeployments, pulled from the fleet-rs hub.
#[derive(Parser, Debug)]
#[command(name = "fleet-agent", version)]
struct Cli {
    #[command(flatten)]
    args: fleet_agent::command::AgentArgs,
}

fn main() -> ExitCode {
    // The agent chart runs `fleet agent ...`; the same arguments work with this image's
    // binary, so a leading `agent` is taken as the command it names.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|first| first == "agent") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    fleet_objects::service::init_logging();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: starting the async runtime: {error}");
            return ExitCode::from(1);
        }
    };
    let shutdown = fleet_objects::service::shutdown_signal();
    match runtime.block_on(fleet_agent::command::run(cli.args, shutdown)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(1)
        }
    }
}
