//! `meta.properties`: the storage format of every `log.dirs` entry (Kafka's
//! `MetaPropertiesEnsemble`, written by `kafka-storage.sh format`).
//!
//! Mental model: a log dir is *formatted* when its `meta.properties` names a `cluster.id`. The
//! first log dir's id is the broker's cluster id; every other dir must carry the same one. A
//! dir is formatted on first start only when it holds no partition data: data without (or
//! with an unreadable) `meta.properties` means the file was lost or damaged, and adopting the
//! data under a fresh cluster id would hide that (issue 12 item 5), so the start is refused
//! with the fix in the message, as Kafka refuses an unformatted dir. A formatted dir must also
//! name this node's `node.id` (Kafka's "Stored node id ... doesn't match"), and a KRaft node
//! (`process.roles` set) never formats itself: its dirs are formatted by `skiff format`
//! ([`crate::format`]) with the cluster's one id, as `kafka-storage.sh format` does. [`decide`]
//! and [`decide_for`] are the pure rule (table-tested); [`format_log_dir`] and
//! [`first_log_dir_cluster_id`] are its I/O shells.
//!
//! Invariants: a refused dir is never written to; `meta.properties` is replaced atomically
//! (tmp + fsync + rename), so a crash never leaves a torn file. Callers hold the dir's lock
//! (`skiff_storage::dir_lock`) before calling anything here.

use std::path::{Path, PathBuf};

use skiff_types::TopicPartition;

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
    /// Kafka's `MetaPropertiesEnsemble.verify` wording, plus where the configured id came from.
    #[error(
        "Stored node id {found} doesn't match previous node id {expected} in {path}. If you moved \
         your data, make sure your configured node id matches. If you intend to create a new \
         node, you should remove all data in your data directories. (node.id={expected} is \
         this node's configuration)"
    )]
    OtherNode {
        path: String,
        found: i32,
        expected: i32,
    },
    /// KRaft mode (`process.roles` set) never formats itself, as Kafka's broker does not.
    #[error(
        "No `meta.properties` found in {dir} (have you run `skiff format` to format the \
         directory?). A node with process.roles set is formatted once, before its first start: \
         skiff format --cluster-id <id> --config <file> (the same id on every node of the \
         cluster; `skiff format --random-cluster-id` prints a new one)"
    )]
    NotFormatted { dir: String },
    /// `skiff format` over a dir of another cluster (Kafka's wording; refused even with
    /// `--ignore-formatted`, as Kafka refuses it).
    #[error(
        "Invalid cluster.id in: {path}. Expected {expected}, but read {found}. The dir belongs \
         to another cluster: remove it from log.dirs or empty it"
    )]
    FormattedForOtherCluster {
        path: String,
        expected: String,
        found: String,
    },
    /// `skiff format` without `--ignore-formatted` over a formatted dir (Kafka's wording).
    #[error(
        "Log directory {dir} is already formatted. Use --ignore-formatted to ignore this \
         directory and format the others."
    )]
    AlreadyFormatted { dir: String },
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
        /// `node.id` of the file (Skiff and Kafka always write it; a v0 file may lack it).
        node_id: Option<i32>,
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
        (MetaState::Formatted { cluster_id, .. }, _, Some(e)) if cluster_id != e => {
            Err(LogDirError::OtherCluster {
                dir: dir.to_string(),
                found: cluster_id.clone(),
                expected: e.to_string(),
            })
        }
        (MetaState::Formatted { cluster_id, .. }, _, _) => Ok(Decision::Use {
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

/// How a node opens its log dirs: the rule of [`decide`] plus Kafka's start-up checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expect<'a> {
    /// The cluster id the dir must carry (`None` for the first log dir, which defines it).
    pub cluster_id: Option<&'a str>,
    /// This node's configured id: a formatted dir naming another is refused.
    pub node_id: i32,
    /// KRaft mode: an unformatted dir is refused (run `skiff format`), never formatted here.
    pub must_be_formatted: bool,
}

/// [`decide`] for a node: a formatted dir must name this node, and in KRaft mode an
/// unformatted one is refused ([`LogDirError::NotFormatted`]).
pub fn decide_for(
    dir: &str,
    meta: &MetaState,
    data: Option<&str>,
    expect: &Expect<'_>,
) -> Result<Decision, LogDirError> {
    if let MetaState::Formatted {
        node_id: Some(found),
        ..
    } = meta
        && *found != expect.node_id
    {
        return Err(LogDirError::OtherNode {
            path: Path::new(dir).join(META_PROPERTIES).display().to_string(),
            found: *found,
            expected: expect.node_id,
        });
    }
    match decide(dir, meta, data, expect.cluster_id)? {
        Decision::Format if expect.must_be_formatted => Err(LogDirError::NotFormatted {
            dir: dir.to_string(),
        }),
        d => Ok(d),
    }
}

/// Formats `dir` for `cluster_id` as Kafka's storage format does for every entry of
/// `log.dirs`: creates the dir and its `meta.properties` (version, node.id, cluster.id, a fresh
/// directory.id) when missing and the dir holds no partition data; a dir already formatted for
/// this cluster is left as it is; everything else is refused (see [`decide`]).
/// With `must_be_formatted` (KRaft mode) an unformatted dir is refused instead.
pub fn format_log_dir(
    dir: &Path,
    cluster_id: &str,
    node_id: i32,
    must_be_formatted: bool,
) -> Result<(), LogDirError> {
    let expect = Expect {
        cluster_id: Some(cluster_id),
        node_id,
        must_be_formatted,
    };
    prepare(dir, &expect).map(|_| ())
}

/// The cluster id of the first log dir (`metadata_log_dir`'s parent holds the metadata log),
/// formatting it with a fresh id when it is empty and unformatted (see [`decide`]), or, with
/// `must_be_formatted` (KRaft mode), refusing it.
pub fn first_log_dir_cluster_id(
    log_dir: &Path,
    node_id: i32,
    must_be_formatted: bool,
) -> Result<String, LogDirError> {
    let expect = Expect {
        cluster_id: None,
        node_id,
        must_be_formatted,
    };
    prepare(log_dir, &expect)
}

fn prepare(dir: &Path, expect: &Expect<'_>) -> Result<String, LogDirError> {
    let (expected, node_id) = (expect.cluster_id, expect.node_id);
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
    match decide_for(&shown, &meta, shown_data.as_deref(), expect)? {
        Decision::Use { cluster_id } => Ok(cluster_id),
        Decision::Format => {
            let id = expected.map_or_else(crate::cluster_id::random, str::to_string);
            write_meta_properties(&path, &id, node_id).map_err(|e| fail(e.to_string()))?;
            Ok(id)
        }
    }
}

/// Reads `meta.properties` (`Err` only for I/O failures other than a missing file).
pub(crate) fn read_meta_state(path: &Path) -> std::io::Result<MetaState> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(MetaState::Missing),
        Err(e) => return Err(e),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(MetaState::Garbled("the file is not text".into()));
    };
    Ok(match stored(&text, "cluster.id") {
        Some(cluster_id) => MetaState::Formatted {
            cluster_id,
            node_id: stored(&text, "node.id").and_then(|n| n.parse().ok()),
        },
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

/// The non-empty value of `key` in a `meta.properties` text (`key=value` lines, spaces around
/// `=` allowed, `#` comments), if any.
fn stored(text: &str, key: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, id)| id.trim().to_string())
        .filter(|id| !id.is_empty())
}

pub(crate) fn write_meta_properties(
    path: &Path,
    cluster_id: &str,
    node_id: i32,
) -> std::io::Result<()> {
    let dir_id = crate::cluster_id::random();
    let contents = format!(
        "#\n#Written by Skiff\nversion=1\nnode.id={node_id}\ncluster.id={cluster_id}\ndirectory.id={dir_id}\n"
    );
    skiff_storage::checkpoint::write_atomic(path, contents.as_bytes())
}

#[cfg(test)]
#[path = "log_dir_tests.rs"]
mod tests;
