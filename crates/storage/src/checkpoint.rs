//! Small checkpoint files, replaced atomically (spec §2.8, §5.4, §5.6).
//!
//! Mental model: a checkpoint is a tiny text file that is always rewritten whole. Writers go
//! through [`write_atomic`]: write `<path>.tmp`, fsync it, rename it over `<path>`, fsync the
//! directory. A reader therefore sees either the old or the new content, never a mix; a
//! `<path>.tmp` left by a crash is ignored by readers and overwritten by the next write.
//!
//! Format (Kafka's `CheckpointFile`), one entry per line, fields separated by whitespace:
//! ```text
//! <version>
//! <entry count>
//! <entry>
//! ...
//! ```
//! [`CheckpointFile`] implements it for any [`CheckpointEntry`]. [`OffsetCheckpointFile`] is the
//! `"<topic> <partition> <offset>"` flavour used for `recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `replication-offset-checkpoint` and
//! `cleaner-offset-checkpoint`; the leader-epoch cache uses `"<epoch> <start offset>"`.
//!
//! Reading is strict: a missing file is "no entries", but a file that exists and is not
//! exactly well-formed (empty, wrong version, count mismatch, bad line, not UTF-8) is
//! [`CheckpointError::Malformed`]. Callers log that and fall back to an empty state, which is
//! always safe because everything checkpointed here can be recomputed or re-fetched.
//!
//! Thread-safety: the types hold only a path. Concurrent writers of the same file must be
//! serialised by the caller (they would share the `.tmp` name).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use skiff_types::TopicPartition;

/// The only checkpoint format version Kafka (and Skiff) writes.
pub const CHECKPOINT_VERSION: i32 = 0;

/// Errors reading a checkpoint file.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("I/O error on checkpoint {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The file exists but is not a valid checkpoint. `line` is 1-based (0: the whole file).
    #[error("malformed checkpoint {path} at line {line}: {reason}")]
    Malformed {
        path: PathBuf,
        line: usize,
        reason: String,
    },
}

/// `<path>.tmp`, the name [`write_atomic`] writes before renaming.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Replaces `path` with `contents` atomically and durably: write `<path>.tmp`, fsync, rename
/// over `path`, fsync the parent directory.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    {
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(contents)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

/// Replaces `path` with `contents` atomically but not durably: write `<path>.tmp`, rename over
/// `path`, no fsync. Only for a file whose loss or emptiness after a crash is repaired from
/// other durable state (the first leader-epoch entry: an empty cache is rebuilt from the
/// log's batch headers at load), so the hot path pays no fsync for it.
pub fn write_atomic_unsynced(path: &Path, contents: &[u8]) -> io::Result<()> {
    let tmp = tmp_path(path);
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

/// One line of a checkpoint file.
pub trait CheckpointEntry: Sized {
    /// The line without its newline. Must not contain a newline.
    fn to_line(&self) -> String;
    /// Parses a line (without its newline); `Err(reason)` if it is not a valid entry.
    fn from_line(line: &str) -> Result<Self, String>;
}

/// A versioned text checkpoint of `T` entries. See the module docs for the format.
#[derive(Debug, Clone)]
pub struct CheckpointFile {
    path: PathBuf,
    version: i32,
}

impl CheckpointFile {
    pub fn new(path: PathBuf, version: i32) -> Self {
        Self { path, version }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Renders the whole file.
    pub fn render<'a, T: CheckpointEntry + 'a>(
        &self,
        entries: impl ExactSizeIterator<Item = &'a T>,
    ) -> String {
        let mut out = format!("{}\n{}\n", self.version, entries.len());
        for e in entries {
            out.push_str(&e.to_line());
            out.push('\n');
        }
        out
    }

    /// Atomically replaces the file with `entries`.
    pub fn write<'a, T: CheckpointEntry + 'a>(
        &self,
        entries: impl ExactSizeIterator<Item = &'a T>,
    ) -> io::Result<()> {
        write_atomic(&self.path, self.render(entries).as_bytes())
    }

    /// Like [`CheckpointFile::write`] without the fsyncs (see [`write_atomic_unsynced`]).
    pub fn write_unsynced<'a, T: CheckpointEntry + 'a>(
        &self,
        entries: impl ExactSizeIterator<Item = &'a T>,
    ) -> io::Result<()> {
        write_atomic_unsynced(&self.path, self.render(entries).as_bytes())
    }

    /// Reads the entries in file order. A missing file is `Ok(vec![])`.
    pub fn read<T: CheckpointEntry>(&self) -> Result<Vec<T>, CheckpointError> {
        let bytes = match std::fs::read(&self.path) {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(CheckpointError::Io {
                    path: self.path.clone(),
                    source,
                });
            }
        };
        self.parse(&bytes)
    }

    /// Parses file content (exposed for tests and tools).
    pub fn parse<T: CheckpointEntry>(&self, bytes: &[u8]) -> Result<Vec<T>, CheckpointError> {
        let malformed = |line: usize, reason: String| CheckpointError::Malformed {
            path: self.path.clone(),
            line,
            reason,
        };
        let text = std::str::from_utf8(bytes).map_err(|e| malformed(0, e.to_string()))?;
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
        let (n, version_line) = lines
            .next()
            .ok_or_else(|| malformed(1, "empty file".into()))?;
        let version: i32 = version_line
            .trim()
            .parse()
            .map_err(|_| malformed(n, format!("bad version {version_line:?}")))?;
        if version != self.version {
            return Err(malformed(
                n,
                format!("unsupported version {version}, expected {}", self.version),
            ));
        }
        let (n, count_line) = lines
            .next()
            .ok_or_else(|| malformed(2, "missing entry count".into()))?;
        let count: usize = count_line
            .trim()
            .parse()
            .map_err(|_| malformed(n, format!("bad entry count {count_line:?}")))?;
        let mut entries = Vec::with_capacity(count.min(1 << 16));
        for (n, line) in lines {
            if entries.len() == count {
                return Err(malformed(
                    n,
                    format!("more than the {count} entries declared"),
                ));
            }
            entries.push(T::from_line(line).map_err(|reason| malformed(n, reason))?);
        }
        if entries.len() != count {
            return Err(malformed(
                0,
                format!("expected {count} entries, found {}", entries.len()),
            ));
        }
        Ok(entries)
    }
}

/// Splits a line into exactly `N` whitespace-separated fields.
pub fn fields<const N: usize>(line: &str) -> Result<[&str; N], String> {
    let mut out = [""; N];
    let mut it = line.split_whitespace();
    for slot in out.iter_mut() {
        *slot = it
            .next()
            .ok_or_else(|| format!("expected {N} fields in {line:?}"))?;
    }
    if it.next().is_some() {
        return Err(format!("expected {N} fields in {line:?}"));
    }
    Ok(out)
}

/// A `"<topic> <partition> <offset>"` line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TopicPartitionOffset {
    tp: TopicPartition,
    offset: i64,
}

impl CheckpointEntry for TopicPartitionOffset {
    fn to_line(&self) -> String {
        format!("{} {} {}", self.tp.topic, self.tp.partition, self.offset)
    }

    fn from_line(line: &str) -> Result<Self, String> {
        let [topic, partition, offset] = fields::<3>(line)?;
        let partition: i32 = partition
            .parse()
            .ok()
            .filter(|p| *p >= 0)
            .ok_or_else(|| format!("bad partition {partition:?}"))?;
        let offset: i64 = offset
            .parse()
            .map_err(|_| format!("bad offset {offset:?}"))?;
        Ok(Self {
            tp: TopicPartition::new(topic, partition),
            offset,
        })
    }
}

/// Kafka's text offset checkpoint: `"0\n<count>\n<topic> <partition> <offset>\n"*`. Used for
/// recovery-point-offset-checkpoint, log-start-offset-checkpoint,
/// replication-offset-checkpoint, cleaner-offset-checkpoint.
#[derive(Debug, Clone)]
pub struct OffsetCheckpointFile {
    path: PathBuf,
}

impl OffsetCheckpointFile {
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn file(&self) -> CheckpointFile {
        CheckpointFile::new(self.path.clone(), CHECKPOINT_VERSION)
    }

    /// Atomically replaces the file with `entries`. A topic name that is empty or contains
    /// whitespace (illegal in Kafka) would corrupt the format: `InvalidInput`, nothing written.
    pub fn write(&self, entries: &BTreeMap<TopicPartition, i64>) -> io::Result<()> {
        if let Some(tp) = entries
            .keys()
            .find(|tp| tp.topic.is_empty() || tp.topic.chars().any(char::is_whitespace))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("topic name {:?} cannot be checkpointed", tp.topic),
            ));
        }
        let lines: Vec<TopicPartitionOffset> = entries
            .iter()
            .map(|(tp, offset)| TopicPartitionOffset {
                tp: tp.clone(),
                offset: *offset,
            })
            .collect();
        self.file().write(lines.iter())
    }

    /// Reads the file. Missing file: `Ok(empty)`. Malformed content, including the same
    /// partition listed twice: `Err(Malformed)` (callers log and treat it as empty).
    pub fn read(&self) -> Result<BTreeMap<TopicPartition, i64>, CheckpointError> {
        let mut out = BTreeMap::new();
        for e in self.file().read::<TopicPartitionOffset>()? {
            let tp = e.tp.clone();
            if out.insert(e.tp, e.offset).is_some() {
                return Err(CheckpointError::Malformed {
                    path: self.path.clone(),
                    line: 0,
                    reason: format!("{tp} is listed twice"),
                });
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    fn sample() -> BTreeMap<TopicPartition, i64> {
        BTreeMap::from([
            (tp("my-topic", 0), 1234),
            (tp("my-topic", 1), 99),
            (tp("a.b_c-d", 17), 0),
            (tp("big", 3), i64::MAX),
        ])
    }

    #[test]
    fn round_trip_and_exact_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recovery-point-offset-checkpoint");
        let cp = OffsetCheckpointFile::new(path.clone());
        cp.write(&sample()).unwrap();
        assert_eq!(cp.read().unwrap(), sample());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "0\n4\na.b_c-d 17 0\nbig 3 9223372036854775807\nmy-topic 0 1234\nmy-topic 1 99\n"
        );
        assert!(!tmp_path(&path).exists(), "tmp file renamed away");
        // Rewrite replaces everything, including with nothing.
        cp.write(&BTreeMap::new()).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0\n0\n");
        assert!(cp.read().unwrap().is_empty());
    }

    #[test]
    fn reads_kafka_written_file_with_extra_whitespace() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replication-offset-checkpoint");
        std::fs::write(&path, "0\r\n2\r\nt  0\t5\r\nt 1 -1").unwrap();
        let got = OffsetCheckpointFile::new(path).read().unwrap();
        assert_eq!(got, BTreeMap::from([(tp("t", 0), 5), (tp("t", 1), -1)]));
    }

    #[test]
    fn missing_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let cp = OffsetCheckpointFile::new(dir.path().join("nope"));
        assert!(cp.read().unwrap().is_empty());
    }

    #[test]
    fn every_kind_of_garbage_is_malformed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cp");
        let cp = OffsetCheckpointFile::new(path.clone());
        let cases: &[(&[u8], &str)] = &[
            (b"", "empty"),
            (b"0\n", "no count"),
            (b"0\n2\nt 0 5\n", "truncated: fewer entries than declared"),
            (b"0\n2\nt 0 5\nt 1 ", "truncated mid-line"),
            (b"0\n1\nt 0 5\nt 1 6\n", "more entries than declared"),
            (b"1\n1\nt 0 5\n", "wrong version"),
            (b"x\n1\nt 0 5\n", "non-numeric version"),
            (b"0\n-1\n", "negative count"),
            (b"0\none\nt 0 5\n", "non-numeric count"),
            (b"0\n1\nt zero 5\n", "non-numeric partition"),
            (b"0\n1\nt -1 5\n", "negative partition"),
            (b"0\n1\nt 0 five\n", "non-numeric offset"),
            (b"0\n1\nt 0 99999999999999999999\n", "offset overflows i64"),
            (b"0\n1\nt 0\n", "too few fields"),
            (b"0\n1\nt 0 5 6\n", "too many fields"),
            (b"0\n2\nt 0 5\n\n", "blank line counts as a bad entry"),
            (b"0\n2\nt 0 5\nt 0 6\n", "duplicate partition"),
            (b"0\n1\n\xff\xfe 0 5\n", "not UTF-8"),
            (b"\0\0\0\0\0\0\0\0", "zero-filled"),
        ];
        for (bytes, what) in cases {
            std::fs::write(&path, bytes).unwrap();
            match cp.read() {
                Err(CheckpointError::Malformed { .. }) => {}
                other => panic!("{what}: expected Malformed, got {other:?}"),
            }
        }
    }

    #[test]
    fn leftover_tmp_file_is_ignored_and_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log-start-offset-checkpoint");
        let cp = OffsetCheckpointFile::new(path.clone());
        cp.write(&BTreeMap::from([(tp("t", 0), 7)])).unwrap();
        // A crash after writing the tmp file but before the rename.
        std::fs::write(
            tmp_path(&path),
            "0\n5\ngarbage that is long enough to be longer",
        )
        .unwrap();
        assert_eq!(cp.read().unwrap(), BTreeMap::from([(tp("t", 0), 7)]));
        cp.write(&sample()).unwrap();
        assert_eq!(cp.read().unwrap(), sample());
        assert!(!tmp_path(&path).exists());
        // A tmp file but no checkpoint at all: still "no checkpoint".
        let other = dir.path().join("cleaner-offset-checkpoint");
        std::fs::write(tmp_path(&other), "0\n1\nt 0 1\n").unwrap();
        assert!(OffsetCheckpointFile::new(other).read().unwrap().is_empty());
    }

    #[test]
    fn write_refuses_topics_that_would_break_the_format() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cp");
        let cp = OffsetCheckpointFile::new(path.clone());
        cp.write(&sample()).unwrap();
        for bad in ["two words", "", "tab\there", "new\nline"] {
            let err = cp.write(&BTreeMap::from([(tp(bad, 0), 1)])).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        assert_eq!(cp.read().unwrap(), sample(), "old content kept");
    }

    #[test]
    fn write_atomic_reports_missing_directory() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("cp");
        assert!(write_atomic(&path, b"x").is_err());
        write_atomic(&dir.path().join("cp"), b"hello").unwrap();
        assert_eq!(std::fs::read(dir.path().join("cp")).unwrap(), b"hello");
    }

    #[test]
    fn generic_file_with_custom_entries() {
        #[derive(Debug, PartialEq)]
        struct Pair(i32, i64);
        impl CheckpointEntry for Pair {
            fn to_line(&self) -> String {
                format!("{} {}", self.0, self.1)
            }
            fn from_line(line: &str) -> Result<Self, String> {
                let [a, b] = fields::<2>(line)?;
                Ok(Pair(
                    a.parse().map_err(|_| "a".to_string())?,
                    b.parse().map_err(|_| "b".to_string())?,
                ))
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let f = CheckpointFile::new(dir.path().join("x"), 3);
        let v = [Pair(1, 2), Pair(3, 4)];
        f.write(v.iter()).unwrap();
        assert_eq!(
            std::fs::read_to_string(f.path()).unwrap(),
            "3\n2\n1 2\n3 4\n"
        );
        assert_eq!(f.read::<Pair>().unwrap(), v);
        let v0 = CheckpointFile::new(dir.path().join("x"), 0);
        assert!(matches!(
            v0.read::<Pair>(),
            Err(CheckpointError::Malformed { line: 1, .. })
        ));
    }
}
