//! Incremental fetch sessions (KIP-227), as a pure cache: no I/O, no clock (`now_ms` is passed).
//!
//! Mental model: a client that fetches the same partitions over and over may open a session
//! (`session_id = 0, epoch = 0`). The broker remembers the partitions, their fetch offsets and
//! what it last told the client about each (high watermark, last stable offset, log start
//! offset); each later request (`session_id = S, epoch = n`) only lists partitions that changed
//! and those to forget, and each response only lists partitions with news (records, an error,
//! or a changed offset). Epochs must follow one another exactly; `epoch = -1` closes a session
//! (or asks for a plain sessionless fetch).
//!
//! Decisions, as in Kafka's `FetchSession`:
//! | request                      | action                                           | response        |
//! |------------------------------|--------------------------------------------------|-----------------|
//! | id 0, epoch -1               | sessionless full fetch                           | id 0, all       |
//! | id S, epoch -1               | remove S, sessionless full fetch                 | id 0, all       |
//! | id any, epoch 0              | remove S (if any), full fetch, new session       | id new (or 0), all |
//! | id S, epoch n > 0, S unknown | FETCH_SESSION_ID_NOT_FOUND                        | id 0, none      |
//! | id S, epoch n != expected    | INVALID_FETCH_SESSION_EPOCH                       | id 0, none      |
//! | id S, epoch n == expected    | update + forget, epoch n+1, read all of S         | id S, changed   |
//!
//! The cache holds at most `slots` sessions; when full, the least recently used is evicted.
//! Thread-safety: plain data; the broker keeps it behind a mutex held only for bookkeeping.

use std::collections::HashMap;

use skiff_types::ErrorCode;
use uuid::Uuid;

/// Identifies one partition in a session: topic id (nil below Fetch v13), topic name (empty
/// when an id is unknown), partition index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PartKey {
    pub topic_id: Uuid,
    pub topic: String,
    pub partition: i32,
}

impl PartKey {
    /// The same partition: by topic id when the request names topics by id (v13+; the name
    /// may have been unknown when it was cached), else by name.
    pub fn same(&self, other: &PartKey) -> bool {
        self.partition == other.partition
            && if self.topic_id.is_nil() && other.topic_id.is_nil() {
                self.topic == other.topic
            } else {
                self.topic_id == other.topic_id
            }
    }
}

/// What the client asks for one partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartRequest {
    pub key: PartKey,
    pub fetch_offset: i64,
    pub partition_max_bytes: i32,
    pub current_leader_epoch: i32,
    /// A follower's `LastFetchedEpoch` (-1: none).
    pub last_fetched_epoch: i32,
}

/// What the broker last reported for a partition of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reported {
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
}

#[derive(Clone, Debug)]
struct SessionPartition {
    req: PartRequest,
    reported: Option<Reported>,
}

#[derive(Clone, Debug)]
struct Session {
    /// The epoch the next request must carry.
    next_epoch: i32,
    /// In insertion order (Kafka keeps a linked map).
    partitions: Vec<SessionPartition>,
    last_used_ms: i64,
}

/// How a fetch relates to sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionMode {
    /// No session: every partition in the response, session id 0.
    Sessionless,
    /// A new session is to be created when the response is built (full response).
    New,
    /// An existing session: only changed partitions in the response.
    Incremental { id: i32 },
    /// The request is refused with this top-level error.
    Error(ErrorCode),
}

/// The bounded session cache.
#[derive(Debug)]
pub struct FetchSessionCache {
    sessions: HashMap<i32, Session>,
    slots: usize,
    next_id: i32,
}

const FINAL_EPOCH: i32 = -1;
const INITIAL_EPOCH: i32 = 0;

impl FetchSessionCache {
    pub fn new(slots: usize) -> Self {
        Self {
            sessions: HashMap::new(),
            slots,
            next_id: 1,
        }
    }

    pub fn len(&self) -> usize {
        self.sessions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sessions.is_empty()
    }

    /// Interprets a request's session fields. Returns the mode and the partitions to read
    /// (for an incremental fetch: every partition of the session, updated).
    pub fn begin(
        &mut self,
        session_id: i32,
        epoch: i32,
        requested: Vec<PartRequest>,
        forgotten: &[PartKey],
        now_ms: i64,
    ) -> (SessionMode, Vec<PartRequest>) {
        if epoch == FINAL_EPOCH {
            if session_id != 0 {
                self.sessions.remove(&session_id);
            }
            return (SessionMode::Sessionless, requested);
        }
        if epoch == INITIAL_EPOCH {
            if session_id != 0 {
                self.sessions.remove(&session_id);
            }
            return (SessionMode::New, requested);
        }
        let Some(session) = self.sessions.get_mut(&session_id) else {
            return (
                SessionMode::Error(ErrorCode::FetchSessionIdNotFound),
                Vec::new(),
            );
        };
        if session.next_epoch != epoch {
            return (
                SessionMode::Error(ErrorCode::InvalidFetchSessionEpoch),
                Vec::new(),
            );
        }
        for r in requested {
            match session
                .partitions
                .iter_mut()
                .find(|p| p.req.key.same(&r.key))
            {
                Some(p) => p.req = r,
                None => session.partitions.push(SessionPartition {
                    req: r,
                    reported: None,
                }),
            }
        }
        session
            .partitions
            .retain(|p| !forgotten.iter().any(|f| f.same(&p.req.key)));
        session.next_epoch = next_epoch(epoch);
        session.last_used_ms = now_ms;
        let plan = session.partitions.iter().map(|p| p.req.clone()).collect();
        (SessionMode::Incremental { id: session_id }, plan)
    }

    /// Creates a session for a full fetch's partitions; returns its id, or 0 when there is
    /// nothing to track. Evicts the least recently used session when the cache is full.
    pub fn create(&mut self, parts: &[(PartRequest, Reported)], now_ms: i64) -> i32 {
        if self.slots == 0 || parts.is_empty() {
            return 0;
        }
        if self.sessions.len() >= self.slots
            && let Some(lru) = self
                .sessions
                .iter()
                .min_by_key(|(_, s)| s.last_used_ms)
                .map(|(id, _)| *id)
        {
            self.sessions.remove(&lru);
        }
        let id = self.fresh_id();
        self.sessions.insert(
            id,
            Session {
                next_epoch: next_epoch(INITIAL_EPOCH),
                partitions: parts
                    .iter()
                    .map(|(req, rep)| SessionPartition {
                        req: req.clone(),
                        reported: Some(*rep),
                    })
                    .collect(),
                last_used_ms: now_ms,
            },
        );
        id
    }

    /// Names the session's partitions whose topic id was unknown when they were cached (a
    /// follower may fetch a new topic before this broker's image has it) and that `resolve`
    /// knows now, in the cache and in `plan`: else they would answer UNKNOWN_TOPIC_ID for as
    /// long as the client does not list them again (Kafka's `CachedPartition` resolves them
    /// on every request too).
    pub fn resolve_names(
        &mut self,
        session_id: i32,
        plan: &mut [PartRequest],
        resolve: impl Fn(&Uuid) -> Option<String>,
    ) {
        let unnamed = |k: &PartKey| k.topic.is_empty() && !k.topic_id.is_nil();
        if let Some(s) = self.sessions.get_mut(&session_id) {
            for p in s.partitions.iter_mut().filter(|p| unnamed(&p.req.key)) {
                if let Some(name) = resolve(&p.req.key.topic_id) {
                    p.req.key.topic = name;
                }
            }
        }
        for r in plan.iter_mut().filter(|r| unnamed(&r.key)) {
            if let Some(name) = resolve(&r.key.topic_id) {
                r.key.topic = name;
            }
        }
    }

    /// For an incremental response: whether a partition has news, recording what is reported.
    /// `has_data_or_error` = [`has_news`] of the partition's result.
    pub fn should_report(
        &mut self,
        session_id: i32,
        key: &PartKey,
        now: Reported,
        has_data_or_error: bool,
    ) -> bool {
        let Some(p) = self
            .sessions
            .get_mut(&session_id)
            .and_then(|s| s.partitions.iter_mut().find(|p| p.req.key.same(key)))
        else {
            return true;
        };
        let changed = p.reported != Some(now);
        p.reported = Some(now);
        has_data_or_error || changed
    }

    fn fresh_id(&mut self) -> i32 {
        loop {
            let id = self.next_id;
            self.next_id = if self.next_id == i32::MAX {
                1
            } else {
                self.next_id + 1
            };
            if !self.sessions.contains_key(&id) {
                return id;
            }
        }
    }
}

/// Whether a partition's result is news in an incremental response whatever its offsets did:
/// records, an error, or a follower's DivergingEpoch (Kafka's `CachedPartition` responds with
/// it; left out, a follower in a session never learns its log diverged and never truncates).
pub fn has_news(error: ErrorCode, bytes: usize, diverging: bool) -> bool {
    error != ErrorCode::None || bytes > 0 || diverging
}

fn next_epoch(e: i32) -> i32 {
    if e == i32::MAX { 1 } else { e + 1 }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(p: i32) -> PartKey {
        PartKey {
            topic_id: Uuid::nil(),
            topic: "t".into(),
            partition: p,
        }
    }

    fn req(p: i32, off: i64) -> PartRequest {
        PartRequest {
            key: key(p),
            fetch_offset: off,
            partition_max_bytes: 1024,
            current_leader_epoch: -1,
            last_fetched_epoch: -1,
        }
    }

    const REP: Reported = Reported {
        high_watermark: 5,
        last_stable_offset: 5,
        log_start_offset: 0,
    };

    /// A partition whose offsets did not move is still listed in an incremental response when
    /// it has records, an error or a DivergingEpoch; with none of them it is left out.
    #[test]
    fn diverging_epoch_is_news_in_an_incremental_response() {
        let mut c = FetchSessionCache::new(2);
        let (_, plan) = c.begin(0, 0, vec![req(0, 7)], &[], 0);
        let id = c.create(&plan.into_iter().map(|r| (r, REP)).collect::<Vec<_>>(), 0);
        for (error, bytes, diverging, want) in [
            (ErrorCode::None, 0, false, false),
            (ErrorCode::None, 0, true, true),
            (ErrorCode::None, 100, false, true),
            (ErrorCode::FencedLeaderEpoch, 0, false, true),
            (ErrorCode::None, 0, false, false),
        ] {
            let news = has_news(error, bytes, diverging);
            assert_eq!(
                c.should_report(id, &key(0), REP, news),
                want,
                "{error:?}, {bytes} bytes, diverging {diverging}"
            );
        }
    }

    #[test]
    fn session_table() {
        let mut c = FetchSessionCache::new(2);
        // sessionless
        let (m, plan) = c.begin(0, -1, vec![req(0, 0)], &[], 0);
        assert_eq!(m, SessionMode::Sessionless);
        assert_eq!(plan.len(), 1);
        // new session
        let (m, plan) = c.begin(0, 0, vec![req(0, 0), req(1, 0)], &[], 0);
        assert_eq!(m, SessionMode::New);
        let parts: Vec<_> = plan.into_iter().map(|r| (r, REP)).collect();
        let id = c.create(&parts, 1);
        assert!(id > 0);
        // wrong epoch
        let (m, _) = c.begin(id, 2, vec![], &[], 2);
        assert_eq!(m, SessionMode::Error(ErrorCode::InvalidFetchSessionEpoch));
        // unknown id
        let (m, _) = c.begin(id + 100, 1, vec![], &[], 2);
        assert_eq!(m, SessionMode::Error(ErrorCode::FetchSessionIdNotFound));
        // incremental: update p0, forget p1
        let (m, plan) = c.begin(id, 1, vec![req(0, 3)], &[key(1)], 3);
        assert_eq!(m, SessionMode::Incremental { id });
        assert_eq!(plan, vec![req(0, 3)]);
        // unchanged and no data -> not reported; changed HW -> reported once
        assert!(!c.should_report(id, &key(0), REP, false));
        let moved = Reported {
            high_watermark: 6,
            ..REP
        };
        assert!(c.should_report(id, &key(0), moved, false));
        assert!(!c.should_report(id, &key(0), moved, false));
        assert!(c.should_report(id, &key(0), moved, true));
        // next epoch is 2; epoch 1 again is refused
        let (m, _) = c.begin(id, 1, vec![], &[], 4);
        assert_eq!(m, SessionMode::Error(ErrorCode::InvalidFetchSessionEpoch));
        let (m, _) = c.begin(id, 2, vec![], &[], 4);
        assert_eq!(m, SessionMode::Incremental { id });
        // close
        let (m, _) = c.begin(id, -1, vec![], &[], 5);
        assert_eq!(m, SessionMode::Sessionless);
        assert!(c.is_empty());
    }

    #[test]
    fn cache_is_bounded_lru() {
        let mut c = FetchSessionCache::new(2);
        let parts = vec![(req(0, 0), REP)];
        let a = c.create(&parts, 1);
        let b = c.create(&parts, 2);
        // touch a so b is the LRU
        let (m, _) = c.begin(a, 1, vec![], &[], 3);
        assert_eq!(m, SessionMode::Incremental { id: a });
        let d = c.create(&parts, 4);
        assert_eq!(c.len(), 2);
        let (m, _) = c.begin(b, 1, vec![], &[], 5);
        assert_eq!(m, SessionMode::Error(ErrorCode::FetchSessionIdNotFound));
        let (m, _) = c.begin(d, 1, vec![], &[], 5);
        assert_eq!(m, SessionMode::Incremental { id: d });
        assert_eq!(c.create(&[], 6), 0);
    }

    /// A follower listed a new topic before this broker's image had it: the cached key has no
    /// name. Once the image knows the id, the next incremental fetch (which does not list the
    /// partition again) reads it by name, and later requests still match it by id.
    #[test]
    fn an_unknown_topic_id_is_named_once_known() {
        let id = Uuid::from_u128(42);
        let unnamed = PartRequest {
            key: PartKey {
                topic_id: id,
                topic: String::new(),
                partition: 0,
            },
            ..req(0, 0)
        };
        let mut c = FetchSessionCache::new(10);
        let (m, _) = c.begin(0, 0, vec![unnamed.clone()], &[], 0);
        assert_eq!(m, SessionMode::New);
        let sid = c.create(&[(unnamed.clone(), REP)], 0);
        let (m, mut plan) = c.begin(sid, 1, vec![], &[], 1);
        assert_eq!(m, SessionMode::Incremental { id: sid });
        c.resolve_names(sid, &mut plan, |_| None);
        assert_eq!(plan[0].key.topic, "", "still unknown");
        let (_, mut plan) = c.begin(sid, 2, vec![], &[], 2);
        c.resolve_names(sid, &mut plan, |u| (*u == id).then(|| "new".to_owned()));
        assert_eq!(plan[0].key.topic, "new", "named in the plan");
        let (_, plan) = c.begin(sid, 3, vec![], &[], 3);
        assert_eq!(plan[0].key.topic, "new", "and in the cache");
        // The client lists it again (a new fetch offset) with the name: one partition, updated.
        let named = PartRequest {
            key: PartKey {
                topic_id: id,
                topic: "new".into(),
                partition: 0,
            },
            ..req(0, 7)
        };
        let (_, plan) = c.begin(sid, 4, vec![named], &[], 4);
        assert_eq!(plan.len(), 1);
        assert_eq!(plan[0].fetch_offset, 7);
        assert!(
            c.should_report(sid, &unnamed.key, REP, true),
            "matched by id"
        );
    }
}
