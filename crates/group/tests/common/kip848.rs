//! KIP-848 test harness: a shard with topics `t` (6 partitions) and `u` (3), heartbeat
//! request builders, and a client that applies responses.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use skiff_group::{
    GroupConfig, GroupCoordinatorShard, RequestContext, RequestToken, Response, TopicInfo,
};
use skiff_protocol::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatRequestTopicPartitions,
    ConsumerGroupHeartbeatResponse,
};
use uuid::Uuid;

pub const GROUP: &str = "cg";
pub const T: u128 = 1;
pub const U: u128 = 2;

pub fn tid(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

pub type Owned = BTreeMap<Uuid, BTreeSet<i32>>;

pub struct H {
    pub shard: GroupCoordinatorShard,
    pub now: i64,
    pub token: u64,
    pub log: Vec<(Bytes, Option<Bytes>)>,
}

impl H {
    pub fn new(config: GroupConfig) -> Self {
        let mut shard = GroupCoordinatorShard::new(config, 1);
        shard.set_topics(topics(6, 3));
        Self {
            shard,
            now: 1_000,
            token: 0,
            log: Vec::new(),
        }
    }

    pub fn ctx(&mut self, version: i16) -> RequestContext {
        self.token += 1;
        RequestContext {
            token: RequestToken(self.token),
            api_version: version,
            client_id: "rdkafka".into(),
            client_host: "/127.0.0.1".into(),
        }
    }

    pub fn hb(&mut self, req: &ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse {
        let ctx = self.ctx(1);
        let e = self
            .shard
            .handle_consumer_group_heartbeat(&ctx, req, self.now);
        self.log.extend(e.records.iter().cloned());
        match e.response(ctx.token) {
            Some(Response::ConsumerGroupHeartbeat(r)) => r.clone(),
            other => panic!("{other:?}"),
        }
    }

    pub fn advance(&mut self, ms: i64) {
        self.now += ms;
        let e = self.shard.tick(self.now);
        self.log.extend(e.records.iter().cloned());
    }

    pub fn restart(&mut self) {
        let mut shard = GroupCoordinatorShard::new(self.shard.config().clone(), 2);
        shard.set_topics(topics(6, 3));
        for (k, v) in &self.log {
            shard.replay(k, v.as_ref()).unwrap();
        }
        self.shard = shard;
        let e = self.shard.on_loaded(self.now);
        self.log.extend(e.records.iter().cloned());
    }
}

pub fn topics(t: i32, u: i32) -> Vec<TopicInfo> {
    vec![
        TopicInfo {
            topic_id: tid(T),
            name: "t".into(),
            partitions: t,
        },
        TopicInfo {
            topic_id: tid(U),
            name: "u".into(),
            partitions: u,
        },
    ]
}

pub fn join(member: &str, topics: &[&str]) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: 0,
        rebalance_timeout_ms: 30_000,
        subscribed_topic_names: Some(topics.iter().map(|t| t.to_string()).collect()),
        topic_partitions: Some(Vec::new()),
        ..Default::default()
    }
}

pub fn beat(member: &str, epoch: i32, owned: &Owned) -> ConsumerGroupHeartbeatRequest {
    ConsumerGroupHeartbeatRequest {
        group_id: GROUP.into(),
        member_id: member.into(),
        member_epoch: epoch,
        topic_partitions: Some(
            owned
                .iter()
                .map(|(id, ps)| ConsumerGroupHeartbeatRequestTopicPartitions {
                    topic_id: *id,
                    partitions: ps.iter().copied().collect(),
                })
                .collect(),
        ),
        ..Default::default()
    }
}

pub fn owned_of(r: &ConsumerGroupHeartbeatResponse) -> Option<Owned> {
    r.assignment.as_ref().map(|a| {
        a.topic_partitions
            .iter()
            .map(|tp| (tp.topic_id, tp.partitions.iter().copied().collect()))
            .collect()
    })
}

/// A client: member id, epoch, owned partitions.
#[derive(Clone, Debug)]
pub struct Client {
    pub id: String,
    pub epoch: i32,
    pub owned: Owned,
}

impl Client {
    pub fn apply(&mut self, r: &ConsumerGroupHeartbeatResponse) {
        assert_eq!(r.error_code, 0, "{r:?}");
        self.epoch = r.member_epoch;
        if let Some(o) = owned_of(r) {
            self.owned = o;
        }
    }
}

pub fn join_client(h: &mut H, id: &str, topics: &[&str]) -> Client {
    let r = h.hb(&join(id, topics));
    let mut c = Client {
        id: id.into(),
        epoch: 0,
        owned: Owned::new(),
    };
    c.apply(&r);
    c
}

pub fn round(h: &mut H, clients: &mut [Client]) {
    for c in clients.iter_mut() {
        let r = h.hb(&beat(&c.id, c.epoch, &c.owned));
        c.apply(&r);
    }
}

pub fn assert_disjoint(clients: &[Client]) {
    let mut seen = BTreeSet::new();
    for c in clients {
        for (id, ps) in &c.owned {
            for p in ps {
                assert!(seen.insert((*id, *p)), "{id}-{p} owned twice: {clients:?}");
            }
        }
    }
}

pub fn total(clients: &[Client]) -> usize {
    clients
        .iter()
        .map(|c| c.owned.values().map(BTreeSet::len).sum::<usize>())
        .sum()
}

pub fn state(h: &H) -> &'static str {
    h.shard.group_summary(GROUP).map_or("None", |s| s.state)
}
