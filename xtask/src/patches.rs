//! Skiff's own widenings of Kafka's message definitions: newer versions the shared definitions
//! (`../shared/kafka-message-specs`, a Kafka 4.0 snapshot) do not know yet.
//!
//! Mental model: a patch file `xtask/specs/<Definition>.patch.json` names a new
//! `validVersions` and fields to add (each under a path of struct-field names, empty for the
//! top level; last, or right after a named field, where Kafka put it). It is applied to the parsed JSON of the shared definition before the model
//! reads it, so the rest of the pipeline never knows a patch was there. The patches are
//! written by Skiff from the KIPs and checked against Apache Kafka's own wire behaviour in the
//! differential test (`tests/compat/tests/kafka_wire_differential.rs`); when the shared
//! definitions catch up, a patch whose fields are already there is an error, so it gets
//! deleted rather than applied twice.
//!
//! Invariants: a patch only widens (its `validVersions` must contain the original's); every
//! appended field is new in a version above the original's maximum, so older versions' wire
//! layout is unchanged.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::model::Versions;

/// A patch file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Patch {
    /// Why the patch exists (which KIP, which Kafka version); not used.
    #[allow(dead_code)]
    pub comment: String,
    /// The widened version range.
    pub valid_versions: String,
    /// Fields to append.
    #[serde(default)]
    pub add: Vec<Addition>,
}

/// One field appended to the struct at `path`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Addition {
    /// Names of struct (or struct-array) fields from the top level down; empty: top level.
    #[serde(default)]
    pub path: Vec<String>,
    /// The field it goes right after (Kafka inserts some new fields mid-struct); absent: last.
    #[serde(default)]
    pub after: Option<String>,
    /// The field, in the definitions' own syntax.
    pub field: Value,
}

/// The directory of patch files.
pub fn patch_dir() -> PathBuf {
    crate::repo_root().join("xtask/specs")
}

/// The patch for a definition file name (`FooRequest.json`), if there is one.
pub fn patch_for(dir: &Path, file: &str) -> Result<Option<Patch>, String> {
    let stem = file.trim_end_matches(".json");
    let p = dir.join(format!("{stem}.patch.json"));
    if !p.exists() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("{}: {e}", p.display()))
}

/// Applies `patch` to a definition's JSON.
pub fn apply(spec: &mut Value, patch: &Patch, file: &str) -> Result<(), String> {
    let old = spec
        .get("validVersions")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{file}: no validVersions"))
        .and_then(|v| Versions::parse(v).map_err(|e| format!("{file}: {e}")))?;
    let new = Versions::parse(&patch.valid_versions).map_err(|e| format!("{file} patch: {e}"))?;
    if new.intersect(old) != old {
        return Err(format!(
            "{file} patch: validVersions {} does not contain the original's {old:?}",
            patch.valid_versions
        ));
    }
    spec["validVersions"] = Value::String(patch.valid_versions.clone());
    for add in &patch.add {
        let name = add
            .field
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{file} patch: a field without a name"))?;
        let since = add
            .field
            .get("versions")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{file} patch: {name} has no versions"))
            .and_then(|v| Versions::parse(v).map_err(|e| format!("{file} patch: {e}")))?;
        if !since.intersect(old).is_empty() {
            return Err(format!(
                "{file} patch: {name} would change versions the original defines"
            ));
        }
        let fields = fields_at(spec, &add.path)
            .ok_or_else(|| format!("{file} patch: no struct at {:?}", add.path))?;
        if fields
            .iter()
            .any(|f| f.get("name").and_then(Value::as_str) == Some(name))
        {
            return Err(format!(
                "{file} patch: {name} is already defined (the shared definitions caught up: \
                 delete the patch)"
            ));
        }
        let at = match &add.after {
            None => fields.len(),
            Some(prev) => {
                fields
                    .iter()
                    .position(|f| f.get("name").and_then(Value::as_str) == Some(prev.as_str()))
                    .ok_or_else(|| format!("{file} patch: no field {prev} to put {name} after"))?
                    + 1
            }
        };
        fields.insert(at, add.field.clone());
    }
    Ok(())
}

/// The `fields` array of the struct reached by following `path` from the top level.
fn fields_at<'a>(spec: &'a mut Value, path: &[String]) -> Option<&'a mut Vec<Value>> {
    let mut cur = spec;
    for name in path {
        cur = cur
            .get_mut("fields")?
            .as_array_mut()?
            .iter_mut()
            .find(|f| f.get("name").and_then(Value::as_str) == Some(name.as_str()))?;
    }
    cur.get_mut("fields")?.as_array_mut()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(v: Value) -> Patch {
        serde_json::from_value(v).unwrap()
    }

    fn spec() -> Value {
        json!({"validVersions": "0", "fields": [
            {"name": "A", "type": "int32", "versions": "0+"},
            {"name": "L", "type": "[]S", "versions": "0+", "fields": [
                {"name": "B", "type": "string", "versions": "0+"}]}]})
    }

    #[test]
    fn widens_and_appends_at_a_path() {
        let mut s = spec();
        let p = patch(json!({"comment": "", "validVersions": "0-1", "add": [
            {"path": ["L"], "field": {"name": "T", "type": "int8", "versions": "1+"}},
            {"field": {"name": "Z", "type": "int8", "versions": "1+"}},
            {"after": "A", "field": {"name": "Y", "type": "bool", "versions": "1+"}}]}));
        apply(&mut s, &p, "X.json").unwrap();
        assert_eq!(s["validVersions"], "0-1");
        assert_eq!(s["fields"][2]["fields"][1]["name"], "T");
        assert_eq!(s["fields"][1]["name"], "Y");
        assert_eq!(s["fields"][3]["name"], "Z");
    }

    #[test]
    fn refuses_narrowing_old_versions_duplicates_and_bad_paths() {
        let cases = [
            json!({"comment": "", "validVersions": "1"}),
            json!({"comment": "", "validVersions": "0-1", "add": [
                {"field": {"name": "Q", "type": "int8", "versions": "0+"}}]}),
            json!({"comment": "", "validVersions": "0-1", "add": [
                {"field": {"name": "A", "type": "int8", "versions": "1+"}}]}),
            json!({"comment": "", "validVersions": "0-1", "add": [
                {"path": ["Nope"], "field": {"name": "Q", "type": "int8", "versions": "1+"}}]}),
            json!({"comment": "", "validVersions": "0-1", "add": [
                {"after": "Nope", "field": {"name": "Q", "type": "int8", "versions": "1+"}}]}),
        ];
        for c in cases {
            let mut s = spec();
            assert!(apply(&mut s, &patch(c.clone()), "X.json").is_err(), "{c}");
        }
    }
}
