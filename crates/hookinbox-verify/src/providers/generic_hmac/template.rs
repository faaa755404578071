//! The signed-content template of a `generic_hmac` endpoint
//! (`"{timestamp}.{body}"`): parsed once at start-up so a typo in a
//! placeholder is a configuration error, never a request that silently
//! verifies against the wrong bytes.

/// One piece of the signed content, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Bytes copied as written in the template.
    Literal(String),
    /// The raw request body.
    Body,
    /// The timestamp header's value, as sent.
    Timestamp,
    /// The id header's value, as sent.
    Id,
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

/// Why a template does not parse. Messages name the placeholder, never
/// anything else.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("unknown placeholder `{{{0}}}` (known: {{body}}, {{timestamp}}, {{id}})")]
    UnknownPlaceholder(String),
    #[error("a `{{` is not closed by `}}`")]
    Unclosed,
    #[error(
        "must contain {{body}}: a signature that does not cover the body proves nothing about it"
    )]
    NoBody,
}

impl Template {
    /// Parses `{body}`, `{timestamp}` and `{id}` placeholders; everything
    /// else is literal. A lone `}` is literal; a `{` must open a placeholder.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pieces.push(Piece::Literal(rest[..open].to_owned()));
            }
            let after = &rest[open + 1..];
            let close = after.find('}').ok_or(TemplateError::Unclosed)?;
            pieces.push(match &after[..close] {
                "body" => Piece::Body,
                "timestamp" => Piece::Timestamp,
                "id" => Piece::Id,
                other => return Err(TemplateError::UnknownPlaceholder(other.to_owned())),
            });
            rest = &after[close + 1..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Literal(rest.to_owned()));
        }
        if !pieces.contains(&Piece::Body) {
            return Err(TemplateError::NoBody);
        }
        Ok(Template { pieces })
    }

    pub fn pieces(&self) -> &[Piece] {
        &self.pieces
    }

    pub fn uses(&self, piece: &Piece) -> bool {
        self.pieces.contains(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_literals() {
        let t = Template::parse("v0:{timestamp}:{id}.{body}}").unwrap();
        assert_eq!(
            t.pieces(),
            [
                Piece::Literal("v0:".into()),
                Piece::Timestamp,
                Piece::Literal(":".into()),
                Piece::Id,
                Piece::Literal(".".into()),
                Piece::Body,
                Piece::Literal("}".into()),
            ]
        );
        assert_eq!(Template::parse("{body}").unwrap().pieces(), [Piece::Body]);
    }

    #[test]
    fn errors() {
        assert_eq!(
            Template::parse("{ts}.{body}").unwrap_err(),
            TemplateError::UnknownPlaceholder("ts".into())
        );
        assert_eq!(
            Template::parse("{body").unwrap_err(),
            TemplateError::Unclosed
        );
        assert_eq!(
            Template::parse("{timestamp}").unwrap_err(),
            TemplateError::NoBody
        );
        assert_eq!(Template::parse("").unwrap_err(), TemplateError::NoBody);
    }
}
