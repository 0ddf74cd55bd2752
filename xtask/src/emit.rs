//! Code emission for one struct: type definition, `Default`, and `read`/`write`/`size`.
//!
//! Mental model: every decision about versions is made here, at generation time, against the
//! struct's reachable range, so the generated code contains only the comparisons that matter
//! (`version >= 12`) and none that are always true or false. Expressions are built as strings
//! and formatted afterwards by rustfmt. The runtime helpers called (`wire::read_string`, ...)
//! live in `crates/protocol/src/wire/`; see their docs for the exact wire rules.

use std::fmt::Write as _;

use crate::ir::{DefaultValue, Field, Message, StructDef, Ty};
use crate::model::Versions;

/// A version condition, simplified against the versions in which the code can run.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond {
    Always,
    Never,
    Expr(String),
}

impl Cond {
    /// `set` as seen from code that only runs for versions in `within`.
    pub fn of(set: Versions, within: Versions) -> Cond {
        let s = set.intersect(within);
        if s.is_empty() {
            Cond::Never
        } else if s == within {
            Cond::Always
        } else if s.lo == s.hi {
            Cond::Expr(format!("version == {}", s.lo))
        } else if s.lo == within.lo {
            Cond::Expr(format!("version <= {}", s.hi))
        } else if s.hi == within.hi {
            Cond::Expr(format!("version >= {}", s.lo))
        } else {
            Cond::Expr(format!("({}..={}).contains(&version)", s.lo, s.hi))
        }
    }

    /// As a boolean expression.
    pub fn expr(&self) -> String {
        match self {
            Cond::Always => "true".into(),
            Cond::Never => "false".into(),
            Cond::Expr(e) => e.clone(),
        }
    }

    /// The negation, as a boolean expression without `!(...)` where avoidable.
    pub fn negated(&self) -> String {
        match self {
            Cond::Always => "false".into(),
            Cond::Never => "true".into(),
            Cond::Expr(e) => {
                if let Some(v) = e.strip_prefix("version >= ") {
                    format!("version < {v}")
                } else if let Some(v) = e.strip_prefix("version <= ") {
                    format!("version > {v}")
                } else if let Some(v) = e.strip_prefix("version == ") {
                    format!("version != {v}")
                } else {
                    format!("!{e}")
                }
            }
        }
    }

    /// `body` guarded by this condition (nothing when never true).
    pub fn guard(&self, body: &str) -> String {
        match self {
            Cond::Always => format!("{body}\n"),
            Cond::Never => String::new(),
            Cond::Expr(e) => format!("if {e} {{ {body} }}\n"),
        }
    }
}

/// Formats a version range for docs: `4-17`, `12+` is shown clipped, e.g. `12-17`.
pub fn versions_doc(v: Versions) -> String {
    if v.is_empty() {
        "none".into()
    } else if v.lo == v.hi {
        v.lo.to_string()
    } else {
        format!("{}-{}", v.lo, v.hi)
    }
}

pub fn rust_type(msg: &Message, ty: &Ty) -> String {
    match ty {
        Ty::Bool => "bool".into(),
        Ty::Int8 => "i8".into(),
        Ty::Int16 => "i16".into(),
        Ty::Uint16 => "u16".into(),
        Ty::Int32 => "i32".into(),
        Ty::Uint32 => "u32".into(),
        Ty::Int64 => "i64".into(),
        Ty::Float64 => "f64".into(),
        Ty::Uuid => "Uuid".into(),
        Ty::String => "String".into(),
        Ty::Bytes => "Bytes".into(),
        Ty::Records => "Records".into(),
        Ty::Struct(i) => msg.structs[*i].name.clone(),
        Ty::Array(e) => format!("Vec<{}>", rust_type(msg, e)),
    }
}

pub fn field_type(msg: &Message, f: &Field) -> String {
    let t = rust_type(msg, &f.ty);
    if f.optional {
        format!("Option<{t}>")
    } else {
        t
    }
}

fn int_literal(ty: &Ty, v: i64) -> String {
    match ty {
        Ty::Int32 if v == i64::from(i32::MIN) => "i32::MIN".into(),
        Ty::Int32 if v == i64::from(i32::MAX) => "i32::MAX".into(),
        Ty::Int64 if v == i64::MIN => "i64::MIN".into(),
        Ty::Int64 if v == i64::MAX => "i64::MAX".into(),
        _ => v.to_string(),
    }
}

/// The non-optional default value of the field's type.
fn inner_default(msg: &Message, f: &Field) -> String {
    match (&f.default, &f.ty) {
        (DefaultValue::Int(v), ty) => int_literal(ty, *v),
        (DefaultValue::Float(x), _) => format!("{x:?}"),
        (DefaultValue::Bool(b), _) => b.to_string(),
        (DefaultValue::Str(s), _) if s.is_empty() => "String::new()".into(),
        (DefaultValue::Str(s), _) => format!("String::from({s:?})"),
        (_, Ty::Uuid) => "Uuid::nil()".into(),
        (_, Ty::Bytes) => "Bytes::new()".into(),
        (_, Ty::Records) => "Records::default()".into(),
        (_, Ty::Struct(i)) => format!("{}::default()", msg.structs[*i].name),
        (_, Ty::Array(_)) => "Vec::new()".into(),
        (_, Ty::String) => "String::new()".into(),
        (_, Ty::Bool) => "false".into(),
        (_, Ty::Float64) => "0.0".into(),
        _ => "0".into(),
    }
}

pub fn default_expr(msg: &Message, f: &Field) -> String {
    match (&f.default, f.optional) {
        (DefaultValue::Null, _) => "None".into(),
        (_, true) => format!("Some({})", inner_default(msg, f)),
        (_, false) => inner_default(msg, f),
    }
}

/// A boolean expression: the field (at `place`) differs from its default.
pub fn non_default(msg: &Message, f: &Field, place: &str) -> String {
    if f.optional {
        return match f.default {
            DefaultValue::Null => format!("{place}.is_some()"),
            _ => format!("{place} != {}", default_expr(msg, f)),
        };
    }
    match (&f.ty, &f.default) {
        (Ty::Bool, DefaultValue::Bool(true)) => format!("!{place}"),
        (Ty::Bool, _) => place.to_string(),
        (Ty::Uuid, _) => format!("!{place}.is_nil()"),
        (Ty::String, DefaultValue::Str(s)) if !s.is_empty() => format!("{place} != {s:?}"),
        (Ty::String | Ty::Bytes | Ty::Records | Ty::Array(_), _) => format!("!{place}.is_empty()"),
        (Ty::Struct(i), _) => format!("{place} != {}::default()", msg.structs[*i].name),
        _ => format!("{place} != {}", inner_default(msg, f)),
    }
}

fn fixed_reader(ty: &Ty) -> &'static str {
    match ty {
        Ty::Bool => "wire::read_bool",
        Ty::Int8 => "wire::read_i8",
        Ty::Int16 => "wire::read_i16",
        Ty::Uint16 => "wire::read_u16",
        Ty::Int32 => "wire::read_i32",
        Ty::Uint32 => "wire::read_u32",
        Ty::Int64 => "wire::read_i64",
        Ty::Float64 => "wire::read_f64",
        Ty::Uuid => "wire::read_uuid",
        _ => unreachable!("not a fixed-size type"),
    }
}

fn fixed_writer(ty: &Ty) -> &'static str {
    match ty {
        Ty::Bool => "put_bool",
        Ty::Int8 => "put_int8",
        Ty::Int16 => "put_int16",
        Ty::Uint16 => "put_uint16",
        Ty::Int32 => "put_int32",
        Ty::Uint32 => "put_uint32",
        Ty::Int64 => "put_int64",
        Ty::Float64 => "put_float64",
        Ty::Uuid => "put_uuid",
        _ => unreachable!("not a fixed-size type"),
    }
}

/// How one use of a field is encoded: in which versions, compact or not, tagged or not.
struct Site<'a> {
    msg: &'a Message,
    f: &'a Field,
    label: String,
    /// Compact (flexible) encoding, as an expression.
    compact: String,
    /// Nullable in the running version.
    nullable: Cond,
    tagged: bool,
}

impl<'a> Site<'a> {
    fn new(msg: &'a Message, st: &StructDef, f: &'a Field, within: Versions, tagged: bool) -> Self {
        Site {
            msg,
            f,
            label: format!("\"{}.{}\"", st.name, f.ident),
            compact: Cond::of(f.flexible, within).expr(),
            nullable: Cond::of(f.nullable, within),
            tagged,
        }
    }

    /// Reader for one array element: a function path or closure returning `Result<T, _>`.
    fn elem_reader(&self, ty: &Ty) -> String {
        let (c, l) = (&self.compact, &self.label);
        match ty {
            Ty::String => format!("|b| wire::read_string(b, {c}, {l})"),
            Ty::Bytes => format!("|b| wire::read_bytes(b, {c}, {l})"),
            Ty::Records => format!("|b| wire::read_records(b, {c}, {l})"),
            Ty::Struct(i) => format!("|b| {}::read(b, version)", self.msg.structs[*i].name),
            Ty::Array(_) => unreachable!("nested arrays are rejected by the resolver"),
            fixed => fixed_reader(fixed).to_string(),
        }
    }

    /// An expression reading the field's value from `buf` (already `?`-unwrapped).
    fn read_expr(&self, buf: &str) -> String {
        let (c, l, n) = (&self.compact, &self.label, self.nullable.expr());
        let f = self.f;
        match (&f.ty, f.optional) {
            (Ty::String, false) => format!("wire::read_string({buf}, {c}, {l})?"),
            (Ty::String, true) => format!("wire::read_nullable_string({buf}, {c}, {n}, {l})?"),
            (Ty::Bytes, false) => format!("wire::read_bytes({buf}, {c}, {l})?"),
            (Ty::Bytes, true) => format!("wire::read_nullable_bytes({buf}, {c}, {n}, {l})?"),
            (Ty::Records, false) => format!("wire::read_records({buf}, {c}, {l})?"),
            (Ty::Records, true) => format!("wire::read_nullable_records({buf}, {c}, {n}, {l})?"),
            (Ty::Struct(i), false) => {
                format!("{}::read({buf}, version)?", self.msg.structs[*i].name)
            }
            (Ty::Struct(i), true) => {
                let name = &self.msg.structs[*i].name;
                let marker = if self.tagged {
                    format!("wire::read_tagged_struct_marker({buf})?")
                } else {
                    format!("wire::read_struct_marker({buf})?")
                };
                let present = match &self.nullable {
                    Cond::Never => "true".to_string(),
                    Cond::Always => marker,
                    Cond::Expr(_) => format!("{} || {marker}", self.nullable.negated()),
                };
                if present == "true" {
                    format!("Some({name}::read({buf}, version)?)")
                } else {
                    format!(
                        "if {present} {{ Some({name}::read({buf}, version)?) }} else {{ None }}"
                    )
                }
            }
            (Ty::Array(e), false) => {
                format!(
                    "wire::read_array({buf}, {c}, {l}, {})?",
                    self.elem_reader(e)
                )
            }
            (Ty::Array(e), true) => {
                format!(
                    "wire::read_nullable_array({buf}, {c}, {n}, {l}, {})?",
                    self.elem_reader(e)
                )
            }
            (fixed, _) => format!("{}({buf})?", fixed_reader(fixed)),
        }
    }

    fn elem_writer(&self, ty: &Ty) -> String {
        let (c, l) = (&self.compact, &self.label);
        match ty {
            Ty::String => format!("|out, e| wire::write_string(out, e, {c}, {l})"),
            Ty::Bytes => format!("|out, e| wire::write_bytes(out, e, {c}, {l})"),
            Ty::Records => format!("|out, e| wire::write_records(out, e, {c}, {l})"),
            Ty::Struct(_) => "|out, e| e.write(out, version)".into(),
            Ty::Array(_) => unreachable!("nested arrays are rejected by the resolver"),
            fixed => format!("|out, &e| {{ out.{}(e); Ok(()) }}", fixed_writer(fixed)),
        }
    }

    /// Statements writing the field at `self.<ident>`.
    fn write_stmt(&self) -> String {
        let (c, l, n) = (&self.compact, &self.label, self.nullable.expr());
        let p = format!("self.{}", self.f.ident);
        match (&self.f.ty, self.f.optional) {
            (Ty::String, false) => format!("wire::write_string(out, &{p}, {c}, {l})?;"),
            (Ty::String, true) => {
                format!("wire::write_nullable_string(out, {p}.as_deref(), {c}, {n}, {l})?;")
            }
            (Ty::Bytes, false) => format!("wire::write_bytes(out, &{p}, {c}, {l})?;"),
            (Ty::Bytes, true) => {
                format!("wire::write_nullable_bytes(out, {p}.as_ref(), {c}, {n}, {l})?;")
            }
            (Ty::Records, false) => format!("wire::write_records(out, &{p}, {c}, {l})?;"),
            (Ty::Records, true) => {
                format!("wire::write_nullable_records(out, {p}.as_ref(), {c}, {n}, {l})?;")
            }
            (Ty::Struct(_), false) => format!("{p}.write(out, version)?;"),
            (Ty::Struct(_), true) => {
                let (present_marker, null_marker) = if self.tagged {
                    ("out.put_uvarint(1);", "out.put_uvarint(0)")
                } else {
                    ("out.put_int8(1);", "out.put_int8(-1)")
                };
                let null_err = format!("return Err(EncodeError::NullNotAllowed {{ field: {l} }})");
                let (some_marker, none_arms) = match &self.nullable {
                    Cond::Always => (
                        present_marker.to_string(),
                        format!("None => {null_marker},"),
                    ),
                    Cond::Never => (String::new(), format!("None => {null_err},")),
                    Cond::Expr(e) => (
                        format!("if {e} {{ {present_marker} }}"),
                        format!("None if {e} => {null_marker}, None => {null_err},"),
                    ),
                };
                format!(
                    "match &{p} {{ Some(v) => {{ {some_marker} v.write(out, version)?; }} {none_arms} }}"
                )
            }
            (Ty::Array(e), false) => {
                format!(
                    "wire::write_array(out, &{p}, {c}, {l}, {})?;",
                    self.elem_writer(e)
                )
            }
            (Ty::Array(e), true) => format!(
                "wire::write_nullable_array(out, {p}.as_deref(), {c}, {n}, {l}, {})?;",
                self.elem_writer(e)
            ),
            (fixed, _) => format!("out.{}({p});", fixed_writer(fixed)),
        }
    }

    /// A `usize` expression: the encoded size of the field at `self.<ident>`.
    fn size_expr(&self) -> String {
        let c = &self.compact;
        let p = format!("self.{}", self.f.ident);
        let elem_size = |ty: &Ty| -> String {
            match ty {
                Ty::String => format!("|e| wire::string_size(e, {c})"),
                Ty::Bytes => format!("|e| wire::bytes_size(e.len(), {c})"),
                Ty::Records => format!("|e| wire::bytes_size(e.len(), {c})"),
                Ty::Struct(_) => "|e| e.size(version)".into(),
                _ => unreachable!("fixed-size elements use array_size_fixed"),
            }
        };
        match (&self.f.ty, self.f.optional) {
            (Ty::String, false) => format!("wire::string_size(&{p}, {c})"),
            (Ty::String, true) => format!("wire::nullable_string_size({p}.as_deref(), {c})"),
            (Ty::Bytes, false) | (Ty::Records, false) => {
                format!("wire::bytes_size({p}.len(), {c})")
            }
            (Ty::Bytes, true) => {
                format!("wire::nullable_bytes_size({p}.as_ref().map(Bytes::len), {c})")
            }
            (Ty::Records, true) => {
                format!("wire::nullable_bytes_size({p}.as_ref().map(Records::len), {c})")
            }
            (Ty::Struct(_), false) => format!("{p}.size(version)"),
            (Ty::Struct(_), true) => {
                let marker = if self.tagged {
                    "1".to_string()
                } else {
                    match &self.nullable {
                        Cond::Always => "1".into(),
                        Cond::Never => "0".into(),
                        Cond::Expr(e) => format!("usize::from({e})"),
                    }
                };
                if marker == "0" {
                    format!("{p}.as_ref().map_or(0, |v| v.size(version))")
                } else {
                    format!("{p}.as_ref().map_or({marker}, |v| {marker} + v.size(version))")
                }
            }
            (Ty::Array(e), opt) => match (e.fixed_size(), opt) {
                (Some(k), false) => format!("wire::array_size_fixed({p}.len(), {c}, {k})"),
                (Some(k), true) => {
                    format!("wire::nullable_array_size_fixed({p}.as_ref().map(Vec::len), {c}, {k})")
                }
                (None, false) => format!("wire::array_size(&{p}, {c}, {})", elem_size(e)),
                (None, true) => {
                    format!(
                        "wire::nullable_array_size({p}.as_deref(), {c}, {})",
                        elem_size(e)
                    )
                }
            },
            (fixed, _) => fixed.fixed_size().unwrap_or(0).to_string(),
        }
    }
}

fn doc_lines(out: &mut String, text: &str) {
    for line in text.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            out.push_str("///\n");
        } else {
            let _ = writeln!(out, "/// {line}");
        }
    }
}

fn field_doc(f: &Field) -> String {
    let mut s = String::new();
    if let Some(about) = f.about.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
        s.push_str(about);
        s.push_str("\n\n");
    }
    let _ = write!(s, "Versions {}", versions_doc(f.present));
    if !f.nullable.is_empty() {
        let _ = write!(s, "; nullable {}", versions_doc(f.nullable));
    }
    if let (false, Some(tag)) = (f.tagged.is_empty(), f.tag) {
        let _ = write!(s, "; tagged (tag {tag}) in {}", versions_doc(f.tagged));
    }
    if f.ignorable {
        s.push_str("; ignorable");
    }
    s.push('.');
    s
}

/// The struct definition and its `Default` impl.
pub fn emit_definition(msg: &Message, st: &StructDef, doc: &str) -> String {
    let mut out = String::new();
    doc_lines(&mut out, doc);
    out.push_str("#[derive(Debug, Clone, PartialEq)]\n");
    let _ = writeln!(out, "pub struct {} {{", st.name);
    for f in &st.fields {
        doc_lines(&mut out, &field_doc(f));
        let _ = writeln!(out, "pub {}: {},", f.ident, field_type(msg, f));
    }
    out.push_str("}\n\n");
    let _ = writeln!(
        out,
        "impl Default for {} {{\nfn default() -> Self {{\nSelf {{",
        st.name
    );
    for f in &st.fields {
        let _ = writeln!(out, "{}: {},", f.ident, default_expr(msg, f));
    }
    out.push_str("}\n}\n}\n\n");
    out
}

/// Replaces a parameter name with `_name` when the body never mentions it.
pub fn param(name: &str, body: &str) -> String {
    let used = body.match_indices(name).any(|(i, _)| {
        let before = body[..i].chars().next_back();
        let after = body[i + name.len()..].chars().next();
        let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
        !ident(before) && !ident(after)
    });
    if used {
        name.to_string()
    } else {
        format!("_{name}")
    }
}

/// The `read`, `write` and `size` methods.
pub fn emit_codec(msg: &Message, st: &StructDef) -> String {
    let range = st.range;
    let flexible = Cond::of(msg.flexible, range);
    let mut tagged: Vec<&Field> = st.fields.iter().filter(|f| !f.tagged.is_empty()).collect();
    tagged.sort_by_key(|f| f.tag);

    // read
    let mut read = String::new();
    for f in &st.fields {
        let regular = f.regular();
        let site = Site::new(msg, st, f, regular, false);
        let stmt = format!("this.{} = {};", f.ident, site.read_expr("buf"));
        read.push_str(&Cond::of(regular, range).guard(&stmt));
    }
    let tag_loop = if tagged.is_empty() {
        "wire::skip_tagged_fields(buf)?;".to_string()
    } else {
        let mut arms = String::new();
        for f in &tagged {
            let site = Site::new(msg, st, f, f.tagged, true);
            let guard = match Cond::of(f.tagged, range) {
                Cond::Expr(e) => format!(" if {e}"),
                _ => String::new(),
            };
            let _ = writeln!(
                arms,
                "{}{guard} => {{ this.{} = {}; wire::finish_tagged_field(&data, {})?; }}",
                f.tag.unwrap_or(0),
                f.ident,
                site.read_expr("&mut data"),
                site.label
            );
        }
        format!(
            "let count = wire::read_uvarint(buf)?;\nfor _ in 0..count {{\n\
             let (tag, mut data) = wire::read_tagged_field(buf)?;\n\
             match tag {{\n{arms}_ => {{}}\n}}\n}}"
        )
    };
    read.push_str(&flexible.guard(&tag_loop));
    let mutability = if read.contains("this.") {
        "let mut this"
    } else {
        "let this"
    };
    let read_body = format!("{mutability} = Self::default();\n{read}\nOk(this)");

    // write and size
    let mut write = String::new();
    let mut size = String::new();
    for f in &st.fields {
        let regular = f.regular();
        let site = Site::new(msg, st, f, regular, false);
        let cond = Cond::of(regular, range);
        write.push_str(&cond.guard(&site.write_stmt()));
        size.push_str(&cond.guard(&format!("n += {};", site.size_expr())));
        let present = Cond::of(f.present, range);
        if !f.ignorable && present != Cond::Always {
            let place = format!("self.{}", f.ident);
            let _ = writeln!(
                write,
                "if {} && {} {{ return Err(EncodeError::UnsupportedField {{ field: {}, version }}); }}",
                present.negated(),
                non_default(msg, f, &place),
                site.label
            );
        }
    }
    let mut wtag = String::new();
    let mut stag = String::new();
    if tagged.is_empty() {
        wtag.push_str("out.put_uvarint(0);");
        stag.push_str("n += 1;");
    } else {
        wtag.push_str("let mut count: u32 = 0;\n");
        stag.push_str("let mut count: u32 = 0;\n");
        for f in &tagged {
            let site = Site::new(msg, st, f, f.tagged, true);
            let c = Cond::of(f.tagged, range);
            let nd = non_default(msg, f, &format!("self.{}", f.ident));
            let test = match &c {
                Cond::Always => nd.clone(),
                _ => format!("{} && {nd}", c.expr()),
            };
            let _ = writeln!(wtag, "if {test} {{ count += 1; }}");
            let tag = f.tag.unwrap_or(0);
            let _ = writeln!(
                stag,
                "if {test} {{ count += 1; let size = {}; n += wire::uvarint_size({tag}) + wire::usize_uvarint_size(size) + size; }}",
                site.size_expr()
            );
        }
        wtag.push_str("out.put_uvarint(count);\n");
        for f in &tagged {
            let site = Site::new(msg, st, f, f.tagged, true);
            let c = Cond::of(f.tagged, range);
            let nd = non_default(msg, f, &format!("self.{}", f.ident));
            let test = match &c {
                Cond::Always => nd,
                _ => format!("{} && {nd}", c.expr()),
            };
            let _ = writeln!(
                wtag,
                "if {test} {{ out.put_uvarint({}); out.put_uvarint(wire::len_u32({}, {})?); {} }}",
                f.tag.unwrap_or(0),
                site.size_expr(),
                site.label,
                site.write_stmt()
            );
        }
        stag.push_str("n += wire::uvarint_size(count);");
    }
    write.push_str(&flexible.guard(&wtag));
    size.push_str(&flexible.guard(&stag));
    let write_body = format!("{write}\nOk(())");
    let size_body = if size.trim().is_empty() {
        "0".to_string()
    } else {
        format!("let mut n = 0;\n{size}\nn")
    };

    let mut out = String::new();
    let _ = writeln!(out, "impl {} {{", st.name);
    let _ = writeln!(
        out,
        "pub(crate) fn read({}: &mut Bytes, {}: i16) -> Result<Self, DecodeError> {{\n{read_body}\n}}\n",
        param("buf", &read_body),
        param("version", &read_body)
    );
    let _ = writeln!(
        out,
        "pub(crate) fn write<W: WireWrite + ?Sized>(&self, {}: &mut W, {}: i16) -> Result<(), EncodeError> {{\n{write_body}\n}}\n",
        param("out", &write_body),
        param("version", &write_body)
    );
    let _ = writeln!(
        out,
        "pub(crate) fn size(&self, {}: i16) -> usize {{\n{size_body}\n}}",
        param("version", &size_body)
    );
    out.push_str("}\n\n");
    out
}
