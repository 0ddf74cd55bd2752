//! The authorizer's ACL set (Kafka's `StandardAuthorizerData`): bindings by id, an index by
//! resource, and the authorization decision.
//!
//! # Mental model
//!
//! A check asks: may principal P from host H perform operation O on resource (type T, name N)?
//! 1. A super user (`super.users`: the principal's `Type:name` string equals an entry) is
//!    allowed everything. `User:*` in `super.users` only names the principal `User:*`, as in
//!    Kafka (an exact string comparison, not a wildcard).
//! 2. The ACLs *on the resource* are those of type T whose pattern covers N: a literal
//!    pattern equal to N, the literal wildcard `*`, or a prefixed pattern N starts with.
//! 3. Of those, an ACL *applies* when its principal is P or `User:*` (compared as type and
//!    name, split at the first `:`), its host is H or `*`, and its operation is ALL, or O,
//!    or, for ALLOW ACLs only, implies O: READ, WRITE, DELETE and ALTER imply DESCRIBE;
//!    ALTER_CONFIGS implies DESCRIBE_CONFIGS. A DENY of READ does not deny DESCRIBE.
//! 4. Any applying DENY denies (deny wins); else any applying ALLOW allows; else, if the
//!    resource has no ACL at all (whoever it names), `allow.everyone.if.no.acl.found`
//!    decides; else denied.
//!
//! The index keeps, per resource type, a hash map of literal names, the list of literal `*`
//! ACLs, and a byte trie of prefixed patterns ([`super::trie`]), so a check costs one hash
//! lookup, one short list and one walk down the name, whatever the number of ACLs. A
//! second map, per resource type and principal, serves [`AclIndex::authorize_by_resource_type`].
//!
//! Invariants: the index holds exactly the bindings of `acls` (add replaces an id, remove
//! drops it from every structure); checks never panic and never allocate on the common
//! path. Kafka-exact corner cases, for bindings validation never lets in: a stored pattern
//! type other than LITERAL acts as a prefix (Kafka's scan treats it so); a permission other
//! than ALLOW acts as DENY (Kafka's `findResult`); a principal without `:` never applies but
//! still counts as an ACL on the resource (Kafka would throw).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::filter::AclBindingFilter;
use super::trie::PrefixTrie;
use super::types::*;
use crate::principal::KafkaPrincipal;

/// Authorizer settings (`super.users`, `allow.everyone.if.no.acl.found`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    pub super_users: Vec<KafkaPrincipal>,
    pub allow_everyone_if_no_acl_found: bool,
}

/// An ACL's id in the metadata log (`AccessControlEntryRecord.Id`, a Kafka Uuid).
pub type AclId = [u8; 16];

/// The resource name `authorize_by_resource_type` first checks (Kafka's `"hardcode"`).
const HARDCODE: &str = "hardcode";

/// Every ACL, and the decision over them.
#[derive(Clone, Debug, Default)]
pub struct AclIndex {
    config: AuthorizerConfig,
    /// `config.super_users` as the `Type:name` strings Kafka compares.
    super_users: Vec<String>,
    acls: BTreeMap<AclId, AclBinding>,
    /// By resource type code (0..=7).
    types: [TypeIndex; 8],
}

/// The ACLs of one resource type.
#[derive(Clone, Debug, Default)]
struct TypeIndex {
    /// Literal patterns other than `*`, by name.
    literal: HashMap<Box<str>, Vec<Ace>>,
    /// Literal `*`.
    wildcard: Vec<Ace>,
    /// Every other pattern type (prefixed), by prefix.
    prefixed: PrefixTrie<Ace>,
    /// Principal type -> principal name -> that principal's ACLs (principals with a `:`).
    by_principal: HashMap<Box<str>, HashMap<Box<str>, Vec<Grant>>>,
}

/// One ACL's entry as a check reads it.
#[derive(Clone, Debug)]
struct Ace {
    id: AclId,
    /// Principal split at the first `:`; `None` without one (never applies).
    principal: Option<(Box<str>, Box<str>)>,
    /// The principal is `User:*`.
    any_principal: bool,
    host: Box<str>,
    any_host: bool,
    operation: AclOperation,
    permission: AclPermission,
}

/// One ACL as `authorize_by_resource_type` reads it (the principal is the map's key).
#[derive(Clone, Debug)]
struct Grant {
    id: AclId,
    pattern_type: PatternType,
    name: Box<str>,
    host: Box<str>,
    operation: AclOperation,
    permission: AclPermission,
}

/// The principal, host and operation of a check.
#[derive(Clone, Copy)]
struct Query<'a> {
    principal: &'a KafkaPrincipal,
    host: &'a str,
    op: AclOperation,
}

impl Ace {
    fn new(id: AclId, b: &AclBinding) -> Self {
        let principal = b
            .principal
            .split_once(':')
            .map(|(t, n)| (Box::from(t), Box::from(n)));
        Self {
            id,
            any_principal: principal
                .as_ref()
                .is_some_and(|(t, n)| &**t == crate::principal::USER_TYPE && &**n == WILDCARD),
            principal,
            any_host: b.host == WILDCARD,
            host: b.host.as_str().into(),
            operation: b.operation,
            permission: b.permission,
        }
    }

    /// Does this ACL apply to the check (principal, host, operation)? Kafka's `findResult`.
    #[inline]
    fn applies(&self, q: &Query<'_>) -> bool {
        let principal = self.any_principal
            || self.principal.as_ref().is_some_and(|(t, n)| {
                **n == *q.principal.name && **t == *q.principal.principal_type
            });
        principal
            && (self.any_host || *self.host == *q.host)
            && operation_applies(self.operation, self.permission, q.op)
    }
}

/// Does an ACL for `acl_op` with `permission` cover `op`? ALL covers everything; an ALLOW
/// also covers the operations its operation implies.
pub(crate) fn operation_applies(
    acl_op: AclOperation,
    permission: AclPermission,
    op: AclOperation,
) -> bool {
    use AclOperation as O;
    if acl_op == O::All || acl_op == op {
        return true;
    }
    permission == AclPermission::Allow
        && match op {
            O::Describe => matches!(acl_op, O::Read | O::Write | O::Delete | O::Alter),
            O::DescribeConfigs => acl_op == O::AlterConfigs,
            _ => false,
        }
}

/// Is `s` the principal's `Type:name` string? (No allocation.)
fn is_principal_string(s: &str, p: &KafkaPrincipal) -> bool {
    let t = p.principal_type.as_str();
    s.len() == t.len() + 1 + p.name.len()
        && s.starts_with(t)
        && s.as_bytes().get(t.len()) == Some(&b':')
        && s.ends_with(p.name.as_str())
}

/// What one check has seen so far.
struct Scan<'a> {
    q: Query<'a>,
    /// Some ACL is on the resource (whatever it names).
    resource_acls: bool,
    allowed: bool,
}

impl Scan<'_> {
    /// Reads ACLs on the resource; true once one denies.
    #[inline]
    fn visit(&mut self, aces: &[Ace]) -> bool {
        self.resource_acls |= !aces.is_empty();
        for a in aces {
            if a.applies(&self.q) {
                if a.permission == AclPermission::Allow {
                    self.allowed = true;
                } else {
                    return true;
                }
            }
        }
        false
    }
}

fn slot(rt: ResourceType) -> usize {
    rt.code() as usize
}

fn result(allowed: bool) -> AuthorizationResult {
    if allowed {
        AuthorizationResult::Allowed
    } else {
        AuthorizationResult::Denied
    }
}

impl AclIndex {
    pub fn new(config: AuthorizerConfig) -> Self {
        Self {
            super_users: config.super_users.iter().map(|p| p.to_string()).collect(),
            config,
            ..Self::default()
        }
    }

    pub fn config(&self) -> &AuthorizerConfig {
        &self.config
    }

    /// Adds (or replaces) the ACL with this id.
    pub fn add(&mut self, id: AclId, binding: AclBinding) {
        self.remove(&id);
        let t = &mut self.types[slot(binding.resource_type)];
        let ace = Ace::new(id, &binding);
        match binding.pattern_type {
            PatternType::Literal if binding.resource_name == WILDCARD => t.wildcard.push(ace),
            PatternType::Literal => t
                .literal
                .entry(binding.resource_name.as_str().into())
                .or_default()
                .push(ace),
            _ => t.prefixed.insert(binding.resource_name.as_bytes(), ace),
        }
        if let Some((pt, pn)) = binding.principal.split_once(':') {
            t.by_principal
                .entry(pt.into())
                .or_default()
                .entry(pn.into())
                .or_default()
                .push(Grant {
                    id,
                    pattern_type: binding.pattern_type,
                    name: binding.resource_name.as_str().into(),
                    host: binding.host.as_str().into(),
                    operation: binding.operation,
                    permission: binding.permission,
                });
        }
        self.acls.insert(id, binding);
    }

    /// Removes the ACL with this id.
    pub fn remove(&mut self, id: &AclId) -> Option<AclBinding> {
        let b = self.acls.remove(id)?;
        let t = &mut self.types[slot(b.resource_type)];
        let is_it = |a: &Ace| a.id == *id;
        match b.pattern_type {
            PatternType::Literal if b.resource_name == WILDCARD => {
                t.wildcard.retain(|a| !is_it(a));
            }
            PatternType::Literal => {
                if let Some(v) = t.literal.get_mut(b.resource_name.as_str()) {
                    v.retain(|a| !is_it(a));
                    if v.is_empty() {
                        t.literal.remove(b.resource_name.as_str());
                    }
                }
            }
            _ => {
                t.prefixed.remove(b.resource_name.as_bytes(), is_it);
            }
        }
        if let Some((pt, pn)) = b.principal.split_once(':')
            && let Some(names) = t.by_principal.get_mut(pt)
        {
            if let Some(v) = names.get_mut(pn) {
                v.retain(|g| g.id != *id);
                if v.is_empty() {
                    names.remove(pn);
                }
            }
            if names.is_empty() {
                t.by_principal.remove(pt);
            }
        }
        Some(b)
    }

    pub fn len(&self) -> usize {
        self.acls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.acls.is_empty()
    }

    /// Every ACL with its id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&AclId, &AclBinding)> {
        self.acls.iter()
    }

    /// Every ACL `filter` selects, in id order (DescribeAcls, DeleteAcls). A scan of all
    /// ACLs: these are admin requests, not the per-request check.
    pub fn matching(&self, filter: &AclBindingFilter) -> Vec<(AclId, AclBinding)> {
        self.acls
            .iter()
            .filter(|(_, b)| filter.matches(b))
            .map(|(id, b)| (*id, b.clone()))
            .collect()
    }

    /// Is `principal` in `super.users`?
    pub fn is_super_user(&self, principal: &KafkaPrincipal) -> bool {
        self.super_users
            .iter()
            .any(|s| is_principal_string(s, principal))
    }

    /// May `principal` connecting from `host` (an IP address as text) perform `op` on the
    /// resource `(resource_type, name)`? (The module doc states the rules.)
    pub fn authorize(
        &self,
        principal: &KafkaPrincipal,
        host: &str,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> AuthorizationResult {
        if self.is_super_user(principal) {
            return AuthorizationResult::Allowed;
        }
        let t = &self.types[slot(resource_type)];
        let mut scan = Scan {
            q: Query {
                principal,
                host,
                op,
            },
            resource_acls: false,
            allowed: false,
        };
        let denied = t.literal.get(name).is_some_and(|v| scan.visit(v))
            || scan.visit(&t.wildcard)
            || t.prefixed.walk(name.as_bytes(), |v| scan.visit(v));
        if denied {
            AuthorizationResult::Denied
        } else if scan.allowed {
            AuthorizationResult::Allowed
        } else if scan.resource_acls {
            AuthorizationResult::Denied
        } else {
            result(self.config.allow_everyone_if_no_acl_found)
        }
    }

    /// Kafka's `Authorizer.authorizeByResourceType`: may `principal` perform `op` on at
    /// least one resource of this type (IDEMPOTENT_WRITE and transactional fallbacks)?
    ///
    /// Allowed when [`Self::authorize`] allows `op` on a resource named `hardcode` (super
    /// users, the no-ACL default, wildcard and matching prefixed ACLs). Otherwise only the
    /// ACLs naming this principal (or `User:*`) from this host for `op` or ALL count, with
    /// no implied operations: a literal `*` DENY denies; a literal `*` ALLOW allows; else
    /// allowed when some literal ALLOW has no literal DENY of the same name and no prefixed
    /// DENY of one of its (non-empty) prefixes, or some prefixed ALLOW has no prefixed DENY
    /// of one of its prefixes. A type or operation of ANY or UNKNOWN is denied (Kafka throws).
    pub fn authorize_by_resource_type(
        &self,
        principal: &KafkaPrincipal,
        host: &str,
        op: AclOperation,
        resource_type: ResourceType,
    ) -> AuthorizationResult {
        use AclOperation as O;
        if matches!(resource_type, ResourceType::Any | ResourceType::Unknown)
            || matches!(op, O::Any | O::Unknown)
        {
            return AuthorizationResult::Denied;
        }
        if self.authorize(principal, host, op, resource_type, HARDCODE)
            == AuthorizationResult::Allowed
        {
            return AuthorizationResult::Allowed;
        }
        let t = &self.types[slot(resource_type)];
        let grants_of = |pt: &str, pn: &str| {
            t.by_principal
                .get(pt)
                .and_then(|names| names.get(pn))
                .map_or(&[][..], Vec::as_slice)
        };
        let own = grants_of(&principal.principal_type, &principal.name);
        let is_wildcard =
            principal.principal_type == crate::principal::USER_TYPE && principal.name == WILDCARD;
        let wildcard = if is_wildcard {
            &[][..]
        } else {
            grants_of(crate::principal::USER_TYPE, WILDCARD)
        };
        let mut deny_literal: HashSet<&str> = HashSet::new();
        let mut deny_prefixed: HashSet<&str> = HashSet::new();
        let mut allow_literal: Vec<&str> = Vec::new();
        let mut allow_prefixed: Vec<&str> = Vec::new();
        let mut wildcard_allow = false;
        for g in own.iter().chain(wildcard) {
            if (*g.host != *host && *g.host != *WILDCARD)
                || (g.operation != op && g.operation != O::All)
            {
                continue;
            }
            let literal = g.pattern_type == PatternType::Literal;
            let prefixed = g.pattern_type == PatternType::Prefixed;
            match g.permission {
                AclPermission::Deny if literal && *g.name == *WILDCARD => {
                    return AuthorizationResult::Denied;
                }
                AclPermission::Deny if literal => {
                    deny_literal.insert(&g.name);
                }
                AclPermission::Deny if prefixed => {
                    deny_prefixed.insert(&g.name);
                }
                AclPermission::Allow if literal && *g.name == *WILDCARD => wildcard_allow = true,
                AclPermission::Allow if literal => allow_literal.push(&g.name),
                AclPermission::Allow if prefixed => allow_prefixed.push(&g.name),
                _ => {}
            }
        }
        if wildcard_allow {
            return AuthorizationResult::Allowed;
        }
        let dominated = |name: &str| {
            name.char_indices()
                .any(|(i, c)| deny_prefixed.contains(&name[..i + c.len_utf8()]))
        };
        let allowed = allow_literal
            .iter()
            .any(|n| !deny_literal.contains(n) && !dominated(n))
            || allow_prefixed.iter().any(|n| !dominated(n));
        result(allowed)
    }

    /// Nodes in use in the prefix tries (tests: removal must prune).
    #[cfg(test)]
    pub(crate) fn prefix_nodes(&self) -> usize {
        self.types.iter().map(|t| t.prefixed.live_nodes()).sum()
    }

    /// Entries in the principal maps (tests: removal must drop them).
    #[cfg(test)]
    pub(crate) fn principal_entries(&self) -> usize {
        self.types
            .iter()
            .flat_map(|t| t.by_principal.values())
            .flat_map(|names| names.values())
            .map(Vec::len)
            .sum()
    }
}
