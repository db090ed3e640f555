//! ProtoJSON leniency helpers shared by the protocol types: `null` means absent, enums
//! arrive as names or integers, timestamps as RFC 3339 with any fraction.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// `null` deserialises to the field's default, as ProtoJSON treats it as "absent".
pub fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Empty `google.protobuf.Struct` values are defaults, so they are never printed.
pub fn map_is_empty(m: &Option<Map<String, Value>>) -> bool {
    m.as_ref().is_none_or(Map::is_empty)
}

pub fn is_false(b: &bool) -> bool {
    !*b
}

/// Declares a proto enum with its wire names and numbers: printed as the name, read
/// from the name or the number.
macro_rules! proto_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident = $num:literal => $wire:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            #[default]
            $($variant),+
        }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            pub fn number(self) -> i32 {
                match self { $($name::$variant => $num),+ }
            }

            pub fn from_number(n: i64) -> Option<Self> {
                match n { $($num => Some($name::$variant),)+ _ => None }
            }

            pub fn from_name(s: &str) -> Option<Self> {
                match s { $($wire => Some($name::$variant),)+ _ => None }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::Error;
                match serde_json::Value::deserialize(d)? {
                    serde_json::Value::String(s) => $name::from_name(&s).ok_or_else(|| {
                        D::Error::custom(format!("unknown {} value {:?}", stringify!($name), s))
                    }),
                    serde_json::Value::Number(n) => n
                        .as_i64()
                        .and_then($name::from_number)
                        .ok_or_else(|| D::Error::custom(format!("unknown {} number {}", stringify!($name), n))),
                    other => Err(D::Error::custom(format!(
                        "{} must be a name or a number, not {}", stringify!($name), other
                    ))),
                }
            }
        }
    };
}
pub(crate) use proto_enum;
