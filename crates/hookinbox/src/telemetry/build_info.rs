//! `hookinbox_build_info{version,commit} 1`: which build answers, for
//! dashboards that join it to other series and for spotting a fleet
//! running two versions.

/// The running build, recorded once at start-up.
pub struct BuildInfo;

impl BuildInfo {
    /// The release (`Cargo.toml`) and the commit it was built from
    /// (`build.rs`; "unknown" outside a git checkout).
    pub const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    pub const COMMIT: &'static str = env!("HOOKINBOX_COMMIT");

    pub fn emit(self) {
        metrics::gauge!(
            "hookinbox_build_info",
            "version" => Self::VERSION, "commit" => Self::COMMIT
        )
        .set(1.0);
    }
}
