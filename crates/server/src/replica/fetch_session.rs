//! The follower's side of incremental fetch sessions (KIP-227, Kafka's `FetchSessionHandler`):
//! a replica fetcher keeps one session with its leader, so a fetch lists only the partitions
//! whose fetch state changed and the leader answers only the partitions with news.
//!
//! Mental model: a pure record of what the leader's session holds for each partition (as last
//! sent) plus the session id and the next epoch. [`FollowerSession::plan`] turns the
//! partitions wanted now into a request: with no session, all of them at epoch 0 (open one);
//! with a session, the new or changed ones (fetch offset, last fetched epoch, log start,
//! leader epoch) and the ones to forget, at the next epoch. [`FollowerSession::on_answer`]
//! takes the leader's answer: a new session id after epoch 0, the next epoch after an
//! incremental fetch; FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH (or any failure)
//! drop the session, so the next fetch is full again and opens a new one; a leader that
//! answers session id 0 has no slot: every fetch stays full.
//!
//! Invariants: `sent` is exactly what the leader's session holds after the last answered
//! request; an unanswered request leaves no session behind (the next one is full).

use std::collections::HashMap;

use skiff_types::{ErrorCode, TopicPartition};
use uuid::Uuid;

/// A partition's fetch state as the leader's session holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SentState {
    pub topic_id: Uuid,
    pub fetch_offset: i64,
    pub last_fetched_epoch: i32,
    pub log_start_offset: i64,
    pub current_leader_epoch: i32,
}

/// One request's session fields and contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionPlan {
    pub session_id: i32,
    pub session_epoch: i32,
    /// The partitions to list (new or changed, or all in a full fetch).
    pub include: Vec<TopicPartition>,
    /// The partitions to forget: (topic id, topic, partition indexes).
    pub forget: Vec<(Uuid, String, Vec<i32>)>,
    wanted: HashMap<TopicPartition, SentState>,
}

/// The follower's session with one leader (module docs).
#[derive(Debug, Default)]
pub struct FollowerSession {
    /// 0: none; the next request is full at epoch 0.
    id: i32,
    epoch: i32,
    sent: HashMap<TopicPartition, SentState>,
}

impl FollowerSession {
    /// The request for the partitions wanted now.
    pub fn plan(&self, wanted: HashMap<TopicPartition, SentState>) -> SessionPlan {
        if self.id == 0 {
            let mut include: Vec<TopicPartition> = wanted.keys().cloned().collect();
            include.sort();
            return SessionPlan {
                session_id: 0,
                session_epoch: 0,
                include,
                forget: Vec::new(),
                wanted,
            };
        }
        let mut include: Vec<TopicPartition> = wanted
            .iter()
            .filter(|(tp, s)| self.sent.get(*tp) != Some(*s))
            .map(|(tp, _)| tp.clone())
            .collect();
        include.sort();
        let mut forget: Vec<(Uuid, String, Vec<i32>)> = Vec::new();
        let mut gone: Vec<(&TopicPartition, &SentState)> = self
            .sent
            .iter()
            .filter(|(tp, _)| !wanted.contains_key(*tp))
            .collect();
        gone.sort_by(|a, b| a.0.cmp(b.0));
        for (tp, s) in gone {
            match forget.iter_mut().find(|f| f.0 == s.topic_id) {
                Some(f) => f.2.push(tp.partition),
                None => forget.push((s.topic_id, tp.topic.clone(), vec![tp.partition])),
            }
        }
        SessionPlan {
            session_id: self.id,
            session_epoch: self.epoch,
            include,
            forget,
            wanted,
        }
    }

    /// The leader answered `plan` with top-level `error` and `session_id`. Returns whether
    /// the next fetch should go at once (the session was refused: fetch full again).
    pub fn on_answer(&mut self, plan: SessionPlan, error: ErrorCode, session_id: i32) -> bool {
        match error {
            ErrorCode::None => {}
            ErrorCode::FetchSessionIdNotFound | ErrorCode::InvalidFetchSessionEpoch => {
                *self = FollowerSession::default();
                return true;
            }
            _ => {
                *self = FollowerSession::default();
                return false;
            }
        }
        if session_id == 0 {
            // No session (no slot, or closed): every fetch stays full.
            *self = FollowerSession::default();
        } else if plan.session_epoch == 0 {
            self.id = session_id;
            self.epoch = 1;
            self.sent = plan.wanted;
        } else {
            self.sent = plan.wanted;
            self.epoch = if self.epoch == i32::MAX {
                1
            } else {
                self.epoch + 1
            };
        }
        false
    }

    /// The leader answered `tp` with an error: it is listed again in the next request if still
    /// wanted (so the leader re-reads it, e.g. a topic id its image did not know yet), and
    /// forgotten if not (it stays in `sent`, marked changed: removing it would leave it in the
    /// leader's session for good, answering UNKNOWN_TOPIC_ID to every fetch).
    pub fn resend(&mut self, tp: &TopicPartition) {
        if let Some(s) = self.sent.get_mut(tp) {
            s.fetch_offset = i64::MIN;
        }
    }

    /// The request was not answered (lost connection, timeout): its outcome is unknown, so
    /// the next fetch opens a new session.
    pub fn on_failure(&mut self) {
        *self = FollowerSession::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(offset: i64) -> SentState {
        SentState {
            topic_id: Uuid::from_u128(7),
            fetch_offset: offset,
            last_fetched_epoch: 0,
            log_start_offset: 0,
            current_leader_epoch: 1,
        }
    }

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn wanted(list: &[(i32, i64)]) -> HashMap<TopicPartition, SentState> {
        list.iter().map(|(p, o)| (tp(*p), st(*o))).collect()
    }

    #[test]
    fn a_session_lists_only_changes_and_forgets_what_is_gone() {
        let mut s = FollowerSession::default();
        let plan = s.plan(wanted(&[(0, 10), (1, 20), (2, 30)]));
        assert_eq!((plan.session_id, plan.session_epoch), (0, 0), "opens one");
        assert_eq!(plan.include, vec![tp(0), tp(1), tp(2)], "full");
        assert!(!s.on_answer(plan, ErrorCode::None, 55));
        // Partition 0 moved, 1 did not, 2 is no longer followed, 3 is new.
        let plan = s.plan(wanted(&[(0, 15), (1, 20), (3, 0)]));
        assert_eq!((plan.session_id, plan.session_epoch), (55, 1));
        assert_eq!(plan.include, vec![tp(0), tp(3)]);
        assert_eq!(
            plan.forget,
            vec![(Uuid::from_u128(7), "t".to_owned(), vec![2])]
        );
        assert!(!s.on_answer(plan, ErrorCode::None, 55));
        let plan = s.plan(wanted(&[(0, 15), (1, 20), (3, 0)]));
        assert_eq!(
            (plan.session_epoch, plan.include.len(), plan.forget.len()),
            (2, 0, 0)
        );
        // A leader epoch change is a change.
        let mut w = wanted(&[(0, 15), (1, 20), (3, 0)]);
        w.entry(tp(1)).and_modify(|s| s.current_leader_epoch = 2);
        assert_eq!(s.plan(w).include, vec![tp(1)]);
        // A partition answered with an error is listed again, or forgotten once not wanted.
        s.resend(&tp(3));
        let plan = s.plan(wanted(&[(0, 15), (1, 20), (3, 0)]));
        assert_eq!(plan.include, vec![tp(3)]);
        let plan = s.plan(wanted(&[(0, 15), (1, 20)]));
        assert!(plan.include.is_empty());
        assert_eq!(
            plan.forget,
            vec![(Uuid::from_u128(7), "t".to_owned(), vec![3])]
        );
    }

    #[test]
    fn refused_or_failed_sessions_fall_back_to_a_full_fetch() {
        for (error, at_once) in [
            (ErrorCode::FetchSessionIdNotFound, true),
            (ErrorCode::InvalidFetchSessionEpoch, true),
            (ErrorCode::UnknownServerError, false),
        ] {
            let mut s = FollowerSession::default();
            let plan = s.plan(wanted(&[(0, 10)]));
            s.on_answer(plan, ErrorCode::None, 9);
            let plan = s.plan(wanted(&[(0, 11)]));
            assert_eq!(s.on_answer(plan, error, 0), at_once, "{error:?}");
            let plan = s.plan(wanted(&[(0, 11)]));
            assert_eq!((plan.session_id, plan.session_epoch), (0, 0), "{error:?}");
            assert_eq!(plan.include, vec![tp(0)], "{error:?}: full again");
        }
        let mut s = FollowerSession::default();
        let plan = s.plan(wanted(&[(0, 10)]));
        s.on_answer(plan, ErrorCode::None, 0);
        let plan = s.plan(wanted(&[(0, 10)]));
        assert_eq!(
            (plan.session_id, plan.session_epoch, plan.include.len()),
            (0, 0, 1),
            "no slot: full"
        );
        s.on_answer(plan, ErrorCode::None, 4);
        s.on_failure();
        assert_eq!(
            s.plan(wanted(&[(0, 10)])).session_id,
            0,
            "a lost answer: a new session"
        );
    }
}
