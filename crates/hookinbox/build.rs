//! Puts the commit the binary is built from into `--version`, as the
//! compile-time variable `HOOKINBOX_COMMIT`: what a bug report needs
//! besides the version number.
//!
//! It asks `git rev-parse --short HEAD`, but only when this file is tracked
//! by the repository git finds: a source tarball unpacked inside some other
//! checkout must not report that checkout's commit. Without git, or outside
//! a checkout (a tarball, a vendored copy), the commit is "unknown", and the
//! build goes on; a packager who knows it can set `HOOKINBOX_BUILD_COMMIT`.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=HOOKINBOX_BUILD_COMMIT");
    let commit = std::env::var("HOOKINBOX_BUILD_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .or_else(commit_from_git)
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=HOOKINBOX_COMMIT={}", commit.trim());
}

fn commit_from_git() -> Option<String> {
    rebuild_when_head_moves();
    git(&["ls-files", "--error-unmatch", "build.rs"])?;
    git(&["rev-parse", "--short", "HEAD"])
}

/// Cargo reruns this script when HEAD is switched (checkout) or its branch
/// moves (commit); otherwise `--version` would show a stale commit.
fn rebuild_when_head_moves() {
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &branch]));
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    }
    // A path that does not exist would make Cargo rerun the script on
    // every build.
    for path in watched.into_iter().flatten() {
        if Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// The trimmed stdout of a successful `git` run, if any.
fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}
