//! `codegen`: load the table's definitions, resolve, emit, rustfmt, then write or `--check`.
//!
//! Mental model: a pure function from (definition files, table) to a map of file name ->
//! formatted text for `crates/protocol/src/generated/`. Writing replaces the directory's `.rs`
//! files with that map (stale ones are removed); checking compares and reports drift. Formatting
//! runs `rustfmt --edition 2024` on copies in a temporary directory, so the check never touches
//! the work tree.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::emit_files::{ApiPair, api_file, message_file, mod_file, module_name, random_file};
use crate::ir::{Kind, Message, resolve};
use crate::model::{Versions, load_patched};
use crate::patches;
use crate::table::{APIS, HEADERS, INTERNAL};

/// Names of hand-written items in `skiff-protocol` that generated structs must not shadow.
const RESERVED: &[&str] = &[
    "ApiKey",
    "RequestBody",
    "ResponseBody",
    "Records",
    "FileRegion",
    "Codec",
    "Message",
    "Request",
    "MetadataRecord",
    "DecodeError",
    "EncodeError",
    "WireWrite",
    "ChunkedWriter",
    "Chunk",
    "Bytes",
    "Uuid",
    "String",
    "Vec",
    "Option",
    "Result",
    "Box",
];

/// The environment variable that names the definitions' directory explicitly.
pub const SPECS_ENV: &str = "SKIFF_MESSAGE_SPECS";

/// Where Kafka's JSON message definitions are, or why they are not there.
///
/// The definitions live outside the repository (`<repo>/../shared/kafka-message-specs`, beside
/// the development checkout and in CI), so a clone elsewhere has none: generating needs them,
/// and the drift check is skipped without them (a named `$SKIFF_MESSAGE_SPECS` that does not
/// exist is an error, never a skip).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Specs {
    /// A directory that exists.
    Found(PathBuf),
    /// The default location `<repo>/../shared/kafka-message-specs` does not exist.
    AbsentBeside(PathBuf),
    /// `$SKIFF_MESSAGE_SPECS` names a directory that does not exist.
    AbsentNamed(PathBuf),
}

impl Specs {
    /// Resolves the location from `$SKIFF_MESSAGE_SPECS` (`env`) or the default beside the repo.
    pub fn locate(repo_root: &Path, env: Option<std::ffi::OsString>) -> Specs {
        match env.filter(|p| !p.is_empty()) {
            Some(p) => {
                let p = PathBuf::from(p);
                if p.is_dir() {
                    Specs::Found(p)
                } else {
                    Specs::AbsentNamed(p)
                }
            }
            None => {
                let p = repo_root.join("../shared/kafka-message-specs");
                if p.is_dir() {
                    Specs::Found(p)
                } else {
                    Specs::AbsentBeside(p)
                }
            }
        }
    }

    /// [`Specs::locate`] with this process's `$SKIFF_MESSAGE_SPECS`.
    pub fn from_env(repo_root: &Path) -> Specs {
        Specs::locate(repo_root, std::env::var_os(SPECS_ENV))
    }

    /// The directory, or a message that says where it was looked for and what to do.
    pub fn dir(&self) -> Result<&Path, String> {
        match self {
            Specs::Found(p) => Ok(p),
            Specs::AbsentBeside(p) => Err(format!(
                "Kafka's message definitions are not at {} (they sit beside the development \
                 checkout as shared/kafka-message-specs); set {SPECS_ENV}=<dir with the JSON files>",
                p.display()
            )),
            Specs::AbsentNamed(p) => Err(format!(
                "{SPECS_ENV}={} is not a directory; point it at Kafka's JSON message definitions",
                p.display()
            )),
        }
    }
}

/// The output directory inside the repository.
pub fn output_dir(repo_root: &Path) -> PathBuf {
    repo_root.join("crates/protocol/src/generated")
}

fn load_resolved(specs: &Path, file: &str, clip: Option<(i16, i16)>) -> Result<Message, String> {
    let patch = patches::patch_for(&patches::patch_dir(), file)?;
    let spec = load_patched(&specs.join(file), patch.as_ref())?;
    let valid = Versions::parse(&spec.valid_versions)?;
    let range = match clip {
        Some((lo, hi)) => {
            let want = Versions::new(lo, hi);
            if want.intersect(valid) != want {
                return Err(format!(
                    "{file}: table range {lo}-{hi} exceeds validVersions {valid:?}"
                ));
            }
            want
        }
        None => valid,
    };
    resolve(&spec, range, file)
}

/// An API's name and the indices of its request and response in the message list.
pub type ApiIndex = (&'static str, usize, usize);

/// Loads and resolves every message in the table, with Rust names assigned.
pub fn load_all(specs: &Path) -> Result<(Vec<Message>, Vec<ApiIndex>), String> {
    let mut msgs = Vec::new();
    let mut apis = Vec::new();
    for api in APIS {
        let clip = Some((api.min, api.max));
        let req = load_resolved(specs, &format!("{}Request.json", api.name), clip)?;
        let resp = load_resolved(specs, &format!("{}Response.json", api.name), clip)?;
        if req.kind != Kind::Request || resp.kind != Kind::Response || req.api_key != resp.api_key {
            return Err(format!(
                "{}: request/response definitions do not match",
                api.name
            ));
        }
        apis.push((api.name, msgs.len(), msgs.len() + 1));
        msgs.push(req);
        msgs.push(resp);
    }
    for file in HEADERS.iter().chain(INTERNAL) {
        msgs.push(load_resolved(specs, file, None)?);
    }
    assign_names(&mut msgs)?;
    Ok((msgs, apis))
}

/// Nested structs keep their JSON name unless another message defines the same name (or it
/// clashes with a message or reserved name); then they get their message's name as a prefix.
fn assign_names(msgs: &mut [Message]) -> Result<(), String> {
    let mut owners: HashMap<String, HashSet<String>> = HashMap::new();
    for m in msgs.iter() {
        for st in &m.structs[1..] {
            owners
                .entry(st.json_name.clone())
                .or_default()
                .insert(m.name.clone());
        }
    }
    let top: HashSet<String> = msgs.iter().map(|m| m.name.clone()).collect();
    for m in msgs.iter_mut() {
        let prefix = m.name.clone();
        for st in &mut m.structs[1..] {
            let shared = owners.get(&st.json_name).is_some_and(|o| o.len() > 1);
            if shared || top.contains(&st.json_name) || RESERVED.contains(&st.json_name.as_str()) {
                st.name = format!("{prefix}{}", st.json_name);
            }
        }
    }
    let mut seen = HashSet::new();
    for m in msgs.iter() {
        if RESERVED.contains(&m.name.as_str()) {
            return Err(format!(
                "message name {} clashes with a hand-written item",
                m.name
            ));
        }
        for st in &m.structs {
            if !seen.insert(st.name.clone()) {
                return Err(format!("duplicate generated type name {}", st.name));
            }
        }
    }
    Ok(())
}

/// Generates every file (unformatted), keyed by file name.
pub fn generate(specs: &Path) -> Result<BTreeMap<String, String>, String> {
    let (msgs, apis) = load_all(specs)?;
    let mut files = BTreeMap::new();
    for m in &msgs {
        files.insert(format!("{}.rs", module_name(m)), message_file(m));
    }
    let pairs: Vec<ApiPair<'_>> = apis
        .iter()
        .map(|&(name, req, resp)| ApiPair {
            name,
            request: &msgs[req],
            response: &msgs[resp],
        })
        .collect();
    files.insert("api.rs".into(), api_file(&pairs));
    files.insert("random.rs".into(), random_file(&msgs, &pairs));
    files.insert("mod.rs".into(), mod_file(&msgs));
    Ok(files)
}

/// Runs rustfmt over the files (in a temporary directory) and returns the formatted text.
pub fn format(
    files: &BTreeMap<String, String>,
    repo_root: &Path,
) -> Result<BTreeMap<String, String>, String> {
    let dir = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let mut paths = Vec::new();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
        paths.push(p);
    }
    let rustfmt = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
    let mut cmd = Command::new(rustfmt);
    cmd.arg("--edition").arg("2024");
    if repo_root.join("rustfmt.toml").exists() || repo_root.join(".rustfmt.toml").exists() {
        cmd.arg("--config-path").arg(repo_root);
    }
    let out = cmd
        .args(&paths)
        .output()
        .map_err(|e| format!("running rustfmt: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "rustfmt failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let mut formatted = BTreeMap::new();
    for (name, p) in files.keys().zip(&paths) {
        let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
        formatted.insert(name.clone(), text);
    }
    Ok(formatted)
}

/// What `run` found or did.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Files were written (count).
    Written(usize),
    /// `--check`: everything matches.
    UpToDate,
    /// `--check`: these files differ, are missing, or are stale.
    Drift(Vec<String>),
}

fn existing_files(dir: &Path) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(out);
    };
    for e in entries {
        let e = e.map_err(|e| format!("{}: {e}", dir.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".rs") {
            let text = std::fs::read_to_string(e.path()).map_err(|err| format!("{name}: {err}"))?;
            out.insert(name, text);
        }
    }
    Ok(out)
}

/// Generates into `<repo>/crates/protocol/src/generated`, or compares when `check`.
pub fn run(repo_root: &Path, check: bool) -> Result<Outcome, String> {
    run_with(&Specs::from_env(repo_root), repo_root, check)
}

/// [`run`] with the definitions' location given; an absent location is an error message.
pub fn run_with(specs: &Specs, repo_root: &Path, check: bool) -> Result<Outcome, String> {
    let specs = specs.dir()?;
    let files = format(&generate(specs)?, repo_root)?;
    let dir = output_dir(repo_root);
    let existing = existing_files(&dir)?;
    if check {
        let mut drift: Vec<String> = files
            .iter()
            .filter(|(name, text)| existing.get(*name) != Some(*text))
            .map(|(name, _)| name.clone())
            .collect();
        drift.extend(
            existing
                .keys()
                .filter(|n| !files.contains_key(*n))
                .map(|n| format!("{n} (stale)")),
        );
        return Ok(if drift.is_empty() {
            Outcome::UpToDate
        } else {
            Outcome::Drift(drift)
        });
    }
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for name in existing.keys().filter(|n| !files.contains_key(*n)) {
        std::fs::remove_file(dir.join(name)).map_err(|e| format!("{name}: {e}"))?;
    }
    for (name, text) in &files {
        if existing.get(name) != Some(text) {
            std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))?;
        }
    }
    Ok(Outcome::Written(files.len()))
}
