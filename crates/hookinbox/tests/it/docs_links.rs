//! Every relative link in the repository's Markdown (README.md, docs/,
//! bench/, the crates' READMEs, …) points at a file inside the repository,
//! and every `#anchor` into a Markdown file names one of its headings. A
//! clone, a tarball or a fork has nothing beside it, so a link that needs a
//! folder next to the checkout is broken for its readers.

use crate::markdown_links;

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

#[test]
fn the_readme_links_the_architecture_doc() {
    let root = repository_root();
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md is readable");
    let destinations: Vec<String> = markdown_links::links(&readme)
        .into_iter()
        .map(|link| link.destination)
        .collect();
    assert!(
        destinations.iter().any(|d| d == "docs/architecture.md"),
        "README.md links: {destinations:?}"
    );
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
