//! Server-Sent Events, parsed from the bytes as they arrive: fields of one
//! event end at a blank line; `:` lines are comments (heartbeats). Only
//! what `listen` reads is kept: `event`, `id` and `data`.

/// One event of the stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// `message` when the server named none.
    pub name: String,
    pub id: Option<String>,
    pub data: String,
}

/// Bytes received and not yet a whole event.
#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    current: SseEvent,
    has_data: bool,
}

/// An event larger than this ends the stream (a body is at most
/// `max_body_bytes` on the server, base64 adds a third).
pub const MAX_EVENT_BYTES: usize = 64 << 20;

impl SseParser {
    /// Takes `bytes`, returns the events they completed. `Err` when a line
    /// grows past [`MAX_EVENT_BYTES`].
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SseEvent>, ()> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(end) = self.buffer[start..].iter().position(|b| *b == b'\n') {
            let line = &self.buffer[start..start + end];
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = String::from_utf8_lossy(line).into_owned();
            start += end + 1;
            if let Some(event) = self.line(&line) {
                events.push(event);
            }
        }
        self.buffer.drain(..start);
        if self.buffer.len() + self.current.data.len() > MAX_EVENT_BYTES {
            return Err(());
        }
        Ok(events)
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let mut event = std::mem::take(&mut self.current);
            let had_data = std::mem::take(&mut self.has_data);
            if event.name.is_empty() {
                event.name = "message".to_owned();
            }
            return had_data.then_some(event);
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.current.name = value.to_owned(),
            "id" => self.current.id = Some(value.to_owned()),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_come_out_whole_and_comments_are_dropped() {
        let text = b": heartbeat\n\nevent: ready\nid: 5.\ndata: {\"cursor\":\"5.\"}\n\r\nevent: webhook\nid: 6.ab\ndata: a\ndata: b\n\n";
        for split in 0..text.len() {
            let mut parser = SseParser::default();
            let mut events = parser.push(&text[..split]).unwrap();
            events.extend(parser.push(&text[split..]).unwrap());
            assert_eq!(
                events,
                vec![
                    SseEvent {
                        name: "ready".into(),
                        id: Some("5.".into()),
                        data: "{\"cursor\":\"5.\"}".into()
                    },
                    SseEvent {
                        name: "webhook".into(),
                        id: Some("6.ab".into()),
                        data: "a\nb".into()
                    },
                ],
                "split at {split}"
            );
        }
    }
}
