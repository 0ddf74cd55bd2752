//! Server-side assignors for KIP-848 groups: `uniform` and `range`.
//!
//! Mental model: an assignor maps every partition of every subscribed, existing topic to
//! exactly one member subscribed to that topic (none when nobody subscribes), as a pure,
//! deterministic function of the members' subscriptions, the topics' partition counts and the
//! previous target. `uniform` balances partition counts (max - min <= 1 among members that
//! could take the same partitions) and keeps partitions where they were when that costs no
//! balance; `range` gives each subscriber of a topic a contiguous range of its partitions, in
//! member-id order (the first `partitions % members` get one more).

use std::collections::{BTreeMap, BTreeSet};

use uuid::Uuid;

use crate::consumer::group::{Assignment, TopicInfo};

/// What an assignor sees.
pub(crate) struct AssignmentSpec<'a> {
    /// Member id -> subscribed topic names.
    pub members: &'a BTreeMap<String, BTreeSet<String>>,
    /// Subscribed topics that exist, by name.
    pub topics: &'a BTreeMap<String, TopicInfo>,
    /// The previous target assignment (stickiness).
    pub previous: &'a BTreeMap<String, Assignment>,
}

/// Runs the named assignor (`range`, anything else is `uniform`).
pub(crate) fn assign(name: &str, spec: &AssignmentSpec<'_>) -> BTreeMap<String, Assignment> {
    if name == crate::config::ASSIGNOR_RANGE {
        range(spec)
    } else {
        uniform(spec)
    }
}

fn empty_plan(spec: &AssignmentSpec<'_>) -> BTreeMap<String, Assignment> {
    spec.members
        .keys()
        .map(|m| (m.clone(), Assignment::new()))
        .collect()
}

/// Contiguous ranges per topic over its subscribers in member-id order.
pub(crate) fn range(spec: &AssignmentSpec<'_>) -> BTreeMap<String, Assignment> {
    let mut plan = empty_plan(spec);
    for (name, topic) in spec.topics {
        let subscribers: Vec<&String> = spec
            .members
            .iter()
            .filter(|(_, subs)| subs.contains(name))
            .map(|(m, _)| m)
            .collect();
        if subscribers.is_empty() || topic.partitions <= 0 {
            continue;
        }
        let n = subscribers.len() as i32;
        let (per, extra) = (topic.partitions / n, topic.partitions % n);
        let mut start = 0;
        for (i, m) in subscribers.iter().enumerate() {
            let len = per + i32::from((i as i32) < extra);
            if len > 0
                && let Some(a) = plan.get_mut(*m)
            {
                a.entry(topic.topic_id)
                    .or_default()
                    .extend(start..start + len);
            }
            start += len;
        }
    }
    plan
}

/// Sticky, balanced assignment.
pub(crate) fn uniform(spec: &AssignmentSpec<'_>) -> BTreeMap<String, Assignment> {
    let eligible = |topic: &str| -> Vec<&String> {
        spec.members
            .iter()
            .filter(|(_, subs)| subs.contains(topic))
            .map(|(m, _)| m)
            .collect()
    };
    // Every partition to place, with who may take it.
    let mut partitions: Vec<((Uuid, i32), Vec<&String>)> = Vec::new();
    for (name, topic) in spec.topics {
        let members = eligible(name);
        if members.is_empty() {
            continue;
        }
        for p in 0..topic.partitions.max(0) {
            partitions.push(((topic.topic_id, p), members.clone()));
        }
    }
    let mut owner: BTreeMap<(Uuid, i32), String> = BTreeMap::new();
    let mut load: BTreeMap<&String, usize> = spec.members.keys().map(|m| (m, 0)).collect();
    // 1. Keep previous owners that may still own their partitions, up to a fair share.
    let fair_max = if spec.members.is_empty() {
        0
    } else {
        partitions.len().div_ceil(spec.members.len())
    };
    let mut previous_owner: BTreeMap<(Uuid, i32), &String> = BTreeMap::new();
    for (m, a) in spec.previous {
        for (id, ps) in a {
            for p in ps {
                previous_owner.insert((*id, *p), m);
            }
        }
    }
    for (tp, members) in &partitions {
        if let Some(m) = previous_owner.get(tp).copied()
            && members.contains(&m)
            && load.get(m).copied().unwrap_or(0) < fair_max
        {
            owner.insert(*tp, m.clone());
            if let Some(l) = load.get_mut(m) {
                *l += 1;
            }
        }
    }
    // 2. Give every unplaced partition to its least-loaded eligible member.
    for (tp, members) in &partitions {
        if owner.contains_key(tp) {
            continue;
        }
        if let Some(m) = members
            .iter()
            .min_by_key(|m| (load.get(*m).copied().unwrap_or(0), **m))
        {
            owner.insert(*tp, (*m).clone());
            if let Some(l) = load.get_mut(*m) {
                *l += 1;
            }
        }
    }
    // 3. Move partitions from heavier to lighter eligible members until no move helps
    //    (each move lowers the sum of squared loads, so this ends).
    let eligible_of: BTreeMap<(Uuid, i32), &Vec<&String>> =
        partitions.iter().map(|(tp, ms)| (*tp, ms)).collect();
    loop {
        let mut moved = false;
        for (tp, current) in owner.clone() {
            let from = load.get(&current).copied().unwrap_or(0);
            let Some(candidates) = eligible_of.get(&tp) else {
                continue;
            };
            let best = candidates
                .iter()
                .filter(|m| load.get(**m).copied().unwrap_or(0) + 2 <= from)
                .min_by_key(|m| (load.get(**m).copied().unwrap_or(0), **m));
            if let Some(to) = best {
                if let Some(l) = load.get_mut(&current) {
                    *l -= 1;
                }
                if let Some(l) = load.get_mut(*to) {
                    *l += 1;
                }
                owner.insert(tp, (*to).clone());
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    let mut plan = empty_plan(spec);
    for ((id, p), m) in owner {
        if let Some(a) = plan.get_mut(&m) {
            a.entry(id).or_default().insert(p);
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, n: i32, id: u128) -> (String, TopicInfo) {
        (
            name.to_string(),
            TopicInfo {
                topic_id: Uuid::from_u128(id),
                name: name.into(),
                partitions: n,
            },
        )
    }

    fn members(list: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        list.iter()
            .map(|(m, ts)| (m.to_string(), ts.iter().map(|t| t.to_string()).collect()))
            .collect()
    }

    fn counts(plan: &BTreeMap<String, Assignment>) -> Vec<usize> {
        plan.values()
            .map(|a| a.values().map(BTreeSet::len).sum())
            .collect()
    }

    /// Every partition of every subscribed topic is owned exactly once, by a subscriber.
    fn check_complete(spec: &AssignmentSpec<'_>, plan: &BTreeMap<String, Assignment>) {
        let mut seen = BTreeSet::new();
        for (m, a) in plan {
            for (id, ps) in a {
                let (name, _) = spec.topics.iter().find(|(_, t)| t.topic_id == *id).unwrap();
                assert!(
                    spec.members[m].contains(name),
                    "{m} is not subscribed to {name}"
                );
                for p in ps {
                    assert!(seen.insert((*id, *p)), "{id}-{p} assigned twice");
                }
            }
        }
        let expected: usize = spec
            .topics
            .iter()
            .filter(|(n, _)| spec.members.values().any(|s| s.contains(*n)))
            .map(|(_, t)| t.partitions as usize)
            .sum();
        assert_eq!(seen.len(), expected);
    }

    #[test]
    fn range_gives_contiguous_ranges_extra_to_the_first() {
        let topics: BTreeMap<_, _> = [topic("t", 7, 1)].into_iter().collect();
        let ms = members(&[("a", &["t"]), ("b", &["t"]), ("c", &["t"])]);
        let previous = BTreeMap::new();
        let spec = AssignmentSpec {
            members: &ms,
            topics: &topics,
            previous: &previous,
        };
        let plan = range(&spec);
        check_complete(&spec, &plan);
        let t = Uuid::from_u128(1);
        assert_eq!(plan["a"][&t], [0, 1, 2].into_iter().collect());
        assert_eq!(plan["b"][&t], [3, 4].into_iter().collect());
        assert_eq!(plan["c"][&t], [5, 6].into_iter().collect());
    }

    #[test]
    fn uniform_balances_and_sticks() {
        let topics: BTreeMap<_, _> = [topic("t", 6, 1), topic("u", 3, 2)].into_iter().collect();
        let ms = members(&[("a", &["t", "u"]), ("b", &["t", "u"])]);
        let previous = BTreeMap::new();
        let spec = AssignmentSpec {
            members: &ms,
            topics: &topics,
            previous: &previous,
        };
        let first = uniform(&spec);
        check_complete(&spec, &first);
        let mut c = counts(&first);
        c.sort();
        assert_eq!(c, vec![4, 5]);
        // A third member joins: it gets a fair share, and a and b keep most of theirs.
        let ms3 = members(&[("a", &["t", "u"]), ("b", &["t", "u"]), ("c", &["t", "u"])]);
        let spec3 = AssignmentSpec {
            members: &ms3,
            topics: &topics,
            previous: &first,
        };
        let second = uniform(&spec3);
        check_complete(&spec3, &second);
        assert_eq!(counts(&second), vec![3, 3, 3]);
        for m in ["a", "b"] {
            for (id, ps) in &second[m] {
                for p in ps {
                    assert!(
                        first[m].get(id).is_some_and(|x| x.contains(p)),
                        "{m} kept {id}-{p}"
                    );
                }
            }
        }
    }

    #[test]
    fn uniform_handles_heterogeneous_subscriptions() {
        let topics: BTreeMap<_, _> = [topic("t", 4, 1), topic("u", 4, 2)].into_iter().collect();
        let ms = members(&[("a", &["t"]), ("b", &["t", "u"]), ("c", &["u"]), ("d", &[])]);
        let previous = BTreeMap::new();
        let spec = AssignmentSpec {
            members: &ms,
            topics: &topics,
            previous: &previous,
        };
        let plan = uniform(&spec);
        check_complete(&spec, &plan);
        assert!(plan["d"].is_empty());
        let c = counts(&plan);
        assert!(c[..3].iter().all(|n| (2..=3).contains(n)), "{c:?}");
    }
}
