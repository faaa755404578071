//! Load for the broker targets' crash and outage tests: events of many
//! objects, each object's versions posted in order (the objects at once),
//! and the checks a consumer of an ordered broker relies on.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use super::{client, lab_signed, now, post};

/// What ingress acknowledged: inbox id → the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acked {
    pub event_id: String,
    pub object: String,
    pub version: i64,
}

/// Posts `versions` versions of each of `objects` objects to `url`, every
/// object's versions one after another in version order, the objects
/// concurrently. Every request must be acknowledged (200).
pub async fn post_ordered(
    url: &str,
    tag: &str,
    objects: usize,
    versions: i64,
) -> HashMap<String, Acked> {
    let client = client();
    let url: Arc<str> = Arc::from(url);
    let mut tasks = tokio::task::JoinSet::new();
    for object in 0..objects {
        let (client, url, tag) = (client.clone(), Arc::clone(&url), tag.to_owned());
        tasks.spawn(async move {
            let mut acked = Vec::new();
            let object = format!("{tag}-obj{object}");
            for version in 1..=versions {
                let event_id = format!("{object}-v{version}");
                let body = format!(
                    r#"{{"id":"{event_id}","type":"order.updated","object_id":"{object}","object_version":{version}}}"#
                );
                let answer = post(&client, &url, &lab_signed(body, now())).await;
                assert_eq!(answer.status, 200, "{event_id}: {:?}", answer.body);
                let id = answer.json()["id"]
                    .as_str()
                    .expect("an inbox id")
                    .to_owned();
                acked.push((
                    id,
                    Acked {
                        event_id,
                        object: object.clone(),
                        version,
                    },
                ));
            }
            acked
        });
    }
    let mut all = HashMap::new();
    while let Some(acked) = tasks.join_next().await {
        all.extend(acked.expect("a sender task"));
    }
    all
}

/// Checks what a consumer read, in the broker's order, as `(message id,
/// provider event id)` pairs: every acknowledged event at least once; every
/// message one of them, under its own inbox id (so a duplicate is only
/// ever a second copy under the same id); and, per object, versions that
/// never go back (a duplicate repeats the version it follows). Returns how
/// many duplicates there were.
pub fn check_at_least_once_in_order(
    acked: &HashMap<String, Acked>,
    consumed: &[(String, String)],
) -> usize {
    let mut seen = HashSet::new();
    let mut duplicates = 0;
    let mut last_version: BTreeMap<&str, i64> = BTreeMap::new();
    for (message_id, event_id) in consumed {
        let event = acked
            .get(message_id)
            .unwrap_or_else(|| panic!("a message for no acknowledged event: {message_id}"));
        assert_eq!(
            &event.event_id, event_id,
            "message {message_id} carries another event's id"
        );
        if !seen.insert(message_id.clone()) {
            duplicates += 1;
        }
        let last = last_version.entry(&event.object).or_insert(0);
        assert!(
            event.version >= *last,
            "{}: version {} after {} (object order lost)",
            event.object,
            event.version,
            last
        );
        *last = event.version;
    }
    let missing: Vec<&Acked> = acked
        .iter()
        .filter(|(id, _)| !seen.contains(*id))
        .map(|(_, event)| event)
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but never published: {missing:?}"
    );
    duplicates
}
