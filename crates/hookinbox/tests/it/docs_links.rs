//! Every relative link in the repository's Markdown (README.md, docs/,
//! bench/, the crates' READMEs, …) points at a file inside the repository,
//! and every `#anchor` into a Markdown file names one of its headings. A
//! clone, a tarball or a fork has nothing beside it, so a link that needs a
//! folder next to the checkout is broken for its readers.
//!
//! Besides links: every path docs/contributing.md and the Layout section
//! name exists in the tree, and README.md stays a short front page that
//! links every document under docs/.

use crate::markdown_links;
use crate::markdown_paths;

use std::path::{Path, PathBuf};

/// The workspace root: two levels above this crate.
fn repository_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize()
        .unwrap_or_else(|e| panic!("cannot resolve {}: {e}", root.display()))
}

#[test]
fn every_relative_link_in_the_docs_resolves_inside_the_repository() {
    let root = repository_root();
    let (files, problems) = markdown_links::check_tree(&root);
    for required in ["README.md", "docs/architecture.md"] {
        assert!(
            files.contains(&root.join(required)),
            "{required} was not among the files checked: {files:?}"
        );
    }
    assert!(
        problems.is_empty(),
        "{} broken link(s) in {} Markdown files:\n{}",
        problems.len(),
        files.len(),
        problems.join("\n")
    );
}

/// Longest README.md may grow: the reference lives in docs/, and the front
/// page stays readable in one sitting.
const README_MAX_LINES: usize = 320;

#[test]
fn the_readme_is_short_and_links_every_doc() {
    let root = repository_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md is readable");
    let lines = readme.lines().count();
    assert!(
        lines <= README_MAX_LINES,
        "README.md has {lines} lines; at most {README_MAX_LINES}: move reference text into docs/"
    );
    let destinations: Vec<String> = markdown_links::links(&readme)
        .into_iter()
        .map(|link| link.destination)
        .collect();
    let docs = markdown_links::markdown_files(&root.join("docs"));
    assert!(docs.len() >= 6, "docs/ holds {docs:?}");
    for doc in docs {
        let relative = doc
            .strip_prefix(&root)
            .expect("docs/ is inside the repository")
            .to_string_lossy()
            .replace('\\', "/");
        assert!(
            destinations
                .iter()
                .any(|d| d.split('#').next() == Some(relative.as_str())),
            "README.md does not link {relative}; its links: {destinations:?}"
        );
    }
    // The two commands the README promises, exactly as written there.
    for command in [
        "cargo run --release -p hookinbox -- serve --config hookinbox.example.toml",
        "cargo test --workspace",
    ] {
        assert!(
            readme.contains(&format!("```sh\n{command}\n```")),
            "README.md does not show `{command}` as a command of its own"
        );
    }
}

#[test]
fn every_path_the_contributing_guide_and_the_layout_name_exists() {
    let root = repository_root();
    let read = |path: &str| {
        std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let contributing = read("docs/contributing.md");
    let architecture = read("docs/architecture.md");
    let layout = markdown_paths::section(&contributing, "## Layout")
        .expect("docs/contributing.md has a `## Layout` section");
    let design_layout = markdown_paths::section(&architecture, "## 8. Layout")
        .expect("docs/architecture.md has a `## 8. Layout` section");

    let (in_guide, mut problems) =
        markdown_paths::missing(&root, "docs/contributing.md", &contributing);
    let (in_design, more) =
        markdown_paths::missing(&root, "docs/architecture.md §8", design_layout);
    problems.extend(more);
    // Enough paths were read that a scanner reading none would fail here.
    assert!(
        in_guide >= 50,
        "only {in_guide} paths read in docs/contributing.md"
    );
    assert!(
        markdown_paths::paths(layout).len() >= 6,
        "the Layout section names {:?}",
        markdown_paths::paths(layout)
    );
    assert!(
        in_design >= 4,
        "only {in_design} paths read in architecture.md §8"
    );
    assert!(
        problems.is_empty(),
        "{} path(s) named in the docs are not in the tree:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// The path checker itself: what counts as a path, placeholders, folders,
/// and sections.
#[test]
fn missing_paths_are_reported_and_others_are_not() {
    let temp = tempfile::tempdir().expect("temp dir");
    let root = temp.path();
    std::fs::create_dir_all(root.join("crates/a/src/providers")).expect("dirs");
    std::fs::write(root.join("crates/a/src/lib.rs"), "").expect("write lib.rs");
    let text = "\
# Guide

## Layout

- `crates/a/src/lib.rs`, `crates/a/src/`, `crates/a/src/providers/<name>.rs`
- `crates/a/src/gone.rs`, `crates/a/src/lib.rs/`, `crates/b/<name>.rs`
- not paths: `cargo test -p a`, `src/elsewhere.rs`, `providers::stripe`, ``crates/a/x.rs`` is a span too

```sh
ls crates/a/not-checked-in-a-block.rs `crates/a/nor-this.rs`
```

## Next

`crates/a/outside-the-section.rs`
";
    let (checked, problems) = markdown_paths::missing(root, "guide.md", text);
    assert_eq!(checked, 8, "{problems:#?}");
    let reported: Vec<&str> = problems
        .iter()
        .map(|p| p.split(": ").nth(1).unwrap_or(p))
        .collect();
    assert_eq!(
        reported,
        [
            "crates/a/src/gone.rs",
            "crates/a/src/lib.rs/",
            "crates/b/<name>.rs",
            "crates/a/x.rs",
            "crates/a/outside-the-section.rs",
        ],
        "{problems:#?}"
    );
    assert!(problems[0].starts_with("guide.md:6: "), "{problems:#?}");

    let layout = markdown_paths::section(text, "## Layout").expect("the section");
    assert!(layout.starts_with("## Layout\n") && layout.contains("```sh"));
    assert!(!layout.contains("## Next"), "{layout}");
    assert_eq!(markdown_paths::paths(layout).len(), 7);
    assert_eq!(markdown_paths::section(text, "## Missing"), None);
}

/// The checker itself: each kind of broken link is reported, and links in
/// code, absolute URLs and good anchors are not.
#[test]
fn broken_links_of_every_kind_are_reported() {
    let temp = tempfile::tempdir().expect("temp dir");
    let parent = temp.path().canonicalize().expect("temp dir path");
    let root = parent.join("repo");
    std::fs::create_dir_all(root.join("docs")).expect("docs dir");
    std::fs::write(
        root.join("docs/guide.md"),
        "# Guide\n\n## The `serve` command\n\n## Setup\n\n## Setup\n",
    )
    .expect("write guide");
    // A file beside the "repository": it exists, but a clone would not have it.
    std::fs::write(parent.join("outside-the-repo.md"), "# Outside\n").expect("write outside file");
    let readme = "\
# Project

[guide](docs/guide.md), [command](docs/guide.md#the-serve-command),
[second setup](docs/guide.md#setup-1), [docs folder](docs/), [top](#project),
[site](https://example.com/missing.md), <https://example.com>.

[missing file](docs/missing.md)
[missing anchor](docs/guide.md#install)
[outside](../outside-the-repo.md)
![missing image](img/logo.png)
[missing own anchor](#nowhere)

[ref]: docs/gone.md

`[in code](docs/not-a-link.md)`

```sh
# not a heading
see [this](docs/also-not-a-link.md)
```
";
    std::fs::write(root.join("README.md"), readme).expect("write readme");

    let (files, problems) = markdown_links::check_tree(&root);

    assert_eq!(files.len(), 2, "{files:?}");
    let reported: Vec<&str> = problems
        .iter()
        .map(|p| p.split(": ").nth(1).unwrap_or(p))
        .collect();
    assert_eq!(
        reported,
        vec![
            "docs/missing.md",
            "docs/guide.md#install",
            "../outside-the-repo.md",
            "img/logo.png",
            "#nowhere",
            "docs/gone.md",
        ],
        "{problems:#?}"
    );
    assert!(
        problems[0].starts_with("README.md:7: "),
        "problems name file and line: {problems:#?}"
    );
    assert!(
        problems[2].ends_with("points outside the repository"),
        "{problems:#?}"
    );
}
