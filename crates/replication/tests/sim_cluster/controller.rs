//! The controller model: one partition's registration and three brokers' sessions, with the
//! rules of `skiff_metadata`'s controller (`controller/leadership.rs`, `brokers.rs`,
//! `alter_partition.rs`; Kafka 4.0-IV0: clean elections only, no ELR). Every committed
//! change is one new image version; replicas apply versions in order, possibly skipping
//! some (the server reconciles with the latest image it has).

use skiff_types::ErrorCode;

/// Replica ids, in replica-list order.
pub const REPLICAS: [i32; 3] = [1, 2, 3];

pub fn slot(id: i32) -> usize {
    usize::try_from(id - 1).unwrap_or(0)
}

/// The image at one version: the partition's registration and the brokers' registrations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    pub isr: Vec<i32>,
    pub fenced: [bool; 3],
    /// Each broker's epoch: the version of the record that began its incarnation.
    pub broker_epoch: [i64; 3],
}

#[derive(Debug)]
pub struct Controller {
    pub versions: Vec<Image>,
    /// The incarnation each broker registered with.
    pub incarnation: [u32; 3],
    /// Last contact (heartbeat or registration) per broker.
    pub contact: [i64; 3],
    pub session_timeout_ms: i64,
}

impl Controller {
    pub fn new(session_timeout_ms: i64) -> Self {
        let image = Image {
            leader: 1,
            leader_epoch: 0,
            partition_epoch: 0,
            isr: REPLICAS.to_vec(),
            fenced: [false; 3],
            broker_epoch: [0; 3],
        };
        Self {
            versions: vec![image],
            incarnation: [1; 3],
            contact: [0; 3],
            session_timeout_ms,
        }
    }

    pub fn latest(&self) -> &Image {
        self.versions.last().unwrap_or_else(|| unreachable!())
    }

    pub fn version(&self) -> usize {
        self.versions.len() - 1
    }

    fn commit(&mut self, image: Image, why: &str, trace: &mut Vec<String>) {
        trace.push(format!(
            "  controller v{}: {why}: {image:?}",
            self.versions.len()
        ));
        self.versions.push(image);
    }

    /// `leader_and_isr_updates` for the partition: `remove` leaves the ISR and leadership,
    /// `add` is acceptable as leader although fenced in `img`. `None`: no change.
    fn elect(img: &Image, remove: Option<i32>, add: Option<i32>) -> Option<Image> {
        let acceptable = |r: i32| Some(r) != remove && (Some(r) == add || !img.fenced[slot(r)]);
        let target: Vec<i32> = img
            .isr
            .iter()
            .copied()
            .filter(|r| Some(*r) != remove)
            .collect();
        let leader = if target.contains(&img.leader) && acceptable(img.leader) {
            img.leader
        } else {
            REPLICAS
                .iter()
                .copied()
                .find(|r| target.contains(r) && acceptable(*r))
                .unwrap_or(-1)
        };
        let isr_changes = target != img.isr && !target.is_empty();
        if leader == img.leader && !isr_changes {
            return None;
        }
        let mut next = img.clone();
        if isr_changes {
            next.isr = target;
        }
        if leader != img.leader {
            next.leader = leader;
            next.leader_epoch += 1;
        }
        next.partition_epoch += 1;
        Some(next)
    }

    /// `has_valid_session`: unfenced and heard from within the timeout.
    fn valid_session(&self, id: i32, now: i64) -> bool {
        !self.latest().fenced[slot(id)] && self.contact[slot(id)] + self.session_timeout_ms >= now
    }

    /// `fence_records`: the leadership moves, then the fence, as one change.
    fn fence(&mut self, id: i32, trace: &mut Vec<String>) {
        let mut next = Self::elect(self.latest(), Some(id), None).unwrap_or(self.latest().clone());
        next.fenced[slot(id)] = true;
        self.commit(next, &format!("fence {id}"), trace);
    }

    /// `register_broker`: refused while another incarnation's session is valid; a new
    /// incarnation is fenced until caught up, and an unfenced old one's leaderships move
    /// first. Returns the broker epoch.
    pub fn register(
        &mut self,
        id: i32,
        incarnation: u32,
        now: i64,
        trace: &mut Vec<String>,
    ) -> Result<i64, ErrorCode> {
        let s = slot(id);
        if self.incarnation[s] == incarnation {
            self.contact[s] = now;
            return Ok(self.latest().broker_epoch[s]);
        }
        if self.valid_session(id, now) {
            return Err(ErrorCode::DuplicateBrokerRegistration);
        }
        let latest = self.latest().clone();
        let mut next = if latest.fenced[s] {
            latest
        } else {
            Self::elect(&latest, Some(id), None).unwrap_or(latest)
        };
        next.fenced[s] = true;
        next.broker_epoch[s] = i64::try_from(self.versions.len()).unwrap_or(i64::MAX);
        self.incarnation[s] = incarnation;
        self.contact[s] = now;
        self.commit(
            next,
            &format!("register {id} incarnation {incarnation}"),
            trace,
        );
        Ok(self.latest().broker_epoch[s])
    }

    /// A heartbeat of the registered incarnation that has applied `applied`: a fenced broker
    /// that caught up with its registration is unfenced, then leaderless partitions elect.
    pub fn heartbeat(&mut self, id: i32, applied: usize, now: i64, trace: &mut Vec<String>) {
        let s = slot(id);
        self.contact[s] = now;
        let img = self.latest();
        let caught_up = i64::try_from(applied).unwrap_or(0) >= img.broker_epoch[s];
        if img.fenced[s] && caught_up {
            let mut next = img.clone();
            next.fenced[s] = false;
            if img.leader == -1
                && let Some(elected) = Self::elect(img, None, Some(id))
            {
                next = Image {
                    fenced: next.fenced,
                    ..elected
                };
            }
            self.commit(next, &format!("unfence {id}"), trace);
        }
    }

    /// A PREFERRED election (ElectLeaders, or `auto.leader.rebalance.enable`): the first
    /// replica becomes leader if it is in the ISR and unfenced and does not lead already.
    pub fn elect_preferred(&mut self, trace: &mut Vec<String>) -> bool {
        let img = self.latest();
        let p = REPLICAS[0];
        if img.leader == p || !img.isr.contains(&p) || img.fenced[slot(p)] {
            return false;
        }
        let next = Image {
            leader: p,
            leader_epoch: img.leader_epoch + 1,
            partition_epoch: img.partition_epoch + 1,
            ..img.clone()
        };
        self.commit(next, "preferred leader election", trace);
        true
    }

    /// The fencing timer: every unfenced broker whose session expired, oldest contact first.
    pub fn expire(&mut self, now: i64, trace: &mut Vec<String>) {
        loop {
            let img = self.latest();
            let oldest = REPLICAS
                .iter()
                .copied()
                .filter(|r| !img.fenced[slot(*r)])
                .min_by_key(|r| (self.contact[slot(*r)], *r));
            match oldest {
                Some(id) if self.contact[slot(id)] + self.session_timeout_ms < now => {
                    self.fence(id, trace);
                }
                _ => return,
            }
        }
    }

    /// AlterPartition from `from` (v3: each new member with the broker epoch its image has),
    /// in `alter_partition.rs`'s order of checks.
    #[allow(clippy::too_many_arguments)]
    pub fn alter_partition(
        &mut self,
        from: i32,
        broker_epoch: i64,
        leader_epoch: i32,
        partition_epoch: i32,
        isr: &[i32],
        member_epochs: &[i64],
        trace: &mut Vec<String>,
    ) -> Result<(i32, Vec<i32>), ErrorCode> {
        let cur = self.latest().clone();
        if cur.broker_epoch[slot(from)] != broker_epoch {
            return Err(ErrorCode::StaleBrokerEpoch);
        }
        if leader_epoch > cur.leader_epoch || partition_epoch > cur.partition_epoch {
            return Err(ErrorCode::NotController);
        }
        if leader_epoch < cur.leader_epoch {
            return Err(ErrorCode::FencedLeaderEpoch);
        }
        if from != cur.leader {
            return Err(ErrorCode::InvalidRequest);
        }
        if partition_epoch < cur.partition_epoch {
            return Err(ErrorCode::InvalidUpdateVersion);
        }
        let mut sorted = isr.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let bad_member = |r: &i32| !REPLICAS.contains(r);
        if sorted.len() != isr.len() || isr.iter().any(bad_member) || !isr.contains(&from) {
            return Err(ErrorCode::InvalidRequest);
        }
        for (r, e) in isr.iter().zip(member_epochs) {
            if cur.fenced[slot(*r)] || (*e != -1 && *e != cur.broker_epoch[slot(*r)]) {
                return Err(ErrorCode::IneligibleReplica);
            }
        }
        if isr != cur.isr.as_slice() {
            let next = Image {
                isr: isr.to_vec(),
                partition_epoch: cur.partition_epoch + 1,
                ..cur
            };
            self.commit(next, &format!("AlterPartition from {from}"), trace);
        }
        let img = self.latest();
        Ok((img.partition_epoch, img.isr.clone()))
    }
}
