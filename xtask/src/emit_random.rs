//! Emission of test-only random value generators (`random(rng, version)` per struct).
//!
//! Mental model: a random value for version `v` sets every field present in `v` (tagged
//! fields only sometimes, so both "absent" and "present" tags are exercised), uses `None` only
//! where the field is nullable in `v`, and leaves absent fields at their defaults, so the value
//! is always encodable at `v`. The differential tests drive this with proptest-chosen seeds.

use std::fmt::Write as _;

use crate::emit::{Cond, param};
use crate::ir::{Field, Message, StructDef, Ty};

fn elem_expr(msg: &Message, ty: &Ty) -> String {
    match ty {
        Ty::Bool => "rng.bool()".into(),
        Ty::Int8 => "rng.i8()".into(),
        Ty::Int16 => "rng.i16()".into(),
        Ty::Uint16 => "rng.u16()".into(),
        Ty::Int32 => "rng.i32()".into(),
        Ty::Uint32 => "rng.u32()".into(),
        Ty::Int64 => "rng.i64()".into(),
        Ty::Float64 => "rng.f64()".into(),
        Ty::Uuid => "rng.uuid()".into(),
        Ty::String => "rng.string()".into(),
        Ty::Bytes => "rng.bytes()".into(),
        Ty::Records => "Records::Bytes(rng.bytes())".into(),
        Ty::Struct(i) => format!("{}::random(rng, version)", msg.structs[*i].name),
        Ty::Array(e) => {
            // Arrays of scalars may be long; arrays of structs stay short to bound nesting.
            let len = if matches!(**e, Ty::Struct(_)) {
                "vec"
            } else {
                "long_vec"
            };
            format!("rng.{len}(|rng| {})", elem_expr(msg, e))
        }
    }
}

fn value_expr(msg: &Message, f: &Field, within: crate::model::Versions) -> String {
    let inner = elem_expr(msg, &f.ty);
    if f.optional {
        let nullable = Cond::of(f.nullable, within).expr();
        format!("rng.maybe({nullable}, |rng| {inner})")
    } else {
        inner
    }
}

pub fn emit_random(msg: &Message, st: &StructDef) -> String {
    let mut body = String::new();
    for f in &st.fields {
        let regular = f.regular();
        let stmt = format!("this.{} = {};", f.ident, value_expr(msg, f, regular));
        body.push_str(&Cond::of(regular, st.range).guard(&stmt));
        if !f.tagged.is_empty() {
            let stmt = format!("this.{} = {};", f.ident, value_expr(msg, f, f.tagged));
            let test = match Cond::of(f.tagged, st.range) {
                Cond::Expr(e) => format!("{e} && rng.bool()"),
                _ => "rng.bool()".into(),
            };
            let _ = writeln!(body, "if {test} {{ {stmt} }}");
        }
    }
    let mutability = if body.contains("this.") {
        "let mut this"
    } else {
        "let this"
    };
    let rng = param("rng", &body);
    let version = param("version", &body);
    format!(
        "impl Random for {} {{\nfn random({rng}: &mut TestRng, {version}: i16) -> Self {{\n\
         {mutability} = Self::default();\n{body}\nthis\n}}\n}}\n\n",
        st.name
    )
}
