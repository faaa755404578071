//! Paths named in the docs, and whether the tree has them.
//!
//! `docs/contributing.md` and the Layout section tell a newcomer which
//! files to open and touch; a renamed or deleted file there sends them
//! looking for something that is not there. So every inline code span that
//! is a path from the repository's root (it starts with one of
//! [`ROOT_FOLDERS`] and has no spaces) must exist: a folder when it ends in
//! `/`, anything otherwise. A path with a `<placeholder>` segment names a
//! file to create (`crates/hookinbox-verify/src/providers/<name>.rs`): the
//! folder it goes in must exist. Spans in fenced code blocks are commands,
//! not references, and are not read.

use std::path::Path;

use crate::markdown_links;

/// The repository's top-level folders a documented path may start with.
pub const ROOT_FOLDERS: &[&str] = &["crates/", "bench/", "deploy/", "docs/", ".ci/"];

/// Every path-like code span of `text` (see the module docs), with its line.
pub fn paths(text: &str) -> Vec<(usize, String)> {
    markdown_links::code_spans(text)
        .into_iter()
        .filter(|(_, span)| {
            !span.contains(char::is_whitespace)
                && ROOT_FOLDERS.iter().any(|root| span.starts_with(root))
        })
        .collect()
}

/// One line (`name:line: path: why`) per path of `text` that `root` does not
/// have; `name` says where the text came from. Also returns how many paths
/// were checked, so a caller can tell a clean text from one with none.
pub fn missing(root: &Path, name: &str, text: &str) -> (usize, Vec<String>) {
    let paths = paths(text);
    let problems = paths
        .iter()
        .filter_map(|(line, path)| {
            check(root, path)
                .err()
                .map(|why| format!("{name}:{line}: {path}: {why}"))
        })
        .collect();
    (paths.len(), problems)
}

fn check(root: &Path, path: &str) -> Result<(), String> {
    if let Some(placeholder) = path.find('<') {
        // The folder the new file goes in: up to the last `/` before it.
        let folder = &path[..path[..placeholder].rfind('/').map_or(0, |slash| slash + 1)];
        return if root.join(folder).is_dir() {
            Ok(())
        } else {
            Err(format!("no folder {folder} to create it in"))
        };
    }
    let found = root.join(path);
    match (path.ends_with('/'), found.is_dir(), found.exists()) {
        (true, true, _) | (false, _, true) => Ok(()),
        (true, false, true) => Err("not a folder".into()),
        _ => Err("no such file or folder".into()),
    }
}

/// The text of the Markdown section whose heading line is `heading`
/// (`## 8. Layout`), up to the next heading of the same or a higher level
/// outside a fenced code block; `None` when there is no such heading.
pub fn section<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let level = heading.bytes().take_while(|b| *b == b'#').count();
    let (mut start, mut offset, mut in_fence) = (None, 0, false);
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        }
        let hashes = line.bytes().take_while(|b| *b == b'#').count();
        let is_heading = !in_fence && hashes > 0 && line[hashes..].starts_with(' ');
        match start {
            None if line.trim_end() == heading => start = Some(offset),
            Some(begin) if is_heading && hashes <= level => return Some(&text[begin..offset]),
            _ => {}
        }
        offset += line.len();
    }
    start.map(|begin| &text[begin..])
}
