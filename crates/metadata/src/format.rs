//! `skiff format`: Kafka's `kafka-storage.sh format -t ID -c FILE` for Skiff's log dirs.
//!
//! Mental model: every `log.dirs` entry (the first also holds the metadata log, Kafka's
//! `metadata.log.dir` default) gets a `meta.properties` naming the cluster id, this node's id
//! and a fresh `directory.id`, as Kafka's `Formatter` writes it. [`plan`] is the pure rule,
//! Kafka's `Formatter.doFormat` order: every dir already formatted must carry this cluster and
//! node (refused even with `--ignore-formatted`, as Kafka refuses it); then, unless
//! `ignore_formatted`, one formatted dir refuses the whole command; the rest are formatted.
//! One rule is Skiff's own (issue 12 item 5): a dir holding partition data but no
//! `meta.properties` is refused, not adopted under the new id (Kafka formats it). Kafka also
//! writes `bootstrap.checkpoint` (its feature levels); Skiff has no feature levels to record,
//! and a dir Kafka formatted starts Skiff all the same (its extra file is left alone).
//!
//! Invariants: nothing is written unless the whole plan passed; each `meta.properties` is
//! written atomically (tmp + fsync + rename); the caller holds every dir's lock, so a running
//! broker's dirs are never reformatted under it.

use std::path::{Path, PathBuf};

use crate::log_dir::{
    LogDirError, META_PROPERTIES, MetaState, read_meta_state, write_meta_properties,
};

/// One dir as found: its `meta.properties` and the first partition data file in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub dir: String,
    pub meta: MetaState,
    pub data: Option<String>,
}

/// What happens to one dir.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write `meta.properties`.
    Format,
    /// Already formatted for this cluster and node (`ignore_formatted`): left as it is.
    Keep,
}

/// The pure rule (see the module docs): the step of every dir, in order, or the refusal.
pub fn plan(
    found: &[Found],
    cluster_id: &str,
    node_id: i32,
    ignore_formatted: bool,
) -> Result<Vec<Step>, LogDirError> {
    for f in found {
        let path = Path::new(&f.dir)
            .join(META_PROPERTIES)
            .display()
            .to_string();
        match &f.meta {
            MetaState::Formatted {
                cluster_id: stored, ..
            } if stored != cluster_id => {
                return Err(LogDirError::FormattedForOtherCluster {
                    path,
                    expected: cluster_id.to_string(),
                    found: stored.clone(),
                });
            }
            MetaState::Formatted {
                node_id: Some(stored),
                ..
            } if *stored != node_id => {
                return Err(LogDirError::OtherNode {
                    path,
                    found: *stored,
                    expected: node_id,
                });
            }
            MetaState::Garbled(reason) => {
                return Err(LogDirError::NoClusterId {
                    dir: f.dir.clone(),
                    reason: reason.clone(),
                });
            }
            MetaState::Missing => {
                if let Some(data) = &f.data {
                    return Err(LogDirError::Unformatted {
                        dir: f.dir.clone(),
                        data: data.clone(),
                    });
                }
            }
            MetaState::Formatted { .. } => {}
        }
    }
    if !ignore_formatted
        && let Some(f) = found
            .iter()
            .find(|f| matches!(f.meta, MetaState::Formatted { .. }))
    {
        return Err(LogDirError::AlreadyFormatted { dir: f.dir.clone() });
    }
    Ok(found
        .iter()
        .map(|f| match f.meta {
            MetaState::Missing => Step::Format,
            _ => Step::Keep,
        })
        .collect())
}

/// Reads every dir (a missing dir is an empty one), applies [`plan`], then creates and formats
/// the dirs it says. Returns each dir with its step. The caller holds the dirs' locks.
pub fn format_storage(
    dirs: &[PathBuf],
    cluster_id: &str,
    node_id: i32,
    ignore_formatted: bool,
) -> Result<Vec<(PathBuf, Step)>, LogDirError> {
    let mut found = Vec::with_capacity(dirs.len());
    for dir in dirs {
        let shown = dir.display().to_string();
        let fail = |e: std::io::Error| LogDirError::Format {
            dir: shown.clone(),
            message: e.to_string(),
        };
        let (meta, data) = if dir.exists() {
            let meta = read_meta_state(&dir.join(META_PROPERTIES)).map_err(fail)?;
            let data = if meta == MetaState::Missing {
                crate::log_dir::partition_data_in(dir)
                    .map_err(fail)?
                    .map(|p| p.display().to_string())
            } else {
                None
            };
            (meta, data)
        } else {
            (MetaState::Missing, None)
        };
        found.push(Found {
            dir: shown,
            meta,
            data,
        });
    }
    let steps = plan(&found, cluster_id, node_id, ignore_formatted)?;
    for (dir, step) in dirs.iter().zip(&steps) {
        if *step == Step::Format {
            let fail = |e: std::io::Error| LogDirError::Format {
                dir: dir.display().to_string(),
                message: e.to_string(),
            };
            std::fs::create_dir_all(dir).map_err(fail)?;
            write_meta_properties(&dir.join(META_PROPERTIES), cluster_id, node_id).map_err(fail)?;
        }
    }
    Ok(dirs.iter().cloned().zip(steps).collect())
}

#[cfg(test)]
#[path = "format_tests.rs"]
mod tests;
