//! `fleet`: the fleet-rs command-line tool.

mod commands;

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than the system allocator: rendering makes and frees many small
/// values, and `fleet helm template` runs several times faster for it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A reader that closed its end of our standard output (`fleet ... | head`) wanted no more:
/// stop quietly, as a Unix tool killed by SIGPIPE does, instead of reporting a panic.
fn quiet_when_the_reader_leaves() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.contains("Broken pipe") {
            std::process::exit(0);
        }
        report(info);
    }));
}

/// True when `error` comes from writing to a pipe whose reader left.
fn reader_left(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn main() -> ExitCode {
    quiet_when_the_reader_leaves();
    let cli = match commands::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    fleet_objects::service::init_logging();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if reader_left(&e) => ExitCode::SUCCESS,
        Err(e) if e.is::<commands::Reported>() => ExitCode::from(1),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
