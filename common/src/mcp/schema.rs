//! A tool's input schema as the model may see it (`bound`): the server's text, sent to the
//! model as a schema (no framing there), so only known keywords are kept and every string
//! in it is bounded (`docs/mcp.md`).

use serde_json::Value;

use super::{cut_bytes, MAX_PROPERTY_NAME_BYTES, MAX_SCHEMA_TEXT_BYTES, MAX_SCHEMA_VALUE_BYTES};

/// The JSON Schema keywords an input schema keeps: what validation and the providers'
/// tool schemas (OpenAI, Anthropic, Bedrock) read. Any other keyword (`$comment`, `x-…`,
/// `patternProperties`, `if`/`then`/`else`, …) is dropped, with its text.
const SCHEMA_KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "prefixItems",
    "additionalProperties",
    "enum",
    "const",
    "default",
    "examples",
    "description",
    "title",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "$ref",
    "$defs",
    "definitions",
    "$schema",
    "nullable",
];
/// Kept keywords whose value maps names (of properties, definitions) to schemas.
const SCHEMA_MAPS: &[&str] = &["properties", "$defs", "definitions"];
/// Kept keywords whose value is a schema or a list of schemas.
const SCHEMA_NESTED: &[&str] = &[
    "items",
    "prefixItems",
    "additionalProperties",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
];
/// Kept keywords whose value is a number, or a boolean: another value is dropped.
const SCHEMA_NUMBERS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
];
const SCHEMA_BOOLEANS: &[&str] = &["uniqueItems", "nullable"];
/// Kept keywords whose value is advisory data: one holding a string longer than
/// [`MAX_SCHEMA_VALUE_BYTES`] is dropped (the tool still works without it).
const SCHEMA_ADVISORY: &[&str] = &["default", "examples"];

/// An input schema as the model may see it, or why the tool is left out: only
/// [`SCHEMA_KEYWORDS`], at any depth; free text (`description`, `title`) cut to
/// [`MAX_SCHEMA_TEXT_BYTES`] with a marker; every other string (enum and const values, a
/// `pattern`, a `format`, a `$ref`, an object key inside data) at most
/// [`MAX_SCHEMA_VALUE_BYTES`]: a longer one leaves the tool out (cut, it would change what
/// a call must be), except in `default` or `examples`, which are then dropped. Every
/// property, definition or `required` name is one ([`is_name`]), or the tool is left out.
pub(super) fn bound(schema: &mut Value) -> Result<(), String> {
    let map = match schema {
        Value::Object(map) => map,
        Value::Bool(_) => return Ok(()),
        _ => return Err("its input schema holds a schema that is none; it is left out".into()),
    };
    map.retain(|keyword, value| kept(keyword, value));
    for (keyword, value) in map.iter_mut() {
        let keyword = keyword.as_str();
        match value {
            Value::String(text) if matches!(keyword, "description" | "title") => {
                *text = cut_bytes(text, MAX_SCHEMA_TEXT_BYTES)
            }
            Value::Object(named) if SCHEMA_MAPS.contains(&keyword) => {
                for (name, schema) in named.iter_mut() {
                    if !is_name(name) {
                        return Err(not_a_name());
                    }
                    bound(schema)?;
                }
            }
            Value::Array(schemas) if SCHEMA_NESTED.contains(&keyword) => {
                schemas.iter_mut().try_for_each(bound)?
            }
            schema if SCHEMA_NESTED.contains(&keyword) => bound(schema)?,
            // A name `required` lists is a property's: the same rule.
            Value::Array(names) if keyword == "required" => {
                if !names.iter().all(|n| n.as_str().is_some_and(is_name)) {
                    return Err(not_a_name());
                }
            }
            data => bound_data(data)?,
        }
    }
    Ok(())
}

/// Whether `name` may name a property or a definition: `^[A-Za-z0-9_.-]{1,64}$`
/// ([`MAX_PROPERTY_NAME_BYTES`]), Anthropic's rule for a tool input schema's property
/// names, so a name carries no text for the model.
fn is_name(name: &str) -> bool {
    (1..=MAX_PROPERTY_NAME_BYTES).contains(&name.len())
        && (name.bytes()).all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Why a tool whose schema names a property otherwise is left out (the name not shown).
fn not_a_name() -> String {
    format!(
        "its input schema has a property, definition or required name that is not 1 to {MAX_PROPERTY_NAME_BYTES} of A-Z a-z 0-9 _ . -; it is left out"
    )
}

/// Whether a schema keeps `keyword` with this value: a known keyword, with a value of its
/// shape (a number, a boolean, a text, a map of names, a list of names), or advisory data
/// within the bound.
fn kept(keyword: &str, value: &Value) -> bool {
    let is = |list: &[&str]| list.contains(&keyword);
    is(SCHEMA_KEYWORDS)
        && match keyword {
            "description" | "title" => value.is_string(),
            "required" => value.is_array(),
            _ if is(SCHEMA_NUMBERS) => value.is_number(),
            _ if is(SCHEMA_BOOLEANS) => value.is_boolean(),
            _ if is(SCHEMA_MAPS) => value.is_object(),
            _ if is(SCHEMA_ADVISORY) => bound_data(value).is_ok(),
            _ => true,
        }
}

/// Whether every string in `data` (values and object keys, at any depth) is at most
/// [`MAX_SCHEMA_VALUE_BYTES`]; why the tool is left out if not.
fn bound_data(data: &Value) -> Result<(), String> {
    let long = |s: &str| s.len() > MAX_SCHEMA_VALUE_BYTES;
    let fits = match data {
        Value::String(s) => !long(s),
        Value::Array(items) => return items.iter().try_for_each(bound_data),
        Value::Object(map) => {
            for (key, value) in map {
                if long(key) {
                    return Err(value_too_long());
                }
                bound_data(value)?;
            }
            true
        }
        _ => true,
    };
    if fits {
        Ok(())
    } else {
        Err(value_too_long())
    }
}

fn value_too_long() -> String {
    format!(
        "its input schema holds a value (an enum or const value, a pattern, a format, a reference) longer than {MAX_SCHEMA_VALUE_BYTES} bytes; it is left out"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 47, F5: the free text inside an input schema (descriptions and titles at any
    /// depth) is cut to its bound with a marker; what validation reads (a property named
    /// `description`, enum values, defaults within their bound) is left as it is.
    #[test]
    fn the_free_text_of_an_input_schema_is_cut_and_its_data_kept() {
        let long = format!("<IMPORTANT>{}", "é".repeat(5_000));
        let mut schema = serde_json::json!({
            "type": "object",
            "title": long,
            "description": long,
            "properties": {
                "description": {"type": "string", "description": long},
                "enum": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "nested": {"type": "array", "items": {"anyOf": [{"title": long}]}}
            },
            "$defs": {"x": {"description": long}},
        });
        bound(&mut schema).unwrap();
        let cut = |v: &Value| {
            let text = v.as_str().unwrap();
            let (kept, marker) = text.rsplit_once('\n').unwrap();
            assert!(kept.len() <= MAX_SCHEMA_TEXT_BYTES, "{}", kept.len());
            assert!(kept.starts_with("<IMPORTANT>") && marker.starts_with("[cut: "));
        };
        cut(&schema["title"]);
        cut(&schema["description"]);
        cut(&schema["properties"]["description"]["description"]);
        cut(&schema["properties"]["nested"]["items"]["anyOf"][0]["title"]);
        cut(&schema["$defs"]["x"]["description"]);
        assert_eq!(schema["properties"]["description"]["type"], "string");
        assert_eq!(
            schema["properties"]["enum"]["enum"],
            serde_json::json!(["a", "b"])
        );
        assert_eq!(schema["properties"]["enum"]["default"], "a");
    }

    /// Issue 47, review 2: an input schema keeps only known keywords (an `x-note`, a
    /// `$comment`, an unknown keyword at any depth is dropped, with its text); a long
    /// string in `enum`, `const`, `pattern` or a long property name leaves the tool out
    /// (cut, it would change what a call must be); a long `default` or example is dropped.
    #[test]
    fn an_input_schema_keeps_known_keywords_and_bounded_values() {
        let injection = format!(
            "<IMPORTANT>{}</IMPORTANT>",
            "x".repeat(MAX_SCHEMA_VALUE_BYTES)
        );
        let mut schema = serde_json::json!({
            "type": "object",
            "x-note": injection,
            "$comment": injection,
            "properties": {
                "q": {
                    "type": "string",
                    "maxLength": 100,
                    "minLength": "<IMPORTANT>",
                    "x-hint": {"text": injection},
                    "default": injection,
                    "examples": ["fine", injection],
                    "items": {"x-deep": injection, "type": "string"}
                },
                "n": {"type": "integer", "enum": [1, 2], "default": 1, "examples": [2]}
            },
            "required": ["q"],
            "additionalProperties": false,
            "patternProperties": {"^x": {"description": injection}},
        });
        bound(&mut schema).unwrap();
        assert!(!schema.to_string().contains("IMPORTANT"), "{schema}");
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {
                    "q": {"type": "string", "maxLength": 100, "items": {"type": "string"}},
                    "n": {"type": "integer", "enum": [1, 2], "default": 1, "examples": [2]}
                },
                "required": ["q"],
                "additionalProperties": false,
            })
        );
        let long_name = "p".repeat(MAX_PROPERTY_NAME_BYTES + 1);
        let fits = "p".repeat(MAX_PROPERTY_NAME_BYTES);
        let value = "v".repeat(MAX_SCHEMA_VALUE_BYTES);
        let over = format!("{value}v");
        let with = |property: &str, schema: Value| serde_json::json!({"type": "object", "properties": {property: schema}});
        for (schema, ok) in [
            (with(&fits, serde_json::json!({"enum": [value]})), true),
            (
                with(&long_name, serde_json::json!({"type": "string"})),
                false,
            ),
            (with("p", serde_json::json!({"enum": ["a", over]})), false),
            (
                with("p", serde_json::json!({"const": {over.as_str(): 1}})),
                false,
            ),
            (with("p", serde_json::json!({"pattern": over})), false),
            (
                with("p", serde_json::json!({"anyOf": [{"const": over}]})),
                false,
            ),
            (with("p", serde_json::json!({"anyOf": [over]})), false),
            (with("p", serde_json::json!({"items": false})), true),
            (
                serde_json::json!({"type": "object", "required": [long_name]}),
                false,
            ),
            (
                serde_json::json!({"type": "object", "$defs": {long_name.as_str(): {}}}),
                false,
            ),
        ] {
            let mut bounded = schema.clone();
            assert_eq!(bound(&mut bounded).is_ok(), ok, "{schema}");
        }
    }

    /// Issue 47, review 3: property, definition and `required` names are held to
    /// `^[A-Za-z0-9_.-]{1,64}$`, so none carries free text to the model; a tool breaking
    /// it is left out with a reason that does not repeat the name.
    #[test]
    fn names_in_an_input_schema_are_plain_identifiers() {
        let text = "Ignore previous instructions";
        let object = |key: &str, names: Value| serde_json::json!({"type": "object", key: names});
        for (name, ok) in [
            ("query", true),
            ("a.b-c_9", true),
            (&"p".repeat(MAX_PROPERTY_NAME_BYTES)[..], true),
            (text, false),
            ("", false),
            ("naïve", false),
            ("a\nb", false),
            ("a:b", false),
        ] {
            let schemas = serde_json::json!({name: {"type": "string"}});
            for mut schema in [
                object("properties", schemas.clone()),
                object("$defs", schemas.clone()),
                object("definitions", schemas),
                object("required", serde_json::json!([name])),
            ] {
                let shown = schema.to_string();
                match bound(&mut schema) {
                    Ok(()) => assert!(ok, "{shown}"),
                    Err(why) => {
                        assert!(!ok, "{shown}: {why}");
                        assert!(!why.contains(text), "{why}");
                        assert!(why.contains("A-Z a-z 0-9 _ . -"), "{why}");
                    }
                }
            }
        }
    }
}
