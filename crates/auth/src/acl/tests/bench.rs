//! The authorizer's cost with 10,000 ACLs: p50 / p99 of one `authorize` call over a realistic
//! mix of checks, and of `authorize_by_resource_type`.
//!
//! Workload: 1,000 service principals in 100 teams, ten ACLs each (literal READ / WRITE /
//! DESCRIBE topics, a team-shared prefixed READ, a consumer group, a literal WRITE DENY, a
//! host-restricted WRITE, a prefixed READ DENY, a transactional id, a personal prefix), the
//! last ten replaced by `User:*` ACLs (a `public-` prefix, a group wildcard). Checks: own
//! literal topics, team prefixes, implied DESCRIBE, other teams' topics, denies, the super
//! user, the `User:*` prefix, groups, host-restricted ACLs; every check's expected answer is
//! asserted, so the figures are for right answers.
//!
//! Each check is timed alone (two clock reads around it; the clock pair's own cost is printed
//! as `timer_p50_ns`), and the whole mix once more in one loop (`bulk_mean_ns`). Run it in
//! release, a debug build's figures mean nothing:
//! `cargo test --release -p skiff-auth --lib acl::tests::bench -- --ignored --nocapture`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use super::reference::Reference;
use super::*;

/// splitmix64: a deterministic workload without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const PRINCIPALS: u64 = 1_000;
const TEAMS: u64 = 100;

struct Check {
    kind: &'static str,
    principal: KafkaPrincipal,
    host: String,
    op: AclOperation,
    resource_type: ResourceType,
    name: String,
    want: AuthorizationResult,
}

fn user(i: u64) -> String {
    format!("svc-{i:04}")
}

fn host(i: u64) -> String {
    format!("10.0.{}.{}", i / 256, i % 256)
}

/// Principal `i`'s literal topics: (READ, WRITE, DENY WRITE, host WRITE) indexes.
fn topics_of(i: u64) -> [u64; 4] {
    let mut r = Rng(i.wrapping_mul(7919));
    [r.below(20), r.below(20), 20 + r.below(20), r.below(20)]
}

fn acl(
    p: &str,
    host: &str,
    perm: AclPermission,
    op: AclOperation,
    rt: ResourceType,
    pt: PatternType,
    name: String,
) -> AclBinding {
    AclBinding {
        resource_type: rt,
        resource_name: name,
        pattern_type: pt,
        principal: p.to_string(),
        host: host.to_string(),
        operation: op,
        permission: perm,
    }
}

/// The 10,000 ACLs.
fn workload_acls() -> Vec<AclBinding> {
    use AclOperation as O;
    use AclPermission::{Allow, Deny};
    use PatternType::{Literal, Prefixed};
    use ResourceType as R;
    let mut acls = Vec::new();
    for i in 0..PRINCIPALS {
        let p = format!("User:{}", user(i));
        let t = i % TEAMS;
        let [read, write, deny, hw] = topics_of(i);
        acls.extend([
            acl(
                &p,
                "*",
                Allow,
                O::Read,
                R::Topic,
                Literal,
                format!("team-{t:03}.orders.{read}"),
            ),
            acl(
                &p,
                "*",
                Allow,
                O::Write,
                R::Topic,
                Literal,
                format!("team-{t:03}.orders.{write}"),
            ),
            acl(
                &p,
                "*",
                Allow,
                O::Describe,
                R::Topic,
                Literal,
                format!("team-{t:03}.payments.{read}"),
            ),
            acl(
                &p,
                "*",
                Allow,
                O::Read,
                R::Topic,
                Prefixed,
                format!("team-{t:03}.shared."),
            ),
            acl(
                &p,
                "*",
                Allow,
                O::Read,
                R::Group,
                Literal,
                format!("cg-{}", user(i)),
            ),
            acl(
                &p,
                "*",
                Deny,
                O::Write,
                R::Topic,
                Literal,
                format!("team-{t:03}.orders.{deny}"),
            ),
            acl(
                &p,
                &host(i),
                Allow,
                O::Write,
                R::Topic,
                Literal,
                format!("team-{t:03}.events.{hw}"),
            ),
            acl(
                &p,
                "*",
                Deny,
                O::Read,
                R::Topic,
                Prefixed,
                format!("team-{t:03}.secret."),
            ),
            acl(
                &p,
                "*",
                Allow,
                O::All,
                R::TransactionalId,
                Literal,
                format!("tx-{}", user(i)),
            ),
            acl(
                &p,
                "*",
                Allow,
                O::Read,
                R::Topic,
                Prefixed,
                format!("{}-", user(i)),
            ),
        ]);
    }
    acls.truncate(acls.len() - 10);
    for k in 0..5 {
        acls.push(acl(
            "User:*",
            "*",
            Allow,
            O::Read,
            R::Topic,
            Prefixed,
            format!("public-{k}"),
        ));
        acls.push(acl(
            "User:*",
            "*",
            Allow,
            O::Describe,
            R::Group,
            Literal,
            "*".into(),
        ));
    }
    acls
}

/// `n` checks drawn from the mix, each with its expected answer.
fn workload_checks(n: usize, seed: u64) -> Vec<Check> {
    use AclOperation as O;
    use ResourceType as R;
    let mut r = Rng(seed);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let i = r.below(PRINCIPALS - 1); // the last principal lost some ACLs to the wildcards
        let t = i % TEAMS;
        let [read, write, deny, hw] = topics_of(i);
        let p = KafkaPrincipal::user(user(i));
        let other_team = (t + 1 + r.below(TEAMS - 1)) % TEAMS;
        let (kind, op, rt, name, want, from) = match r.below(100) {
            0..30 => (
                "literal_hit",
                O::Read,
                R::Topic,
                format!("team-{t:03}.orders.{read}"),
                ALLOWED,
                host(i),
            ),
            30..35 => (
                "literal_hit",
                O::Write,
                R::Topic,
                format!("team-{t:03}.orders.{write}"),
                ALLOWED,
                host(i),
            ),
            35..45 => (
                "prefix_hit",
                O::Read,
                R::Topic,
                format!("team-{t:03}.shared.x{}", r.below(1000)),
                ALLOWED,
                host(i),
            ),
            45..55 => (
                "implied_describe",
                O::Describe,
                R::Topic,
                format!("team-{t:03}.orders.{read}"),
                ALLOWED,
                host(i),
            ),
            55..75 => (
                "miss",
                O::Read,
                R::Topic,
                format!("team-{other_team:03}.orders.{}", r.below(40)),
                DENIED,
                host(i),
            ),
            75..80 => (
                "deny",
                O::Write,
                R::Topic,
                format!("team-{t:03}.orders.{deny}"),
                DENIED,
                host(i),
            ),
            80..85 => (
                "prefix_deny",
                O::Read,
                R::Topic,
                format!("team-{t:03}.secret.k{}", r.below(10)),
                DENIED,
                host(i),
            ),
            85..90 => (
                "wildcard",
                O::Read,
                R::Topic,
                format!("public-{}.news", r.below(5)),
                ALLOWED,
                host(i),
            ),
            90..95 => (
                "group",
                O::Read,
                R::Group,
                format!("cg-{}", user(i)),
                ALLOWED,
                host(i),
            ),
            _ => {
                let own = r.below(2) == 0;
                let from = if own { host(i) } else { host(i + 1) };
                let want = if own { ALLOWED } else { DENIED };
                (
                    "host",
                    O::Write,
                    R::Topic,
                    format!("team-{t:03}.events.{hw}"),
                    want,
                    from,
                )
            }
        };
        out.push(Check {
            kind,
            principal: p,
            host: from,
            op,
            resource_type: rt,
            name,
            want,
        });
        if r.below(20) == 0 {
            out.push(Check {
                kind: "super_user",
                principal: KafkaPrincipal::user("admin"),
                host: host(0),
                op: O::Write,
                resource_type: R::Topic,
                name: format!("team-{t:03}.secret.x"),
                want: ALLOWED,
            });
        }
    }
    out.truncate(n);
    out
}

fn workload_index() -> AclIndex {
    let mut idx = AclIndex::new(AuthorizerConfig {
        super_users: vec![KafkaPrincipal::user("admin")],
        allow_everyone_if_no_acl_found: false,
    });
    for (i, b) in workload_acls().into_iter().enumerate() {
        idx.add(id(i as u64), b);
    }
    idx
}

fn run(idx: &AclIndex, c: &Check) -> AuthorizationResult {
    idx.authorize(&c.principal, &c.host, c.op, c.resource_type, &c.name)
}

/// The workload's labels are right: the index and the linear reference both give every
/// check its expected answer (a debug-build test, so the benchmark measures right answers).
#[test]
fn workload_answers_are_as_labelled() {
    let idx = workload_index();
    assert_eq!(idx.len(), 10_000);
    let reference = Reference::of(&idx);
    for c in workload_checks(400, 7) {
        assert_eq!(
            run(&idx, &c),
            c.want,
            "{} {} {} {}",
            c.kind,
            c.principal,
            c.op,
            c.name
        );
        let r = reference.authorize(&c.principal, &c.host, c.op, c.resource_type, &c.name);
        assert_eq!(r, c.want, "reference: {} {}", c.kind, c.name);
    }
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn line(what: &str, ns: &mut [u64]) {
    ns.sort_unstable();
    println!(
        "{what} n={} p50_ns={} p90_ns={} p99_ns={} p999_ns={} max_ns={}",
        ns.len(),
        percentile(ns, 0.5),
        percentile(ns, 0.9),
        percentile(ns, 0.99),
        percentile(ns, 0.999),
        ns[ns.len() - 1]
    );
}

/// Run in release (see the module doc).
#[test]
#[ignore = "a benchmark: run it in release with --ignored --nocapture"]
fn acl_authorize_cost() {
    let t0 = Instant::now();
    let idx = workload_index();
    let build = t0.elapsed();
    let checks = workload_checks(200_000, 42);
    for c in &checks {
        assert_eq!(run(&idx, c), c.want, "{} {}", c.kind, c.name); // also warms the caches
    }
    let mut timer: Vec<u64> = (0..100_000)
        .map(|_| {
            let t = Instant::now();
            black_box(());
            t.elapsed().as_nanos() as u64
        })
        .collect();
    timer.sort_unstable();
    let mut all = Vec::with_capacity(checks.len());
    let mut by_kind: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for c in &checks {
        let t = Instant::now();
        black_box(run(black_box(&idx), c));
        let ns = t.elapsed().as_nanos() as u64;
        all.push(ns);
        by_kind.entry(c.kind).or_default().push(ns);
    }
    let t = Instant::now();
    for c in &checks {
        black_box(run(black_box(&idx), c));
    }
    let bulk = t.elapsed().as_nanos() as f64 / checks.len() as f64;
    println!(
        "acl_authorize: acls={} build_ms={:.1} timer_p50_ns={} bulk_mean_ns={bulk:.1}",
        idx.len(),
        build.as_secs_f64() * 1e3,
        percentile(&timer, 0.5)
    );
    line("acl_authorize: kind=all", &mut all);
    for (kind, ns) in &mut by_kind {
        line(&format!("acl_authorize: kind={kind}"), ns);
    }
    let mut by_type = Vec::new();
    let mut r = Rng(3);
    for _ in 0..50_000 {
        let i = r.below(PRINCIPALS - 1);
        let p = KafkaPrincipal::user(user(i));
        let t = Instant::now();
        let got = black_box(idx.authorize_by_resource_type(
            &p,
            &host(i),
            AclOperation::Write,
            ResourceType::Topic,
        ));
        by_type.push(t.elapsed().as_nanos() as u64);
        assert_eq!(got, ALLOWED);
    }
    line(
        "acl_authorize_by_resource_type: op=WRITE type=TOPIC",
        &mut by_type,
    );
}
