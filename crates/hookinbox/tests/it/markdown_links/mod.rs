//! Relative links in the repository's Markdown, and whether they resolve.
//!
//! A small scanner instead of a Markdown parser: it reads the constructs our
//! docs use — inline links and images `[text](dest)`, reference definitions
//! `[label]: dest`, ATX headings `# …` — and skips fenced code blocks and
//! inline code spans, where `[x](y)` or `# comment` is not a link or a
//! heading. Raw HTML (`<a href>`) and setext headings are not read.
//!
//! A link is broken when its file does not exist, when it leaves the
//! repository (a path that only resolves because of a folder beside the
//! checkout, like `../shared`), or when its `#anchor` names no heading of the
//! Markdown file it points at (GitHub's heading ids). Anchors into other
//! kinds of file (`#L10` on source) are not checked. Absolute URLs are not
//! checked at all: no network in tests.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

/// Directories never searched for Markdown: build output, VCS data,
/// dependencies installed by hand (`node_modules` of the fixture generators).
const SKIPPED_DIRS: &[&str] = &["target", "node_modules"];

/// One link destination, where it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub line: usize,
    pub destination: String,
}

/// Every Markdown file under `root`, sorted, skipping hidden directories and
/// [`SKIPPED_DIRS`].
pub fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
                .path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name) {
                    pending.push(path);
                }
            } else if name.ends_with(".md") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// Checks every relative link of every Markdown file under `root`; returns
/// the files read and one line per broken link (`path:line: why`).
pub fn check_tree(root: &Path) -> (Vec<PathBuf>, Vec<String>) {
    let files = markdown_files(root);
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        let shown = file
            .strip_prefix(root)
            .unwrap_or(file)
            .display()
            .to_string();
        for link in links(&text) {
            if let Err(why) = check_link(root, file, &text, &link.destination) {
                problems.push(format!(
                    "{shown}:{}: {}: {why}",
                    link.line, link.destination
                ));
            }
        }
    }
    (files, problems)
}

/// Whether one destination written in `file` (whose text is `text`) resolves.
fn check_link(root: &Path, file: &Path, text: &str, destination: &str) -> Result<(), String> {
    if has_scheme(destination) {
        return Ok(());
    }
    let (path_part, anchor) = match destination.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (destination, None),
    };
    let path_part = path_part.split('?').next().unwrap_or_default();
    let path_part = percent_decode(path_part);
    if path_part.is_empty() {
        return match anchor {
            Some(anchor) => check_anchor(text, anchor),
            None => Ok(()),
        };
    }
    let base = if let Some(from_root) = path_part.strip_prefix('/') {
        root.join(from_root)
    } else {
        file.parent().unwrap_or(root).join(&path_part)
    };
    let resolved = normalize(&base);
    if !resolved.starts_with(root) {
        return Err("points outside the repository".into());
    }
    if !resolved.exists() {
        return Err(format!(
            "no such file: {}",
            resolved.strip_prefix(root).unwrap_or(&resolved).display()
        ));
    }
    match anchor {
        Some(anchor) if resolved.extension().is_some_and(|ext| ext == "md") => {
            let target = std::fs::read_to_string(&resolved)
                .map_err(|e| format!("cannot read {}: {e}", resolved.display()))?;
            check_anchor(&target, anchor)
        }
        _ => Ok(()),
    }
}

fn check_anchor(text: &str, anchor: &str) -> Result<(), String> {
    let anchor = percent_decode(anchor).to_lowercase();
    if anchor.is_empty() || heading_ids(text).contains(&anchor) {
        Ok(())
    } else {
        Err(format!("no heading with the id #{anchor}"))
    }
}

/// `http:`, `https:`, `mailto:`, …: not a path in this repository.
fn has_scheme(destination: &str) -> bool {
    let Some((scheme, _)) = destination.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// Resolves `.` and `..` without touching the file system, so a path that
/// leaves the repository is seen as leaving it even where it exists.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The lines of `text` outside fenced code blocks, numbered from 1.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<String> = None;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let marker: String = trimmed
            .chars()
            .take_while(|c| *c == '`' || *c == '~')
            .collect();
        let is_fence =
            marker.len() >= 3 && marker.chars().all(|c| c == marker.as_bytes()[0] as char);
        match &fence {
            Some(open) if is_fence && marker.starts_with(open.as_str()) => fence = None,
            Some(_) => {}
            None if is_fence => fence = Some(marker),
            None => lines.push((index + 1, line)),
        }
    }
    lines
}

/// `line` with inline code spans removed.
fn without_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let run = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + run..];
        let closing = "`".repeat(run);
        match after.find(&closing) {
            Some(end) => rest = &after[end + run..],
            None => {
                // An unclosed run is literal text.
                out.push_str(&rest[start..start + run]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Every inline code span in `text` outside fenced code blocks, with its
/// line: `` `crates/x.rs` `` → `crates/x.rs`.
pub fn code_spans(text: &str) -> Vec<(usize, String)> {
    let mut spans = Vec::new();
    for (line_number, line) in prose_lines(text) {
        let mut rest = line;
        while let Some(start) = rest.find('`') {
            let run = rest[start..].chars().take_while(|c| *c == '`').count();
            let after = &rest[start + run..];
            match after.find(&"`".repeat(run)) {
                Some(end) => {
                    spans.push((line_number, after[..end].trim().to_owned()));
                    rest = &after[end + run..];
                }
                // An unclosed run is literal text.
                None => rest = after,
            }
        }
    }
    spans
}

/// Every link destination in `text`: inline links, images and reference
/// definitions, outside code.
pub fn links(text: &str) -> Vec<Link> {
    let mut found = Vec::new();
    for (line_number, line) in prose_lines(text) {
        let line = without_code_spans(line);
        if let Some(destination) = reference_definition(&line) {
            found.push(Link {
                line: line_number,
                destination,
            });
            continue;
        }
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let (destination, after) = inline_destination(&rest[at + 2..]);
            if !destination.is_empty() {
                found.push(Link {
                    line: line_number,
                    destination,
                });
            }
            rest = after;
        }
    }
    found
}

/// `[label]: destination` at the start of a line (up to three spaces in).
fn reference_definition(line: &str) -> Option<String> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let line = line.trim_start_matches(' ');
    if indent > 3 || !line.starts_with('[') || line.starts_with("[^") {
        return None;
    }
    let (_, after) = line.split_once("]:")?;
    let destination = after.split_whitespace().next()?;
    Some(
        destination
            .trim_matches(|c| c == '<' || c == '>')
            .to_owned(),
    )
}

/// The destination right after `](`, and the text after the link.
fn inline_destination(text: &str) -> (String, &str) {
    let text_start = text.trim_start();
    if let Some(inner) = text_start.strip_prefix('<') {
        return match inner.find('>') {
            Some(end) => (inner[..end].to_owned(), &inner[end + 1..]),
            None => (String::new(), inner),
        };
    }
    // Up to whitespace (a title follows) or the `)` that closes the link,
    // allowing balanced parentheses inside the destination.
    let mut depth = 0usize;
    for (index, c) in text_start.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return (text_start[..index].to_owned(), &text_start[index..]),
            ')' => depth -= 1,
            c if c.is_whitespace() => {
                return (text_start[..index].to_owned(), &text_start[index..])
            }
            _ => {}
        }
    }
    (text_start.to_owned(), "")
}

/// The ids GitHub gives the headings of `text`: lower-cased, punctuation
/// dropped, spaces as hyphens; a repeated id gets `-1`, `-2`, ….
pub fn heading_ids(text: &str) -> HashSet<String> {
    let mut ids = HashSet::new();
    for (_, line) in prose_lines(text) {
        let Some(title) = atx_heading(line) else {
            continue;
        };
        let base = slug(&link_text_only(&without_code_markers(title)));
        let mut id = base.clone();
        let mut n = 0;
        while ids.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        ids.insert(id);
    }
    ids
}

/// The title of an ATX heading line (`## Title ##` → `Title`).
fn atx_heading(line: &str) -> Option<&str> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let line = line.trim_start_matches(' ');
    let level = line.chars().take_while(|c| *c == '#').count();
    if indent > 3 || level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if !rest.is_empty() && !rest.starts_with(' ') && !rest.starts_with('\t') {
        return None;
    }
    Some(rest.trim().trim_end_matches('#').trim_end())
}

/// Backticks are formatting: the id keeps the code's text.
fn without_code_markers(title: &str) -> String {
    title.replace('`', "")
}

/// `[text](dest)` → `text`, as the heading renders.
fn link_text_only(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    let mut rest = title;
    while let Some(at) = rest.find("](") {
        let (before, after) = rest.split_at(at);
        out.push_str(&before.replacen('[', "", 1));
        let after = &after[2..];
        rest = after.find(')').map_or("", |end| &after[end + 1..]);
    }
    out.push_str(rest);
    out
}

fn slug(title: &str) -> String {
    title
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}
