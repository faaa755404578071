//! The stock `hookinbox` binary: the library's command line, with no
//! handlers registered (a `kind = "handler"` target needs a program that
//! embeds hookinbox and registers one).

use std::process::ExitCode;

fn main() -> ExitCode {
    hookinbox::cli::run(hookinbox::HandlerRegistry::new())
}
