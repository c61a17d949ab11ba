//! Reading a payload as JSON the way SPEC 5.2 reads a replay line: an object that names a key
//! twice is refused, not read as its last value.
//!
//! serde_json takes `{"id":"d3","id":"d4"}` as `{"id":"d4"}` when read into a map or a
//! `Value` (a derived struct refuses it, as "duplicate field"); which of the two values a
//! sender meant cannot be known, and two readers of the same payload that keep different
//! ones would disagree about the job. So the text is first walked once, object by object, and
//! any repeated key is an error naming it, before it is read into the caller's type.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// `text` read as JSON into `T`, refusing any object in it (at any depth) that names a key
/// twice. The error is serde_json's, with its line and column.
pub fn from_str<T: DeserializeOwned>(text: &str) -> serde_json::Result<T> {
    let mut walk = serde_json::Deserializer::from_str(text);
    NoRepeatedKey.deserialize(&mut walk)?;
    walk.end()?;
    serde_json::from_str(text)
}

/// A walk over one JSON value that keeps nothing but each object's keys.
struct NoRepeatedKey;

impl<'de> DeserializeSeed<'de> for NoRepeatedKey {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NoRepeatedKey {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_i128<E>(self, _: i128) -> Result<(), E> {
        Ok(())
    }
    fn visit_u128<E>(self, _: u128) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while items.next_element_seed(NoRepeatedKey)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut entries: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(key) = entries.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(de::Error::custom(format_args!("the key {key:?} appears twice in one object")));
            }
            entries.next_value_seed(NoRepeatedKey)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_key_named_twice_is_refused_at_any_depth() {
        let twice = from_str::<serde_json::Value>(r#"{"id":"d3","id":"d4","order":7}"#).unwrap_err();
        assert!(twice.to_string().starts_with(r#"the key "id" appears twice in one object"#), "{twice}");
        let deep = from_str::<serde_json::Value>(r#"{"a":[1,{"b":{"c":1,"c":2}}]}"#).unwrap_err();
        assert!(deep.to_string().contains(r#""c" appears twice"#), "{deep}");
        // Written differently, it is the same key: JSON compares keys after their escapes.
        let escaped = from_str::<BTreeMap<String, u8>>(r#"{"id":1,"\u0069d":2}"#).unwrap_err();
        assert!(escaped.to_string().contains(r#""id" appears twice"#), "{escaped}");
    }

    #[test]
    fn everything_else_reads_as_serde_json_reads_it() {
        let text = r#"{"id":"d3","n":-1.5e3,"big":18446744073709551615,"list":[{"id":1},{"id":2}],"none":null,"t":true}"#;
        let value: serde_json::Value = from_str(text).expect("read");
        assert_eq!(value, serde_json::from_str::<serde_json::Value>(text).expect("serde_json"));
        assert_eq!(from_str::<Vec<u8>>("[1, 2]").expect("read"), [1, 2]);
        assert!(from_str::<serde_json::Value>(r#"{"a":1} x"#).is_err(), "trailing text");
        assert!(from_str::<serde_json::Value>(r#"{"a":"#).is_err(), "cut short");
        assert!(from_str::<u8>("256").is_err(), "the type's own refusals");
    }
}
