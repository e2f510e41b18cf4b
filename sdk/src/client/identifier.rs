//! Naming things: [`IntoIdentifier`], [`parse_identifier`] and the name/secret validators.

use crate::error::{Error, Result};
use rill_core::primitives::{Identifier, Name, ShortString};

/// Something that names a stream, topic, consumer group, user or consumer: a numeric id
/// (`u32`), a name (`&str`, `String`) or an [`Identifier`].
pub trait IntoIdentifier {
    /// Converts, failing on an empty or over-long name.
    fn into_identifier(self) -> Result<Identifier>;
}

impl IntoIdentifier for Identifier {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(self)
    }
}

impl IntoIdentifier for &Identifier {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(self.clone())
    }
}

impl IntoIdentifier for u32 {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(Identifier::numeric(self))
    }
}

impl IntoIdentifier for &str {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(Identifier::named(self)?)
    }
}

impl IntoIdentifier for String {
    fn into_identifier(self) -> Result<Identifier> {
        Ok(Identifier::String(Name::new(self)?))
    }
}

impl IntoIdentifier for &String {
    fn into_identifier(self) -> Result<Identifier> {
        self.as_str().into_identifier()
    }
}

/// Parses command-line style identifiers: digits are a numeric id, anything else a name.
pub fn parse_identifier(text: &str) -> Result<Identifier> {
    match text.parse::<u32>() {
        Ok(id) => Ok(Identifier::numeric(id)),
        Err(_) => text.into_identifier(),
    }
}
pub(super) fn name(value: &str) -> Result<Name> {
    Ok(Name::new(value)?)
}

pub(super) fn secret(value: &str, what: &str) -> Result<ShortString> {
    if value.len() > 255 {
        return Err(Error::invalid(format!("{what} longer than 255 bytes")));
    }
    Ok(ShortString(value.to_owned()))
}
