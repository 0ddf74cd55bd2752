//! The resolved model the emitter works from.
//!
//! Mental model: one [`Message`] per definition file, holding every struct it defines (root
//! first) with versions already clipped to what Skiff generates. Clipping is what keeps the
//! generated code small and exact: a struct's `range` is the hull of the versions in which it
//! can be reached, a field's `present` set is its `versions` within that range, and fields
//! never present in the range are dropped. Rust names for structs are assigned later by the
//! caller (collisions across messages get the message name as a prefix).

use std::collections::HashMap;

use crate::model::{FieldSpec, MessageSpec, Versions};
use crate::names::field_ident;

/// What a definition file describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Request,
    Response,
    Header,
    /// A KRaft metadata record; `api_key` is its record type.
    Metadata,
    /// Any other internal record (`type: data`).
    Data,
}

#[derive(Debug)]
pub struct Message {
    pub name: String,
    pub kind: Kind,
    pub api_key: Option<i16>,
    /// Versions generated (Skiff's advertised range for APIs).
    pub range: Versions,
    /// The message's flexible versions, clipped to `range`.
    pub flexible: Versions,
    /// Reachable structs; index 0 is the message itself.
    pub structs: Vec<StructDef>,
    /// Path of the definition file relative to the specs directory.
    pub source: String,
}

#[derive(Debug)]
pub struct StructDef {
    pub json_name: String,
    /// The Rust type name (assigned by `codegen::assign_names`).
    pub name: String,
    /// Versions in which this struct can be reached.
    pub range: Versions,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Ty {
    Bool,
    Int8,
    Int16,
    Uint16,
    Int32,
    Uint32,
    Int64,
    Float64,
    Uuid,
    String,
    Bytes,
    Records,
    /// Index into the owning message's `structs`.
    Struct(usize),
    Array(Box<Ty>),
}

impl Ty {
    /// Types that are `Copy` in Rust (passed by value in generated closures).
    pub fn is_copy(&self) -> bool {
        !matches!(
            self,
            Ty::String | Ty::Bytes | Ty::Records | Ty::Struct(_) | Ty::Array(_)
        )
    }

    /// Wire size for fixed-size types.
    pub fn fixed_size(&self) -> Option<usize> {
        match self {
            Ty::Bool | Ty::Int8 => Some(1),
            Ty::Int16 | Ty::Uint16 => Some(2),
            Ty::Int32 | Ty::Uint32 => Some(4),
            Ty::Int64 | Ty::Float64 => Some(8),
            Ty::Uuid => Some(16),
            _ => None,
        }
    }
}

/// A field's default value as declared (or implied by its type).
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    /// `"default": "null"`: the field is `None` by default.
    Null,
    /// The type's empty value: empty bytes/array/records, nil uuid, default struct.
    Empty,
}

#[derive(Debug)]
pub struct Field {
    pub json_name: String,
    pub ident: String,
    pub ty: Ty,
    /// Whether the Rust type is `Option<_>` (nullable in some generated version, or null default).
    pub optional: bool,
    pub present: Versions,
    /// Versions (within `present`) in which the field is a tagged field.
    pub tagged: Versions,
    pub tag: Option<u32>,
    pub nullable: Versions,
    pub ignorable: bool,
    pub default: DefaultValue,
    /// Versions in which strings/bytes/arrays of this field use the compact encoding.
    pub flexible: Versions,
    pub about: Option<String>,
}

impl Field {
    /// Versions in which the field is an ordinary (positional) field.
    pub fn regular(&self) -> Versions {
        // Tagged versions are open-ended in practice; `subtract` rejects the other case.
        self.present.subtract(self.tagged).unwrap_or(Versions::NONE)
    }
}

struct RawStruct<'a> {
    json_name: String,
    fields: &'a [FieldSpec],
    range: Versions,
}

/// Resolves one definition into the model. `range` is what to generate (already intersected
/// with the file's `validVersions`).
pub fn resolve(spec: &MessageSpec, range: Versions, source: &str) -> Result<Message, String> {
    let kind = match spec.kind.as_str() {
        "request" => Kind::Request,
        "response" => Kind::Response,
        "header" => Kind::Header,
        "metadata" => Kind::Metadata,
        "data" => Kind::Data,
        other => return Err(format!("{}: unknown message type {other:?}", spec.name)),
    };
    let flexible = Versions::parse(&spec.flexible_versions)?;
    let mut raw = vec![RawStruct {
        json_name: spec.name.clone(),
        fields: &spec.fields,
        range,
    }];
    let mut index: HashMap<String, usize> = HashMap::new();
    index.insert(spec.name.clone(), 0);
    register(spec, &spec.fields, &mut raw, &mut index)?;
    propagate(spec, 0, range, &mut raw, &index)?;

    // Keep reachable structs only, remapping indices.
    let mut remap = vec![usize::MAX; raw.len()];
    let mut next = 0;
    for (i, r) in raw.iter().enumerate() {
        if !r.range.is_empty() {
            remap[i] = next;
            next += 1;
        }
    }
    let mut structs = Vec::new();
    for r in raw.iter().filter(|r| !r.range.is_empty()) {
        let mut fields = Vec::new();
        for f in r.fields {
            if let Some(field) = resolve_field(spec, f, r.range, flexible, &index, &remap)? {
                fields.push(field);
            }
        }
        structs.push(StructDef {
            json_name: r.json_name.clone(),
            name: r.json_name.clone(),
            range: r.range,
            fields,
        });
    }
    Ok(Message {
        name: spec.name.clone(),
        kind,
        api_key: spec.api_key,
        range,
        flexible: flexible.intersect(range),
        structs,
        source: source.to_string(),
    })
}

fn struct_type_name(ty: &str) -> Option<&str> {
    let t = ty.strip_prefix("[]").unwrap_or(ty);
    match primitive(t) {
        Some(_) => None,
        None => Some(t),
    }
}

fn primitive(t: &str) -> Option<Ty> {
    Some(match t {
        "bool" => Ty::Bool,
        "int8" => Ty::Int8,
        "int16" => Ty::Int16,
        "uint16" => Ty::Uint16,
        "int32" => Ty::Int32,
        "uint32" => Ty::Uint32,
        "int64" => Ty::Int64,
        "float64" => Ty::Float64,
        "uuid" => Ty::Uuid,
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "records" => Ty::Records,
        _ => return None,
    })
}

fn register<'a>(
    spec: &'a MessageSpec,
    fields: &'a [FieldSpec],
    raw: &mut Vec<RawStruct<'a>>,
    index: &mut HashMap<String, usize>,
) -> Result<(), String> {
    for f in fields {
        let Some(name) = struct_type_name(&f.ty) else {
            continue;
        };
        if let Some(inline) = &f.fields {
            if index.contains_key(name) {
                return Err(format!("{}: struct {name} defined twice", spec.name));
            }
            index.insert(name.to_string(), raw.len());
            raw.push(RawStruct {
                json_name: name.to_string(),
                fields: inline,
                range: Versions::NONE,
            });
            register(spec, inline, raw, index)?;
        } else if !index.contains_key(name) {
            let common = spec
                .common_structs
                .iter()
                .find(|c| c.name == name)
                .ok_or_else(|| format!("{}: unknown struct type {name}", spec.name))?;
            index.insert(name.to_string(), raw.len());
            raw.push(RawStruct {
                json_name: name.to_string(),
                fields: &common.fields,
                range: Versions::NONE,
            });
            register(spec, &common.fields, raw, index)?;
        }
    }
    Ok(())
}

fn field_versions(f: &FieldSpec) -> Result<(Versions, Versions), String> {
    let tagged = match &f.tagged_versions {
        Some(t) => Versions::parse(t)?,
        None => Versions::NONE,
    };
    let versions = match &f.versions {
        Some(v) => Versions::parse(v)?,
        None if !tagged.is_empty() => tagged,
        None => return Err(format!("field {} has no versions", f.name)),
    };
    Ok((versions, tagged))
}

/// Widens struct `idx`'s range by `r` and pushes the change down to the structs it contains.
fn propagate(
    spec: &MessageSpec,
    idx: usize,
    r: Versions,
    raw: &mut Vec<RawStruct<'_>>,
    index: &HashMap<String, usize>,
) -> Result<(), String> {
    let widened = if idx == 0 { r } else { raw[idx].range.hull(r) };
    if idx != 0 && widened == raw[idx].range {
        return Ok(());
    }
    raw[idx].range = widened;
    let fields = raw[idx].fields;
    for f in fields {
        let Some(name) = struct_type_name(&f.ty) else {
            continue;
        };
        let child = *index
            .get(name)
            .ok_or_else(|| format!("{}: unknown struct {name}", spec.name))?;
        let (versions, _) = field_versions(f)?;
        let reach = versions.intersect(widened);
        if !reach.is_empty() {
            propagate(spec, child, reach, raw, index)?;
        }
    }
    Ok(())
}

fn resolve_field(
    spec: &MessageSpec,
    f: &FieldSpec,
    struct_range: Versions,
    message_flexible: Versions,
    index: &HashMap<String, usize>,
    remap: &[usize],
) -> Result<Option<Field>, String> {
    let ctx = |e: String| format!("{}.{}: {e}", spec.name, f.name);
    let (versions, tagged) = field_versions(f).map_err(ctx)?;
    let present = versions.intersect(struct_range);
    if present.is_empty() {
        return Ok(None);
    }
    let elem = |t: &str| -> Result<Ty, String> {
        match primitive(t) {
            Some(p) => Ok(p),
            None => {
                let i = index
                    .get(t)
                    .ok_or_else(|| ctx(format!("unknown type {t}")))?;
                Ok(Ty::Struct(remap[*i]))
            }
        }
    };
    let ty = match f.ty.strip_prefix("[]") {
        Some(e) if e.starts_with("[]") => {
            return Err(ctx("nested arrays are not supported".into()));
        }
        Some(e) => Ty::Array(Box::new(elem(e)?)),
        None => elem(&f.ty)?,
    };
    let tagged = tagged.intersect(present);
    let tag = f.tag_number().map_err(ctx)?;
    let nullable = match &f.nullable_versions {
        Some(n) => Versions::parse(n).map_err(ctx)?.intersect(present),
        None => Versions::NONE,
    };
    let flexible = match &f.flexible_versions {
        Some(v) => Versions::parse(v).map_err(ctx)?,
        None => message_flexible,
    };
    if !tagged.is_empty() {
        if tag.is_none() {
            return Err(ctx("tagged versions without a tag".into()));
        }
        if tagged.intersect(flexible) != tagged {
            return Err(ctx("tagged in a non-flexible version".into()));
        }
        if ty == Ty::Records {
            return Err(ctx("records cannot be tagged".into()));
        }
        present.subtract(tagged).map_err(ctx)?;
    }
    if !nullable.is_empty() && ty.fixed_size().is_some() {
        return Err(ctx("a fixed-size type cannot be nullable".into()));
    }
    let default = parse_default(&ty, f.default.as_ref()).map_err(ctx)?;
    let optional = !nullable.is_empty() || default == DefaultValue::Null;
    Ok(Some(Field {
        json_name: f.name.clone(),
        ident: field_ident(&f.name),
        ty,
        optional,
        present,
        tagged,
        tag,
        nullable,
        ignorable: f.ignorable,
        default,
        flexible,
        about: f.about.clone(),
    }))
}

fn parse_int(s: &str) -> Result<i64, String> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let v = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(hex) => i64::from_str_radix(hex, 16),
        None => body.parse::<i64>(),
    }
    .map_err(|e| format!("bad integer default {s:?}: {e}"))?;
    Ok(if neg { -v } else { v })
}

fn parse_default(ty: &Ty, raw: Option<&serde_json::Value>) -> Result<DefaultValue, String> {
    use serde_json::Value;
    // JSON null and a missing default mean "the type's default", as in Kafka's generator.
    let text: Option<String> = match raw {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(other) => return Err(format!("unsupported default {other}")),
    };
    let text = text.as_deref();
    let range = |v: i64, lo: i64, hi: i64| {
        if v < lo || v > hi {
            Err(format!("default {v} out of range"))
        } else {
            Ok(DefaultValue::Int(v))
        }
    };
    match ty {
        Ty::Bool => match text.map(str::to_ascii_lowercase).as_deref() {
            None | Some("false") => Ok(DefaultValue::Bool(false)),
            Some("true") => Ok(DefaultValue::Bool(true)),
            Some(o) => Err(format!("bad bool default {o:?}")),
        },
        Ty::Int8 | Ty::Int16 | Ty::Uint16 | Ty::Int32 | Ty::Uint32 | Ty::Int64 => {
            let v = match text {
                None | Some("") => 0,
                Some(s) => parse_int(s)?,
            };
            match ty {
                Ty::Int8 => range(v, i8::MIN.into(), i8::MAX.into()),
                Ty::Int16 => range(v, i16::MIN.into(), i16::MAX.into()),
                Ty::Uint16 => range(v, 0, u16::MAX.into()),
                Ty::Int32 => range(v, i32::MIN.into(), i32::MAX.into()),
                Ty::Uint32 => range(v, 0, u32::MAX.into()),
                _ => Ok(DefaultValue::Int(v)),
            }
        }
        Ty::Float64 => match text {
            None | Some("") => Ok(DefaultValue::Float(0.0)),
            Some(s) => s
                .parse()
                .map(DefaultValue::Float)
                .map_err(|e| format!("bad float {s:?}: {e}")),
        },
        Ty::String => match text {
            Some("null") => Ok(DefaultValue::Null),
            Some(s) => Ok(DefaultValue::Str(s.to_string())),
            None => Ok(DefaultValue::Str(String::new())),
        },
        Ty::Uuid => match text {
            None | Some("") => Ok(DefaultValue::Empty),
            Some(s) => Err(format!("non-empty uuid default {s:?} is not supported")),
        },
        Ty::Records => Ok(DefaultValue::Null),
        Ty::Bytes | Ty::Struct(_) | Ty::Array(_) => match text {
            Some("null") => Ok(DefaultValue::Null),
            None | Some("") => Ok(DefaultValue::Empty),
            Some(s) => Err(format!(
                "invalid default {s:?} for a bytes/struct/array field"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_parse_like_kafka() {
        let d = |ty: Ty, v: serde_json::Value| parse_default(&ty, Some(&v)).unwrap();
        assert_eq!(
            d(Ty::Int32, json!("0x7fffffff")),
            DefaultValue::Int(0x7fff_ffff)
        );
        assert_eq!(
            d(Ty::Int32, json!("-2147483648")),
            DefaultValue::Int(-2_147_483_648)
        );
        assert_eq!(d(Ty::Int64, json!(-1)), DefaultValue::Int(-1));
        assert_eq!(d(Ty::Int8, json!("3")), DefaultValue::Int(3));
        assert_eq!(d(Ty::Bool, json!(false)), DefaultValue::Bool(false));
        assert_eq!(d(Ty::Bool, json!("true")), DefaultValue::Bool(true));
        assert_eq!(d(Ty::String, json!("null")), DefaultValue::Null);
        assert_eq!(d(Ty::String, json!("")), DefaultValue::Str(String::new()));
        assert_eq!(
            d(Ty::Array(Box::new(Ty::Int32)), json!("null")),
            DefaultValue::Null
        );
        // JSON null means "the type's default", as in Kafka's generator (not "null").
        assert_eq!(
            d(Ty::Struct(0), serde_json::Value::Null),
            DefaultValue::Empty
        );
        assert_eq!(
            parse_default(&Ty::Records, None).unwrap(),
            DefaultValue::Null
        );
        assert!(parse_default(&Ty::Int8, Some(&json!("300"))).is_err());
        assert!(parse_default(&Ty::Bytes, Some(&json!("x"))).is_err());
    }
}
