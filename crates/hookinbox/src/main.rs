//! The stock `hookinbox` binary: the library's command line, with no
//! handlers registered (a `kind = "handler"` target needs a program that
//! embeds hookinbox and registers one).

use std::process::ExitCode;

/// mimalloc instead of glibc's malloc, for every allocation of the process:
/// Rust's through this global allocator and, by the crate's `override`
/// feature, SQLite's and zstd's `malloc`/`free` too. A request's body is
/// allocated on a tokio worker and freed on the SQLite writer thread;
/// glibc pays for that with a lock on the worker's arena and the
/// consolidation of the freed chunk, which was a third of the writer's CPU
/// at saturation (bench/RESULTS.md §17). A program that embeds the library
/// picks its own allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    hookinbox::cli::run(hookinbox::HandlerRegistry::new())
}
