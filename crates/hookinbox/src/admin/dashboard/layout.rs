//! The page shell every dashboard page shares (header, navigation, sign
//! out, `<main>`) and the small formatting rules of its values.

use maud::{html, Markup, DOCTYPE};

use super::session::Session;

/// Which navigation link is the current page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Overview,
    Events,
    Endpoints,
    None,
}

/// A whole page: `title` is its `<title>` and its `<h1>`.
pub fn page(title: &str, section: Section, session: Option<&Session>, body: Markup) -> Markup {
    let current = |s: Section| if s == section { Some("page") } else { None };
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · hookinbox" }
                link rel="stylesheet" href="/ui/style.css";
                link rel="icon" href="/ui/favicon.svg" type="image/svg+xml";
            }
            body {
                header {
                    a.brand href="/ui" { "hookinbox" }
                    @if let Some(session) = session {
                        nav aria-label="Main" {
                            a href="/ui" aria-current=[current(Section::Overview)] { "Overview" }
                            a href="/ui/events" aria-current=[current(Section::Events)] { "Events" }
                            a href="/ui/endpoints" aria-current=[current(Section::Endpoints)] { "Endpoints" }
                        }
                        form method="post" action="/ui/logout" {
                            input type="hidden" name="csrf" value=(session.csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main {
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// A unix-milliseconds time, UTC, to the second.
pub fn utc(ms: i64) -> String {
    let Ok(at) = time::OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000)) else {
        return ms.to_string();
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// How long before `now_ms` a time was (or, negative, how long after).
pub fn ago(ms: i64, now_ms: i64) -> String {
    let seconds = (now_ms - ms) / 1000;
    let (amount, future) = if seconds < 0 {
        (-seconds, true)
    } else {
        (seconds, false)
    };
    let span = match amount {
        0..=59 => format!("{amount} s"),
        60..=3599 => format!("{} min", amount / 60),
        3600..=86_399 => format!("{} h", amount / 3600),
        _ => format!("{} d", amount / 86_400),
    };
    if future {
        format!("in {span}")
    } else {
        format!("{span} ago")
    }
}

/// A status as a badge (text, not colour alone, carries it).
pub fn status(status: &str) -> Markup {
    let class = format!("status status-{}", status.to_ascii_lowercase());
    html! { span class=(class) { (status) } }
}

/// A count that may have stopped at the cap.
pub fn count(count: hookinbox_store::CappedCount) -> String {
    if count.capped {
        format!("{}+", count.count)
    } else {
        count.count.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_utc_and_as_ages() {
        assert_eq!(utc(1_764_559_329_123), "2025-12-01 03:22:09 UTC");
        assert_eq!(ago(1_000, 61_000), "1 min ago");
        assert_eq!(ago(10_000, 5_000), "in 5 s");
        assert_eq!(ago(0, 3 * 86_400_000), "3 d ago");
    }

    #[test]
    fn values_are_escaped() {
        let markup = page(
            "<script>",
            Section::None,
            None,
            html! { p { (status("<b>")) } },
        )
        .into_string();
        assert!(markup.contains("&lt;script&gt;"), "{markup}");
        assert!(!markup.contains("<script>"), "{markup}");
        assert!(!markup.contains("<b>"), "{markup}");
    }
}
