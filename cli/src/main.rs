//! `iggy`: the operators' command-line tool, with the command tree and global flags of the
//! official `iggy-cli` 0.13.0, built on `rill-sdk`.

mod args;
mod commands;
mod context;
mod error;
mod output;
mod util;

use args::{Cli, Command};
use clap::{CommandFactory, Parser};
use std::process::ExitCode;

fn print_completions(shell: clap_complete::Shell) {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "iggy", &mut std::io::stdout());
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Some(shell) = cli.global.generator {
        print_completions(shell);
        return ExitCode::SUCCESS;
    }
    let Some(command) = cli.command else {
        let _ = Cli::command().print_help();
        return ExitCode::SUCCESS;
    };
    if let Command::Completion(completion) = &command {
        print_completions(completion.shell);
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("Error: cannot start the runtime: {error}");
            return ExitCode::from(error::EXIT_SERVER_ERROR);
        }
    };
    let debug_file = cli.global.debug.clone();
    match runtime.block_on(commands::run(cli.global, command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("Error: {error}");
            if let Some(path) = debug_file {
                use std::io::Write;
                if let Ok(mut file) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                {
                    let _ = writeln!(file, "error (exit {}): {error}", error.exit_code);
                }
            }
            error.exit()
        }
    }
}
