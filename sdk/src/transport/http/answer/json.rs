//! Reading the API's JSON: fields of the expected type, or a [`Malformed`] answer naming the
//! field; sizes read exactly from upstream's strings.

use rill_core::primitives::Name;
use serde_json::Value;

/// Why an answer could not be read: the server is not speaking upstream's API.
#[derive(Debug)]
pub struct Malformed(pub String);

pub(super) type Result<T> = std::result::Result<T, Malformed>;

pub(super) fn field<'a>(value: &'a Value, key: &str) -> Result<&'a Value> {
    value
        .get(key)
        .ok_or_else(|| Malformed(format!("the answer has no `{key}`")))
}

pub(super) fn u64_of(value: &Value, key: &str) -> Result<u64> {
    let found = field(value, key)?;
    found
        .as_u64()
        .or_else(|| found.as_str().and_then(|text| text.parse().ok()))
        .ok_or_else(|| Malformed(format!("`{key}` is not a number: {found}")))
}

pub(super) fn u32_of(value: &Value, key: &str) -> Result<u32> {
    u32::try_from(u64_of(value, key)?).map_err(|_| Malformed(format!("`{key}` is out of range")))
}

pub(super) fn str_of<'a>(value: &'a Value, key: &str) -> Result<&'a str> {
    let found = field(value, key)?;
    found
        .as_str()
        .ok_or_else(|| Malformed(format!("`{key}` is not a string: {found}")))
}

pub(super) fn name_of(value: &Value, key: &str) -> Result<Name> {
    Name::new(str_of(value, key)?).map_err(|error| Malformed(format!("`{key}`: {error}")))
}

pub(super) fn bool_of(value: &Value, key: &str) -> Result<bool> {
    field(value, key)?
        .as_bool()
        .ok_or_else(|| Malformed(format!("`{key}` is not a bool")))
}

pub(super) fn list<'a>(value: &'a Value, key: &str) -> Result<&'a [Value]> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        Some(other) => Err(Malformed(format!("`{key}` is not a list: {other}"))),
    }
}

pub(super) fn array(value: &Value) -> Result<&[Value]> {
    value
        .as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| Malformed("the answer is not a list".into()))
}

/// A size of data: a number of bytes, or upstream's text ("1.234 KB", "3 MiB", "0 B"), read
/// exactly (no floating point).
pub fn byte_size(value: &Value, key: &str) -> Result<u64> {
    let found = field(value, key)?;
    if let Some(bytes) = found.as_u64() {
        return Ok(bytes);
    }
    let text = found
        .as_str()
        .ok_or_else(|| Malformed(format!("`{key}` is not a size: {found}")))?;
    rill_core::units::parse_size(text)
        .map_err(|error| Malformed(format!("`{key}` is not a size: {error}")))
}
