//! The index against a linear reference: random ACL sets (built by random adds, replacements
//! and removals), random checks. The reference reads Kafka's code shape directly: a scan of
//! every binding for `authorize` (`StandardAuthorizerData.findResult` per ACL), and the
//! `Authorizer.authorizeByResourceType` default method over every binding.

use std::collections::{BTreeMap, HashSet};

use proptest::prelude::*;

use super::*;

pub(super) struct Reference {
    config: AuthorizerConfig,
    acls: BTreeMap<AclId, AclBinding>,
}

/// Kafka's `findResult` for one ACL whose resource matches: `None` if it does not apply.
fn ref_find_result(
    b: &AclBinding,
    p: &KafkaPrincipal,
    host: &str,
    op: AclOperation,
) -> Option<bool> {
    use AclOperation as O;
    let (t, n) = b.principal.split_once(':')?;
    let principal_ok = (t == p.principal_type && n == p.name) || (t == "User" && n == "*");
    if !principal_ok || (b.host != "*" && b.host != host) {
        return None;
    }
    if b.operation != O::All {
        if b.permission == AclPermission::Allow {
            match op {
                O::Describe => {
                    if ![O::Describe, O::Read, O::Write, O::Delete, O::Alter].contains(&b.operation)
                    {
                        return None;
                    }
                }
                O::DescribeConfigs => {
                    if ![O::DescribeConfigs, O::AlterConfigs].contains(&b.operation) {
                        return None;
                    }
                }
                _ => {
                    if op != b.operation {
                        return None;
                    }
                }
            }
        } else if op != b.operation {
            return None;
        }
    }
    Some(b.permission == AclPermission::Allow)
}

impl Reference {
    /// The same configuration and ACLs as `idx`.
    pub(super) fn of(idx: &AclIndex) -> Self {
        Self {
            config: idx.config().clone(),
            acls: idx.iter().map(|(i, b)| (*i, b.clone())).collect(),
        }
    }

    pub(super) fn authorize(
        &self,
        p: &KafkaPrincipal,
        host: &str,
        op: AclOperation,
        rt: ResourceType,
        name: &str,
    ) -> AuthorizationResult {
        if self
            .config
            .super_users
            .iter()
            .any(|s| s.to_string() == p.to_string())
        {
            return ALLOWED;
        }
        let (mut on_resource, mut allow, mut deny) = (false, false, false);
        for b in self.acls.values().filter(|b| b.resource_type == rt) {
            let covers = if b.pattern_type == PatternType::Literal {
                b.resource_name == name || b.resource_name == "*"
            } else {
                name.starts_with(&b.resource_name)
            };
            if !covers {
                continue;
            }
            on_resource = true;
            match ref_find_result(b, p, host, op) {
                Some(true) => allow = true,
                Some(false) => deny = true,
                None => {}
            }
        }
        if deny {
            DENIED
        } else if allow {
            ALLOWED
        } else if on_resource || !self.config.allow_everyone_if_no_acl_found {
            DENIED
        } else {
            ALLOWED
        }
    }

    fn by_resource_type(
        &self,
        p: &KafkaPrincipal,
        host: &str,
        op: AclOperation,
        rt: ResourceType,
    ) -> AuthorizationResult {
        use PatternType as T;
        if matches!(rt, ResourceType::Any | ResourceType::Unknown)
            || matches!(op, AclOperation::Any | AclOperation::Unknown)
        {
            return DENIED;
        }
        if self.authorize(p, host, op, rt, "hardcode") == ALLOWED {
            return ALLOWED;
        }
        let (mut deny_lit, mut deny_pre) = (HashSet::new(), HashSet::new());
        let (mut allow_lit, mut allow_pre) = (HashSet::new(), HashSet::new());
        let mut wildcard_allow = false;
        for b in self.acls.values().filter(|b| b.resource_type == rt) {
            if b.host != host && b.host != "*" {
                continue;
            }
            let same = b
                .principal
                .split_once(':')
                .is_some_and(|(t, n)| t == p.principal_type && n == p.name);
            if !same && b.principal != "User:*" {
                continue;
            }
            if b.operation != op && b.operation != AclOperation::All {
                continue;
            }
            let name = b.resource_name.clone();
            if b.permission == AclPermission::Deny {
                match b.pattern_type {
                    T::Literal if name == "*" => return DENIED,
                    T::Literal => drop(deny_lit.insert(name)),
                    T::Prefixed => drop(deny_pre.insert(name)),
                    _ => {}
                }
                continue;
            }
            if b.permission != AclPermission::Allow {
                continue;
            }
            match b.pattern_type {
                T::Literal if name == "*" => wildcard_allow = true,
                T::Literal => drop(allow_lit.insert(name)),
                T::Prefixed => drop(allow_pre.insert(name)),
                _ => {}
            }
        }
        if wildcard_allow {
            return ALLOWED;
        }
        for (literal, set) in [(true, &allow_lit), (false, &allow_pre)] {
            for s in set {
                if literal && deny_lit.contains(s) {
                    continue;
                }
                let mut sb = String::new();
                let mut dominated = false;
                for ch in s.chars() {
                    sb.push(ch);
                    if deny_pre.contains(&sb) {
                        dominated = true;
                        break;
                    }
                }
                if !dominated {
                    return ALLOWED;
                }
            }
        }
        DENIED
    }
}

const ACL_PRINCIPALS: &[&str] = &[
    "User:alice",
    "User:bob",
    "User:*",
    "Group:alice",
    "alice",
    ":alice",
    "User:",
];
const HOSTS: &[&str] = &["*", "h1", "h2"];

fn query_principals() -> Vec<KafkaPrincipal> {
    let mut v: Vec<KafkaPrincipal> = ["alice", "bob", "*", "", "admin"]
        .iter()
        .map(|n| KafkaPrincipal::user(*n))
        .collect();
    for (t, n) in [("Group", "alice"), ("", "alice"), ("User:alice", "x")] {
        v.push(KafkaPrincipal {
            principal_type: t.into(),
            name: n.into(),
        });
    }
    v
}

fn name() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(vec!["a", "b", "*", "é"]), 0..4)
        .prop_map(|v| v.concat())
}

/// Mostly the operations the implication rules are about, sometimes any.
fn operation() -> impl Strategy<Value = AclOperation> {
    use AclOperation as O;
    prop_oneof![
        3 => prop::sample::select(vec![O::All, O::Read, O::Write, O::Describe, O::DescribeConfigs, O::AlterConfigs]),
        1 => prop::sample::select(AclOperation::ALL),
    ]
}

fn resource_type() -> impl Strategy<Value = ResourceType> {
    prop::sample::select(vec![
        ResourceType::Topic,
        ResourceType::Group,
        ResourceType::Cluster,
    ])
}

fn acl() -> impl Strategy<Value = AclBinding> {
    let pattern = prop_oneof![
        4 => Just(PatternType::Literal),
        4 => Just(PatternType::Prefixed),
        1 => prop::sample::select(vec![PatternType::Match, PatternType::Unknown, PatternType::Any]),
    ];
    let permission = prop_oneof![
        4 => Just(AclPermission::Allow),
        3 => Just(AclPermission::Deny),
        1 => Just(AclPermission::Unknown),
    ];
    (
        resource_type(),
        name(),
        pattern,
        prop::sample::select(ACL_PRINCIPALS),
        prop::sample::select(HOSTS),
        operation(),
        permission,
    )
        .prop_map(|(rt, name, pt, p, h, op, perm)| AclBinding {
            resource_type: rt,
            resource_name: name,
            pattern_type: pt,
            principal: p.to_string(),
            host: h.to_string(),
            operation: op,
            permission: perm,
        })
}

/// (principal index, host, operation, resource type, name)
fn query() -> impl Strategy<Value = (usize, &'static str, AclOperation, ResourceType, String)> {
    (
        0..8usize,
        prop::sample::select(&["h1", "h2"][..]),
        operation(),
        prop_oneof![4 => resource_type(), 1 => Just(ResourceType::Any)],
        name(),
    )
}

fn filter() -> impl Strategy<Value = AclBindingFilter> {
    (
        prop::sample::select(vec![
            ResourceType::Any,
            ResourceType::Topic,
            ResourceType::Group,
        ]),
        prop::option::of(name()),
        prop::sample::select(PatternType::ALL),
        prop::option::of(prop::sample::select(ACL_PRINCIPALS)),
        prop::option::of(prop::sample::select(HOSTS)),
        prop::sample::select(AclOperation::ALL),
        prop::sample::select(AclPermission::ALL),
    )
        .prop_map(|(rt, n, pt, p, h, op, perm)| AclBindingFilter {
            resource_type: rt,
            resource_name: n,
            pattern_type: pt,
            principal: p.map(str::to_string),
            host: h.map(str::to_string),
            operation: op,
            permission: perm,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn index_agrees_with_the_linear_reference(
        supers in prop::sample::subsequence(vec!["User:admin", "User:*", "Group:alice"], 0..=3),
        allow_if_none in any::<bool>(),
        ops in prop::collection::vec((0..24u64, prop_oneof![3 => acl().prop_map(Some), 1 => Just(None)]), 0..60),
        queries in prop::collection::vec(query(), 1..80),
        filters in prop::collection::vec(filter(), 1..6),
    ) {
        let config = AuthorizerConfig {
            super_users: supers.iter().map(|s| principal(s)).collect(),
            allow_everyone_if_no_acl_found: allow_if_none,
        };
        let mut idx = AclIndex::new(config.clone());
        let mut r = Reference { config, acls: BTreeMap::new() };
        for (i, op) in ops {
            match op {
                Some(b) => {
                    idx.add(id(i), b.clone());
                    r.acls.insert(id(i), b);
                }
                None => prop_assert_eq!(idx.remove(&id(i)), r.acls.remove(&id(i))),
            }
        }
        let stored: Vec<(AclId, AclBinding)> = idx.iter().map(|(i, b)| (*i, b.clone())).collect();
        let want: Vec<(AclId, AclBinding)> = r.acls.iter().map(|(i, b)| (*i, b.clone())).collect();
        prop_assert_eq!(stored, want);
        prop_assert_eq!(idx.len(), r.acls.len());
        let principals = query_principals();
        for (pi, host, op, rt, name) in &queries {
            let p = &principals[*pi];
            prop_assert_eq!(
                idx.authorize(p, host, *op, *rt, name),
                r.authorize(p, host, *op, *rt, name),
                "authorize {} {} {} {} {:?}", p, host, op, rt, name
            );
            prop_assert_eq!(
                idx.authorize_by_resource_type(p, host, *op, *rt),
                r.by_resource_type(p, host, *op, *rt),
                "by type {} {} {} {}", p, host, op, rt
            );
        }
        for f in &filters {
            let want: Vec<(AclId, AclBinding)> = r
                .acls
                .iter()
                .filter(|(_, b)| f.matches(b))
                .map(|(i, b)| (*i, b.clone()))
                .collect();
            prop_assert_eq!(idx.matching(f), want);
        }
        let ids: Vec<AclId> = r.acls.keys().copied().collect();
        for i in ids {
            prop_assert!(idx.remove(&i).is_some());
        }
        prop_assert!(idx.is_empty());
        prop_assert_eq!(idx.prefix_nodes(), 8, "every trie pruned to its root");
        prop_assert_eq!(idx.principal_entries(), 0);
    }
}
