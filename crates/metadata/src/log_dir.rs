//! `meta.properties`: the storage format of every `log.dirs` entry (Kafka's
//! `MetaPropertiesEnsemble`, written by `kafka-storage.sh format`).
//!
//! Mental model: a log dir is *formatted* when its `meta.properties` names a `cluster.id`. The
//! first log dir's id is the broker's cluster id; every other dir must carry the same one. A
//! dir is formatted on first start only when it holds no partition data: data without (or
//! with an unreadable) `meta.properties` means the file was lost or damaged, and adopting the
//! data under a fresh cluster id would hide that (issue 12 item 5), so the start is refused
//! with the fix in the message, as Kafka refuses an unformatted dir. [`decide`] is the pure
//! rule (table-tested); [`format_log_dir`] and [`first_log_dir_cluster_id`] are its I/O shells.
//!
//! Invariants: a refused dir is never written to; `meta.properties` is replaced atomically
//! (tmp + fsync + rename), so a crash never leaves a torn file. Callers hold the dir's lock
//! (`skiff_storage::dir_lock`) before calling anything here.

use std::path::{Path, PathBuf};

use skiff_types::TopicPartition;
use uuid::Uuid;

/// The file Kafka's storage format writes at the top of every log dir.
pub const META_PROPERTIES: &str = "meta.properties";

/// The metadata log's directory name (in the first log dir).
const METADATA_DIR_NAME: &str = "__cluster_metadata-0";

/// Why a log dir cannot be used for this cluster.
#[derive(Debug, thiserror::Error)]
pub enum LogDirError {
    #[error(
        "log dir {dir} belongs to another cluster: its meta.properties has cluster.id={found}, \
         but this broker's cluster.id is {expected} (from the first log dir); remove the dir \
         from log.dirs or empty it"
    )]
    OtherCluster {
        dir: String,
        found: String,
        expected: String,
    },
    #[error(
        "log dir {dir}: meta.properties has no cluster.id ({reason}); restore it from a backup \
         or from another log dir of this broker (same cluster.id and node.id), or delete it if \
         the dir holds no data"
    )]
    NoClusterId { dir: String, reason: String },
    #[error(
        "No `meta.properties` found in log dir {dir}, but it holds partition data ({data}); \
         refusing to start rather than adopt the data under a new cluster id. Restore \
         {dir}/meta.properties from a backup or copy it from another log dir of this broker \
         (same cluster.id and node.id, a new directory.id), or move the data out of the dir \
         to start it empty"
    )]
    Unformatted { dir: String, data: String },
    #[error("cannot format log dir {dir}: {message}")]
    Format { dir: String, message: String },
}

impl LogDirError {
    /// Whether the dir's contents, not the machine, are at fault (the binary exits 2).
    pub fn is_configuration(&self) -> bool {
        !matches!(self, LogDirError::Format { .. })
    }
}

/// What a log dir's `meta.properties` says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaState {
    /// No `meta.properties`.
    Missing,
    /// A file without a usable `cluster.id` (why, for the message).
    Garbled(String),
    Formatted {
        cluster_id: String,
    },
}

/// What to do with a log dir.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Formatted for this cluster (or, for the first dir, for the cluster it names): use it.
    Use { cluster_id: String },
    /// Empty and unformatted: write `meta.properties` (with `expected`, or a fresh id).
    Format,
}

/// The rule: `meta` is the dir's `meta.properties`, `data` the first partition data found in
/// it (a partition or metadata-log dir holding a `.log` file), `expected` the cluster id the
/// dir must carry (`None` for the first log dir, which defines it).
pub fn decide(
    dir: &str,
    meta: &MetaState,
    data: Option<&str>,
    expected: Option<&str>,
) -> Result<Decision, LogDirError> {
    match (meta, data, expected) {
        (MetaState::Formatted { cluster_id }, _, Some(e)) if cluster_id != e => {
            Err(LogDirError::OtherCluster {
                dir: dir.to_string(),
                found: cluster_id.clone(),
                expected: e.to_string(),
            })
        }
        (MetaState::Formatted { cluster_id }, _, _) => Ok(Decision::Use {
            cluster_id: cluster_id.clone(),
        }),
        (MetaState::Garbled(reason), _, _) => Err(LogDirError::NoClusterId {
            dir: dir.to_string(),
            reason: reason.clone(),
        }),
        (MetaState::Missing, Some(data), _) => Err(LogDirError::Unformatted {
            dir: dir.to_string(),
            data: data.to_string(),
        }),
        (MetaState::Missing, None, _) => Ok(Decision::Format),
    }
}

/// Formats `dir` for `cluster_id` as Kafka's storage format does for every entry of
/// `log.dirs`: creates the dir and its `meta.properties` (version, node.id, cluster.id, a fresh
/// directory.id) when missing and the dir holds no partition data; a dir already formatted for
/// this cluster is left as it is; everything else is refused (see [`decide`]).
pub fn format_log_dir(dir: &Path, cluster_id: &str, node_id: i32) -> Result<(), LogDirError> {
    prepare(dir, Some(cluster_id), node_id).map(|_| ())
}

/// The cluster id of the first log dir (`metadata_log_dir`'s parent holds the metadata log),
/// formatting it with a fresh id when it is empty and unformatted (see [`decide`]).
pub fn first_log_dir_cluster_id(log_dir: &Path, node_id: i32) -> Result<String, LogDirError> {
    prepare(log_dir, None, node_id)
}

fn prepare(dir: &Path, expected: Option<&str>, node_id: i32) -> Result<String, LogDirError> {
    let shown = dir.display().to_string();
    let fail = |message: String| LogDirError::Format {
        dir: shown.clone(),
        message,
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
    let path = dir.join(META_PROPERTIES);
    let meta = read_meta_state(&path).map_err(|e| fail(e.to_string()))?;
    let data = if meta == MetaState::Missing {
        partition_data_in(dir).map_err(|e| fail(e.to_string()))?
    } else {
        None
    };
    let shown_data = data.as_ref().map(|p| p.display().to_string());
    match decide(&shown, &meta, shown_data.as_deref(), expected)? {
        Decision::Use { cluster_id } => Ok(cluster_id),
        Decision::Format => {
            let id = expected.map_or_else(|| base64_url(Uuid::new_v4().as_bytes()), str::to_string);
            write_meta_properties(&path, &id, node_id).map_err(|e| fail(e.to_string()))?;
            Ok(id)
        }
    }
}

/// Reads `meta.properties` (`Err` only for I/O failures other than a missing file).
fn read_meta_state(path: &Path) -> std::io::Result<MetaState> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(MetaState::Missing),
        Err(e) => return Err(e),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(MetaState::Garbled("the file is not text".into()));
    };
    Ok(match stored_cluster_id(&text) {
        Some(cluster_id) => MetaState::Formatted { cluster_id },
        None => MetaState::Garbled("no cluster.id line".into()),
    })
}

/// The first partition data in `dir`: a partition dir (`<topic>-<n>`) or the metadata log dir
/// holding a `.log` segment file.
pub fn partition_data_in(dir: &Path) -> std::io::Result<Option<PathBuf>> {
    let mut names: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == METADATA_DIR_NAME || TopicPartition::from_dir_name(&name).is_some() {
            names.push(entry.path());
        }
    }
    names.sort();
    for part in names {
        for file in std::fs::read_dir(&part)? {
            let file = file?;
            if file.file_type()?.is_file() && file.file_name().to_string_lossy().ends_with(".log") {
                return Ok(Some(file.path()));
            }
        }
    }
    Ok(None)
}

/// The `cluster.id` of a `meta.properties` text (`key=value` lines, spaces around `=`
/// allowed, `#` comments), if any.
fn stored_cluster_id(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .find(|(key, _)| key.trim() == "cluster.id")
        .map(|(_, id)| id.trim().to_string())
        .filter(|id| !id.is_empty())
}

fn write_meta_properties(path: &Path, cluster_id: &str, node_id: i32) -> std::io::Result<()> {
    let dir_id = base64_url(Uuid::new_v4().as_bytes());
    let contents = format!(
        "#\n#Written by Skiff\nversion=1\nnode.id={node_id}\ncluster.id={cluster_id}\ndirectory.id={dir_id}\n"
    );
    skiff_storage::checkpoint::write_atomic(path, contents.as_bytes())
}

/// URL-safe base64 without padding (how Kafka prints UUIDs such as cluster ids).
fn base64_url(bytes: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[cfg(test)]
#[path = "log_dir_tests.rs"]
mod tests;
